"""Running a planned `dg.vjp` / `dg.jvp` call, and replaying the plan.

`plan.Call` checks a call and turns it into a `Recipe`: which buffers to
allocate and how, the flat argument list of the derivative kernel (where
each entry comes from), the program and what to return. `Recipe.run`
executes it. The recipe is a function of the call's *key*, so a later call
with an equal key reuses it with no checks, no analysis, no planning:

    (dg.vjp or dg.jvp, outputs=, the launch key of the arguments
     (runtime/fastpath.py: grid, block, per array type, dtype, data pointer,
     shape, strides, writeable flag / GPU, per scalar type and value),
     per seed given: its name and the same fields, the positions passed
     as dg.Const and the names of wrt=)

Every check of a call (roles, alias groups, seeds' names, types, shapes and
devices, overlaps) and every choice of the plan (functional kinds, written
once, covered, a private cotangent) reads only these, so an equal key
passes the same checks and gets the same plan. What a repeated call still
does per call:

| step       | per call                                                     |
|------------|--------------------------------------------------------------|
| allocate   | the fresh buffers the recipe lists (results are new arrays every call) |
| check      | each fresh buffer the program assumes aligned is (`ALIGN` bytes); else the call is planned again |
| pack       | GPU: the argument values kept from the key's second call, with the fresh buffers' pointers put in; CPU: packed as a launch |
| launch     | the kept program                                             |
| results    | a scalar's slot sum, copies of pass-through cotangents       |

The launch facts of the derivative kernel (runtime/specialize.py) depend
on the fresh buffers only through their alignment: they are new memory
(never overlapping a live array) and their layout is a function of the key.

A call whose key misses but whose arrays are laid out and aliased as an
earlier call's, elsewhere in memory (a chain of calls on new arrays: the
states of a simulation, a tape's versions), finds that call's recipe by
the key without pointers (`moved_key`: fastpath.moved_key replaces each
pointer by the index of the first argument or seed that is the same view;
arrays sharing bytes without being one view give no such key) and runs it
with `Recipe.run_moved`: every pointer put into a packed launch kept for
it, the launch facts that read pointers (alignment, no aliasing) checked
per call. The tape's reverse (tape/reverse.py) finds its recipes by its
own `layout_key` and runs them the same way.

A call whose key cannot be formed (an argument or seed type the launch fast
path does not know: torch tensors, plain `__cuda_array_interface__`
objects) is planned every time; errors come only from planning, so they are
those of `plan.Call`.

The host-level `dg.autodiff` / `dg.fwddiff` (diff.py) run through the same
`Recipe` (`diff_recipe`): no fresh buffers, the caller's primals and
shadows as the kernel's arguments, one fresh slot array per `Active`
scalar. Their key is (mode, activity kinds, launch key of the primals and
shadows), kept in the same table: a key of one kind never equals one of
the other (different lengths).
"""
from __future__ import annotations

import threading

import numpy as np

from diffgpu.hostdiff import buffers as M
from diffgpu.driver import launch as L
from diffgpu.errors import user_facing
from diffgpu.errors import NoDerivativeError
from diffgpu.runtime import fastpath
from diffgpu.runtime.args import Signature
from diffgpu.hostdiff.moved import Moved
from diffgpu.runtime.racecheck import enabled as racecheck_enabled
from diffgpu.runtime.specialize import ALIGN

# The plain replay's own pointer reads (moved.py has the moved replay's): the
# hot path goes through each file once (test_launch_one_way), so a replay
# reading pointers through another module would leave and re-enter this one.
_AT, _OFFSET = fastpath._AT, fastpath._OFFSET


def _pointer(a) -> int:
    """A fresh buffer's data pointer: `fastpath.host_pointer`'s read, here."""
    if type(a) is not np.ndarray:
        return a.data.ptr
    if _OFFSET is None:
        return a.__array_interface__["data"][0]
    return _AT(id(a) + _OFFSET).value or 0


_MAKE: list = []


def kernel_pointers():
    """runtime/gpu.py `as_kernel_pointers`, imported once."""
    if not _MAKE:
        from diffgpu.runtime.gpu import as_kernel_pointers
        _MAKE.append(as_kernel_pointers)
    return _MAKE[0]


#: recipes kept per kernel, then all dropped (a loop over ever new arrays)
_MAX = 1024


def diff_recipe(launcher, mode: str, kinds, types, sig, nflat: int, scope, slot_sum,
                wide=()):
    """The Recipe of a checked host-level `dg.autodiff` / `dg.fwddiff` call
    (diff.py): the derivative kernel takes the caller's `nflat` values
    (primals and shadows, in order: "arg" i) then, in reverse mode, one
    fresh slot array per Active scalar, whose sums `slot_sum` makes are
    the results, in order (named 0, 1, ...). `scope`: the position of an
    array among the values (its device is the call's), or None. `wide`:
    the positions of 16-bit shadows that the kernel takes as float32
    copies ("copy32"), rounded back into them after the launch."""
    from types import SimpleNamespace

    slots = [t.dtype for t, k in zip(types, kinds) if k == "active"] if mode == "reverse" else []
    call = SimpleNamespace(launcher=launcher, types=tuple(types), sig=sig,
                           kernel=launcher.kernel)
    flat = [("arg", i) for i in range(nflat)]
    bufs = [("copy32", ("arg", i)) for i in wide]
    for b, i in enumerate(wide):
        flat[i] = ("buf", b)
    recipe = Recipe(call, mode, kinds, bufs, flat, slots,
                    [(k, ("slot", k)) for k in range(len(slots))], False, scope)
    recipe.back = tuple((b, i) for b, i in enumerate(wide))
    recipe.slot_sum = slot_sum
    return recipe


def lookup(kernel, key):
    """The recipe kept for `key`, or None."""
    table = kernel.__dict__.get("_plans")
    if not table:
        return None
    if not kernel._programs:  # programs dropped (tests force reloads): start over
        table.clear()
        return None
    return table.get(key)


def moved_key(key, args, given):
    """The key of a `dg.vjp` / `dg.jvp` call without its pointers (`key`
    with the launch keys of args and seeds replaced by fastpath.moved_key's
    of both), or None (no key, or overlapping arrays that are not one view)."""
    if key is None:
        return None
    fn, outputs, names, akey, skey, rest = key
    both = fastpath.moved_key(((args, akey), (given, skey)))
    return None if both is None else (fn, outputs, names, both, rest)


def lookup_moved(kernel, mkey):
    """The recipe kept for the pointer-free key `mkey`, or None."""
    if mkey is None:
        return None
    table = kernel.__dict__.get("_moved")
    if not table:
        return None
    if not kernel._programs:  # programs dropped: start over
        table.clear()
        return None
    return table.get(mkey)


def keep(kernel, key, recipe, args, seeds, mkey=None) -> None:
    """After a planned call: keep its recipe under `key` (None: the call had
    a device array type the key did not know yet; it joins for the next)
    and under the pointer-free `mkey` (`moved_key`), when given."""
    if key is not None and any(type(seeds[n]) not in fastpath._SCALARS for n in recipe.baked):
        return  # a scalar tangent taken by value from a mutable object (a 0-d array)
    if mkey is not None:
        moved = kernel.__dict__.setdefault("_moved", {})
        if len(moved) >= _MAX:
            moved.clear()
        moved[mkey] = recipe
    if key is None:
        for a in list(args) + list(seeds.values()):  # device array types join the key
            t = type(a)
            if (t not in fastpath._ARRAYS and t not in fastpath._SCALARS
                    and fastpath._ptr_array(a)):
                fastpath._ARRAYS.add(t)
        return
    table = kernel.__dict__.setdefault("_plans", {})
    if len(table) >= _MAX:
        table.clear()
    table[key] = recipe


class Recipe:
    """One planned call. `bufs`: per fresh buffer (how, source) with how
    "empty", "zeros" or "copy" and source ("arg", i) or ("seed", name);
    `flat`: per argument of the derivative kernel ("arg", i), ("seed",
    name), ("buf", b) or ("val", float); `slots`: the dtypes of the Active
    scalars' slot arrays (appended to `flat`); `results`: (name, source)
    with source ("buf", b), ("slot", k), ("copy", name) (a copy of that
    seed) or ("narrow", (b, dtype)) (float32 buffer b rounded to a 16-bit
    dtype); `late`: a plain launch of the kernel follows (outputs=True);
    `baked`: the seeds taken by value (scalar tangents: kept only when
    immutable, so the key holds their value); `back`: (b, i) per float32
    scratch shadow b that the launch's argument i (a 16-bit array) takes
    back, rounded, after it (host-level dg.autodiff). Buffers "zeros32" and
    "copy32" are float32 scratch shadows (buffers.py)."""

    __slots__ = ("launcher", "mode", "bufs", "flat", "slots", "results", "late", "scope",
                 "grid", "block", "ftypes", "sig", "types", "kernel", "diff", "target",
                 "program", "facts", "aligned", "packed", "_scope", "_slot_make", "_makers", "baked",
                 "slot_sum", "absent", "back", "moved", "_race", "pre", "_src", "_mk",
                 "scratch")

    def __init__(self, call, mode, kinds, bufs, flat, slots, results, late, scope):
        # tuples of plain values: the garbage collector stops tracking them
        self.launcher, self.mode = call.launcher, mode
        self.bufs, self.flat, self.slots = tuple(bufs), tuple(flat), tuple(slots)
        self.results, self.late, self.scope = tuple(results), late, scope
        self.grid, self.block = call.launcher.grid, call.launcher.block
        diff = (mode, tuple(kinds))
        self.ftypes = tuple(L.flat_types(call.types, diff))
        self.sig = Signature(self.ftypes, call.sig.device, call.sig.gpu_id)
        self.types, self.kernel, self.diff = call.types, call.kernel, diff
        self.target = L.target_for(self.sig)
        self.program = self.facts = None
        self.aligned = ()  # fresh buffers the program takes as aligned
        #: from the key's second call: GPU (function, values, pointer positions,
        #: ...), CPU (packed launch, fresh buffers' descriptors, lock) or False
        self.packed = None
        self._scope = self._slot_make = self._makers = None  # from the first call (_resolve)
        self.baked = ()  # names of the seeds in `flat` by value ("val")
        #: None, or pre(args, bufs) run once the fresh buffers exist, before the
        #: launch (dg.atomic_max/min: the final values, hostdiff/rmw.py)
        self.pre = None
        #: a slot array -> its scalar's gradient (`dg.autodiff` keeps numpy
        #: scalars on the host: diff.py `_scalar`)
        self.slot_sum = M.slot_sum
        #: `dg.vjp` / `dg.jvp`: {parameter without a result: why}, the
        #: results a `Derivatives` dict; None: a plain dict (`dg.autodiff`)
        self.absent = None
        self.back = ()
        #: a replay with every array elsewhere (`run_moved`): moved.Moved, from
        #: its first such call
        self.moved = None
        self._race = None  # host programs: the race checker's switch at the first call
        #: from the first call (`_resolve`): per entry of `flat` (0 args, 1
        #: seeds, 2 bufs or 3 values, its key there) and the values by
        #: position; per fresh buffer (its maker, 0 args or 1 seeds, the key)
        self._src = self._mk = None
        #: seed keys the caller gives arrays of their own, overlapping no live
        #: array nor each other, as fresh buffers are (tape/consume.py)
        self.scratch = frozenset()

    def run(self, args, seeds: dict, first: bool) -> dict | None:
        """Execute the recipe; None when a fresh buffer breaks the program's
        alignment assumption (only when not `first`: the caller plans again)."""
        if fastpath.RECORD is not None:  # a dg.Tape records: refused (tape/record.py)
            fastpath.RECORD.host_diff(self.mode)
        if first:
            self._resolve(args, seeds)
        scope = self._scope
        if scope is None or scope[2]() == scope[1]:  # the host, or the GPU is current
            return self._run(args, seeds, first)
        with scope[0](scope[1]):
            return self._run(args, seeds, first)

    def run_moved(self, args, seeds: dict) -> tuple:
        """Execute the recipe on arrays laid out as at its first call but
        anywhere in memory (the caller found it by a key without pointers:
        `moved_key`, the tape's `layout_key`): no checks, no planning, the
        program kept, the launch packed once and the pointers put in. When
        the new pointers break an alignment or no-alias fact the kept
        program assumes, this call selects its program as a first call does
        (the recipe keeps its own). Returns (the results, whether the kept
        program ran: then `for_key` may keep a copy under this call's key)."""
        if fastpath.RECORD is not None:
            fastpath.RECORD.host_diff(self.mode)
        scope = self._scope
        if scope is None or scope[2]() == scope[1]:
            return self._run(args, seeds, False, True)
        with scope[0](scope[1]):
            return self._run(args, seeds, False, True)

    def lean(self) -> bool:
        """Can `replay_fresh` run this recipe: no Active scalars' slots, no
        finals before the launch (rmw), no scratch rounded back, no plain
        launch after, results only fresh buffers and seeds?"""
        return (self.pre is None and not self.slots and not self.back and not self.late
                and all(w in ("buf", "seed") for _n, (w, _x) in self.results))

    def replay_fresh(self, args, seeds: dict) -> list:
        """`run_moved` for a `lean` recipe whose caller reads its results
        itself (tape/reverse.py): returns the fresh buffers (`bufs` order)
        instead of a dict of results."""
        if fastpath.RECORD is not None:
            fastpath.RECORD.host_diff(self.mode)
        given = (args, seeds)
        bufs = [make(given[k][what]) for make, k, what in self._mk]
        src, values = self._src
        pools = (args, seeds, bufs, values)
        flat = [pools[k][what] for k, what in src]
        m = self.moved
        if m is None:
            m = self.moved = Moved(self, flat)
        scope = self._scope
        if scope is None or scope[2]() == scope[1]:
            if not m.run(self, flat):
                self._refacted(flat)
        else:
            with scope[0](scope[1]):
                if not m.run(self, flat):
                    self._refacted(flat)
        return bufs

    def _moved(self, flat) -> bool:
        """Launch `flat` (arrays anywhere): the kept program when its facts
        hold for these pointers, else the program this call's facts select."""
        m = self.moved
        if m is None:
            m = self.moved = Moved(self, flat)
        if m.run(self, flat):
            return True
        self._refacted(flat)
        return False

    def _refacted(self, flat) -> None:
        """`flat` breaks a launch fact of the kept program: run the program
        its own facts select (the recipe keeps its own)."""
        STATS["moved_refacted"] += 1
        facts = L.facts_for(flat, self.ftypes, self.target, self.grid, self.block)
        program = L.get_program(self.kernel, self.types, self.target, diff=self.diff,
                                facts=facts)
        L.run_program(program, flat, self.sig, self.grid, self.block)

    def _resolve(self, args, seeds) -> None:
        """What the first call learns once: the device scope, the function
        making the slot arrays and per fresh buffer the function making it
        (`_maker`): a function of the key (type, dtype, shape of its source)."""
        src = args[self.scope] if self.scope is not None else None
        self._scope = None
        if src is not None and M.is_device_array(src):
            from diffgpu.runtime.args import device_id
            from diffgpu.runtime.gpu import cupy_module
            cuda = cupy_module().cuda
            self._scope = (cuda.Device, device_id(src), cuda.runtime.getDevice)
        xp = M.xp_of(src) if src is not None else np
        self._slot_make = tuple((xp.zeros, M.ACTIVE_SLOTS, np.dtype(dt)) for dt in self.slots)
        self._makers = tuple(_maker(how, args[what] if where == "arg" else seeds[what])
                             for how, (where, what) in self.bufs)
        self._mk = tuple((make, 0 if where == "arg" else 1, what)
                         for make, (_how, (where, what)) in zip(self._makers, self.bufs))
        pools = ("arg", "seed", "buf")
        self._src = (tuple((pools.index(where), what) if where in pools else (3, p)
                           for p, (where, what) in enumerate(self.flat)),
                     tuple(what if where == "val" else None for where, what in self.flat))

    def for_key(self) -> "Recipe":
        """This recipe to keep under another call's launch key (whose
        pointers the kept program fits): the same plan and program, its own
        packed launches (a packed launch belongs to one key)."""
        twin = Recipe.__new__(Recipe)
        for name in Recipe.__slots__:
            if hasattr(self, name):
                setattr(twin, name, getattr(self, name))
        twin.packed = twin.moved = None
        return twin

    def _run(self, args, seeds, first, moved=False):
        if first:
            makers = [_planned(how) for how, _ in self.bufs]
            bufs = [make(args[what] if where == "arg" else seeds[what])
                    for make, (_how, (where, what)) in zip(makers, self.bufs)]
        else:
            given = (args, seeds)
            bufs = [make(given[k][what]) for make, k, what in self._mk]
        slots = [make(n, dtype) for make, n, dtype in self._slot_make]
        if self.pre is not None:
            self.pre(args, bufs)
        src, values = self._src
        pools = (args, seeds, bufs, values)
        flat = [pools[k][what] for k, what in src]
        flat += slots
        if first:
            self.facts = L.facts_for(flat, self.ftypes, self.target, self.grid, self.block)
            self.program = L.get_program(self.kernel, self.types, self.target,
                                         diff=self.diff, facts=self.facts)
            self.aligned = self._aligned_buffers(flat)
            self._race = racecheck_enabled() if self.target == "host" else None
            L.run_program(self.program, flat, self.sig, self.grid, self.block)
        elif moved:
            fit = self._moved(flat)
        else:
            for p in self.aligned:
                if _pointer(flat[p]) % ALIGN:
                    return None
            self._launch(flat)
        for b, i in self.back:  # float32 scratch shadows, rounded into the caller's
            M.narrow_into(args[i], bufs[b])
        if self.late:
            self.launcher(*args)
        if self.absent is None:
            out = {}
        else:
            out = Derivatives()
            out.absent = self.absent
        for name, (where, what) in self.results:
            if where == "buf":
                out[name] = bufs[what]
            elif where == "slot":
                out[name] = self.slot_sum(slots[what])
            elif where == "narrow":
                out[name] = M.narrow(bufs[what[0]], what[1])
            elif where == "seed":  # a seed updated in place (tape/consume.py)
                out[name] = seeds[what]
            else:
                out[name] = M.copy(seeds[what])
        return (out, fit) if moved else out

    def _aligned_buffers(self, flat) -> tuple:
        """Positions in `flat` of the fresh buffers and slot arrays whose
        alignment the program's launch facts assume."""
        aligned = getattr(self.facts, "aligned", ()) or ()
        fresh = [p for p, (where, _) in enumerate(self.flat) if where == "buf"]
        fresh += range(len(self.flat), len(flat))
        return tuple(p for p in fresh if p < len(aligned) and aligned[p])

    def _launch(self, flat) -> None:
        program = self.program
        if program.kind != "gpu":
            self._launch_host(flat)
            return
        device_id = self.sig.gpu_id or 0
        packed = self.packed
        if packed is None:  # the key's second call: pack once, keep the values
            ready = fastpath.Ready(program, self.sig, self.grid, self.block)
            ready.seen = True
            program.gpu.launch_cached(ready, flat, program.flat_types, device_id)
            fn, values, current, device = ready.packed
            self.packed = (fn, tuple(values), self._pointer_slots(program),
                           current, device, ready.grid)
            return
        fn, values, where, current, device, grid = packed
        if where:  # fresh buffers: their pointers into a copy of the kept values
            values, fresh = list(values), []
            for p, _offsets in where:
                fresh.append(np.uint64(_pointer(flat[p])))
            fresh = kernel_pointers()(tuple(fresh))  # one call out: runtime/gpu.py
            for (_p, offsets), ptr in zip(where, fresh):
                for o in offsets:
                    values[o] = ptr
            values = tuple(values)
        if current() == device_id:
            fn(grid, self.block, values)
        else:
            with device(device_id):
                fn(grid, self.block, values)

    def _launch_host(self, flat) -> None:
        """The CPU: the key's second call packs (runtime/cpu.py `pack`) and
        keeps the packed launch; later calls write the fresh buffers' data
        pointers into their kept memref descriptors (under a lock: the
        descriptors are shared) and run it."""
        program = self.program
        host, entry, names = program.host, program.entry, program.payload.get("arg_names")
        packed = self.packed
        if packed is None:
            done = host.pack(entry, flat, program.flat_types, self.grid, self.block)
            descs = self._descriptors(flat, done[2])
            self.packed = False if descs is None else (done, descs, threading.Lock())
            host.run_packed(entry, done, flat, names)
            return
        if packed is False:
            L.run_program(program, flat, self.sig, self.grid, self.block)
            return
        done, descs, lock = packed
        with lock:
            for p, d in descs:
                d.allocated = d.aligned = _pointer(flat[p])
            host.run_packed(entry, done, flat, names)

    def _descriptors(self, flat, keep, fresh=None):
        """[(flat position, its memref descriptor in `keep`)] of the fresh
        buffers and slot arrays (or of the positions `fresh`; `pack` keeps a
        descriptor and its pointer per array, a value per scalar, in order);
        None when `keep` does not look like that."""
        from diffgpu.types import ArrayType

        if fresh is None:
            fresh = {p for p, (where, _) in enumerate(self.flat) if where == "buf"}
            fresh |= set(range(len(self.flat), len(flat)))
        out, at = [], 0
        for p, t in enumerate(self.program.flat_types):
            if isinstance(t, ArrayType):
                d = keep[at] if at < len(keep) else None
                if getattr(d, "allocated", None) != (fastpath.host_pointer(flat[p]) or None):
                    return None
                if p in fresh:
                    out.append((p, d))
                at += 2
            else:
                at += 1
        return out

    def _pointer_slots(self, program, fresh=None) -> list:
        """[(flat position, [offsets of its pointer in the packed values])]
        of the fresh buffers and slot arrays, or of the positions `fresh`
        (runtime/gpu.py `pack_fast`)."""
        from diffgpu.types import ArrayType

        if fresh is None:
            fresh = {p for p, (where, _) in enumerate(self.flat) if where == "buf"}
            fresh |= set(range(len(self.flat), len(program.flat_types)))
        lean = program.gpu.lean
        out, at = [], 0
        for p, t in enumerate(program.flat_types):
            if isinstance(t, ArrayType) and lean and lean[p]:
                if p in fresh:
                    out.append((p, (at,)))
                at += 1 + t.ndim
            elif isinstance(t, ArrayType):
                if p in fresh:
                    out.append((p, (at, at + 1)))
                at += 3 + 2 * t.ndim
            else:
                at += 1
        return out


class Derivatives(dict):
    """The result of `dg.vjp` / `dg.jvp`: {parameter name: derivative}. A
    parameter without one (an integer, held constant, an output in vjp, an
    input in jvp) raises NoDerivativeError saying why, not a bare KeyError."""

    __slots__ = ("absent",)  # {name: why it has no result}, set by Recipe._run

    @user_facing
    def __missing__(self, name):
        why = self.absent.get(name) if isinstance(name, str) else None
        raise NoDerivativeError(why or f"{name!r} is not a parameter of the kernel")


_PLANNED = {"copy": "copy", "empty": "empty_like", "zeros": "zeros_like",
            "zeros32": "zeros32_like", "copy32": "copy32"}


def _planned(how: str):
    """buffers.py's function making a fresh buffer of kind `how` ("copy",
    "empty", "zeros", or a float32 scratch: "zeros32", "copy32"), looked up
    at each planned call."""
    return getattr(M, _PLANNED[how])


def _maker(how: str, src):
    """What a replayed call makes a fresh buffer like `src` with: `_planned(how)`
    made from numpy's or CuPy's own for the arrays the launch key knows
    (their type, dtype and shape are the key's), so that a replay calls
    nothing of buffers.py before its launch."""
    t = type(src)
    if t is not np.ndarray and t not in fastpath._ARRAYS:  # never replayed (no key)
        return _planned(how)
    xp = M.xp_of(src)
    if how == "copy":  # `asarray` of these is the array itself
        return lambda a: xp.array(a, copy=True)
    if how == "copy32":
        return lambda a: a.astype(np.float32, order="C")
    if how == "zeros32":
        shape = src.shape
        return lambda a: xp.zeros(shape, np.float32)
    make, shape, dtype = xp.empty if how == "empty" else xp.zeros, src.shape, src.dtype
    return lambda a: make(shape, dtype)


STATS = fastpath.STATS


__all__ = ["Derivatives", "Recipe", "diff_recipe", "lookup", "keep"]

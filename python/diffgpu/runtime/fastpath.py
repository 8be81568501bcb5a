"""The launch fast path: full checks once per argument signature, then only
what depends on the values; a launch equal to an earlier one reuses all of it.

Three levels, each taken only when the one before it does not apply. The
first is `launch` here (its key, one look-up, one run); the other two are
driver/launch.py `bind`, which `launch` calls on a miss and which returns
the `Ready` it stored (or runs the launch itself): the runtime never
imports the compiler, and the slow path never calls back into this module
(docs/architecture.md, "A launch, one way").

| level    | taken when                                   | a launch then                              |
|----------|----------------------------------------------|--------------------------------------------|
| reuse    | its *key* equals an earlier launch's key     | runs the program with the packed arguments kept for the key (from its second launch on): no checks, no facts, no packing |
| checked  | its *token* has an entry                     | checks the per-value properties, computes the launch facts (runtime/specialize.py `facts_of`, from the values the checks read), looks the program up per (facts, GPU), packs |
| full     | otherwise                                    | runs runtime/args.py's checks (and raises their errors) |

A launch's *token* is, per argument, its Python type, and for arrays also
the dtype (by identity: an entry keeps its dtype objects alive, so their
ids are not reused) and ndim: everything `infer_signature` (runtime/args.py)
checks except per-value properties. The first launch with a token runs the
full checks; when it succeeds, `remember` stores an `Entry` under the token
in the kernel. Later launches with that token check only:

| argument       | checked on every launch                                  |
|----------------|----------------------------------------------------------|
| numpy array    | writeable; strides multiples of the item size            |
| device array   | strides multiples of the item size; all on one GPU       |
| Python int     | fits in int64                                            |

A launch's *key* is everything the checks, the facts, the program and the
packed arguments depend on, read with one attribute access each:

    (grid, block, specialize.ENABLED,
     per numpy array:  type, dtype, data pointer, shape, strides, writeable,
     per device array: type, dtype, data pointer, shape, strides, GPU id,
     per scalar:       type, value (zero with its sign: 0.0 == -0.0),
     the race detector's switch (launches without device arrays))

Everything a check or a fact reads is a function of these (C-contiguity of
shape and strides, alignment of the pointer, overlap of the address ranges),
so a launch with an equal key passes the same checks and gets the same
facts, program and packed arguments: they are kept in a `Ready` per key
(`_HOT_MAX` per kernel). A reshape in place (`a.shape = ...`), a writeable
flag flipped, a freed array's pointer reused by another layout, another GPU:
each changes the key, and the launch goes down the checked level again. Any
doubt (a check that fails, an unknown argument type) sends the launch down
the full path, so errors stay exactly those of runtime/args.py.

Device arrays take this path when their type exposes CuPy's attributes
(`.data.ptr`, `.shape`, `.strides`, `.dtype`, `.flags.c_contiguous`,
`.device.id`) and its arrays are writeable; others (torch tensors, plain
`__cuda_array_interface__` objects) always take the full path.
"""
from __future__ import annotations

import ctypes
import platform

import numpy as np

import collections
import os

from diffgpu.runtime import specialize
from diffgpu.runtime.racecheck import ENV as _RACE_ENV, _enabled as _race_var
from diffgpu.types import ArrayType

#: counters: "compile" (built from source), "disk_hit", "memory_hit" (driver/launch.py);
#: launches on the fast path: "fast_checked" (per-value checks), "fast_reuse" (an
#: earlier launch reused); "vjp_plan", "vjp_reuse", "vjp_moved" (a plan found by its
#: layouts: `moved_key`), "autodiff_moved", "moved_pack", "moved_refacted"
#: (hostdiff/replay.py `Recipe.run_moved`)
STATS: collections.Counter = collections.Counter()
_ON = ("1", "true", "yes", "on")

_SCALARS = frozenset((float, int, np.float32, np.float64, np.int32, np.int64))
#: array types with fast attributes; device types join on first sight
_ARRAYS: set = {np.ndarray}
_INT64 = (-(2**63), 2**63 - 1)
#: the recording dg.Tape's hook (hostdiff/tape/record.py sets it while a tape
#: records; `launch` and a replayed dg.vjp/dg.autodiff read it): None otherwise
RECORD = None
#: launch keys kept per kernel, then all dropped (a loop over ever new
#: scalars or arrays); a model's layers launching one kernel each on their
#: own arrays fit (about 2 KB per key)
_HOT_MAX = 1024


def _data_offset():
    """Where a numpy array object keeps its data pointer (right after the
    object header, numpy's `PyArrayObject`), or None when that cannot be
    confirmed here: reading it costs 0.1 us, `__array_interface__` 1 us."""
    if platform.python_implementation() != "CPython":  # id() is the address there only
        return None
    off = object.__basicsize__
    base = np.arange(64, dtype=np.float64).reshape(8, 8)
    for a in (base, base[3:, ::-2], base.T[1:], np.zeros(0, np.float32), base[0, :0]):
        if ctypes.c_void_p.from_address(id(a) + off).value != a.__array_interface__["data"][0]:
            return None
    return off


_OFFSET = _data_offset()
_AT = ctypes.c_void_p.from_address


def host_pointer(a: np.ndarray) -> int:
    """The data pointer of a numpy array (exactly np.ndarray, not a subclass)."""
    if _OFFSET is None:
        return a.__array_interface__["data"][0]
    return _AT(id(a) + _OFFSET).value or 0


def launch_key(args, grid, block):
    """The key of a launch (module docstring), or None when an argument's
    type is not fast-path material."""
    key = [grid, block, specialize.ENABLED]
    device = False
    off = _OFFSET
    for a in args:
        t = type(a)
        if t is np.ndarray:
            ptr = _AT(id(a) + off).value if off is not None else host_pointer(a)
            key += (t, a.dtype, ptr, a.shape, a.strides, a.flags.writeable)
        elif t in _ARRAYS:
            key += (t, a.dtype, a.data.ptr, a.shape, a.strides, a.device.id)
            device = True
        elif t in _SCALARS:
            key += (t, a if a else (a, repr(a)))  # -0.0 == 0.0, but other bits
        else:
            return None
    if not device:  # a host program: the race-checked variant apart
        race = _race_var.get()  # racecheck.enabled(), read here: no call out and back
        key.append(race if race is not None
                   else os.environ.get(_RACE_ENV, "").strip().lower() in _ON)
    return tuple(key)


def moved_key(pairs):
    """The launch keys of `pairs` ((values, their `launch_key`), ...) with
    each array's data pointer replaced by its alias class: the index of the
    first array of all the pairs' that is the same view (pointer, shape,
    strides, dtype), else its own. None when two arrays of the same kind of
    memory share a byte without being the same view (the byte ranges are
    compared: a caller plans such calls every time). What a checked call
    reads of the pointers (the alias groups, overlaps) is a function of
    this key; alignment is not in it (the caller checks it per call)."""
    out, seen = [], []
    for values, key in pairs:
        key, at = list(key), 3
        for a in values:
            t = type(a)
            if t in _SCALARS:
                at += 2
                continue
            ptr, shape, strides = key[at + 2], key[at + 3], key[at + 4]
            lo = hi = ptr
            for n, s in zip(shape, strides):
                if n == 0:
                    hi = lo = ptr
                    break
                if s >= 0:
                    hi += (n - 1) * s
                else:
                    lo += (n - 1) * s
            else:
                hi += a.dtype.itemsize
            me = (ptr, shape, strides, key[at + 1], t is np.ndarray)
            for k, (other, olo, ohi) in enumerate(seen):
                if other == me:
                    cls = k
                    break
                if other[4] == me[4] and lo < ohi and olo < hi:
                    return None
            else:
                cls = len(seen)
                seen.append((me, lo, hi))
            key[at + 2] = cls
            at += 6
        out.append(tuple(key))
    return tuple(out)


def token(args):
    """The token of `args`, or None when one is not fast-path material."""
    out = []
    for a in args:
        t = type(a)
        if t in _ARRAYS:  # the dtype by identity (hashing one is slow): see Entry.dtypes
            out.append((t, id(a.dtype), a.ndim))
        elif t in _SCALARS:
            out.append(t)
        else:
            return None
    return tuple(out)


def _ptr_array(x) -> bool:
    """Does `x` (a device array) expose CuPy's attributes consistently with
    its `__cuda_array_interface__`, writeable?"""
    try:
        cai = x.__cuda_array_interface__
        ptr = x.data.ptr
        ok = (isinstance(ptr, int) and ptr == int(cai["data"][0]) and not cai["data"][1]
              and tuple(x.shape) == tuple(cai["shape"])
              and isinstance(x.flags.c_contiguous, bool) and isinstance(x.device.id, int)
              and isinstance(x.nbytes, int)
              and np.dtype(x.dtype) == np.dtype(cai["typestr"]) and x.ndim == len(cai["shape"]))
        strides = cai.get("strides")
        return ok and (strides is None or tuple(strides) == tuple(x.strides))
    except Exception:
        return False


class Entry:
    """What the full checks established for one token."""

    __slots__ = ("sig", "layout", "ints", "programs", "dtypes")

    def __init__(self, sig, args):
        self.sig = sig
        self.dtypes = [a.dtype for a in args if type(a) in _ARRAYS]  # ids in the token
        #: per array argument: (position, item size, numpy array?, where its
        #: fields start in the launch key)
        self.layout, at = [], 3  # after grid, block and the specialisation switch
        for i, t in enumerate(sig.types):
            if isinstance(t, ArrayType):
                self.layout.append((i, np.dtype(t.dtype).itemsize, type(args[i]) is np.ndarray,
                                    at))
            at += 6 if isinstance(t, ArrayType) else 2
        self.ints = [i for i, a in enumerate(args) if type(a) is int]
        self.programs: dict = {}  # (fact values, gpu id, race-checked) -> program


class Table(dict):
    """A kernel's `_fast`: token -> Entry, `hot`: launch key -> Ready, and
    `last`: (key, Ready) of the latest reuse, compared before `hot` is
    looked up (a loop repeating one launch: an equality test, no hash).
    Clearing it clears all (tests that drop programs clear it)."""

    def __init__(self):
        super().__init__()
        self.hot: dict = {}
        self.last = None

    def clear(self) -> None:
        for ready in self.hot.values():  # (a recording tape may hold some: `Ready.live`)
            ready.live = False
        super().clear()
        self.hot.clear()
        self.last = None


class Ready:
    """Everything one launch key selects: the program, the signature (with
    its GPU), the geometry the program runs on (a coarsened kernel's grid is
    smaller) and the packed arguments. Those are kept from the key's second
    launch on (`seen`: it had one before): a loop over ever new arrays never
    repeats a key, and keeping its packed arguments would only give the
    garbage collector more to walk (10 us per launch on the CPU path).
    `live`: its Table has not been cleared since (a recording dg.Tape keeps
    the Ready of a launch with its plan and runs it while it is live and the
    kernel has programs: `run_ready`)."""

    __slots__ = ("program", "sig", "grid", "block", "packed", "seen", "live")

    def __init__(self, program, sig, grid, block):
        if program.collectives:  # whole warps only (runtime/launch_checks.py)
            from diffgpu.runtime.launch_checks import check_block
            check_block(program, block)
        self.program, self.sig, self.block = program, sig, block
        self.grid = gpu_grid(program, grid) if program.kind == "gpu" else grid
        self.packed = None
        self.seen = False
        self.live = True

    def run(self, args) -> None:
        """Run the program on `args`, packing them unless kept (from the
        key's second launch on: `seen`)."""
        program = self.program
        if program.kind == "gpu":
            program.gpu.launch_cached(self, args, program.flat_types, self.sig.gpu_id or 0)
            return
        host, packed = program.host, self.packed
        if packed is None:
            packed = host.pack(program.entry, args, program.flat_types, self.grid, self.block)
            if self.seen:
                self.packed = packed
        host.run_packed(program.entry, packed, args, program.payload.get("arg_names"))


def gpu_grid(program, grid) -> tuple:
    """The hardware grid a GPU `program` runs the logical `grid` on: x
    divided by its coarsening factor, y by its rows per block (ceil), y
    and z folded when beyond the GPU's limit (runtime/args.py
    `hardware_grid`). LaunchError when the program
    was not compiled for that fold (its `grid_fold`, from the payload): a
    folded grid never runs a program that reads the hardware's y and z."""
    from diffgpu.runtime.args import grid_fold, hardware_grid

    rows = getattr(program, "rows", ())  # R rows of y per block (lowering/coarsen/rows.py)
    if rows:
        grid = (grid[0], -(-grid[1] // rows[0]), grid[2])
    fold = grid_fold(grid)
    if tuple(program.grid_fold) != fold:
        from diffgpu.errors import LaunchError
        what = (f"for grids of y, z extents {tuple(program.grid_fold)}" if program.grid_fold
                else "for grids whose y and z extents fit the GPU (at most 65535)")
        raise LaunchError(f"grid {grid}: the program of '{program.entry}' was compiled {what}; "
                          "a grid beyond the GPU's y / z limit needs a program compiled for "
                          "it (dg.compile(..., grid=...) for a bundle)")
    if fold:
        grid = hardware_grid(grid)
    coarsen = program.coarsen
    return grid if coarsen == 1 else (grid[0] // coarsen,) + tuple(grid[1:])


def remember(kernel, args, sig) -> None:
    """After a launch passed the full checks: store its token's entry."""
    if sig.device == "gpu":
        for a in args:
            t = type(a)
            if t not in _ARRAYS and t not in _SCALARS and _ptr_array(a):
                _ARRAYS.add(t)
    tok = token(args)
    fast = kernel.__dict__.get("_fast")
    if type(fast) is not Table:  # absent, or replaced by a plain dict
        fast = kernel.__dict__["_fast"] = Table()
    if tok is not None and tok not in fast:
        fast[tok] = Entry(sig, args)


def check_values(entry, args, key):
    """(GPU id or None for the host, per argument what `specialize.facts_of`
    reads) of a launch with a known token and launch `key` (whose fields it
    reads: no attribute twice), or None when a per-value check fails (the
    full path then reports it)."""
    gpu_id = None
    arrays = [None] * len(args)
    for i, item, on_host, at in entry.layout:
        if on_host:
            if not key[at + 5]:  # writeable
                return None
        else:
            did = key[at + 5]
            if gpu_id is None:
                gpu_id = did
            elif did != gpu_id:
                return None
        strides = key[at + 4]
        for st in strides:
            if st % item:
                return None
        arrays[i] = (key[at + 2], key[at + 3], strides, item, args[i].flags.c_contiguous)
    for i in entry.ints:
        if not _INT64[0] <= args[i] <= _INT64[1]:
            return None
    return gpu_id, arrays


def launch(kernel, args, grid, block, bind) -> None:
    """One way through a launch: its key, one look-up, one run. On a miss
    `bind(kernel, args, grid, block, key)` (driver/launch.py: checks, facts,
    compile or load, all outside the runtime) returns the `Ready` it stored
    under the key, or None when it ran the launch itself (the full path); it
    never calls back here."""
    if RECORD is not None and RECORD.launch(kernel, args, grid, block, bind):
        return  # recorded (and run) by a dg.Tape
    run_keyed(kernel, args, grid, block, bind, launch_key(args, grid, block))


def run_keyed(kernel, args, grid, block, bind, key):
    """`launch` of a launch whose `key` is known (a recording dg.Tape has
    read it), past the tape's hook: the `Ready` it ran, None when the full
    path ran it."""
    fast = kernel.__dict__.get("_fast")
    ready = None
    if key is not None and type(fast) is Table and kernel._programs:
        last = fast.last  # replaced as one tuple: thread-safe
        if last is not None and last[0] == key:
            ready = last[1]
        else:
            ready = fast.hot.get(key)
            if ready is not None:
                fast.last = (key, ready)
    if ready is None:
        ready = bind(kernel, args, grid, block, key)
        if ready is None:
            return None
    STATS["fast_reuse" if ready.seen else "fast_checked"] += 1  # (`run_ready`, inline)
    ready.run(args)
    ready.seen = True
    return ready


def run_ready(ready, args) -> None:
    """Run the launch `ready` was found for (by `run_keyed`, or kept by a
    recording tape with its key while `ready.live` and the kernel has
    programs) on `args`."""
    STATS["fast_reuse" if ready.seen else "fast_checked"] += 1
    ready.run(args)
    ready.seen = True

"""Planning one `dg.vjp` / `dg.jvp` call: roles, alias groups, buffers and
the activities of the derivative kernel (see functional.py for the API).

The read/write facts of a kernel signature come from lowering/autodiff/functional/access.py. They
are cached like compiled kernels (memory, then the disk cache under the key
of the signature with diff `("access",)`), so a machine without MLIR runs
`dg.vjp` on prepared signatures.

Reverse mode, per variable (an alias group of float arrays):

| role   | shadow passed                  | activity | result                |
|--------|--------------------------------|----------|-----------------------|
| input  | zeros                          | dup      | shadow = gradient     |
| output | a copy of the cotangent        | dup      | -                     |
| in-out | a copy of the cotangent        | dup      | shadow = gradient     |

(Enzyme's convention: read-only shadows accumulate, overwritten elements are
consumed, so shadows D become J^T D.) Where the facts and the launch
geometry prove it, the functional kinds replace `dup` (`functional_kind`):
`cot` for an output stored once per element or an array only added to (the
cotangent itself, read only; no primal writes), `grad` for an input read at
one global-id index (a new array the kernel writes once per element;
zero-filled first when the launch does not reach every element), or at
several constant offsets of global ids no two threads share (`x[r, j]`,
`x[r, j + 256]`: lowering/autodiff/functional/owned.py; an output stored
so is `cot`), or for a
1-D stencil input `x[gid(0) + k]` when the launch covers it and every
written array is `cot` (thread j gathers its element's adjoint, written once:
lowering/autodiff/functional/transpose.py). Primal
arrays the kernel writes are replaced by scratch buffers (outputs) or
copies (in-out) unless `outputs=True`. Parameters held constant
(`dg.Const`, not named in `wrt=`: `Call.hold`) get the role "const": no
activity, no seed, no result (`Call.why_none` says why, for the results'
`NoDerivativeError`). Forward mode passes an input's tangent itself (the tangent
code only reads the shadows of arrays it never stores into), zeros for an
output and a copy of the tangent for an in-out array; an output whose
every element the launch stores exactly once (`written_once`: the
analysis's `store_key` and `store_guards`, checked against the shapes and
the geometry) gets an uninitialised buffer instead of zeros.
"""
from __future__ import annotations

import numbers
import weakref

import numpy as np

from diffgpu.hostdiff import buffers as M
from diffgpu.lowering.autodiff.functional import owned
from diffgpu.errors import ArgumentTypeError, LaunchError
from diffgpu.runtime.args import (arg_type, check_arity, describe_arg, device_id,
                                  infer_signature)
from diffgpu.types import ArrayType, is_float

#: kernel -> {types: [access dict per parameter]}
_ACCESS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
ACCESS_DIFF = ("access",)


def access_facts(kernel, types) -> list:
    """The read/write facts of `kernel` for `types` (lowering/autodiff/functional/access.py)."""
    table = _ACCESS.setdefault(kernel, {})
    facts = table.get(tuple(types))
    if facts is not None:
        return facts
    from diffgpu.runtime.store import cache

    key = cache.cache_key(kernel, types, "any", ACCESS_DIFF)
    payload = cache.load(key)
    if payload is not None and payload.get("kind") == "access" and isinstance(
            payload.get("params"), list) and len(payload["params"]) == len(types):
        facts = payload["params"]
    else:
        facts = _analyze(kernel, types)
        cache.store(key, {"kind": "access", "name": kernel.name, "params": facts})
    table[tuple(types)] = facts
    return facts


def _analyze(kernel, types) -> list:
    from diffgpu.driver.launch import _compiler_call, build_module

    src = build_module(kernel, types, "host")

    def run():
        from diffgpu.lowering.autodiff.functional.rmw_access import rmw_kinds
        from diffgpu.lowering.autodiff.functional.access import analyze_text
        facts = analyze_text(src.text)
        for f, k in zip(facts, rmw_kinds(src.text)):  # dg.atomic_max/min targets (rmw.py)
            if f.get("array"):
                f["rmw"] = k
        return facts
    return _compiler_call(run, f"the read/write analysis of {kernel.name}")



def _result_dtype(a):
    """The dtype a 16-bit array's gradient is rounded to (buffers.narrow): a
    numpy or CuPy array's own numpy dtype (CuPy 14's bfloat16 is one: CuPy
    rounds), a torch tensor's by name (bfloat16: torch rounds)."""
    dt = getattr(a, "dtype", None)
    return dt if isinstance(dt, np.dtype) else M.dtype_of(a)

class Call:
    """One launch's arguments, checked, with roles and alias groups.
    `consts`: the positions passed as dg.Const; `wrt`: None or the names
    to differentiate with respect to (`hold`)."""

    def __init__(self, launcher, args, fn: str, consts=(), wrt=None):
        self.launcher, self.fn = launcher, fn
        kernel = self.kernel = launcher.kernel
        self.names = kernel.arg_names
        check_arity(args, self.names, kernel.name)
        self.args = list(args)
        self.sig = infer_signature(self.args, self.names, kernel.name)
        self.types = self.sig.types
        facts = access_facts(kernel, self.types)
        self.facts = facts
        self.role = []
        for t, f in zip(self.types, facts):
            if not is_float(t):
                self.role.append("const")
            elif not isinstance(t, ArrayType):
                self.role.append("scalar")
            elif f["write"] and f["read"]:
                self.role.append("inout")
            elif f["write"]:
                self.role.append("output")
            else:
                self.role.append("input")  # read, or not used at all
        self.groups = self._groups()
        self.consts, self.wrt, self.held = frozenset(consts), wrt, frozenset()
        self.held = self.hold()

    def hold(self) -> frozenset:
        """The positions held constant: dg.Const arguments and, with `wrt`,
        the float inputs and scalars it does not name. Their role becomes
        "const" (no activity, no seed, no result); arrays the kernel writes
        cannot be held."""
        names, wrt = self.names, self.wrt
        for i in sorted(self.consts):
            if self.role[i] in ("output", "inout"):
                raise LaunchError(f"dg.{self.fn}: dg.Const for '{names[i]}', "
                                  f"{self._role_text([i])} of {self.kernel.name}: only what "
                                  "the kernel only reads (arrays, float scalars) can be held "
                                  "constant")
        held = {i for i in self.consts if self.role[i] != "const"}
        for n in wrt or ():
            if n not in names:
                raise LaunchError(f"dg.{self.fn}: wrt= names '{n}', which is not a "
                                  f"parameter of {self.kernel.name}({', '.join(names)})")
            i = names.index(n)
            if self.role[i] == "output":
                raise LaunchError(f"dg.{self.fn}: wrt= names '{n}', an output of "
                                  f"{self.kernel.name} (only written): wrt= names what to "
                                  "differentiate with respect to (what the kernel reads)")
            if i in self.consts or self.role[i] == "const":
                raise LaunchError(f"dg.{self.fn}: wrt= names '{n}', {self.why_none(i)}")
        if wrt is not None:
            held |= {i for i, r in enumerate(self.role)
                     if r in ("input", "scalar") and names[i] not in wrt}
        for g in self.groups:
            mixed = [i for i in g if i not in held]
            if len(mixed) not in (0, len(g)):
                h = next(i for i in g if i in held)
                raise LaunchError(f"dg.{self.fn}: '{names[h]}' is held constant "
                                  f"({self._held_by(h)}) but is the same array as "
                                  f"'{names[mixed[0]]}', which is differentiated; pass a "
                                  "copy for one of them")
        self.groups = [g for g in self.groups if g[0] not in held]
        for i in held:
            self.role[i] = "const"
        return frozenset(held)

    def _held_by(self, i) -> str:
        return "dg.Const" if i in self.consts else "not named in wrt="

    def why_none(self, i) -> str:
        """Why parameter `i` takes no seed and has no result in this mode:
        "'x', held constant (dg.Const)", "'n', an integer scalar ..."."""
        n, t, fn = self.names[i], self.types[i], self.fn
        if i in self.held or i in self.consts:
            return f"held constant ({self._held_by(i)})"
        if self.role[i] == "const" and isinstance(t, ArrayType):
            return f"an {t.dtype} array: integer arrays are not differentiated"
        if self.role[i] == "const":
            v = self.args[i]
            return (f"an integer scalar ({type(v).__name__} {v!r}): integers are not "
                    f"differentiated; pass {float(v)!r} (a float) to differentiate it")
        if fn == "vjp" and self.role[i] == "output":
            return (f"an output of {self.kernel.name} (only written): dg.vjp returns the "
                    "gradients of what the kernel reads")
        if fn == "vjp" and self.wrt is not None and n not in self.wrt:
            return "not named in wrt="
        what = "a float scalar" if self.role[i] == "scalar" else \
            f"{self._role_text([i])} of {self.kernel.name} (never written)"
        return f"{what}: dg.jvp returns the tangents of what the kernel writes"

    def _groups(self) -> list:
        """Alias groups of float arrays: lists of parameter positions."""
        arrays = [i for i, r in enumerate(self.role) if r in ("input", "output", "inout")]
        lay = {i: M.layout(self.args[i]) for i in arrays}
        groups = []
        for i in arrays:
            for g in groups:
                j = g[0]
                if lay[i] == lay[j]:
                    g.append(i)
                    break
                if M.overlap(self.args[i], self.args[j], lay[i], lay[j]):
                    raise LaunchError(
                        f"dg.{self.fn}: {describe_arg(i, self.names)} and "
                        f"{describe_arg(j, self.names)} overlap in memory without being "
                        "the same array; pass separate arrays (or the same array twice)")
            else:
                groups.append([i])
        return groups

    def written(self, g) -> bool:
        return any(self.role[i] in ("output", "inout") for i in g)

    def read(self, g) -> bool:
        return any(self.role[i] in ("input", "inout") for i in g)

    # -- seeds (cotangents / tangents) --------------------------------------
    def seeds(self, given: dict, what: str, wanted) -> dict:
        """{group index: the name its one seed is given under} after checking
        names, types, shapes and devices; `wanted(group)` says which groups
        need one. A seed for a parameter that takes none is reported before
        any missing seed."""
        names = self.names
        for k in given:
            if k not in names:
                raise LaunchError(f"dg.{self.fn}: {what} for '{k}', which is not a parameter "
                                  f"of {self.kernel.name}({', '.join(names)})")
        for k in given:
            i = names.index(k)
            r = self.role[i]
            if r == "scalar" and what == "cotangents":
                raise LaunchError(f"dg.{self.fn}: cotangent for '{k}', a scalar input; "
                                  "cotangents are for the arrays the kernel writes"
                                  f"{self._seeded(wanted)}")
            if r == "const":
                raise LaunchError(f"dg.{self.fn}: {what} for '{k}', {self.why_none(i)}")
            g = next((g for g in self.groups if i in g), None)
            if g is not None and not wanted(g):
                raise LaunchError(f"dg.{self.fn}: {what} for '{k}', {self._why_not(g, what)}"
                                  f"{self._seeded(wanted)}")
        out = {}
        for gi, g in enumerate(self.groups):
            if not wanted(g):
                continue
            mine = [names[i] for i in g if names[i] in given]
            if not mine:
                alias = (f" (or {', '.join(repr(names[i]) for i in g[1:])}, the same array)"
                         if len(g) > 1 else "")
                raise LaunchError(f"dg.{self.fn}: missing {what[:-1]} for '{names[g[0]]}'"
                                  f"{alias} ({self._role_text(g)} of {self.kernel.name})")
            if len(mine) > 1:
                raise LaunchError(f"dg.{self.fn}: {', '.join(mine)} are the same array; "
                                  f"give its {what[:-1]} once")
            self._check_seed(g[0], names.index(mine[0]), given[mine[0]], what)
            out[gi] = mine[0]
        return out

    def _seeded(self, wanted) -> str:
        """` (y, z)`: the parameters that take a seed, or ``."""
        take = [self.names[g[0]] for g in self.groups if wanted(g)]
        return f" ({', '.join(take)})" if take else ""

    def _role_text(self, g) -> str:
        if self.written(g) and self.read(g):
            return "an in-out array"
        return "an output" if self.written(g) else "an input"

    def _why_not(self, g, what: str) -> str:
        if what == "cotangents":
            return (f"{self._role_text(g)} of {self.kernel.name} (never written), not an "
                    "output: cotangents are for the arrays the kernel writes")
        return (f"{self._role_text(g)} of {self.kernel.name} (never read), not an input: "
                "tangents are for the arrays and scalars the kernel reads")

    def _check_seed(self, i: int, named: int, seed, what: str):
        arr = self.args[i]
        if (type(seed) is type(arr) and getattr(seed, "dtype", None) == arr.dtype
                and tuple(getattr(seed, "shape", ())) == tuple(arr.shape)
                and (not M.is_device_array(seed) or device_id(seed) == device_id(arr))):
            return seed  # same kind of array, dtype, shape and device
        where = f"dg.{self.fn}: {what[:-1]} of '{self.names[named]}'"
        t, _ = arg_type(seed, where)
        if not isinstance(t, ArrayType):
            raise LaunchError(f"{where}: expected an array like the argument, got {t}")
        if t != self.types[i]:
            raise LaunchError(f"{where} has type {t}, the argument {self.types[i]}; "
                              "they must match")
        if M.is_device_array(seed) != M.is_device_array(arr):
            raise LaunchError(f"{where} and the argument live on different devices "
                              "(numpy vs CUDA)")
        if M.shape_of(seed) != M.shape_of(arr):
            raise LaunchError(f"{where} has shape {M.shape_of(seed)}, the argument "
                              f"{M.shape_of(arr)}; they must match")
        if M.is_device_array(seed) and device_id(seed) != device_id(arr):
            raise LaunchError(f"{where} is on GPU {device_id(seed)}, the argument on GPU "
                              f"{device_id(arr)}")
        return seed

    def scalar_seeds(self, given: dict) -> dict:
        out = {}
        for i, r in enumerate(self.role):
            if r != "scalar":
                continue
            n = self.names[i]
            if n not in given:
                raise LaunchError(f"dg.{self.fn}: missing tangent for '{n}' (a float scalar "
                                  f"input of {self.kernel.name}); pass 0.0 to hold it fixed")
            v = given[n]
            if not _real(v):
                raise ArgumentTypeError(f"dg.{self.fn}: tangent of '{n}' must be a real "
                                        f"number (a float), got {type(v).__name__} {v!r}")
            out[i] = float(v)
        return out

    # -- functional kinds (lowering/autodiff/functional/kinds.py) -------------------
    def _unique(self, dims) -> bool:
        """The thread-unique index naming `dims` is one thread's: every
        other geometry dimension has one block and one thread."""
        grid, block = self.launcher.grid, self.launcher.block
        return all(grid[d] == 1 and block[d] == 1 for d in range(3) if d not in dims)

    def functional_kind(self, g, outputs: bool):
        """"cot", "grad" or None (Enzyme's convention) for alias group `g`."""
        if len(g) != 1:
            return None
        i = g[0]
        f, role = self.facts[i], self.role[i]
        if role == "output" and not outputs and f.get("store_key") is not None:
            dims = {d for d in f["store_key"] if d is not None}
            return "cot" if self._unique(dims) else None
        if role == "inout" and not outputs and f.get("accumulate_only"):
            return "cot"  # out[k] += v: final = initial + sum, the cotangent passes through
        if role == "input" and f.get("load_key") is not None:
            return "grad" if self._unique(set(f["load_key"])) else None
        grid, block = self.launcher.grid, self.launcher.block
        if (role == "output" and not outputs and f.get("store_offsets")
                and owned.unique(f["store_offsets"], grid, block)):
            return "cot"  # y[r, j], y[r, j + 256], ...: each element one thread's
        if (role == "input" and f.get("load_offsets") and not f.get("stencil")
                and not f.get("stencil_dims") and owned.unique(f["load_offsets"], grid, block)):
            return "grad"  # a register per offset (owned_grad.py)
        if role == "input" and f.get("stencil") and self._unique({0}) and self.covered(i):
            return "grad"  # gathered (lowering/autodiff/functional/transpose.py)
        if role == "input" and f.get("stencil_dims") and self._unique(set(f["stencil_dims"])):
            return "grad"  # gathered, any coverage (lowering/autodiff/functional/gather.py)
        return None

    def _gatherable(self, fk) -> list:
        """`fk` with a stencil's `grad` demoted to Enzyme's convention unless
        every array the kernel writes is `cot` (the gathered replay of the
        reverse body must observe no write of its own)."""
        ok = all(fk[gi] == "cot" for gi, g in enumerate(self.groups) if self.written(g))
        def gathered(f):  # not a load_key, nor owned offsets (owned_grad.py)
            owned_ = f.get("load_offsets") and not (f.get("stencil") or f.get("stencil_dims"))
            return f.get("load_key") is None and not owned_
        return [None if (k == "grad" and gathered(self.facts[g[0]]) and not ok)
                else k for g, k in zip(self.groups, fk)]

    def covered(self, i) -> bool:
        """Every element of array `i` is one thread's global-id index."""
        grid, block = self.launcher.grid, self.launcher.block
        if self.facts[i].get("stencil_dims"):
            return True  # gather.py's threads walk every element (grid-stride)
        if self.facts[i].get("load_offsets") and not self.facts[i].get("stencil"):
            return owned.covered(self.facts[i]["load_offsets"], M.shape_of(self.args[i]),
                                 grid, block)
        key, shape = self.facts[i]["load_key"], M.shape_of(self.args[i])
        if key is None and self.facts[i].get("stencil"):
            key = [0]  # a 1-D stencil: x[gid(0) + k]
            if len(shape) != 1:
                return False
        if len(set(key)) != len(key):  # x[i, i]: only the diagonal is anyone's
            return False
        return all(grid[d] * block[d] >= n for d, n in zip(key, shape))

    def written_once(self, i) -> bool:
        """Output `i` has each element stored by exactly one thread in this
        launch: stored once at a global-id index (`store_key`: one store,
        or exclusive branches' stores), only under guards `gid(d) < len(A,
        k)` and on every path below them (`store_guards`), the guards'
        extents at least the output's, and the launch reaches every element."""
        f = self.facts[i]
        key, guards = f.get("store_key"), f.get("store_guards")
        if self.role[i] != "output" or key is None or guards is None or None in key:
            return False
        if len(set(key)) != len(key) or not self._unique(set(key)):
            return False
        grid, block = self.launcher.grid, self.launcher.block
        shape = M.shape_of(self.args[i])
        if any(grid[d] * block[d] < n for d, n in zip(key, shape)):
            return False
        for d, a, k in guards:
            bound = M.shape_of(self.args[a])[k]
            if any(key[p] == d and bound < shape[p] for p in range(len(shape))):
                return False
        return True

    def _private_cotangent(self, seed) -> bool:
        """The cotangent shares no byte with an argument the kernel may write
        (then the kernel can read it directly)."""
        return not any(M.overlap(seed, self.args[i]) for g in self.groups for i in g)

    # -- the two modes: a Recipe each (replay.py) -----------------------------
    def _primals(self, bufs: list, outputs: bool, untouched=()) -> list:
        """Where the primal arguments come from: the caller's own arrays when
        `outputs`, else scratch (outputs) and copies (in-out) for written
        groups but those in `untouched` (indices of groups whose writes the
        derivative kernel drops)."""
        prim = [("arg", i) for i in range(len(self.args))]
        if outputs:
            return prim
        for gi, g in enumerate(self.groups):
            if not self.written(g) or gi in untouched:
                continue
            src = _buf(bufs, "copy" if self.read(g) else "empty", ("arg", g[0]))
            for i in g:
                prim[i] = src
        return prim

    def _rmw_groups(self) -> list:
        """Indices of the alias groups that are one rmw array (rmw.py: only
        dg.atomic_max, or only dg.atomic_min, with the old value unused)."""
        return [gi for gi, g in enumerate(self.groups)
                if len(g) == 1 and self.facts[g[0]].get("rmw") in ("max", "min")]

    def _finals(self, rmw, prim, bufs, shadows=None) -> object:
        """For the rmw groups `rmw`: each one's primal becomes a fresh copy
        that rmw.Finals turns into the final values before the launch
        (forward mode, `shadows`: and marks their tangents' buffers)."""
        from diffgpu.hostdiff.rmw import Finals

        at = []
        for gi in rmw:
            i = self.groups[gi][0]
            if prim[i][0] != "buf" or bufs[prim[i][1]][0] != "copy":
                prim[i] = _buf(bufs, "copy", ("arg", i))
            at.append((i, prim[i][1]))
        tangents = [shadows[i][1] for i, _ in at] if shadows is not None else ()
        written = [list(g) for g in self.groups if self.written(g)]
        ints = {}  # written arrays outside the float groups (integers): copied too
        for i, (t, f) in enumerate(zip(self.types, self.facts)):
            if (isinstance(t, ArrayType) and f.get("write")
                    and not any(i in g for g in self.groups)):
                ints.setdefault(M.layout(self.args[i]), []).append(i)
        return Finals(self.launcher, written + list(ints.values()), at, tangents)

    def _wide(self, g, kind) -> bool:
        """Does alias group `g`, of functional kind `kind`, get a float32
        scratch shadow? A 16-bit array the kernel reads, under Enzyme's
        convention (its gradient accumulates, atomically where threads may
        meet): the adds are float32 and the result is rounded once
        (docs/language.md, 16-bit floats)."""
        return (kind is None and self.read(g) and M.is_half(self.args[g[0]])
                and not self.facts[g[0]].get("rmw"))

    def vjp(self, cotangents: dict, outputs: bool):
        """The Recipe of this call's reverse mode (replay.py)."""
        seeds = self.seeds(cotangents, "cotangents", self.written)
        inout = any(self.written(g) and self.read(g) for g in self.groups)
        rmw = self._rmw_groups()
        late = outputs and (not inout or bool(rmw))  # outputs by a plain launch after
        if late:
            outputs = False
        n = len(self.names)
        kinds, shadows, bufs = ["const"] * n, [None] * n, []
        fk = self._gatherable([self.functional_kind(g, outputs) for g in self.groups])
        if rmw:  # Enzyme's convention throughout (rmw.py)
            fk = [None] * len(fk)
        # a `cot` array's writes are dropped: the caller's array is passed
        prim = self._primals(bufs, outputs, {gi for gi, k in enumerate(fk) if k == "cot"})
        for gi, g in enumerate(self.groups):
            kind = fk[gi]
            if kind == "cot":
                name = seeds[gi]
                sh = (("seed", name) if self._private_cotangent(cotangents[name])
                      else _buf(bufs, "copy", ("seed", name)))
            elif kind == "grad":
                sh = _buf(bufs, "empty" if self.covered(g[0]) else "zeros", ("arg", g[0]))
            elif gi in seeds:
                sh = _buf(bufs, "copy32" if self._wide(g, kind) else "copy",
                          ("seed", seeds[gi]))
            else:
                sh = _buf(bufs, "zeros32" if self._wide(g, kind) else "zeros", ("arg", g[0]))
            if self._wide(g, kind):  # a float32 scratch shadow (names.DUP32)
                kind = "dup32"
            for i in g:
                kinds[i], shadows[i] = kind or ("rmw" if gi in rmw else "dup"), sh
        pre = self._finals(rmw, prim, bufs) if rmw else None
        out, slots = {}, []
        for i, r in enumerate(self.role):
            if r == "scalar":
                kinds[i] = "active"
                out[self.names[i]] = ("slot", len(slots))
                slots.append(self.types[i].dtype)
        for gi, g in enumerate(self.groups):
            if self.read(g):
                # an accumulated in-out array: its gradient is its cotangent
                grad = ("copy", seeds[gi]) if kinds[g[0]] == "cot" else shadows[g[0]]
                if kinds[g[0]] == "dup32":  # the float32 scratch rounded once
                    grad = ("narrow", (grad[1], _result_dtype(self.args[g[0]])))
                for i in g:
                    if self.wrt is None or self.names[i] in self.wrt:
                        out[self.names[i]] = grad
        recipe = self._recipe("reverse", kinds, prim, shadows, bufs, slots, out, late)
        recipe.pre = pre
        return recipe

    def jvp(self, tangents: dict, outputs: bool):
        """The Recipe of this call's forward mode (replay.py)."""
        seeds = self.seeds(tangents, "tangents", self.read)
        scal = self.scalar_seeds(tangents)
        n = len(self.names)
        kinds, shadows, bufs = ["const"] * n, [None] * n, []
        rmw = self._rmw_groups()
        late = outputs and bool(rmw)  # outputs by a plain launch after the tangents
        prim = self._primals(bufs, outputs and not late)
        for gi, g in enumerate(self.groups):
            if not self.written(g):
                sh = ("seed", seeds[gi])  # read only: the tangent code never stores into it
            elif gi in seeds:
                sh = _buf(bufs, "copy", ("seed", seeds[gi]))
            elif len(g) == 1 and self.written_once(g[0]):
                sh = _buf(bufs, "empty", ("arg", g[0]))  # every element gets its tangent
            else:
                sh = _buf(bufs, "zeros", ("arg", g[0]))
            for i in g:
                kinds[i], shadows[i] = "rmw" if gi in rmw else "dup", sh
        pre = self._finals(rmw, prim, bufs, shadows) if rmw else None
        for i, v in scal.items():  # by value: replay.keep keeps only immutable ones
            kinds[i], shadows[i] = "dup", ("val", v)
        out = {}
        for g in self.groups:
            if self.written(g):
                for i in g:
                    out[self.names[i]] = shadows[i]
        recipe = self._recipe("forward", kinds, prim, shadows, bufs, [], out, late)
        recipe.baked = tuple(self.names[i] for i in scal)
        recipe.pre = pre
        return recipe

    def _recipe(self, mode, kinds, prim, shadows, bufs, slots, out, late):
        from diffgpu.hostdiff.replay import Recipe

        flat = []
        for p, s in zip(prim, shadows):
            flat.append(p)
            if s is not None:
                flat.append(s)
        results = [(n, out[n]) for n in self.names if n in out]
        scope = next((i for i, a in enumerate(self.args)
                      if isinstance(a, np.ndarray) or M.is_device_array(a)), None)
        recipe = Recipe(self, mode, kinds, bufs, flat, slots, results, late, scope)
        recipe.absent = {n: f"dg.{self.fn}: no {'gradient' if mode == 'reverse' else 'tangent'} "
                         f"for '{n}', {self.why_none(i)}"
                         for i, n in enumerate(self.names) if n not in out}
        return recipe


def _real(v) -> bool:
    """A real number (not a bool, not a string), or a 0-d array of one."""
    if isinstance(v, (bool, np.bool_)):
        return False
    if isinstance(v, numbers.Real):
        return True
    return getattr(v, "shape", None) == () and getattr(v, "dtype", None) is not None \
        and np.dtype(v.dtype).kind in ("f", "i", "u")


def _buf(bufs: list, how: str, src: tuple) -> tuple:
    """Add a fresh buffer (replay.Recipe.bufs) and return its source."""
    bufs.append((how, src))
    return ("buf", len(bufs) - 1)


__all__ = ["Call", "access_facts"]

"""Launch-time facts: what the runtime proves about one launch's arguments,
so that the compiler may specialise the kernel for it.

The runtime knows every array's address range (numpy `__array_interface__`,
CuPy `.data.ptr` / `__cuda_array_interface__`, shape and strides) and the
launch geometry. `launch_facts` turns them into a `Facts` value that is part
of the program key (memory and disk cache), like the argument types:

| fact         | holds when                                        | the compiler then             |
|--------------|---------------------------------------------------|-------------------------------|
| `noalias`    | no two array arguments share a byte               | marks pointers noalias (GPU), issues the loads of a block before stores to other arrays, lets several shadows skip atomics |
| `contiguous` | per argument: C order, unit innermost stride      | folds the array's strides (GPU: no stride parameters read) |
| `unit_dims`  | grid and block extents of dimension 1 / 2 are 1   | drops the atomic-elision guard of those dimensions |
| `aligned`    | per argument: data pointer a multiple of 16 bytes | GPU: pointer `align 16` (vector loads and stores) |
| `grid_div`   | the grid's x extent is a multiple of COARSEN      | GPU: may give each thread COARSEN consecutive elements (lowering/coarsen.py) |
| `grid_div16` | the grid's x extent is a multiple of REDUCE_COARSEN | GPU: a reduction kernel's thread may sum REDUCE_COARSEN elements before its atomic |

No fact holding gives `None`: the generic program, the one every launch
could use. Overlapping arrays (in-place kernels, the same array passed
twice, overlapping views) never get `noalias`; their program is the generic
one or a specialisation without that fact.

    >>> x = np.ones(8, np.float32)
    >>> launch_facts([x, x[::2].copy()], types, (4, 1, 1), (64, 1, 1))
    Facts(noalias=True, contiguous=(True, True), unit_dims=(1, 2))
    >>> launch_facts([x, x], types, (4, 1, 1), (64, 1, 1)).noalias
    False

`DIFFGPU_SPECIALIZE=0` in the environment (or `ENABLED = False`) turns the
specialisation off: every launch then uses the generic program.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

#: module switch; tests compare the specialised and the generic programs
ENABLED = os.environ.get("DIFFGPU_SPECIALIZE", "1") not in ("0", "false", "no")
#: elements per thread of a coarsened kernel; ALIGN: the vector access's bytes
COARSEN = 4
REDUCE_COARSEN = 16
ALIGN = 16


@dataclass(frozen=True)
class Facts:
    """Launch facts of one launch (see the module docstring)."""
    noalias: bool = False
    contiguous: tuple = ()  # one bool per argument (False for scalars)
    unit_dims: tuple = ()   # geometry dimensions (1, 2) with one block and one thread
    aligned: tuple = ()     # one bool per argument: data pointer % ALIGN == 0
    grid_div: bool = False  # grid x % COARSEN == 0
    grid_div16: bool = False  # grid x % REDUCE_COARSEN == 0

    def key(self) -> str:
        """Stable text for cache keys."""
        bits = "".join("1" if c else "0" for c in self.contiguous)
        dims = "".join(str(d) for d in self.unit_dims)
        text = f"noalias={int(self.noalias)} contiguous={bits} unit_dims={dims or '-'}"
        if any(self.aligned) or self.grid_div:
            text += (f" aligned={''.join('1' if a else '0' for a in self.aligned)}"
                     f" grid_div={int(self.grid_div)}")
        if self.grid_div16:
            text += " grid_div16=1"
        return text

    def for_target(self, target: str) -> "Facts | None":
        """The facts a target's compiler uses: the CPU lowering reads only
        `noalias` and `unit_dims`, so host programs are not split by the others."""
        f = self if target != "host" else Facts(self.noalias, (), self.unit_dims)
        return None if f.trivial() else f

    def trivial(self) -> bool:
        return not (self.noalias or any(self.contiguous) or self.unit_dims
                    or any(self.aligned) or self.grid_div)

    def attribute_text(self) -> str:
        """The `diffgpu.launch_facts` dictionary attribute (MLIR syntax)."""
        def bools(bs):
            return ", ".join("true" if b else "false" for b in bs)
        dims = ", ".join(f"{d} : i64" for d in self.unit_dims)
        return (f"{{noalias = {'true' if self.noalias else 'false'}, "
                f"contiguous = [{bools(self.contiguous)}], unit_dims = [{dims}], "
                f"aligned = [{bools(self.aligned)}], "
                f"grid_div = {'true' if self.grid_div else 'false'}, "
                f"grid_div16 = {'true' if self.grid_div16 else 'false'}}}")


def array_extent(x):
    """(lowest byte address, one past the highest, C-contiguous, data
    pointer) of an array argument, or None for scalars. Strides may be
    negative or zero."""
    if isinstance(x, np.ndarray):
        ai = x.__array_interface__
        ptr, shape, strides, item = ai["data"][0], x.shape, x.strides, x.itemsize
        contiguous = x.flags.c_contiguous
    else:
        data = getattr(x, "data", None)
        ptr = getattr(data, "ptr", None)
        if isinstance(ptr, int) and hasattr(x, "strides") and hasattr(x, "itemsize"):
            shape, strides, item = x.shape, x.strides, x.itemsize  # CuPy
            flags = getattr(x, "flags", None)
            contiguous = bool(getattr(flags, "c_contiguous", False))
        else:
            try:
                cai = x.__cuda_array_interface__
            except Exception:
                return None
            ptr, shape = int(cai["data"][0]), tuple(cai["shape"])
            item = np.dtype(cai["typestr"]).itemsize
            strides = cai.get("strides")
            contiguous = strides is None or tuple(strides) == c_strides(shape, item)
            strides = strides or c_strides(shape, item)
    lo = hi = ptr
    for n, s in zip(shape, strides):
        if n == 0:
            return ptr, ptr, contiguous, ptr
        if s >= 0:
            hi += (n - 1) * s
        else:
            lo += (n - 1) * s
    return lo, hi + item, contiguous, ptr


def c_strides(shape, item: int) -> tuple:
    out, acc = [], item
    for n in reversed(shape):
        out.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(out))


def disjoint(ranges) -> bool:
    """True when no two [lo, hi) byte ranges intersect (empty ones never do)."""
    spans = sorted(r for r in ranges if r[1] > r[0])
    return all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))


def launch_facts(args, types, grid=None, block=None) -> Facts | None:
    """The facts of launching with `args` (already type-checked: `types`) on
    `grid`/`block` (3-tuples, or None when unknown), or None (generic)."""
    from diffgpu.types import ArrayType

    if not ENABLED:
        return None
    ranges, contiguous, aligned = [], [], []
    for x, t in zip(args, types):
        if isinstance(t, ArrayType):
            ext = array_extent(x)
            if ext is None:
                return None
            ranges.append(ext[:2])
            contiguous.append(bool(ext[2]))
            aligned.append(ext[3] % ALIGN == 0)
        else:
            contiguous.append(False)
            aligned.append(False)
    noalias = bool(ranges) and disjoint(ranges)
    unit, grid_div, grid_div16 = (), False, False
    if grid is not None and block is not None:
        unit = tuple(d for d in (1, 2) if grid[d] == 1 and block[d] == 1)
        grid_div = grid[0] % COARSEN == 0
        grid_div16 = grid[0] % REDUCE_COARSEN == 0
    facts = Facts(noalias, tuple(contiguous), unit, tuple(aligned), grid_div, grid_div16)
    return None if facts.trivial() else facts

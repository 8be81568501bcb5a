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
| `grid_div`   | the grid's x extent is a multiple of COARSEN      | GPU: may give each thread COARSEN consecutive elements (lowering/coarsen/coarsen.py) |
| `grid_div16` | the grid's x extent is a multiple of REDUCE_COARSEN | GPU: a reduction kernel's thread may sum REDUCE_COARSEN elements before its atomic |
| `extents`    | per array and dimension: the first array with the same size there | `len(y)` / `memref.dim` read the representative's size (equal guards become one) |
| `index32`    | every array's element offsets, sizes and strides, and the grid * block extents (per dimension and in total) fit in int32 | GPU: index arithmetic in 32 bits (parameters stay 64-bit) |
| `grid_fold`  | the grid's y or z extent exceeds the GPU's 65535: its (y, z) extents | GPU: `block_id` / `grid_dim` of y and z computed from the folded hardware grid (runtime/args.py `hardware_grid`); kept with the switch off too: no other program runs such a grid |
| `rows`       | the block's y extent is 1 and the grid's y extent G >= 2: (R, G % R), R = `rows_factor(G)` | a reverse program may run R consecutive blocks of y in one block (lowering/coarsen/rows.py); primal programs do not take this fact |

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
specialisation off: every launch then uses the generic program (a launch
with a folded grid the program with `grid_fold` only).
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from diffgpu.runtime.args import cuda_interface

#: module switch; tests compare the specialised and the generic programs
ENABLED = os.environ.get("DIFFGPU_SPECIALIZE", "1") not in ("0", "false", "no")
#: elements per thread of a coarsened kernel; ALIGN: the vector access's bytes
COARSEN = 4
REDUCE_COARSEN = 16
ALIGN = 16
#: the rows coarsening (lowering/coarsen/rows.py, docs/coarsening.md): at most
#: MAX_ROWS rows of y per block, and at least ROW_BLOCKS blocks left in the
#: launch (two waves of an H200's 132 SMs x 8 resident 256-thread blocks)
MAX_ROWS = 64
ROW_BLOCKS = 2 * 132 * 8
#: DIFFGPU_ROWS=R: every eligible launch takes R rows per block (a power of
#: two up to MAX_ROWS; 1 turns the coarsening off): to measure the rule
ROWS_OVERRIDE = int(os.environ.get("DIFFGPU_ROWS", "0") or 0)


@dataclass(frozen=True)
class Facts:
    """Launch facts of one launch (see the module docstring)."""
    noalias: bool = False
    contiguous: tuple = ()  # one bool per argument (False for scalars)
    unit_dims: tuple = ()   # geometry dimensions (1, 2) with one block and one thread
    aligned: tuple = ()     # one bool per argument: data pointer % ALIGN == 0
    grid_div: bool = False  # grid x % COARSEN == 0
    grid_div16: bool = False  # grid x % REDUCE_COARSEN == 0
    #: per argument, per dimension: the first array argument whose size there
    #: is the same (itself when none before it); () for scalars
    extents: tuple = ()
    index32: bool = False   # every index value of the launch fits in int32
    #: () or the logical (y, z) extents of a grid the GPU runs folded
    grid_fold: tuple = ()
    #: () or (R, G % R): rows of the grid's y extent G per block of a
    #: coarsened reverse program (`rows_factor`)
    rows: tuple = ()

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
        if self.shared_extents():
            text += " extents=" + ";".join(",".join(map(str, e)) for e in self.extents)
        if self.index32:
            text += " index32=1"
        if self.grid_fold:
            text += " grid_fold=%d,%d" % tuple(self.grid_fold)
        if self.rows:
            text += " rows=%d,%d" % tuple(self.rows)
        return text

    def for_target(self, target: str) -> "Facts | None":
        """The facts a target's compiler uses: the CPU lowering reads only
        `noalias`, `unit_dims`, `extents` and `rows`, so host programs are not split
        by the others."""
        f = self if target != "host" else Facts(self.noalias, (), self.unit_dims,
                                               extents=self.extents,
                                               rows=self.rows)  # no grid_fold
        return None if f.trivial() else f

    def trivial(self) -> bool:
        return not (self.noalias or any(self.contiguous) or self.unit_dims
                    or any(self.aligned) or self.grid_div or self.shared_extents()
                    or self.index32 or self.grid_fold or self.rows)

    def shared_extents(self) -> bool:
        """Does some array share a size with an earlier one?"""
        return any(r != k for k, e in enumerate(self.extents) for r in e)

    def attribute_text(self) -> str:
        """The `diffgpu.launch_facts` dictionary attribute (MLIR syntax)."""
        def bools(bs):
            return ", ".join("true" if b else "false" for b in bs)
        dims = ", ".join(f"{d} : i64" for d in self.unit_dims)
        return (f"{{noalias = {'true' if self.noalias else 'false'}, "
                f"contiguous = [{bools(self.contiguous)}], unit_dims = [{dims}], "
                f"aligned = [{bools(self.aligned)}], "
                f"grid_div = {'true' if self.grid_div else 'false'}, "
                f"grid_div16 = {'true' if self.grid_div16 else 'false'}, "
                f"extents = [{', '.join('[' + ', '.join(f'{r} : i64' for r in e) + ']' for e in self.extents)}], "
                f"index32 = {'true' if self.index32 else 'false'}}}")


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
                cai = cuda_interface(x)  # (torch tensors: their attributes)
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
    spans = sorted([r for r in ranges if r[1] > r[0]])
    for k in range(1, len(spans)):  # sorted by start: neighbours suffice
        if spans[k][0] < spans[k - 1][1]:
            return False
    return True


#: the largest value of a 32-bit signed index
INT32_MAX = 2**31 - 1


def extents_of(shapes) -> tuple:
    """The `extents` fact of argument `shapes` (a tuple per array, None for
    scalars): per argument and dimension, the first argument whose size in
    that dimension is the same.

    >>> extents_of([(8,), None, (8,), (4,), (8, 3)])
    ((0,), (), (0,), (3,), (0, 4))
    """
    first: dict = {}
    out = []
    for k, shape in enumerate(shapes):
        if shape is None:
            out.append(())
            continue
        out.append(tuple(first.setdefault((d, int(n)), k) for d, n in enumerate(shape)))
    return tuple(out)


def fits_int32(layouts, grid, block) -> bool:
    """The `index32` fact: `layouts` (per array: (shape, strides in elements))
    have every size, stride and element offset (sum of (n - 1) * |stride|:
    the partial sums of an address stay below it) and element count at most
    INT32_MAX, and so do the geometry's extents grid * block per dimension
    and its thread count.

    >>> fits_int32([((2**31 - 1,), (1,))], (1, 1, 1), (256, 1, 1))
    True
    >>> fits_int32([((2, 2**30 + 1), (2**30 + 1, -1))], (1, 1, 1), (1, 1, 1))
    False
    """
    if grid is None or block is None:
        return False
    total = 1
    for g, b in zip(grid, block):
        if g * b > INT32_MAX:
            return False
        total *= g * b
    if total > INT32_MAX:
        return False
    for shape, strides in layouts:
        span, count = 0, 1
        for n, st in zip(shape, strides):
            if n > INT32_MAX or abs(st) > INT32_MAX:
                return False
            count *= n
            span += max(n - 1, 0) * abs(st)
        if count > INT32_MAX or span > INT32_MAX:
            return False
    return True


def shape_facts(arrays, grid, block) -> tuple:
    """(extents, index32) of a launch: `arrays` per argument (shape, byte
    strides or None when C-contiguous, item size), None for scalars."""
    shapes, layouts, whole = [], [], True
    for a in arrays:
        if a is None:
            shapes.append(None)
            continue
        shape, strides, item = a
        strides = c_strides(shape, item) if strides is None else strides
        whole = whole and not any(st % item for st in strides)
        shapes.append(tuple(shape))
        layouts.append((shape, [st // item for st in strides]))
    return extents_of(shapes), whole and fits_int32(layouts, grid, block)


def _layout(x):
    """(shape, byte strides, item size) of an array argument, or None."""
    if isinstance(x, np.ndarray):
        return x.shape, x.strides, x.itemsize
    if hasattr(getattr(x, "data", None), "ptr") and hasattr(x, "strides"):
        return tuple(x.shape), tuple(x.strides), x.itemsize  # CuPy
    try:
        cai = cuda_interface(x)  # (torch tensors: their attributes)
    except Exception:
        return None
    item = np.dtype(cai["typestr"]).itemsize
    return tuple(cai["shape"]), cai.get("strides"), item


def launch_facts(args, types, grid=None, block=None) -> Facts | None:
    """The facts of launching with `args` (already type-checked: `types`) on
    `grid`/`block` (3-tuples, or None when unknown), or None (generic)."""
    from diffgpu.types import ArrayType

    if not ENABLED:
        return fold_facts(grid)
    arrays = []
    for x, t in zip(args, types):
        if isinstance(t, ArrayType):
            ext = array_extent(x)
            lay = _layout(x)
            if ext is None or lay is None:
                return fold_facts(grid)
            strides = None if lay[1] is None else tuple(lay[1])  # hashable: facts_of's memo
            arrays.append((ext[3], tuple(lay[0]), strides, lay[2], ext[2]))
        else:
            arrays.append(None)
    return facts_of(arrays, grid, block)


def facts_of(arrays, grid=None, block=None) -> Facts | None:
    """The facts of a launch from what is known of each argument: None for
    a scalar, else (data pointer, shape, byte strides or None when
    C-contiguous, item size, C-contiguous). `launch_facts` reads these from
    the arrays; the launch fast path (runtime/fastpath.py) has already read
    them for its checks."""
    values = fact_values(arrays, grid, block)
    if values is None:
        return None
    facts = Facts(*values)
    return None if facts.trivial() else facts


def fact_values(arrays, grid=None, block=None) -> tuple | None:
    """`facts_of` as the plain tuple of the `Facts` fields (None when the
    specialisation is off): the launch fast path keys its programs by it
    and builds a `Facts` only for a tuple it has not seen. What depends on
    shapes, strides and the geometry only is computed once per layout
    (`_shaped`): launches repeat their layouts, not their pointers."""
    if not ENABLED:
        return _fold_only(grid)
    layouts = tuple([None if a is None else a[1:] for a in arrays])
    shaped = _SHAPED.get((layouts, grid, block))
    if shaped is None:
        shaped = _shaped(layouts, grid, block)
    spans, contiguous, unit, grid_div, grid_div16, rows, extents, index32 = shaped
    ranges, aligned, any_array = [], [], False
    for a, span in zip(arrays, spans):
        if a is None:
            aligned.append(False)
            continue
        any_array = True
        ptr = a[0]
        aligned.append(ptr % ALIGN == 0)
        if span is not None:  # empty arrays cover no byte
            ranges.append((ptr + span[0], ptr + span[1]))
    noalias = any_array and (len(ranges) < 2 or disjoint(ranges))
    return (noalias, contiguous, unit, tuple(aligned), grid_div, grid_div16, extents, index32,
            _fold(grid), rows)


def _fold(grid) -> tuple:
    """The `grid_fold` fact: runtime/args.py `grid_fold` (() for None)."""
    if grid is None:
        return ()
    from diffgpu.runtime.args import grid_fold
    return grid_fold(grid)


def fold_facts(grid) -> Facts | None:
    """The facts of a launch about which nothing but its `grid` is known:
    None (generic) or only its `grid_fold`."""
    values = _fold_only(grid)
    return None if values is None else Facts(*values)


def _fold_only(grid):
    """The fact values with the specialisation off: None, or only the
    `grid_fold` of a grid the GPU cannot run as it is."""
    fold = _fold(grid)
    return (False, (), (), (), False, False, (), False, fold, ()) if fold else None


#: (layouts, grid, block) -> `_shaped` of them
_SHAPED: dict = {}


def _shaped(layouts, grid, block) -> tuple:
    """The facts of a launch that do not depend on its pointers, and per
    argument the bytes an array covers relative to its pointer (None: none):
    (spans, contiguous, unit_dims, grid_div, grid_div16, rows, extents, index32)."""
    spans, contiguous, shapes = [], [], []
    for lay in layouts:
        if lay is None:
            spans.append(None)
            contiguous.append(False)
            shapes.append(None)
            continue
        shape, strides, item, contig = lay
        if strides is None:
            strides = c_strides(shape, item)
        lo, hi = 0, item
        for n, st in zip(shape, strides):
            if n == 0:
                lo = hi = None
                break
            if st >= 0:
                hi += (n - 1) * st
            else:
                lo += (n - 1) * st
        spans.append(None if lo is None else (lo, hi))
        contiguous.append(bool(contig))
        shapes.append((shape, strides, item))
    shaped = (tuple(spans), tuple(contiguous)) + _geometry_facts(grid, block) \
        + shape_facts(shapes, grid, block)
    if len(_SHAPED) >= 4096:
        _SHAPED.clear()
    _SHAPED[(layouts, grid, block)] = shaped
    return shaped


def _geometry_facts(grid, block) -> tuple:
    """(unit_dims, grid_div, grid_div16, rows) of a geometry (None: unknown)."""
    if grid is None or block is None:
        return (), False, False, ()
    r = rows_factor(grid[1]) if block[1] == 1 else 1
    return (tuple(d for d in (1, 2) if grid[d] == 1 and block[d] == 1),
            grid[0] % COARSEN == 0, grid[0] % REDUCE_COARSEN == 0,
            (r, grid[1] % r) if r > 1 else ())


def rows_factor(rows: int) -> int:
    """The rows per block R of a coarsened reverse launch whose grid has
    `rows` blocks in y (lowering/coarsen/rows.py): the largest power of two
    up to MAX_ROWS and `rows` that leaves at least ROW_BLOCKS blocks
    (ceil(rows / R)); 1 for none. Each block then adds a parameter's
    gradient once per column instead of once per row, and the launch keeps
    enough blocks to fill the GPU twice. `DIFFGPU_ROWS` overrides R.

    >>> rows_factor(65536), rows_factor(2112), rows_factor(4224), rows_factor(1)
    (16, 1, 2, 1)
    """
    if ROWS_OVERRIDE:
        return ROWS_OVERRIDE if 2 <= ROWS_OVERRIDE <= min(MAX_ROWS, rows) else 1
    r = MAX_ROWS
    while r > 1 and (r > rows or -(-rows // r) < ROW_BLOCKS):
        r //= 2
    return r

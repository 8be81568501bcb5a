"""Arrays a thread touches at several constant offsets of its global ids.

A row kernel that gives each thread several columns writes them out as
`x[r, j]`, `x[r, j + 256]`, `x[r, j + 512]`, ... with `r = gid(1)`,
`j = gid(0)`: every index component is a global id plus a constant, the
same dimension in every access (`dims`), and the accesses differ only in
their constant offsets. Two threads p != q meet at an element only if
`p_d - q_d = o'_a - o_a` on every axis a; so when, for every two distinct
offset tuples, some axis differs by at least the launch's extent of its
dimension (grid * block), and the dimensions not named have one thread and
one block, every element is one thread's (`unique`). `dg.vjp` then takes
such an input as `grad` (a register per offset, each written once to the
gradient at exit: kinds.py) and such an output as `cot` (its cotangent
read, not consumed, its primal stores dropped).

    offsets(indices)   -> (dims, offsets) | None    gid(d) + k per component
    pattern(accesses)  -> {"dims": [..], "offsets": [[..], ..]} | None
    unique(p, grid, block), covered(p, shape, grid, block)   (host side)

`pattern` takes the (op, indices) of the loads (or stores) of one array,
all in the kernel's own body outside loops; it needs at least two distinct
offset tuples (one is the plain `load_key` / `store_key` case) and, for
stores, each offset stored once. `unique` and `covered` need no MLIR
(python/diffgpu/hostdiff/plan.py runs them on cached facts).
"""
from __future__ import annotations

#: at most this many distinct offsets per array (a thread's registers)
MAX_OFFSETS = 64


def offsets(indices):
    """(dims, offsets): every component `gid(d) + k` with distinct d, else None."""
    from diffgpu.lowering.facts.indices import offset_of  # MLIR: not for the host's plan

    dims, offs = [], []
    for v in indices:
        o = offset_of(v)
        if o is None:
            return None
        dims.append(o[0])
        offs.append(o[1])
    if not dims or len(set(dims)) != len(dims):
        return None
    return tuple(dims), tuple(offs)


def pattern(indices_list, stores: bool = False):
    """The common pattern of several accesses' index tuples, or None."""
    found = [offsets(ix) for ix in indices_list]
    if not found or None in found or len({f[0] for f in found}) != 1:
        return None
    offs = [f[1] for f in found]
    if stores and len(set(offs)) != len(offs):
        return None  # an element stored twice by its thread
    distinct = sorted(set(offs))
    if len(distinct) < 2 or len(distinct) > MAX_OFFSETS:
        return None
    return {"dims": list(found[0][0]), "offsets": [list(o) for o in distinct]}


def _extent(d, grid, block) -> int:
    return grid[d] * block[d]


def unique(p, grid, block) -> bool:
    """No two threads of the launch touch one element (see the docstring)."""
    dims = p["dims"]
    if not all(grid[d] == 1 and block[d] == 1 for d in range(3) if d not in dims):
        return False
    offs = p["offsets"]
    for i, a in enumerate(offs):
        for b in offs[i + 1:]:
            if not any(abs(x - y) >= _extent(d, grid, block) for d, x, y in zip(dims, a, b)):
                return False
    return True


def covered(p, shape, grid, block) -> bool:
    """Every element of an array of `shape` is touched: the offsets differ
    along one axis only, where they are 0, E, 2E, ... (E the extent of its
    dimension) reaching the axis' length; every other axis has offset 0 and
    an extent at least its length."""
    dims, offs = p["dims"], p["offsets"]
    if len(shape) != len(dims):
        return False
    varying = [a for a in range(len(dims)) if len({o[a] for o in offs}) > 1]
    if len(varying) != 1:
        return False
    (axis,) = varying
    for a, d in enumerate(dims):
        if a != axis and (offs[0][a] != 0 or _extent(d, grid, block) < shape[a]):
            return False
    e = _extent(dims[axis], grid, block)
    along = sorted(o[axis] for o in offs)
    return along == [k * e for k in range(len(along))] and len(along) * e >= shape[axis]


__all__ = ["offsets", "pattern", "unique", "covered", "MAX_OFFSETS"]

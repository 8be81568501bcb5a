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

A component may also be `c * gid(d) + k` (`c` rows per thread: `r =
gid(1) * 4 + k`), and the access may sit in one constant-trip `scf.for`
whose variable enters the offsets (`for k in range(4): x[gid(1) * 4 + k,
j]`): its trips give the offset tuples. Positions `c * p + x` and
`c * q + y` differ for all threads when `x - y` is no multiple of `c` or
`|x - y| / c` reaches the extent.

    offsets(indices, op, fn) -> (dims, scales, offset tuples) | None
    pattern(accesses, fn)    -> {"dims", "scales", "offsets"} | None
    unique(p, grid, block), covered(p, shape, grid, block)   (host side)

`pattern` takes the (op, indices) of the loads (or stores) of one array,
all in the kernel's own body; it needs at least two distinct offset tuples
or a scale above 1 (one offset of plain global ids is the `load_key` /
`store_key` case), for stores each offset stored once, and the offsets
apart for 2 threads per named dimension (`x[i]` with `x[i + 1]`, or
`out[2 i + d]` for d < 4, are nobody's alone in any useful launch). `unique` and `covered` need no MLIR
(python/diffgpu/hostdiff/plan.py runs them on cached facts).
"""
from __future__ import annotations

import math

#: at most this many distinct offsets per array (a thread's registers)
MAX_OFFSETS = 64


def offsets(indices, op=None, fn=None):
    """(dims, scales, offset tuples) of one access: every component
    `c * gid(d) + e * iv + k` (c >= 1; `iv` the variable of the one
    constant-trip `scf.for` around `op` in `fn`, if any: its values give
    several tuples), distinct d; else None."""
    from diffgpu.lowering.autodiff.functional.rows import MAX_TRIP, _affine, _loops
    from diffgpu.lowering.common.ir_util import const_int
    from diffgpu.lowering.facts.indices import _through_tape  # MLIR: not for the plan

    loops = _loops(op, fn) if op is not None and fn is not None else []
    if len(loops) > 1 or (loops and loops[0].name != "scf.for"):
        return None
    iv, trips = None, [0]
    if loops:
        iv = loops[0].regions[0].blocks[0].arguments[0]
        lb, ub, step = (const_int(v) for v in list(loops[0].operands)[:3])
        if None in (lb, ub, step) or step < 1 or (ub - lb) // step > MAX_TRIP:
            return None
        trips = list(range(lb, ub, step))
    dims, scales, forms = [], [], []
    for v in indices:
        form = _affine(_through_tape(v), iv)
        if form is None:
            return None
        terms, k = form
        gids = [t for t in terms if t != "iv"]
        if len(gids) != 1 or terms[gids[0]] < 1:
            return None
        dims.append(gids[0][1])
        scales.append(terms[gids[0]])
        forms.append((terms.get("iv", 0), k))
    if not dims or len(set(dims)) != len(dims):
        return None
    tuples = [tuple(k + e * t for e, k in forms) for t in trips]
    return tuple(dims), tuple(scales), tuples


def pattern(accesses, fn=None, stores: bool = False):
    """The common pattern of several accesses ((op, indices) pairs), or None."""
    found = [offsets(ix, op, fn) for op, ix in accesses]
    if not found or None in found or len({f[:2] for f in found}) != 1:
        return None
    offs = [o for f in found for o in f[2]]
    if stores and len(set(offs)) != len(offs):
        return None  # an element stored twice by its thread
    distinct = sorted(set(offs))
    if len(distinct) > MAX_OFFSETS or (len(distinct) < 2 and set(found[0][1]) == {1}):
        return None  # one offset of plain global ids: load_key / store_key's case
    p = {"dims": list(found[0][0]), "scales": list(found[0][1]),
         "offsets": [list(o) for o in distinct]}
    two = tuple(2 if d in p["dims"] else 1 for d in range(3))
    if not unique(p, (1, 1, 1), two):
        return None  # threads would meet with 2 per named dimension (x[i], x[i + 1])
    return p


def _extent(d, grid, block) -> int:
    return grid[d] * block[d]


def _scales(p):
    return p.get("scales") or [1] * len(p["dims"])


def unique(p, grid, block) -> bool:
    """No two threads of the launch touch one element (see the docstring)."""
    dims, scales = p["dims"], _scales(p)
    if not all(grid[d] == 1 and block[d] == 1 for d in range(3) if d not in dims):
        return False
    offs = p["offsets"]

    def apart(d, c, x, y):  # c * p + x != c * q + y for all p, q of the launch
        return (x - y) % c != 0 or abs(x - y) // c >= _extent(d, grid, block)
    for i, a in enumerate(offs):
        for b in offs[i + 1:]:
            if not any(apart(d, c, x, y) for d, c, x, y in zip(dims, scales, a, b)):
                return False
    return True


def covered(p, shape, grid, block) -> bool:
    """Every element of an array of `shape` is touched: the offset tuples are
    the product of one set per axis, and each axis is covered: scale 1 with
    offsets 0, E, 2E, ... (E the extent of its dimension), or scale c > 1
    with offsets 0 .. c - 1, reaching the axis' length."""
    dims, scales, offs = p["dims"], _scales(p), [tuple(o) for o in p["offsets"]]
    if len(shape) != len(dims):
        return False
    per = [sorted({o[a] for o in offs}) for a in range(len(dims))]
    if len(set(offs)) != math.prod(len(k) for k in per):
        return False
    for d, c, ks, n in zip(dims, scales, per, shape):
        e = _extent(d, grid, block)
        if c == 1 and not (ks == [m * e for m in range(len(ks))] and len(ks) * e >= n):
            return False
        if c > 1 and not (ks == list(range(c)) and c * e >= n):
            return False
    return True


__all__ = ["offsets", "pattern", "unique", "covered", "MAX_OFFSETS"]

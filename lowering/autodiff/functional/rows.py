"""Outputs written in rows: several stores per thread at `c * gid + k`.

A row gather writes `out[i * 4 + d]` for `d` in `range(4)`: thread `i` owns
the elements `4i .. 4i + 3`, so every element of `out` is written at most
once in a launch, as with one store at `out[i]`. `dg.vjp` may then read the
cotangent of such an output without copying or consuming it (the `cot`
kind: lowering/autodiff/functional/access.py decides it on the frontend's module, where the row
is an `scf.for`; functional.py rewrites the reverse function, where a
constant-trip loop is usually unrolled into one store per element).

`row_offsets(store, fn)`: a store into a 1-D array whose index is `c *
gid(d) + k` (`c >= 1`, `k` a constant), outside loops, or inside one
`scf.for` with constant bounds (inside no other loop) at `c * gid(d) + e *
iv + k`; gives `(d, c, offsets)` with the offsets the store writes relative
to `c * gid(d)`. `rows_dim(stores, fn)`: the dimension `d` when every store
has such a form with one `d` and one `c`, and together their offsets are
distinct and span less than `c` (so two threads never meet), else None.

    %g = block_id(0) * block_dim(0) + thread_id(0)
    scf.for %d = %c0 to %c4 step %c1 {
      memref.store %v, %out[index_cast(%g * 4 + %d)]    // (0, 4, [0, 1, 2, 3])
"""
from __future__ import annotations

from diffgpu.lowering.common.ir_util import const_int

from diffgpu.lowering.facts.indices import _op, _strip, global_dim

_LOOPS = ("scf.for", "scf.while", "scf.parallel", "scf.forall")
#: the iteration counts a row loop may have (a larger loop is not a row)
MAX_TRIP = 4096


def _affine(v, iv):
    """`v` as ({term: coefficient}, constant) over the terms ("gid", d) and
    "iv" (the loop's induction variable), through index casts, addi, subi
    and muli by a constant; None if it is not of that form."""
    d = global_dim(v)
    if d is not None:
        return {("gid", d): 1}, 0
    v = _strip(v)
    if iv is not None and v == iv:
        return {"iv": 1}, 0
    k = const_int(v)
    if k is not None:
        return {}, k
    op = _op(v)
    if op is None or op.name not in ("arith.addi", "arith.subi", "arith.muli"):
        return None
    a, b = (_affine(x, iv) for x in op.operands)
    if a is None or b is None:
        return None
    if op.name == "arith.muli":
        if a[0] and b[0]:
            return None  # a product of two terms
        (terms, k), s = (a, b[1]) if a[0] else (b, a[1])
        return {t: c * s for t, c in terms.items()}, k * s
    sign = 1 if op.name == "arith.addi" else -1
    terms = dict(a[0])
    for t, c in b[0].items():
        terms[t] = terms.get(t, 0) + sign * c
    return {t: c for t, c in terms.items() if c}, a[1] + sign * b[1]


def _loops(op, fn) -> list:
    out, p = [], op.parent
    while p is not None and p != fn.operation:
        if p.name in _LOOPS:
            out.append(p)
        p = p.parent
    return out


def row_offsets(store, fn):
    """(d, c, offsets) of a `memref.store` into a 1-D array (module docstring)."""
    idx = list(store.operands)[2:]
    if len(idx) != 1:
        return None
    loops = _loops(store, fn)
    if len(loops) > 1 or (loops and loops[0].name != "scf.for"):
        return None
    iv = loops[0].regions[0].blocks[0].arguments[0] if loops else None
    form = _affine(idx[0], iv)
    if form is None:
        return None
    terms, k = form
    gids = [t for t in terms if t != "iv"]
    if len(gids) != 1 or terms[gids[0]] < 1:
        return None
    d, c = gids[0][1], terms[gids[0]]
    e = terms.get("iv", 0)
    if not loops:
        return d, c, [k]
    lb, ub, step = (const_int(v) for v in list(loops[0].operands)[:3])
    if None in (lb, ub, step) or step < 1 or (ub - lb) // step > MAX_TRIP:
        return None
    return d, c, [k + e * v for v in range(lb, ub, step)]


def rows_dim(stores, fn):
    """The dimension d when the stores write rows (module docstring), else None."""
    forms = [row_offsets(s, fn) for s in stores]
    if not forms or None in forms or len({(d, c) for d, c, _ in forms}) != 1:
        return None
    d, c, _ = forms[0]
    offsets = [o for _, _, offs in forms for o in offs]
    if not offsets or len(set(offsets)) != len(offsets) or max(offsets) - min(offsets) >= c:
        return None
    return d

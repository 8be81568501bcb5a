"""Guards `diffgpu-coarsen` (lowering/coarsen/coarsen.py) can decide per group: a
conjunction of affine bounds on the global id `g`.

A coarsened thread covers the group g = F*t .. F*t + F-1. A guard holds for
every element of the group when each of its bounds holds at the group's
end that is hardest for it: an upper bound `A(g) < N` at the last element,
a lower bound `A(g) >= N` at the first, where A grows with g (`g` plus
constants, through index casts) and N is the same for every thread
(constants, arguments, sizes, block and grid extents). The rule table
(`arith.cmpi` predicates; A on either side):

| condition              | bound | checked at |
|------------------------|-------|------------|
| `A slt N`, `A sle N`   | upper | g = F*t + F-1 |
| `A sgt N`, `A sge N`   | lower | g = F*t    |
| `N sgt A`, `N sge A`   | upper | g = F*t + F-1 |
| `N slt A`, `N sle A`   | lower | g = F*t    |
| `arith.andi c1, c2`    | the bounds of both |  |
| `scf.if c1 -> i1 { ...; yield c2 } else { yield c1 or false }` | the bounds of both (Python's short-circuit `and`) | |

Anything else (`eq`, unsigned predicates, `or`, a bound on a loaded value)
is not a bound: the kernel keeps its generic program.

    %i = arith.index_cast %g : index to i64
    %lo = arith.cmpi sge, %i, %c1 : i64              lower: F*t >= 1
    %c = scf.if %lo -> (i1) {
      %m = arith.subi %len, %c1 : i64
      %hi = arith.cmpi slt, %i, %m : i64             upper: F*t + F-1 < len - 1
      scf.yield %hi : i1
    } else { scf.yield %lo : i1 }
"""
from __future__ import annotations

from dataclasses import dataclass

from diffgpu.dialects import names as N
from diffgpu.lowering.coarsen.reduce import defining_op as _op
from diffgpu.lowering.coarsen.reduce import depends_on

#: arith::CmpIPredicate values: slt, sle, sgt, sge
_LESS, _GREATER = (2, 3), (4, 5)
#: geometry whose value a coarsened launch keeps (grid_dim(0) is rewritten
#: to grid_dim(0) * F by the pass) or that names another dimension
_SAME = (N.BLOCK_DIM, N.GRID_DIM)
_PURE = ("arith.", "index.")


@dataclass
class Bound:
    """`cmp` compares `a` (grows with a global id) with `n` (the same in
    every thread); `a_lhs`: a is its first operand; `upper`: it holds for
    the whole group when it holds for the group's last element (else for
    its first)."""
    cmp: object
    a: object
    n: object
    a_lhs: bool
    upper: bool


def _pred(op) -> int:
    from diffgpu._mlir import ir
    return ir.IntegerAttr(op.attributes["predicate"]).value


def _int(v):
    from diffgpu._mlir import ir
    o = _op(v)
    if o is None or o.name != "arith.constant":
        return None
    attr = o.attributes["value"]
    return ir.IntegerAttr(attr).value if isinstance(attr, ir.IntegerAttr) else None


def monotone_chain(a, gids):
    """(gid, ops computing `a` from it, first to last) when each op adds or
    subtracts a constant or casts index <-> integer (so `a` grows with the
    gid), else None."""
    chain = []
    v = a
    while not any(v == g for g in gids):
        o = _op(v)
        if o is None or len(chain) > 8:
            return None
        if o.name == "arith.index_cast":
            v = o.operands[0]
        elif o.name in ("arith.addi", "arith.subi"):
            x, y = o.operands[0], o.operands[1]
            if _const(y) is not None:
                v = x
            elif o.name == "arith.addi" and _const(x) is not None:
                v = y
            else:
                return None
        else:
            return None
        chain.append(o)
    return v, chain[::-1]


def _const(v):
    o = _op(v)
    if o is not None and o.name == "arith.index_cast":
        o = _op(o.operands[0])
    return o if o is not None and o.name == "arith.constant" else None


def invariant(v, gids, fn) -> bool:
    """Is `v` the same in every thread, and recomputable anywhere: built
    from constants, arguments of `fn`, `memref.dim` and block/grid extents
    by arithmetic (no load, nothing from a global id)?"""
    todo, seen = [v], 0
    while todo:
        seen += 1
        x = todo.pop()
        if any(x == g for g in gids) or seen > 64:
            return False
        o = _op(x)
        if o is None:
            if x.owner != fn.regions[0].blocks[0]:
                return False
            continue
        if not (o.name.startswith(_PURE) or o.name == "memref.dim" or o.name in _SAME):
            return False
        if len(o.regions):
            return False
        todo.extend(o.operands)
    return True


def bounds(cond, gids, fn):
    """The bounds (list of Bound) whose conjunction is `cond`, else None."""
    o = _op(cond)
    if o is None:
        return None
    if o.name == "arith.andi":
        a, b = bounds(o.operands[0], gids, fn), bounds(o.operands[1], gids, fn)
        return None if a is None or b is None else a + b
    if o.name == "arith.cmpi":
        return _cmp_bound(o, gids, fn)
    if o.name == "scf.if":
        return _short_circuit(o, cond, gids, fn)
    return None


def _cmp_bound(o, gids, fn):
    pred = _pred(o)
    if pred not in _LESS + _GREATER:
        return None
    lhs, rhs = o.operands[0], o.operands[1]
    for a, n, a_lhs in ((lhs, rhs, True), (rhs, lhs, False)):
        if monotone_chain(a, gids) is not None and not depends_on(n, gids) \
                and invariant(n, gids, fn):
            upper = (pred in _LESS) == a_lhs
            return [Bound(o, a, n, a_lhs, upper)]
    return None


def _short_circuit(o, cond, gids, fn):
    """`c1 and c2` as the frontend writes it (see the module docstring)."""
    if len(o.results) != 1 or str(cond.type) != "i1" or len(o.regions[1].blocks) != 1:
        return None
    then, other = o.regions[0].blocks[0], o.regions[1].blocks[0]
    then_ops = [x.operation for x in then.operations]
    else_ops = [x.operation for x in other.operations]
    c1 = o.operands[0]
    if len(else_ops) != 1:
        return None
    e = else_ops[0].operands[0]
    if not (e == c1 or _int(e) == 0):
        return None
    if any(not (x.name.startswith(_PURE) or x.name == "memref.dim") for x in then_ops[:-1]):
        return None
    a, b = bounds(c1, gids, fn), bounds(then_ops[-1].operands[0], gids, fn)
    return None if a is None or b is None else a + b


def materialize(v, mapping, clone):
    """`v` (an `invariant` value) at the current insertion point: its
    defining ops cloned (`clone(op, mapping)`) unless already mapped or a
    function argument."""
    for old, new in mapping:
        if v == old:
            return new
    o = _op(v)
    if o is None:
        return v
    for w in o.operands:
        materialize(w, mapping, clone)
    clone(o, mapping)
    return [new for old, new in mapping if v == old][0]

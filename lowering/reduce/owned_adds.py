"""Adds into elements that one thread owns: plain read-modify-writes.

Part of `diffgpu-combine-adds` (lowering/reduce/combine_adds.py), run after
its combining, on the same add-only arrays (no other access in the launch,
arrays proven disjoint). A thread that handles several rows of a row kernel
reads `x[r, c]` at a row computed from its block (`r = block_id(0) * 4 + k`
in unrolled rows, `r = block_id(1) + i * grid_dim(1)` in a grid-stride loop,
also as the reverse sweep recomputes it), so the autodiff's elision, which
accepts global ids only, left `dx[r, c]`'s adds atomic. They are not
needed when no other thread of the launch can add into the same element:

| index component | the element names the thread's |
|---|---|
| `block_id(d) * block_dim(d) + thread_id(d)` (a global id) | block and thread along d |
| `thread_id(d)` | thread along d |
| `thread_id(d) + C`, constants C (a thread's columns `t + 256 k`) | thread along d, when the block has at most S threads along d (S: the gcd of the C) |
| `block_id(d) * K + k`, `0 <= k < K` (a constant or a constant-trip loop's variable; K = 1: `block_id(d)`) | block along d |
| `block_id(d) + X * grid_dim(d)`, any X (a grid-stride row) | block along d (`r mod grid_dim`) |
| an integer constant | nothing |

When every add into the array has the same kinds of components (the same
K), an element determines, for each coordinate a component names, the
thread's block or thread id along that dimension; two threads that differ
only in coordinates no component names would meet, so those dimensions must
have one thread (block_dim(d) == 1) or one block (grid_dim(d) == 1). That is
tested once per function, at run time (uniform in the launch): the add
becomes `load; add; store` when it holds, and stays atomic otherwise. A
thread id without its block (`dg[thread_id(0)]`, every block adding into
the same elements) would need a launch of one block: such adds stay as
they are; so do adds whose index names no thread (`out[block_id(0)]`: the
block aggregation sums the block's values and adds once).

    "diffgpu.atomic_add"(%dx, %v, %r, %c)     (%r = block_id(0) * 4 + 2, %c = thread_id(0))
  becomes
    %one = block_dim(1) == 1 && grid_dim(1) == 1 && block_dim(2) == 1 && grid_dim(2) == 1
    scf.if %one { %o = memref.load %dx[%r, %c]; memref.store (%o + %v), %dx[%r, %c] }
    else { "diffgpu.atomic_add"(%dx, %v, %r, %c) }
"""
from __future__ import annotations

import math

from diffgpu._mlir import arith, ir, memref, scf

from diffgpu.dialects import names as N
from diffgpu.dialects import ops as dg
from diffgpu.dialects.ops import BlockIdOp, GridDimOp, ThreadIdOp
from diffgpu.lowering.common.ir_util import const_int
from diffgpu.lowering.facts.indices import _geom, _op, _strip, global_dim
from diffgpu.lowering.common import half as HALF


def _geometry_pure(v, depth=0) -> bool:
    """`v` is computed from geometry ops and constants only (the same value
    wherever the thread computes it)."""
    op = _op(v)
    if op is None or depth > 16:
        return False
    if op.name in ("arith.constant",) + N.GEOMETRY:
        return True
    return op.name.startswith("arith.") and not len(op.regions) and all(
        _geometry_pure(o, depth + 1) for o in op.operands)


def _see(v):
    """`v` through index casts and tape slots: a load of a rank-0
    `memref.alloca` whose stores all store one geometry-pure value (the
    reverse sweep reads its loop bounds back so) is that value."""
    while True:
        v = _strip(v)
        op = _op(v)
        if op is None or op.name != "memref.load" or len(op.operands) != 1:
            return v
        slot = _op(op.operands[0])
        if slot is None or slot.name != "memref.alloca":
            return v
        users = [u.owner.operation if hasattr(u.owner, "operation") else u.owner
                 for u in slot.results[0].uses]
        # only loads of the slot and stores into it: a slot that a call, an
        # atomic or a view also reaches may hold something else
        if not all(o.name == "memref.load" or (o.name == "memref.store"
                                               and o.operands[1] == slot.results[0])
                   for o in users):
            return v
        stored = [o.operands[0] for o in users if o.name == "memref.store"]
        if len(stored) != 1 or not _geometry_pure(stored[0]):
            return v
        v = stored[0]


def _g(v, cls):
    return _geom(_see(v), cls)


def _k(v, depth=0):
    """The integer constant `v` is (folding +, -, *, max, min, divisions of
    constants: the trip counts the reverse sweep computes), or None."""
    v = _see(v)
    k = const_int(v)
    op = _op(v)
    if k is not None or op is None or depth > 8:
        return k
    fold = {"arith.addi": lambda a, b: a + b, "arith.subi": lambda a, b: a - b,
            "arith.muli": lambda a, b: a * b, "arith.maxsi": max, "arith.minsi": min,
            "arith.ceildivsi": lambda a, b: -(-a // b) if b else None,
            "arith.floordivsi": lambda a, b: a // b if b else None}.get(op.name)
    if fold is None:
        return None
    a, b = (_k(o, depth + 1) for o in op.operands)
    return None if a is None or b is None else fold(a, b)


def component(v):
    """The kind of an index component (module docstring's table), or None."""
    v = _see(v)
    d = global_dim(v)
    if d is not None:
        return ("gid", d)
    k = _k(v)
    if k is not None:
        return ("const",)
    d = _g(v, ThreadIdOp)
    if d is not None:
        return ("tid", d, 0)
    op = _op(v)
    if op is not None and op.name == "arith.addi":  # thread_id(d) + C: a strided column
        a, b = op.operands
        for x, y in ((a, b), (b, a)):
            d, k = _g(x, ThreadIdOp), _k(y)
            if d is not None and k is not None and k >= 0:
                return ("tid", d, k)
    row = _block_row(v)
    if row is not None:
        return row
    return _grid_stride(v)


def _block_row(v):
    """('row', d, K) for block_id(d) * K + k (0 <= k < K) or block_id(d) * K."""
    d = _g(v, BlockIdOp)
    if d is not None:
        return ("row", d, 1)
    op = _op(_see(v))
    if op is None:
        return None
    if op.name == "arith.muli":
        a, b = op.operands
        for x, y in ((a, b), (b, a)):
            d, k = _g(x, BlockIdOp), _k(y)
            if d is not None and k is not None and k >= 1:
                return ("row", d, k)
        return None
    if op.name != "arith.addi":
        return None
    a, b = op.operands
    for x, y in ((a, b), (b, a)):
        row, span = _block_row(x), _range(y)
        if row is not None and span is not None and 0 <= span[0] and span[1] < row[2]:
            return row
    return None


def _range(v, depth=0):
    """(lo, hi): bounds of the integer `v` from constants and the variables
    of `scf.for` loops with constant bounds (a row `j` of `range(4)` and the
    reverse sweep's `3 - j`), through +, -, * by a constant; None if unknown."""
    k = _k(v)
    if k is not None:
        return k, k
    v = _see(v)
    if depth > 8:
        return None
    if isinstance(v.owner, ir.Block):
        loop = v.owner.owner
        if loop is None or loop.operation.name != "scf.for" or \
                ir.BlockArgument(v).arg_number != 0:
            return None
        lb, ub, step = (_k(o) for o in list(loop.operation.operands)[:3])
        if None in (lb, ub, step) or step <= 0 or ub <= lb:
            return None
        return lb, ub - 1
    op = _op(v)
    if op is None or op.name not in ("arith.addi", "arith.subi", "arith.muli"):
        return None
    a, b = (_range(o, depth + 1) for o in op.operands)
    if a is None or b is None:
        return None
    if op.name == "arith.addi":
        return a[0] + b[0], a[1] + b[1]
    if op.name == "arith.subi":
        return a[0] - b[1], a[1] - b[0]
    prods = [x * y for x in a for y in b]
    return min(prods), max(prods)


def _grid_stride(v):
    """('stride', d) for block_id(d) + X * grid_dim(d)."""
    op = _op(_see(v))
    if op is None or op.name != "arith.addi":
        return None
    a, b = op.operands
    for x, y in ((a, b), (b, a)):
        d = _g(x, BlockIdOp)
        mul = _op(_see(y))
        if d is None or mul is None or mul.name != "arith.muli":
            continue
        if d in (_g(mul.operands[0], GridDimOp), _g(mul.operands[1], GridDimOp)):
            return ("stride", d)
    return None


def signature(add):
    """The kinds of the add's index components, or None when one has none."""
    sig = tuple(component(v) for v in list(add.operands)[2:])
    return None if any(c is None for c in sig) else sig


def common(sigs):
    """One owning signature for all adds' signatures, or None: equal kinds
    per position, thread components `thread_id(d) + C` with the constants'
    gcd S as their stride ("tid", d, S), S = 0 when every C is 0."""
    sigs = list(sigs)
    if not sigs or any(s is None or len(s) != len(sigs[0]) for s in sigs):
        return None
    out = []
    for pos in range(len(sigs[0])):
        kinds = {c[:2] if c[0] == "tid" else c for c in (s[pos] for s in sigs)}
        if len(kinds) != 1:
            return None
        kind = next(iter(kinds))
        if kind[0] == "tid":
            kind = ("tid", kind[1], math.gcd(*(s[pos][2] for s in sigs)))
        out.append(kind)
    return tuple(out)


def unit_dims_needed(sig) -> list:
    """[(extent, dim, bound)]: block_dim(d) or grid_dim(d) must be at most
    `bound` for `sig` to name a thread: a thread coordinate no component
    names needs block_dim 1, a block coordinate grid_dim 1, a strided
    column `thread_id(d) + C` a block of at most its stride S threads."""
    threads = {c[1] for c in sig if c[0] in ("gid", "tid")}
    blocks = {c[1] for c in sig if c[0] in ("gid", "row", "stride")}
    if not threads:
        return None  # the block's threads add into one element: the block sums it
    if threads - blocks:
        return None  # a thread id without its block: a launch of one block only
    need = [("block_dim", d, 1) for d in range(3) if d not in threads]
    need += [("block_dim", c[1], c[2]) for c in sig if c[0] == "tid" and c[2] > 0]
    return need + [("grid_dim", d, 1) for d in range(3) if d not in blocks]


def _condition(need, fn, loc):
    """i1 at the start of `fn`: every extent in `need` is 1 (None: none needed)."""
    if not need:
        return None
    body = fn.regions[0].blocks[0]
    with loc, ir.InsertionPoint.at_block_begin(body):
        cond = None
        for what, d, bound in need:
            ext = dg.block_dim(d) if what == "block_dim" else dg.grid_dim(d)
            le = arith.cmpi(arith.CmpIPredicate.ule, ext,
                            arith.constant(ir.IndexType.get(), bound))
            cond = le if cond is None else arith.andi(cond, le)
    return cond


def _plain(add, cond):
    """Replace `add` by a plain update (under `cond` when it is not None)."""
    target, value, idx = add.operands[0], add.operands[1], list(add.operands)[2:]
    with add.location, ir.InsertionPoint(add):
        if cond is None:
            _rmw(target, value, idx)
        else:
            branch = scf.IfOp(cond, [], has_else=True)
            with ir.InsertionPoint(branch.then_block):
                _rmw(target, value, idx)
                scf.YieldOp([])
            with ir.InsertionPoint(branch.else_block):
                dg.atomic_add(target, value, idx)
                scf.YieldOp([])
    add.erase()


def _rmw(target, value, idx):
    old = memref.load(target, idx)
    if HALF.is_half(old.type):  # float32 add, one rounding (lowering/common/half.py)
        new = HALF.narrow(arith.addf(HALF.wide(old), HALF.wide(value)), old.type)
    else:
        new = arith.addf(old, value) if isinstance(value.type, ir.FloatType) else \
            arith.addi(old, value)
    memref.store(new, target, idx)


def own(fn, target, adds) -> bool:
    """Rewrite the adds into `target` (a block argument of `fn`, add-only)
    when they all have one owning signature; True when rewritten."""
    sig = common(signature(a) for a in adds)
    if sig is None:
        return False
    need = unit_dims_needed(sig)
    if need is None:
        return False
    cond = _condition(need, fn, adds[0].location)
    for a in adds:
        _plain(a, cond)
    return True

"""Index expressions in a thread's geometry, read from the IR: the global id
`gid(d) = block_id(d) * block_dim(d) + thread_id(d)` (`global_dim`), the
thread-unique key of an index tuple (`index_key`: autodiff's elision,
dg.vjp's access analysis) and `gid(d) + k` offsets (`offset_of`: the stencil
adjoint and its transposition).
"""
from __future__ import annotations

from diffgpu._mlir import ir

from diffgpu.dialects.ops import BlockDimOp, BlockIdOp, ThreadIdOp
from diffgpu.lowering.common.ir_util import is_index, is_int


def _op(v):
    owner = v.owner
    return None if isinstance(owner, ir.Block) else owner.operation


def _geom(v, cls):
    """The `dim` of `v` when it is the result of a geometry op of class `cls`."""
    op = _op(_strip(v))
    if op is None or not isinstance(op.opview, cls):
        return None
    return op.opview.dim


def _is_i64(t) -> bool:
    return is_int(t) and ir.IntegerType(t).width == 64


def _strip(v):
    """The value under index_casts between index and i64 (both 64-bit on
    our targets, so the casts keep every value of the thread geometry)."""
    while True:
        op = _op(v)
        if op is None or op.name != "arith.index_cast":
            return v
        src = op.operands[0]
        if not ((is_index(src.type) and _is_i64(v.type))
                or (_is_i64(src.type) and is_index(v.type))):
            return v
        v = src


def global_dim(v):
    """d when `v` is block_id(d) * block_dim(d) + thread_id(d) (in index or
    i64 arithmetic: no overflow below 2^63), else None."""
    op = _op(_strip(v))
    if op is None or op.name != "arith.addi":
        return None
    a, b = op.operands[0], op.operands[1]
    for m, t in ((a, b), (b, a)):
        d = _geom(t, ThreadIdOp)
        mul = _op(_strip(m))
        if d is None or mul is None or mul.name != "arith.muli":
            continue
        x, y = mul.operands[0], mul.operands[1]
        if ((_geom(x, BlockIdOp) == d and _geom(y, BlockDimOp) == d)
                or (_geom(y, BlockIdOp) == d and _geom(x, BlockDimOp) == d)):
            return d
    return None


def _component(v):
    d = global_dim(v)
    if d is not None:
        return ("gid", d)
    op = _op(v)
    if op is not None and op.name == "arith.index_cast" and is_index(v.type):
        op = _op(op.operands[0])  # the frontend's i64 literals
    if op is not None and op.name == "arith.constant" and (
            is_int(op.results[0].type) or is_index(op.results[0].type)):
        return ("const", ir.IntegerAttr(op.attributes["value"]).value)
    return None


def index_key(indices):
    """The index tuple's thread-unique key, or None when not thread-unique."""
    comps = tuple(_component(i) for i in indices)
    if any(c is None for c in comps) or not any(c[0] == "gid" for c in comps):
        return None
    return comps


def _const(v):
    """The integer value of a constant (through an index_cast), else None."""
    op = _op(v)
    if op is not None and op.name == "arith.index_cast":
        op = _op(op.operands[0])
    if op is None or op.name != "arith.constant":
        return None
    attr = op.attributes["value"]
    return ir.IntegerAttr(attr).value if isinstance(attr, ir.IntegerAttr) else None


def _through_tape(v):
    """`v`, or the value stored in the private rank-0 alloca `v` is loaded
    from, when that alloca is only loaded and stored, with exactly one store
    (anywhere: the tape of the reverse sweep). Used only to read an index:
    the stored expression is checked to be `gid + k`, the same each time the
    store runs, so any load that does not read garbage reads that value."""
    op = _op(v)
    if op is None or op.name != "memref.load" or len(op.operands) != 1:
        return v
    slot = _op(op.operands[0])
    if slot is None or slot.name != "memref.alloca":
        return v
    users = [u.owner.operation if hasattr(u.owner, "operation") else u.owner
             for u in slot.results[0].uses]
    stores = [u for u in users if u.name == "memref.store"]
    if len(stores) != 1 or any(u.name not in ("memref.load", "memref.store") for u in users):
        return v
    if stores[0].operands[1] != slot.results[0]:
        return v  # the alloca is the stored value, not the destination
    return stores[0].operands[0]


def _strip_casts(v):
    """The value under every index_cast."""
    while True:
        op = _op(v)
        if op is None or op.name != "arith.index_cast":
            return v
        v = op.operands[0]


def offset_of(v):
    """(d, k) when `v` is gid(d) + k (k an integer constant), else None."""
    v = _strip_casts(_through_tape(v))
    d = global_dim(v)
    if d is not None:
        return d, 0
    op = _op(v)
    if op is None or op.name not in ("arith.addi", "arith.subi"):
        return None
    a, b = op.operands[0], op.operands[1]
    d = global_dim(_strip_casts(a))
    if d is not None and _const(b) is not None:
        return d, (_const(b) if op.name == "arith.addi" else -_const(b))
    d = global_dim(_strip_casts(b))
    if op.name == "arith.addi" and d is not None and _const(a) is not None:
        return d, _const(a)
    return None



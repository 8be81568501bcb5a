"""Derivative rules of the `memref` dialect.

    %v = memref.load %A[%i]     reverse: atomic dA[i] += adj(v) (plain when
                                elision.py proves i thread-unique; a 16-bit
                                element's float32 adjoint rounded once there,
                                or added as it is to a float32 scratch shadow)
    memref.store %v, %A[%i]     reverse: adj(v) += dA[i]; dA[i] = 0

The store consumes the adjoint of the overwritten element (SPEC: a shadow
holds the adjoint of its array's final value on entry, of its initial value
on exit). Loaded values are forward SSA values, so the reverse sweep never
re-reads memory that a later store may have overwritten.
"""
from __future__ import annotations

from diffgpu._mlir import ir, memref
from diffgpu.dialects import names as N
from diffgpu.dialects.ops import SharedAllocOp

from diffgpu.lowering.autodiff import build as B
from diffgpu.lowering.autodiff.elision import accumulate
from diffgpu.lowering.autodiff.locals import is_local
from diffgpu.lowering.autodiff.rules.partials import Rule


def _load_activity(A, op):
    """A load from an array with a shadow is active."""
    return A.is_dup(op.operands[0]) and A.mark(op.results[0])


def _store_activity(A, op):
    """A local buffer (memref.alloca) that receives an active value gets a
    shadow (locals.py); a store makes no value active."""
    value, mem = op.operands[0], op.operands[1]
    return A.is_active(value) and not A.is_dup(mem) and is_local(mem) and A.add_dup(mem)


def _load_needs(R, op):
    return R.is_active(op.results[0])


def _load_reverse(R, op):
    d = R.get_adj(op.results[0])
    if d is None:
        return
    sh = R.shadow(op.operands[0])
    idx = [R.need(i) for i in op.operands[1:]]
    accumulate(sh, d, idx, R.elision_of(op.operands[0]))


def _store_needs(R, op):
    value, mem = op.operands[0], op.operands[1]
    if R.is_active(value) and not R.is_dup(mem):
        owner = mem.owner
        if isinstance(owner, SharedAllocOp):
            R.error(op, "active value stored into shared memory: differentiating through "
                        "dg.shared_array is not supported yet")
        else:
            R.error(op, "active value stored into an array without a shadow "
                        "(make the array dg.Duplicated, or the value constant)")
        return False
    return R.is_dup(mem)


def _store_reverse(R, op):
    value, mem = op.operands[0], op.operands[1]
    elem = B.memref_elem(mem.type)
    if not B.is_float(elem):
        return
    sh = R.shadow(mem)
    idx = [R.need(i) for i in op.operands[2:]]
    d = memref.load(sh, idx) if R.is_active(value) else None
    memref.store(B.zero(B.memref_elem(sh.type)), sh, idx)  # a float32 scratch: its own
    R.add_adj(value, d)


def _keep_row_mark(op, new_value_or_op):
    """A tangent access of a vector's component keeps the frontend's mark
    (N.VECTOR_ROW): the GPU merges the tangent row like the primal one."""
    if N.VECTOR_ROW in op.attributes:
        new = getattr(new_value_or_op, "owner", new_value_or_op)
        new.attributes[N.VECTOR_ROW] = ir.UnitAttr.get()


def _load_tangent(F, op):
    if F.is_dup(op.operands[0]):
        t = memref.load(F.shadow(op.operands[0]), [F.val(i) for i in op.operands[1:]])
        _keep_row_mark(op, t)
        F.set_tangent(op.results[0], t)


def _store_tangent(F, op):
    value, mem = op.operands[0], op.operands[1]
    if not F.is_dup(mem):
        if F.is_active(value):
            F.error(op, "active value stored into an array without a shadow")
        return
    if not B.is_float(B.memref_elem(mem.type)):
        return
    _keep_row_mark(op, memref.store(F.tangent(value), F.shadow(mem),
                                    [F.val(i) for i in op.operands[2:]]))


REVERSE = {
    "memref.load": Rule(_load_needs, _load_reverse, _load_tangent, _load_activity),
    "memref.store": Rule(_store_needs, _store_reverse, _store_tangent, _store_activity),
}

#: ops that carry no derivative -> why (an active value stored into a local
#: buffer gives it a shadow: locals.py)
INACTIVE = {
    "memref.dim": "an index result: the shape",
    "memref.alloca": "creates a buffer; its contents are followed by load/store",
    "memref.alloc": "creates a buffer; its contents are followed by load/store",
    "memref.dealloc": "frees a buffer; no value flows",
}

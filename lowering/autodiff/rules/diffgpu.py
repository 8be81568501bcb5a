"""Derivative rules of the `diffgpu` dialect.

    "diffgpu.atomic_add"(%A, %v, %i)   reverse: adj(v) += dA[i] (dA[i] kept:
                                       additions do not overwrite)
    "diffgpu.barrier"()                reverse: a barrier at the mirrored point
    "diffgpu.erfinv"(%x)               d/dx = sqrt(pi)/2 * exp(erfinv(x)^2)
    "diffgpu.erfcinv"(%x)              d/dx = -sqrt(pi)/2 * exp(erfcinv(x)^2)
    "diffgpu.stop_gradient"(%x)        inactive: no adjoint for x, a zero tangent
Thread geometry is integer-valued, hence inactive. Shared arrays have no
shadow yet: an active value stored into one is an error (rules_memref).
"""
from __future__ import annotations

import math as _pymath

from diffgpu._mlir import memref
from diffgpu.dialects import names as N
from diffgpu.dialects import ops as dg_ops

from diffgpu.lowering.autodiff import build as B
from diffgpu.lowering.autodiff.rules.partials import Rule, Singular

_SQRT_PI_2 = _pymath.sqrt(_pymath.pi) / 2.0

#: elementwise ops (partials.py): the inverse of erf / erfc, from the forward
#: result r: erf'(r) = 2/sqrt(pi) exp(-r^2), so d/dx erfinv(x) = 1 / erf'(r)
DERIVATIVES = {  # infinite at +-1 (erfinv), 0 and 2 (erfcinv): strong zeros guard them
    N.ERFINV: (Singular(lambda e: B.exp(e.r * e.r) * _SQRT_PI_2),),
    N.ERFCINV: (Singular(lambda e: B.exp(e.r * e.r) * -_SQRT_PI_2),),
}

#: ops that carry no derivative -> why
INACTIVE = {
    **{n: "thread geometry: an index result, no operands" for n in N.GEOMETRY},
    N.SHARED_ALLOC: "creates a shared array (its shadow: shared.py)",
    N.STOP_GRADIENT: "dg.stop_gradient: the value held constant (no adjoint flows back "
                     "through it, a zero tangent); erased after autodiff (stop_gradient.py)",
}


def _atomic_activity(A, op):
    """The old value read from a shadowed array is active (as for memref.load)."""
    return A.is_dup(op.operands[0]) and A.mark(op.results[0])


def _atomic_needs(R, op):
    mem, value = op.operands[0], op.operands[1]
    if R.is_active(value) and not R.is_dup(mem):
        R.error(op, "active value added atomically into an array without a shadow")
        return False
    if R.is_dup(mem) and R.is_active(op.results[0]) and len(list(op.results[0].uses)):
        R.error(op, f"the old value returned by dg.atomic_add ({N.ATOMIC_ADD}) is used: "
                    "its derivative is not supported (use the atomic add as a statement)")
        return False
    return R.is_active(value) and R.is_dup(mem)


def _atomic_reverse(R, op):
    mem, value = op.operands[0], op.operands[1]
    idx = [R.need(i) for i in op.operands[2:]]
    R.add_adj(value, memref.load(R.shadow(mem), idx))


def _atomic_tangent(F, op):
    mem, value = op.operands[0], op.operands[1]
    if F.is_dup(mem) and F.is_active(value):
        dg_ops.atomic_add(F.shadow(mem), F.tangent(value),
                          [F.val(i) for i in op.operands[2:]])


def _barrier_reverse(R, op):
    dg_ops.barrier()


REVERSE = {
    N.ATOMIC_ADD: Rule(_atomic_needs, _atomic_reverse, _atomic_tangent, _atomic_activity),
    N.BARRIER: Rule(lambda R, op: True, _barrier_reverse, lambda F, op: None),
}

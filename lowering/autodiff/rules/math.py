"""Derivative rules of the `math` dialect (one partial per operand; see
partials.py), as in Enzyme's MathDerivatives.td.

    math.sin %x          d/dx = cos(x)
"""
from __future__ import annotations

import math as _pymath

from diffgpu.lowering.autodiff import build as B
from diffgpu.lowering.autodiff.rules.partials import (ONE, ZERO, Singular, constant_value,
                                                       defining_op)


def _sign(e):
    """sign(x): 1, -1, or 0 at 0 (derivative of |x|)."""
    pos = B.select(e.x.gt(0.0), e.c(1.0), e.c(0.0))
    neg = B.select(e.x.lt(0.0), e.c(1.0), e.c(0.0))
    return pos - neg


def _copysign_dx(e):
    """sign(x) * sign(y) by sign bits: copysign(1, x) * copysign(1, y) (no
    bitcast, so that the rule itself can be differentiated again)."""
    from diffgpu._mlir import math
    one = e.c(1.0).v
    return B.V(math.copysign(one, e.x.v)) * B.V(math.copysign(one, e.y.v))


def _pow_dx(e):
    # y * x^(y-1); 0 where y == 0 (avoids 0 * inf at x == 0)
    return B.select(e.y.eq(0.0), e.c(0.0), e.y * B.powf(e.x, e.y - 1.0))


def _pow_dy(e):
    # x^y * log(x); 0 where x == 0 (the limit from the right)
    return B.select(e.x.eq(0.0), e.c(0.0), e.r * B.log(e.x))


def _fpowi_dx(e):
    # n * x^(n-1), n an integer operand
    n = e.op(1)
    one = B.const(n.type, 1)
    from diffgpu._mlir import arith
    nm1 = arith.subi(n, one)
    return B.sitofp(e.x.type, n) * B.fpowi(e.x, nm1)


def _atan2_dy(e):  # atan2(y=x0, x=x1): d/dy = x / (x^2 + y^2)
    return e.y / (e.x * e.x + e.y * e.y)


def _atan2_dx(e):
    return -(e.x / (e.x * e.x + e.y * e.y))


_TWO_OVER_SQRT_PI = 2.0 / _pymath.sqrt(_pymath.pi)

#: ops whose results are never negative (for log1p's guard)
_NON_NEGATIVE = ("math.exp", "math.exp2", "math.sqrt", "math.absf")


def _non_negative_operand(op) -> bool:
    """log1p(x) with x >= 0 by construction (exp, sqrt, |.|, a constant):
    its partial 1 / (x + 1) is at most 1."""
    x = op.operands[0]
    src = defining_op(x)
    c = constant_value(x)
    return (src is not None and src.name in _NON_NEGATIVE) or (c is not None and c >= 0)


def _const_exponent_at_least_one(op) -> bool:
    """pow(x, c) with a constant c >= 1 (or 0): y x^(y-1) is finite."""
    c = constant_value(op.operands[1])
    return c is not None and (c >= 1.0 or c == 0.0)

DERIVATIVES = {
    "math.exp": (lambda e: e.r,),
    "math.exp2": (lambda e: e.r * _pymath.log(2.0),),
    "math.expm1": (lambda e: e.r + 1.0,),
    # Singular: infinite or NaN at the function's singular points (0 for
    # log and sqrt, +-1 for asin...): a zero adjoint stays zero there
    # (strong zeros, partials.py)
    "math.log": (Singular(lambda e: 1.0 / e.x),),
    "math.log2": (Singular(lambda e: 1.0 / (e.x * _pymath.log(2.0))),),
    "math.log10": (Singular(lambda e: 1.0 / (e.x * _pymath.log(10.0))),),
    "math.log1p": (Singular(lambda e: 1.0 / (e.x + 1.0), _non_negative_operand),),
    "math.sin": (lambda e: B.cos(e.x),),
    "math.cos": (lambda e: -B.sin(e.x),),
    "math.tan": (lambda e: e.r * e.r + 1.0,),
    "math.tanh": (lambda e: 1.0 - e.r * e.r,),
    "math.sinh": (lambda e: B.cosh(e.x),),
    "math.cosh": (lambda e: B.sinh(e.x),),
    "math.sqrt": (Singular(lambda e: 0.5 / e.r),),
    "math.rsqrt": (Singular(lambda e: e.r * e.r * e.r * -0.5),),
    "math.powf": (Singular(_pow_dx, _const_exponent_at_least_one), Singular(_pow_dy)),
    "math.fpowi": (_fpowi_dx, None),
    "math.absf": (_sign,),
    "math.erf": (lambda e: B.exp(-(e.x * e.x)) * _TWO_OVER_SQRT_PI,),
    "math.erfc": (lambda e: B.exp(-(e.x * e.x)) * -_TWO_OVER_SQRT_PI,),
    "math.atan": (lambda e: 1.0 / (e.x * e.x + 1.0),),
    "math.asin": (Singular(lambda e: 1.0 / B.sqrt(1.0 - e.x * e.x)),),
    "math.acos": (Singular(lambda e: -1.0 / B.sqrt(1.0 - e.x * e.x)),),
    "math.asinh": (lambda e: 1.0 / B.sqrt(e.x * e.x + 1.0),),
    # sqrt(x - 1) * sqrt(x + 1): no cancellation in x * x - 1 near x = 1
    "math.acosh": (Singular(lambda e: 1.0 / (B.sqrt(e.x - 1.0) * B.sqrt(e.x + 1.0))),),
    "math.atanh": (Singular(lambda e: 1.0 / (1.0 - e.x * e.x)),),
    # 1 / (3 cbrt(x)^2), from the forward result (inf at 0, as the derivative)
    "math.cbrt": (Singular(lambda e: 1.0 / (e.r * e.r * 3.0)),),
    "math.atan2": (Singular(_atan2_dy), Singular(_atan2_dx)),
    "math.fma": (lambda e: e.y, lambda e: e.x, ONE),
    # |x| * sign(y): d/dx = sign(x) * sign(y), with the sign bit deciding
    "math.copysign": (_copysign_dx, ZERO),
    # piecewise constant: zero derivative, listed explicitly
    "math.floor": (ZERO,),
    "math.ceil": (ZERO,),
    "math.round": (ZERO,),
    "math.roundeven": (ZERO,),
    "math.trunc": (ZERO,),
}

_CLASS = "an i1 result: a classification of the float, piecewise constant"
#: ops that carry no derivative -> why
INACTIVE = {
    **{"math." + n: "integer values only: no float operand, no derivative"
       for n in ("ipowi", "absi", "ctlz", "cttz", "ctpop")},
    **{"math." + n: _CLASS for n in ("isnan", "isinf", "isfinite", "isnormal")},
}

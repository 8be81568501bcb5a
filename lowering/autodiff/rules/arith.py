"""Derivative rules of the `arith` dialect (one entry per op, one partial per
operand; see partials.py). Ops without a derivative are listed in INACTIVE,
each with the reason; any other op that touches an active value and has no
rule is an error (never a silent zero). `arith.bitcast` is in neither list:
reinterpreting a float's bits as an integer (and back) would lose its
derivative, so on an active value it is an error.

    arith.mulf %x, %y    d/dx = y, d/dy = x
"""
from __future__ import annotations

from diffgpu.lowering.autodiff import build as B
from diffgpu.lowering.autodiff.rules.partials import NEG_ONE, ONE, Singular, constant_value


def _le(e):  # x <= y (ordered) as a 1/0 float
    return B.select(e.x.le(e.y), e.c(1.0), e.c(0.0))


def _gt(e):
    return B.select(e.x.le(e.y), e.c(0.0), e.c(1.0))


def _nonzero_divisor(op) -> bool:
    """x / c with a nonzero constant c: 1/c and -r/c are finite."""
    c = constant_value(op.operands[1])
    return c is not None and c != 0.0


DERIVATIVES = {
    "arith.addf": (ONE, ONE),
    "arith.subf": (ONE, NEG_ONE),
    "arith.mulf": (lambda e: e.y, lambda e: e.x),
    # Singular: infinite where y == 0; a zero adjoint stays zero there
    # (strong zeros, partials.py)
    "arith.divf": (Singular(lambda e: 1.0 / e.y, _nonzero_divisor),
                   Singular(lambda e: -(e.r / e.y), _nonzero_divisor)),
    "arith.negf": (NEG_ONE,),
    # fmod: r = x - trunc(x / y) * y
    "arith.remf": (ONE, Singular(lambda e: -B.trunc(e.x / e.y), _nonzero_divisor)),
    # min picks x where x <= y (ties go to x), max picks x where x > y
    "arith.minimumf": (_le, _gt),
    "arith.minnumf": (_le, _gt),
    "arith.maximumf": (_gt, _le),
    "arith.maxnumf": (_gt, _le),
    "arith.select": (None,
                     lambda e: B.select(e.op(0), e.c(1.0), e.c(0.0)),
                     lambda e: B.select(e.op(0), e.c(0.0), e.c(1.0))),
    # type conversions: the engine casts the adjoint/tangent between types
    "arith.extf": (ONE,),
    "arith.truncf": (ONE,),
    "arith.sitofp": (None,),
    "arith.uitofp": (None,),
}

_INT = "integer or index values only: no float operand, no derivative"
#: ops that carry no derivative -> why
INACTIVE = {
    "arith.constant": "no operands",
    "arith.cmpf": "an i1 result, piecewise constant in its float operands",
    "arith.fptosi": "an integer result, piecewise constant in its float operand",
    "arith.fptoui": "an integer result, piecewise constant in its float operand",
    **{"arith." + n: _INT for n in """
        cmpi index_cast index_castui addi subi muli divsi divui ceildivsi ceildivui
        floordivsi remsi remui andi ori xori shli shrsi shrui maxsi minsi maxui minui
        extsi extui trunci addui_extended mulsi_extended mului_extended
    """.split()},
}

# Derivatives of the scalar builtins (frontend/scalar_builtins.py): dg.sign,
# step, clamp, lerp, smoothstep, frac, rint, mod, each a composition of
# arith/math ops whose derivative is the composition of the ops' rules
# (lowering/autodiff/rules/), and dg.atomic_sub, an atomic add of -v. Per
# case this prints the function diffgpu-autodiff makes in reverse mode
# (dg.autodiff: the arguments, then the seed; the gradients returned in
# argument order) and in forward mode (dg.fwddiff: the arguments, then their
# tangents; the value and its tangent returned).
# RUN: %python %s | FileCheck %s
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
import diffgpu as dg  # noqa: E402
from diffcase import array_case, case  # noqa: E402


@dg.func
def sign_times(x, y):
    return dg.sign(x) * y


@dg.func
def step_times(x, y):
    return dg.step(x) * y


@dg.func
def clamp3(x, lo, hi):
    return dg.clamp(x, lo, hi)


@dg.func
def lerp3(a, b, t):
    return dg.lerp(a, b, t)


@dg.func
def smoothstep3(e0, e1, x):
    return dg.smoothstep(e0, e1, x)


@dg.func
def frac1(x):
    return dg.frac(x)


@dg.func
def rint_times(x, y):
    return dg.rint(x) * y


@dg.func
def mod2(a, b):
    return dg.mod(a, b)


@dg.func
def sub_into(A, v):
    dg.atomic_sub(A, 0, v * v)


# sign: select(x < 0, -1, 1), a constant on each side: its argument gets a
# gradient of exactly 0; the factor y gets s * sign(x).
# CHECK-LABEL: func.func @__dg_rev_sign_times_
# CHECK-SAME: (%[[X:[a-z0-9_]+]]: f64, %[[Y:[a-z0-9_]+]]: f64, %[[S:[a-z0-9_]+]]: f64) -> (f64, f64)
# CHECK-NEXT: %[[Z:.+]] = arith.constant 0.0{{0*}}e+00 : f64
# CHECK-NEXT: %[[NEG:.+]] = arith.cmpf olt, %[[X]], %[[Z]] : f64
# CHECK-NEXT: %[[M1:.+]] = arith.constant -1.0{{0*}}e+00 : f64
# CHECK-NEXT: %[[P1:.+]] = arith.constant 1.0{{0*}}e+00 : f64
# CHECK-NEXT: %[[SG:.+]] = arith.select %[[NEG]], %[[M1]], %[[P1]] : f64
# CHECK-NEXT: arith.mulf %[[SG]], %[[Y]] : f64
# CHECK-NEXT: %[[GY:.+]] = arith.mulf %[[S]], %[[SG]] : f64
# CHECK-NEXT: %[[GX:.+]] = arith.constant 0.0{{0*}}e+00 : f64
# CHECK-NEXT: return %[[GX]], %[[GY]] : f64, f64
# sign, forward: only y's tangent counts, dy * sign(x); dx is never read.
# CHECK-LABEL: func.func @__dg_fwd_sign_times_
# CHECK-SAME: (%[[X:[a-z0-9_]+]]: f64, %[[Y:[a-z0-9_]+]]: f64, %[[DX:[a-z0-9_]+]]: f64, %[[DY:[a-z0-9_]+]]: f64) -> (f64, f64)
# CHECK-NOT: %[[DX]]
# CHECK: %[[SG:.+]] = arith.select %{{.+}}, %{{.+}}, %{{.+}} : f64
# CHECK-NEXT: %[[R:.+]] = arith.mulf %[[SG]], %[[Y]] : f64
# CHECK-NEXT: %[[T:.+]] = arith.mulf %[[DY]], %[[SG]] : f64
# CHECK-NEXT: return %[[R]], %[[T]] : f64, f64
case(sign_times, 2)

# -----

# step: select(x < 0, 1, 0), likewise constant: gradient 0 for x, s * step(x)
# for y.
# CHECK-LABEL: func.func @__dg_rev_step_times_
# CHECK-SAME: (%[[X:[a-z0-9_]+]]: f64, %[[Y:[a-z0-9_]+]]: f64, %[[S:[a-z0-9_]+]]: f64) -> (f64, f64)
# CHECK-NEXT: %[[Z:.+]] = arith.constant 0.0{{0*}}e+00 : f64
# CHECK-NEXT: %[[NEG:.+]] = arith.cmpf olt, %[[X]], %[[Z]] : f64
# CHECK-NEXT: %[[P1:.+]] = arith.constant 1.0{{0*}}e+00 : f64
# CHECK-NEXT: %[[Z1:.+]] = arith.constant 0.0{{0*}}e+00 : f64
# CHECK-NEXT: %[[ST:.+]] = arith.select %[[NEG]], %[[P1]], %[[Z1]] : f64
# CHECK-NEXT: arith.mulf %[[ST]], %[[Y]] : f64
# CHECK-NEXT: %[[GY:.+]] = arith.mulf %[[S]], %[[ST]] : f64
# CHECK-NEXT: %[[GX:.+]] = arith.constant 0.0{{0*}}e+00 : f64
# CHECK-NEXT: return %[[GX]], %[[GY]] : f64, f64
# CHECK-LABEL: func.func @__dg_fwd_step_times_
# CHECK-SAME: (%[[X:[a-z0-9_]+]]: f64, %[[Y:[a-z0-9_]+]]: f64, %[[DX:[a-z0-9_]+]]: f64, %[[DY:[a-z0-9_]+]]: f64) -> (f64, f64)
# CHECK-NOT: %[[DX]]
# CHECK: %[[ST:.+]] = arith.select %{{.+}}, %{{.+}}, %{{.+}} : f64
# CHECK-NEXT: %[[R:.+]] = arith.mulf %[[ST]], %[[Y]] : f64
# CHECK-NEXT: %[[T:.+]] = arith.mulf %[[DY]], %[[ST]] : f64
# CHECK-NEXT: return %[[R]], %[[T]] : f64, f64
case(step_times, 2)

# -----

# clamp: minnumf(maxnumf(lo, x), hi); each op's gradient goes to the operand
# it returned, the first on ties (ole): hi gets s where m = max(lo, x) > hi,
# the rest (s where m <= hi) goes on to x where lo <= x, to lo elsewhere.
# CHECK-LABEL: func.func @__dg_rev_clamp3_
# CHECK-SAME: (%[[X:[a-z0-9_]+]]: f64, %[[LO:[a-z0-9_]+]]: f64, %[[HI:[a-z0-9_]+]]: f64, %[[S:[a-z0-9_]+]]: f64) -> (f64, f64, f64)
# CHECK-NEXT: %[[M:.+]] = arith.maxnumf %[[LO]], %[[X]] : f64
# CHECK-NEXT: arith.minnumf %[[M]], %[[HI]] : f64
# CHECK-NEXT: %[[C1:.+]] = arith.cmpf ole, %[[M]], %[[HI]] : f64
# CHECK-NEXT: %[[ONE1:.+]] = arith.constant 1.0{{0*}}e+00 : f64
# CHECK-NEXT: %[[ZERO1:.+]] = arith.constant 0.0{{0*}}e+00 : f64
# CHECK-NEXT: %[[K1:.+]] = arith.select %[[C1]], %[[ONE1]], %[[ZERO1]] : f64
# CHECK-NEXT: %[[GM:.+]] = arith.mulf %[[S]], %[[K1]] : f64
# CHECK-NEXT: %[[C2:.+]] = arith.cmpf ole, %[[M]], %[[HI]] : f64
# CHECK-NEXT: %[[ZERO2:.+]] = arith.constant 0.0{{0*}}e+00 : f64
# CHECK-NEXT: %[[ONE2:.+]] = arith.constant 1.0{{0*}}e+00 : f64
# CHECK-NEXT: %[[K2:.+]] = arith.select %[[C2]], %[[ZERO2]], %[[ONE2]] : f64
# CHECK-NEXT: %[[GHI:.+]] = arith.mulf %[[S]], %[[K2]] : f64
# CHECK-NEXT: %[[C3:.+]] = arith.cmpf ole, %[[LO]], %[[X]] : f64
# CHECK-NEXT: %[[ZERO3:.+]] = arith.constant 0.0{{0*}}e+00 : f64
# CHECK-NEXT: %[[ONE3:.+]] = arith.constant 1.0{{0*}}e+00 : f64
# CHECK-NEXT: %[[K3:.+]] = arith.select %[[C3]], %[[ZERO3]], %[[ONE3]] : f64
# CHECK-NEXT: %[[GLO:.+]] = arith.mulf %[[GM]], %[[K3]] : f64
# CHECK-NEXT: %[[C4:.+]] = arith.cmpf ole, %[[LO]], %[[X]] : f64
# CHECK-NEXT: %[[ONE4:.+]] = arith.constant 1.0{{0*}}e+00 : f64
# CHECK-NEXT: %[[ZERO4:.+]] = arith.constant 0.0{{0*}}e+00 : f64
# CHECK-NEXT: %[[K4:.+]] = arith.select %[[C4]], %[[ONE4]], %[[ZERO4]] : f64
# CHECK-NEXT: %[[GX:.+]] = arith.mulf %[[GM]], %[[K4]] : f64
# CHECK-NEXT: return %[[GX]], %[[GLO]], %[[GHI]] : f64, f64, f64
# clamp, forward: the tangent of the operand each op returns:
# (dlo [lo > x] + dx [lo <= x]) [m <= hi] + dhi [m > hi].
# CHECK-LABEL: func.func @__dg_fwd_clamp3_
# CHECK-SAME: (%[[X:[a-z0-9_]+]]: f64, %[[LO:[a-z0-9_]+]]: f64, %[[HI:[a-z0-9_]+]]: f64, %[[DX:[a-z0-9_]+]]: f64, %[[DLO:[a-z0-9_]+]]: f64, %[[DHI:[a-z0-9_]+]]: f64) -> (f64, f64)
# CHECK-NEXT: %[[M:.+]] = arith.maxnumf %[[LO]], %[[X]] : f64
# CHECK-NEXT: %[[C1:.+]] = arith.cmpf ole, %[[LO]], %[[X]] : f64
# CHECK-NEXT: %[[ZERO1:.+]] = arith.constant 0.0{{0*}}e+00 : f64
# CHECK-NEXT: %[[ONE1:.+]] = arith.constant 1.0{{0*}}e+00 : f64
# CHECK-NEXT: %[[K1:.+]] = arith.select %[[C1]], %[[ZERO1]], %[[ONE1]] : f64
# CHECK-NEXT: %[[TLO:.+]] = arith.mulf %[[DLO]], %[[K1]] : f64
# CHECK-NEXT: %[[C2:.+]] = arith.cmpf ole, %[[LO]], %[[X]] : f64
# CHECK-NEXT: %[[ONE2:.+]] = arith.constant 1.0{{0*}}e+00 : f64
# CHECK-NEXT: %[[ZERO2:.+]] = arith.constant 0.0{{0*}}e+00 : f64
# CHECK-NEXT: %[[K2:.+]] = arith.select %[[C2]], %[[ONE2]], %[[ZERO2]] : f64
# CHECK-NEXT: %[[TX:.+]] = arith.mulf %[[DX]], %[[K2]] : f64
# CHECK-NEXT: %[[TM:.+]] = arith.addf %[[TLO]], %[[TX]] : f64
# CHECK-NEXT: %[[R:.+]] = arith.minnumf %[[M]], %[[HI]] : f64
# CHECK-NEXT: %[[C3:.+]] = arith.cmpf ole, %[[M]], %[[HI]] : f64
# CHECK-NEXT: %[[ONE3:.+]] = arith.constant 1.0{{0*}}e+00 : f64
# CHECK-NEXT: %[[ZERO3:.+]] = arith.constant 0.0{{0*}}e+00 : f64
# CHECK-NEXT: %[[K3:.+]] = arith.select %[[C3]], %[[ONE3]], %[[ZERO3]] : f64
# CHECK-NEXT: %[[TA:.+]] = arith.mulf %[[TM]], %[[K3]] : f64
# CHECK-NEXT: %[[C4:.+]] = arith.cmpf ole, %[[M]], %[[HI]] : f64
# CHECK-NEXT: %[[ZERO4:.+]] = arith.constant 0.0{{0*}}e+00 : f64
# CHECK-NEXT: %[[ONE4:.+]] = arith.constant 1.0{{0*}}e+00 : f64
# CHECK-NEXT: %[[K4:.+]] = arith.select %[[C4]], %[[ZERO4]], %[[ONE4]] : f64
# CHECK-NEXT: %[[TB:.+]] = arith.mulf %[[DHI]], %[[K4]] : f64
# CHECK-NEXT: %[[T:.+]] = arith.addf %[[TA]], %[[TB]] : f64
# CHECK-NEXT: return %[[R]], %[[T]] : f64, f64
case(clamp3, 3)

# -----

# lerp: a (1 - t) + b t: gradients s (1 - t), s t, s b - s a.
# CHECK-LABEL: func.func @__dg_rev_lerp3_
# CHECK-SAME: (%[[A:[a-z0-9_]+]]: f64, %[[B:[a-z0-9_]+]]: f64, %[[T:[a-z0-9_]+]]: f64, %[[S:[a-z0-9_]+]]: f64) -> (f64, f64, f64)
# CHECK-NEXT: %[[ONE:.+]] = arith.constant 1.0{{0*}}e+00 : f64
# CHECK-NEXT: %[[OMT:.+]] = arith.subf %[[ONE]], %[[T]] : f64
# CHECK-NEXT: arith.mulf %[[A]], %[[OMT]] : f64
# CHECK-NEXT: arith.mulf %[[B]], %[[T]] : f64
# CHECK-NEXT: arith.addf
# CHECK-NEXT: %[[GB:.+]] = arith.mulf %[[S]], %[[T]] : f64
# CHECK-NEXT: %[[SB:.+]] = arith.mulf %[[S]], %[[B]] : f64
# CHECK-NEXT: %[[GA:.+]] = arith.mulf %[[S]], %[[OMT]] : f64
# CHECK-NEXT: %[[SA:.+]] = arith.mulf %[[S]], %[[A]] : f64
# CHECK-NEXT: %[[NSA:.+]] = arith.negf %[[SA]] : f64
# CHECK-NEXT: %[[GT:.+]] = arith.addf %[[SB]], %[[NSA]] : f64
# CHECK-NEXT: return %[[GA]], %[[GB]], %[[GT]] : f64, f64, f64
# lerp, forward: (da (1 - t) - dt a) + (db t + dt b).
# CHECK-LABEL: func.func @__dg_fwd_lerp3_
# CHECK-SAME: (%[[A:[a-z0-9_]+]]: f64, %[[B:[a-z0-9_]+]]: f64, %[[T:[a-z0-9_]+]]: f64, %[[DA:[a-z0-9_]+]]: f64, %[[DB:[a-z0-9_]+]]: f64, %[[DT:[a-z0-9_]+]]: f64) -> (f64, f64)
# CHECK-NEXT: %[[ONE:.+]] = arith.constant 1.0{{0*}}e+00 : f64
# CHECK-NEXT: %[[OMT:.+]] = arith.subf %[[ONE]], %[[T]] : f64
# CHECK-NEXT: %[[NDT:.+]] = arith.negf %[[DT]] : f64
# CHECK-NEXT: %[[P1:.+]] = arith.mulf %[[A]], %[[OMT]] : f64
# CHECK-NEXT: %[[T1:.+]] = arith.mulf %[[DA]], %[[OMT]] : f64
# CHECK-NEXT: %[[T2:.+]] = arith.mulf %[[NDT]], %[[A]] : f64
# CHECK-NEXT: %[[TP1:.+]] = arith.addf %[[T1]], %[[T2]] : f64
# CHECK-NEXT: %[[P2:.+]] = arith.mulf %[[B]], %[[T]] : f64
# CHECK-NEXT: %[[T3:.+]] = arith.mulf %[[DB]], %[[T]] : f64
# CHECK-NEXT: %[[T4:.+]] = arith.mulf %[[DT]], %[[B]] : f64
# CHECK-NEXT: %[[TP2:.+]] = arith.addf %[[T3]], %[[T4]] : f64
# CHECK-NEXT: %[[R:.+]] = arith.addf %[[P1]], %[[P2]] : f64
# CHECK-NEXT: %[[TT:.+]] = arith.addf %[[TP1]], %[[TP2]] : f64
# CHECK-NEXT: return %[[R]], %[[TT]] : f64, f64
case(lerp3, 3)

# -----

# smoothstep: u = clamp((x - e0) / (e1 - e0), 0, 1), u u (3 - 2 u). The
# adjoint of u, s (2 u (3 - 2 u) - 2 u u), is gated by both ends of the clamp
# (0 outside [e0, e1]), then divided through the division's rules, whose
# products are strong-zero guarded (a zero adjoint outside the ramp stays 0
# even where e1 == e0): x gets g / (e1 - e0), e1 gets -g q / (e1 - e0), e0 the
# negated sum of both.
# CHECK-LABEL: func.func @__dg_rev_smoothstep3_
# CHECK-SAME: (%[[E0:[a-z0-9_]+]]: f64, %[[E1:[a-z0-9_]+]]: f64, %[[X:[a-z0-9_]+]]: f64, %[[S:[a-z0-9_]+]]: f64) -> (f64, f64, f64)
# CHECK-NEXT: %[[NUM:.+]] = arith.subf %[[X]], %[[E0]] : f64
# CHECK-NEXT: %[[DEN:.+]] = arith.subf %[[E1]], %[[E0]] : f64
# CHECK-NEXT: %[[Q:.+]] = arith.divf %[[NUM]], %[[DEN]] : f64
# CHECK-NEXT: %[[ZERO:.+]] = arith.constant 0.0{{0*}}e+00 : f64
# CHECK-NEXT: %[[LO:.+]] = arith.maxnumf %[[ZERO]], %[[Q]] : f64
# CHECK-NEXT: %[[ONE:.+]] = arith.constant 1.0{{0*}}e+00 : f64
# CHECK-NEXT: %[[U:.+]] = arith.minnumf %[[LO]], %[[ONE]] : f64
# CHECK: %[[HIOK:.+]] = arith.cmpf ole, %[[LO]], %[[ONE]] : f64
# CHECK: %[[G1:.+]] = arith.mulf %{{.+}}, %{{.+}} : f64
# CHECK-NEXT: %[[LOOK:.+]] = arith.cmpf ole, %[[ZERO]], %[[Q]] : f64
# CHECK: %[[G:.+]] = arith.mulf %[[G1]], %{{.+}} : f64
# CHECK-NEXT: %[[ONE2:.+]] = arith.constant 1.0{{0*}}e+00 : f64
# CHECK-NEXT: %[[RD:.+]] = arith.divf %[[ONE2]], %[[DEN]] : f64
# CHECK-NEXT: %[[MX:.+]] = arith.mulf %[[G]], %[[RD]] : f64
# CHECK-NEXT: %[[Z1:.+]] = arith.constant 0.0{{0*}}e+00 : f64
# CHECK-NEXT: %[[CX:.+]] = arith.cmpf oeq, %[[G]], %[[Z1]] : f64
# CHECK-NEXT: %[[Z2:.+]] = arith.constant 0.0{{0*}}e+00 : f64
# CHECK-NEXT: %[[GX:.+]] = arith.select %[[CX]], %[[Z2]], %[[MX]] : f64
# CHECK-NEXT: %[[QD:.+]] = arith.divf %[[Q]], %[[DEN]] : f64
# CHECK-NEXT: %[[NQD:.+]] = arith.negf %[[QD]] : f64
# CHECK-NEXT: %[[ME1:.+]] = arith.mulf %[[G]], %[[NQD]] : f64
# CHECK-NEXT: %[[Z3:.+]] = arith.constant 0.0{{0*}}e+00 : f64
# CHECK-NEXT: %[[CE1:.+]] = arith.cmpf oeq, %[[G]], %[[Z3]] : f64
# CHECK-NEXT: %[[Z4:.+]] = arith.constant 0.0{{0*}}e+00 : f64
# CHECK-NEXT: %[[GE1:.+]] = arith.select %[[CE1]], %[[Z4]], %[[ME1]] : f64
# CHECK-NEXT: %[[N1:.+]] = arith.negf %[[GE1]] : f64
# CHECK-NEXT: %[[N2:.+]] = arith.negf %[[GX]] : f64
# CHECK-NEXT: %[[GE0:.+]] = arith.addf %[[N1]], %[[N2]] : f64
# CHECK-NEXT: return %[[GE0]], %[[GE1]], %[[GX]] : f64, f64, f64
# smoothstep, forward: the tangent of (x - e0) / (e1 - e0), each product
# guarded by its tangent, gated by the clamp, then through u u (3 - 2 u).
# CHECK-LABEL: func.func @__dg_fwd_smoothstep3_
# CHECK-SAME: (%[[E0:[a-z0-9_]+]]: f64, %[[E1:[a-z0-9_]+]]: f64, %[[X:[a-z0-9_]+]]: f64, %[[DE0:[a-z0-9_]+]]: f64, %[[DE1:[a-z0-9_]+]]: f64, %[[DX:[a-z0-9_]+]]: f64) -> (f64, f64)
# CHECK-NEXT: %[[NUM:.+]] = arith.subf %[[X]], %[[E0]] : f64
# CHECK-NEXT: %[[N0:.+]] = arith.negf %[[DE0]] : f64
# CHECK-NEXT: %[[TNUM:.+]] = arith.addf %[[DX]], %[[N0]] : f64
# CHECK-NEXT: %[[DEN:.+]] = arith.subf %[[E1]], %[[E0]] : f64
# CHECK-NEXT: %[[N00:.+]] = arith.negf %[[DE0]] : f64
# CHECK-NEXT: %[[TDEN:.+]] = arith.addf %[[DE1]], %[[N00]] : f64
# CHECK-NEXT: %[[Q:.+]] = arith.divf %[[NUM]], %[[DEN]] : f64
# CHECK-NEXT: %[[ONE:.+]] = arith.constant 1.0{{0*}}e+00 : f64
# CHECK-NEXT: %[[RD:.+]] = arith.divf %[[ONE]], %[[DEN]] : f64
# CHECK-NEXT: %[[M1:.+]] = arith.mulf %[[TNUM]], %[[RD]] : f64
# CHECK-NEXT: %[[Z1:.+]] = arith.constant 0.0{{0*}}e+00 : f64
# CHECK-NEXT: %[[C1:.+]] = arith.cmpf oeq, %[[TNUM]], %[[Z1]] : f64
# CHECK-NEXT: %[[Z2:.+]] = arith.constant 0.0{{0*}}e+00 : f64
# CHECK-NEXT: %[[G1:.+]] = arith.select %[[C1]], %[[Z2]], %[[M1]] : f64
# CHECK-NEXT: %[[QD:.+]] = arith.divf %[[Q]], %[[DEN]] : f64
# CHECK-NEXT: %[[NQD:.+]] = arith.negf %[[QD]] : f64
# CHECK-NEXT: %[[M2:.+]] = arith.mulf %[[TDEN]], %[[NQD]] : f64
# CHECK-NEXT: %[[Z3:.+]] = arith.constant 0.0{{0*}}e+00 : f64
# CHECK-NEXT: %[[C2:.+]] = arith.cmpf oeq, %[[TDEN]], %[[Z3]] : f64
# CHECK-NEXT: %[[Z4:.+]] = arith.constant 0.0{{0*}}e+00 : f64
# CHECK-NEXT: %[[G2:.+]] = arith.select %[[C2]], %[[Z4]], %[[M2]] : f64
# CHECK-NEXT: %[[TQ:.+]] = arith.addf %[[G1]], %[[G2]] : f64
# CHECK: arith.cmpf ole, %{{.+}}, %[[Q]] : f64
# CHECK: %[[TLO:.+]] = arith.mulf %[[TQ]], %{{.+}} : f64
# CHECK: arith.cmpf ole
# CHECK: %[[TU:.+]] = arith.mulf %[[TLO]], %{{.+}} : f64
# CHECK: return %{{.+}}, %{{.+}} : f64, f64
case(smoothstep3, 3)

# -----

# frac: x - trunc(x); trunc's partial is zero, so the gradient is the seed
# itself and the tangent dx - (-0).
# CHECK-LABEL: func.func @__dg_rev_frac1_
# CHECK-SAME: (%[[X:[a-z0-9_]+]]: f64, %[[S:[a-z0-9_]+]]: f64) -> f64
# CHECK-NEXT: %[[TR:.+]] = math.trunc %[[X]] : f64
# CHECK-NEXT: arith.subf %[[X]], %[[TR]] : f64
# CHECK-NEXT: arith.negf %[[S]] : f64
# CHECK-NEXT: return %[[S]] : f64
# CHECK-LABEL: func.func @__dg_fwd_frac1_
# CHECK-SAME: (%[[X:[a-z0-9_]+]]: f64, %[[DX:[a-z0-9_]+]]: f64) -> (f64, f64)
# CHECK-NEXT: %[[TR:.+]] = math.trunc %[[X]] : f64
# CHECK-NEXT: %[[Z:.+]] = arith.constant 0.0{{0*}}e+00 : f64
# CHECK-NEXT: %[[R:.+]] = arith.subf %[[X]], %[[TR]] : f64
# CHECK-NEXT: %[[NZ:.+]] = arith.negf %[[Z]] : f64
# CHECK-NEXT: %[[T:.+]] = arith.addf %[[DX]], %[[NZ]] : f64
# CHECK-NEXT: return %[[R]], %[[T]] : f64, f64
case(frac1, 1)

# -----

# rint: math.roundeven, partial zero: x gets a gradient of 0, y gets
# s * rint(x).
# CHECK-LABEL: func.func @__dg_rev_rint_times_
# CHECK-SAME: (%[[X:[a-z0-9_]+]]: f64, %[[Y:[a-z0-9_]+]]: f64, %[[S:[a-z0-9_]+]]: f64) -> (f64, f64)
# CHECK-NEXT: %[[RX:.+]] = math.roundeven %[[X]] : f64
# CHECK-NEXT: arith.mulf %[[RX]], %[[Y]] : f64
# CHECK-NEXT: arith.mulf %[[S]], %[[Y]] : f64
# CHECK-NEXT: %[[GY:.+]] = arith.mulf %[[S]], %[[RX]] : f64
# CHECK-NEXT: %[[GX:.+]] = arith.constant 0.0{{0*}}e+00 : f64
# CHECK-NEXT: return %[[GX]], %[[GY]] : f64, f64
# rint, forward: the tangent of rint(x) is the constant 0 (dx is not read).
# CHECK-LABEL: func.func @__dg_fwd_rint_times_
# CHECK-SAME: (%[[X:[a-z0-9_]+]]: f64, %[[Y:[a-z0-9_]+]]: f64, %[[DX:[a-z0-9_]+]]: f64, %[[DY:[a-z0-9_]+]]: f64) -> (f64, f64)
# CHECK-NEXT: %[[RX:.+]] = math.roundeven %[[X]] : f64
# CHECK-NEXT: %[[Z:.+]] = arith.constant 0.0{{0*}}e+00 : f64
# CHECK-NEXT: %[[R:.+]] = arith.mulf %[[RX]], %[[Y]] : f64
# CHECK-NEXT: %[[T1:.+]] = arith.mulf %[[Z]], %[[Y]] : f64
# CHECK-NEXT: %[[T2:.+]] = arith.mulf %[[DY]], %[[RX]] : f64
# CHECK-NEXT: %[[T:.+]] = arith.addf %[[T1]], %[[T2]] : f64
# CHECK-NEXT: return %[[R]], %[[T]] : f64, f64
case(rint_times, 2)

# -----

# mod: arith.remf, a - trunc(a / b) b: d/da = 1, d/db = -trunc(a / b), the
# latter guarded (a division by b == 0).
# CHECK-LABEL: func.func @__dg_rev_mod2_
# CHECK-SAME: (%[[A:[a-z0-9_]+]]: f64, %[[B:[a-z0-9_]+]]: f64, %[[S:[a-z0-9_]+]]: f64) -> (f64, f64)
# CHECK-NEXT: arith.remf %[[A]], %[[B]] : f64
# CHECK-NEXT: %[[Q:.+]] = arith.divf %[[A]], %[[B]] : f64
# CHECK-NEXT: %[[TQ:.+]] = math.trunc %[[Q]] : f64
# CHECK-NEXT: %[[P:.+]] = arith.negf %[[TQ]] : f64
# CHECK-NEXT: %[[M:.+]] = arith.mulf %[[S]], %[[P]] : f64
# CHECK-NEXT: %[[Z:.+]] = arith.constant 0.0{{0*}}e+00 : f64
# CHECK-NEXT: %[[C:.+]] = arith.cmpf oeq, %[[S]], %[[Z]] : f64
# CHECK-NEXT: %[[Z2:.+]] = arith.constant 0.0{{0*}}e+00 : f64
# CHECK-NEXT: %[[GB:.+]] = arith.select %[[C]], %[[Z2]], %[[M]] : f64
# CHECK-NEXT: return %[[S]], %[[GB]] : f64, f64
# mod, forward: da + select(db == 0, 0, db * -trunc(a / b)).
# CHECK-LABEL: func.func @__dg_fwd_mod2_
# CHECK-SAME: (%[[A:[a-z0-9_]+]]: f64, %[[B:[a-z0-9_]+]]: f64, %[[DA:[a-z0-9_]+]]: f64, %[[DB:[a-z0-9_]+]]: f64) -> (f64, f64)
# CHECK-NEXT: %[[R:.+]] = arith.remf %[[A]], %[[B]] : f64
# CHECK-NEXT: %[[Q:.+]] = arith.divf %[[A]], %[[B]] : f64
# CHECK-NEXT: %[[TQ:.+]] = math.trunc %[[Q]] : f64
# CHECK-NEXT: %[[P:.+]] = arith.negf %[[TQ]] : f64
# CHECK-NEXT: %[[M:.+]] = arith.mulf %[[DB]], %[[P]] : f64
# CHECK-NEXT: %[[Z:.+]] = arith.constant 0.0{{0*}}e+00 : f64
# CHECK-NEXT: %[[C:.+]] = arith.cmpf oeq, %[[DB]], %[[Z]] : f64
# CHECK-NEXT: %[[Z2:.+]] = arith.constant 0.0{{0*}}e+00 : f64
# CHECK-NEXT: %[[G:.+]] = arith.select %[[C]], %[[Z2]], %[[M]] : f64
# CHECK-NEXT: %[[T:.+]] = arith.addf %[[DA]], %[[G]] : f64
# CHECK-NEXT: return %[[R]], %[[T]] : f64, f64
case(mod2, 2)

# -----

# atomic_sub(A, 0, v v): an atomic add of -(v v); reverse mode reads the
# shadow dA[0] and negates it: dv = -dA[0] v - dA[0] v.
# CHECK-LABEL: func.func @__dg_rev_sub_into_
# CHECK-SAME: (%[[A:[a-z0-9_]+]]: memref<?xf64, strided<[?], offset: ?>>, %[[V:[a-z0-9_]+]]: f64, %[[DA:[a-z0-9_]+]]: memref<?xf64, strided<[?], offset: ?>>) -> f64
# CHECK: %[[I:.+]] = arith.index_cast
# CHECK-NEXT: %[[VV:.+]] = arith.mulf %[[V]], %[[V]] : f64
# CHECK-NEXT: %[[NVV:.+]] = arith.negf %[[VV]] : f64
# CHECK-NEXT: "diffgpu.atomic_add"(%[[A]], %[[NVV]], %[[I]])
# CHECK-NEXT: %[[D:.+]] = memref.load %[[DA]][%[[I]]]
# CHECK-NEXT: %[[ND:.+]] = arith.negf %[[D]] : f64
# CHECK-NEXT: %[[G1:.+]] = arith.mulf %[[ND]], %[[V]] : f64
# CHECK-NEXT: %[[G2:.+]] = arith.mulf %[[ND]], %[[V]] : f64
# CHECK-NEXT: %[[G:.+]] = arith.addf %[[G1]], %[[G2]] : f64
# CHECK-NEXT: return %[[G]] : f64
# atomic_sub, forward: the primal's atomic add of -(v v) and the shadow's of
# -(dv v + dv v), at the same index.
# CHECK-LABEL: func.func @__dg_fwd_sub_into_
# CHECK-SAME: (%[[A:[a-z0-9_]+]]: memref<?xf64, strided<[?], offset: ?>>, %[[V:[a-z0-9_]+]]: f64, %[[DA:[a-z0-9_]+]]: memref<?xf64, strided<[?], offset: ?>>, %[[DV:[a-z0-9_]+]]: f64)
# CHECK: %[[I:.+]] = arith.index_cast
# CHECK-NEXT: %[[VV:.+]] = arith.mulf %[[V]], %[[V]] : f64
# CHECK-NEXT: %[[T1:.+]] = arith.mulf %[[DV]], %[[V]] : f64
# CHECK-NEXT: %[[T2:.+]] = arith.mulf %[[DV]], %[[V]] : f64
# CHECK-NEXT: %[[TVV:.+]] = arith.addf %[[T1]], %[[T2]] : f64
# CHECK-NEXT: %[[NVV:.+]] = arith.negf %[[VV]] : f64
# CHECK-NEXT: %[[NT:.+]] = arith.negf %[[TVV]] : f64
# CHECK-NEXT: "diffgpu.atomic_add"(%[[A]], %[[NVV]], %[[I]])
# CHECK-NEXT: "diffgpu.atomic_add"(%[[DA]], %[[NT]], %[[I]])
# CHECK-NEXT: return
array_case(sub_into)

# Derivatives of the vector builtins and operators vectors.py leaves out:
# length_sq, outer, transpose, trace, quat_mul, `@` (matrix times vector,
# matrix times matrix) and indexing a vector (p[0]). Vectors are scalarised
# in the frontend (frontend/vector_builtins.py, vectors.py), so each one's
# derivative is the scalar rules' IR; per case this prints the function
# diffgpu-autodiff makes in reverse mode (dg.autodiff: the arguments, then
# the seed; the gradients returned in argument order) and in forward mode
# (dg.fwddiff: the arguments, then their tangents; the value and its tangent
# returned).
# RUN: %python %s | FileCheck %s
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
import diffgpu as dg  # noqa: E402
from diffcase import case  # noqa: E402


@dg.func
def length_sq3(x, y, z):
    return dg.length_sq(dg.vec3(x, y, z))


@dg.func
def outer01(a, b, c, d):
    return dg.outer(dg.vec2(a, b), dg.vec2(c, d))[0, 1]


@dg.func
def transpose01(a, b, c, d):
    return dg.transpose(dg.mat22(a, b, c, d))[0, 1]


@dg.func
def trace22(a, b, c, d):
    return dg.trace(dg.mat22(a, b, c, d))


@dg.func
def quat_mul_w(a, b, c, d, e, f, g, h):
    return dg.quat_mul(dg.quat(a, b, c, d), dg.quat(e, f, g, h))[3]


@dg.func
def matvec0(a, b, c, d, x, y):
    return (dg.mat22(a, b, c, d) @ dg.vec2(x, y))[0]


@dg.func
def matmat01(a, b, c, d):
    m = dg.mat22(a, b, c, d)
    return (m @ m)[0, 1]


@dg.func
def index02(x, y, z):
    p = dg.vec3(x, y, z)
    return p[0] * p[2]


# length_sq: dot(v, v), no square root and so no guard (unlike length):
# each gradient is the seed times the component, twice, summed (2 s x).
# CHECK-LABEL: func.func @__dg_rev_length_sq3_
# CHECK-SAME: (%[[X:[a-z0-9_]+]]: f64, %[[Y:[a-z0-9_]+]]: f64, %[[Z:[a-z0-9_]+]]: f64, %[[S:[a-z0-9_]+]]: f64) -> (f64, f64, f64)
# CHECK-NOT: math.sqrt
# CHECK-NOT: arith.select
# CHECK: %[[Z1:.+]] = arith.mulf %[[S]], %[[Z]] : f64
# CHECK-NEXT: %[[Z2:.+]] = arith.mulf %[[S]], %[[Z]] : f64
# CHECK-NEXT: %[[GZ:.+]] = arith.addf %[[Z1]], %[[Z2]] : f64
# CHECK-NEXT: %[[Y1:.+]] = arith.mulf %[[S]], %[[Y]] : f64
# CHECK-NEXT: %[[Y2:.+]] = arith.mulf %[[S]], %[[Y]] : f64
# CHECK-NEXT: %[[GY:.+]] = arith.addf %[[Y1]], %[[Y2]] : f64
# CHECK-NEXT: %[[X1:.+]] = arith.mulf %[[S]], %[[X]] : f64
# CHECK-NEXT: %[[X2:.+]] = arith.mulf %[[S]], %[[X]] : f64
# CHECK-NEXT: %[[GX:.+]] = arith.addf %[[X1]], %[[X2]] : f64
# CHECK-NEXT: return %[[GX]], %[[GY]], %[[GZ]] : f64, f64, f64
# length_sq, forward: the tangent sums dx x + dx x over the components.
# CHECK-LABEL: func.func @__dg_fwd_length_sq3_
# CHECK-SAME: (%[[X:[a-z0-9_]+]]: f64, %[[Y:[a-z0-9_]+]]: f64, %[[Z:[a-z0-9_]+]]: f64, %[[DX:[a-z0-9_]+]]: f64, %[[DY:[a-z0-9_]+]]: f64, %[[DZ:[a-z0-9_]+]]: f64) -> (f64, f64)
# CHECK-NOT: math.sqrt
# CHECK: %[[TX1:.+]] = arith.mulf %[[DX]], %[[X]] : f64
# CHECK-NEXT: %[[TX2:.+]] = arith.mulf %[[DX]], %[[X]] : f64
# CHECK-NEXT: %[[TX:.+]] = arith.addf %[[TX1]], %[[TX2]] : f64
# CHECK: %[[TY1:.+]] = arith.mulf %[[DY]], %[[Y]] : f64
# CHECK-NEXT: %[[TY2:.+]] = arith.mulf %[[DY]], %[[Y]] : f64
# CHECK-NEXT: %[[TY:.+]] = arith.addf %[[TY1]], %[[TY2]] : f64
# CHECK: %[[TZ1:.+]] = arith.mulf %[[DZ]], %[[Z]] : f64
# CHECK-NEXT: %[[TZ2:.+]] = arith.mulf %[[DZ]], %[[Z]] : f64
# CHECK-NEXT: %[[TZ:.+]] = arith.addf %[[TZ1]], %[[TZ2]] : f64
# CHECK: %[[TXY:.+]] = arith.addf %[[TX]], %[[TY]] : f64
# CHECK: %[[T:.+]] = arith.addf %[[TXY]], %[[TZ]] : f64
# CHECK-NEXT: return %{{.+}}, %[[T]] : f64, f64
case(length_sq3, 3)

# -----

# outer: outer(a, b)[i, j] = a[i] b[j]; [0, 1] = a d: d/da = s d, d/dd = s a,
# b and c get 0.
# CHECK-LABEL: func.func @__dg_rev_outer01_
# CHECK-SAME: (%[[A:[a-z0-9_]+]]: f64, %[[B:[a-z0-9_]+]]: f64, %[[C:[a-z0-9_]+]]: f64, %[[D:[a-z0-9_]+]]: f64, %[[S:[a-z0-9_]+]]: f64)
# CHECK: %[[GA:.+]] = arith.mulf %[[S]], %[[D]] : f64
# CHECK-NEXT: %[[GD:.+]] = arith.mulf %[[S]], %[[A]] : f64
# CHECK-NEXT: %[[Z1:.+]] = arith.constant 0.0{{0*}}e+00 : f64
# CHECK-NEXT: %[[Z2:.+]] = arith.constant 0.0{{0*}}e+00 : f64
# CHECK-NEXT: return %[[GA]], %[[Z1]], %[[Z2]], %[[GD]] : f64, f64, f64, f64
# outer, forward: the tangent of a d is da d + dd a.
# CHECK-LABEL: func.func @__dg_fwd_outer01_
# CHECK-SAME: (%[[A:[a-z0-9_]+]]: f64, %[[B:[a-z0-9_]+]]: f64, %[[C:[a-z0-9_]+]]: f64, %[[D:[a-z0-9_]+]]: f64, %[[DA:[a-z0-9_]+]]: f64, %[[DB:[a-z0-9_]+]]: f64, %[[DC:[a-z0-9_]+]]: f64, %[[DD:[a-z0-9_]+]]: f64)
# CHECK: %[[P:.+]] = arith.mulf %[[A]], %[[D]] : f64
# CHECK-NEXT: %[[T1:.+]] = arith.mulf %[[DA]], %[[D]] : f64
# CHECK-NEXT: %[[T2:.+]] = arith.mulf %[[DD]], %[[A]] : f64
# CHECK-NEXT: %[[T:.+]] = arith.addf %[[T1]], %[[T2]] : f64
# CHECK: return %[[P]], %[[T]] : f64, f64
case(outer01, 4)

# -----

# transpose: a permutation, no arithmetic: transpose(m)[0, 1] = m[1, 0] = c,
# whose gradient is the seed itself; the other entries get 0.
# CHECK-LABEL: func.func @__dg_rev_transpose01_
# CHECK-SAME: (%[[A:[a-z0-9_]+]]: f64, %[[B:[a-z0-9_]+]]: f64, %[[C:[a-z0-9_]+]]: f64, %[[D:[a-z0-9_]+]]: f64, %[[S:[a-z0-9_]+]]: f64)
# CHECK-NEXT: %[[Z0:.+]] = arith.constant 0.0{{0*}}e+00 : f64
# CHECK-NEXT: %[[Z1:.+]] = arith.constant 0.0{{0*}}e+00 : f64
# CHECK-NEXT: %[[Z2:.+]] = arith.constant 0.0{{0*}}e+00 : f64
# CHECK-NEXT: return %[[Z0]], %[[Z1]], %[[S]], %[[Z2]] : f64, f64, f64, f64
# transpose, forward: the value c and its tangent dc, passed through.
# CHECK-LABEL: func.func @__dg_fwd_transpose01_
# CHECK-SAME: (%[[A:[a-z0-9_]+]]: f64, %[[B:[a-z0-9_]+]]: f64, %[[C:[a-z0-9_]+]]: f64, %[[D:[a-z0-9_]+]]: f64, %[[DA:[a-z0-9_]+]]: f64, %[[DB:[a-z0-9_]+]]: f64, %[[DC:[a-z0-9_]+]]: f64, %[[DD:[a-z0-9_]+]]: f64)
# CHECK-NEXT: return %[[C]], %[[DC]] : f64, f64
case(transpose01, 4)

# -----

# trace: a + d, gradient (s, 0, 0, s).
# CHECK-LABEL: func.func @__dg_rev_trace22_
# CHECK-SAME: (%[[A:[a-z0-9_]+]]: f64, %[[B:[a-z0-9_]+]]: f64, %[[C:[a-z0-9_]+]]: f64, %[[D:[a-z0-9_]+]]: f64, %[[S:[a-z0-9_]+]]: f64)
# CHECK-NEXT: arith.addf %[[A]], %[[D]] : f64
# CHECK-NEXT: %[[Z0:.+]] = arith.constant 0.0{{0*}}e+00 : f64
# CHECK-NEXT: %[[Z1:.+]] = arith.constant 0.0{{0*}}e+00 : f64
# CHECK-NEXT: return %[[S]], %[[Z0]], %[[Z1]], %[[S]] : f64, f64, f64, f64
# trace, forward: da + dd.
# CHECK-LABEL: func.func @__dg_fwd_trace22_
# CHECK-SAME: (%[[A:[a-z0-9_]+]]: f64, %[[B:[a-z0-9_]+]]: f64, %[[C:[a-z0-9_]+]]: f64, %[[D:[a-z0-9_]+]]: f64, %[[DA:[a-z0-9_]+]]: f64, %[[DB:[a-z0-9_]+]]: f64, %[[DC:[a-z0-9_]+]]: f64, %[[DD:[a-z0-9_]+]]: f64)
# CHECK-NEXT: %[[R:.+]] = arith.addf %[[A]], %[[D]] : f64
# CHECK-NEXT: %[[T:.+]] = arith.addf %[[DA]], %[[DD]] : f64
# CHECK-NEXT: return %[[R]], %[[T]] : f64, f64
case(trace22, 4)

# -----

# quat_mul (Warp's product, (x, y, z, w) order): its w is
# d h - a e - b f - c g, so the gradients are -s e, -s f, -s g, s h for p and
# -s a, -s b, -s c, s d for q.
# CHECK-LABEL: func.func @__dg_rev_quat_mul_w_
# CHECK-SAME: (%[[A:[a-z0-9_]+]]: f64, %[[B:[a-z0-9_]+]]: f64, %[[C:[a-z0-9_]+]]: f64, %[[D:[a-z0-9_]+]]: f64, %[[E:[a-z0-9_]+]]: f64, %[[F:[a-z0-9_]+]]: f64, %[[G:[a-z0-9_]+]]: f64, %[[H:[a-z0-9_]+]]: f64, %[[S:[a-z0-9_]+]]: f64)
# CHECK: %[[N1:.+]] = arith.negf %[[S]] : f64
# CHECK-NEXT: %[[GC:.+]] = arith.mulf %[[N1]], %[[G]] : f64
# CHECK-NEXT: %[[GG:.+]] = arith.mulf %[[N1]], %[[C]] : f64
# CHECK-NEXT: %[[N2:.+]] = arith.negf %[[S]] : f64
# CHECK-NEXT: %[[GB:.+]] = arith.mulf %[[N2]], %[[F]] : f64
# CHECK-NEXT: %[[GF:.+]] = arith.mulf %[[N2]], %[[B]] : f64
# CHECK-NEXT: %[[N3:.+]] = arith.negf %[[S]] : f64
# CHECK-NEXT: %[[GA:.+]] = arith.mulf %[[N3]], %[[E]] : f64
# CHECK-NEXT: %[[GE:.+]] = arith.mulf %[[N3]], %[[A]] : f64
# CHECK-NEXT: %[[GD:.+]] = arith.mulf %[[S]], %[[H]] : f64
# CHECK-NEXT: %[[GH:.+]] = arith.mulf %[[S]], %[[D]] : f64
# CHECK-NEXT: return %[[GA]], %[[GB]], %[[GC]], %[[GD]], %[[GE]], %[[GF]], %[[GG]], %[[GH]]
# quat_mul, forward: (dd h + dh d) - (da e + de a) - (db f + df b) - (dc g + dg c).
# CHECK-LABEL: func.func @__dg_fwd_quat_mul_w_
# CHECK-SAME: (%[[A:[a-z0-9_]+]]: f64, %[[B:[a-z0-9_]+]]: f64, %[[C:[a-z0-9_]+]]: f64, %[[D:[a-z0-9_]+]]: f64, %[[E:[a-z0-9_]+]]: f64, %[[F:[a-z0-9_]+]]: f64, %[[G:[a-z0-9_]+]]: f64, %[[H:[a-z0-9_]+]]: f64, %[[DA:[a-z0-9_]+]]: f64, %[[DB:[a-z0-9_]+]]: f64, %[[DC:[a-z0-9_]+]]: f64, %[[DD:[a-z0-9_]+]]: f64, %[[DE:[a-z0-9_]+]]: f64, %[[DF:[a-z0-9_]+]]: f64, %[[DG:[a-z0-9_]+]]: f64, %[[DH:[a-z0-9_]+]]: f64)
# CHECK: %[[W1:.+]] = arith.mulf %[[DD]], %[[H]] : f64
# CHECK-NEXT: %[[W2:.+]] = arith.mulf %[[DH]], %[[D]] : f64
# CHECK-NEXT: %[[W:.+]] = arith.addf %[[W1]], %[[W2]] : f64
# CHECK-NEXT: arith.mulf %[[A]], %[[E]] : f64
# CHECK-NEXT: %[[AE1:.+]] = arith.mulf %[[DA]], %[[E]] : f64
# CHECK-NEXT: %[[AE2:.+]] = arith.mulf %[[DE]], %[[A]] : f64
# CHECK-NEXT: %[[AE:.+]] = arith.addf %[[AE1]], %[[AE2]] : f64
# CHECK-NEXT: arith.subf
# CHECK-NEXT: %[[NAE:.+]] = arith.negf %[[AE]] : f64
# CHECK-NEXT: %[[T1:.+]] = arith.addf %[[W]], %[[NAE]] : f64
# CHECK-NEXT: arith.mulf %[[B]], %[[F]] : f64
# CHECK-NEXT: %[[BF1:.+]] = arith.mulf %[[DB]], %[[F]] : f64
# CHECK-NEXT: %[[BF2:.+]] = arith.mulf %[[DF]], %[[B]] : f64
# CHECK-NEXT: %[[BF:.+]] = arith.addf %[[BF1]], %[[BF2]] : f64
# CHECK-NEXT: arith.subf
# CHECK-NEXT: %[[NBF:.+]] = arith.negf %[[BF]] : f64
# CHECK-NEXT: %[[T2:.+]] = arith.addf %[[T1]], %[[NBF]] : f64
# CHECK-NEXT: arith.mulf %[[C]], %[[G]] : f64
# CHECK-NEXT: %[[CG1:.+]] = arith.mulf %[[DC]], %[[G]] : f64
# CHECK-NEXT: %[[CG2:.+]] = arith.mulf %[[DG]], %[[C]] : f64
# CHECK-NEXT: %[[CG:.+]] = arith.addf %[[CG1]], %[[CG2]] : f64
# CHECK-NEXT: %[[R:.+]] = arith.subf
# CHECK-NEXT: %[[NCG:.+]] = arith.negf %[[CG]] : f64
# CHECK-NEXT: %[[T:.+]] = arith.addf %[[T2]], %[[NCG]] : f64
# CHECK-NEXT: return %[[R]], %[[T]] : f64, f64
case(quat_mul_w, 8)

# -----

# matrix @ vector: row 0 is a x + b y: gradients s x, s y, 0, 0 for the
# matrix and s a, s b for the vector.
# CHECK-LABEL: func.func @__dg_rev_matvec0_
# CHECK-SAME: (%[[A:[a-z0-9_]+]]: f64, %[[B:[a-z0-9_]+]]: f64, %[[C:[a-z0-9_]+]]: f64, %[[D:[a-z0-9_]+]]: f64, %[[X:[a-z0-9_]+]]: f64, %[[Y:[a-z0-9_]+]]: f64, %[[S:[a-z0-9_]+]]: f64)
# CHECK: %[[GB:.+]] = arith.mulf %[[S]], %[[Y]] : f64
# CHECK-NEXT: %[[GY:.+]] = arith.mulf %[[S]], %[[B]] : f64
# CHECK-NEXT: %[[GA:.+]] = arith.mulf %[[S]], %[[X]] : f64
# CHECK-NEXT: %[[GX:.+]] = arith.mulf %[[S]], %[[A]] : f64
# CHECK-NEXT: %[[Z0:.+]] = arith.constant 0.0{{0*}}e+00 : f64
# CHECK-NEXT: %[[Z1:.+]] = arith.constant 0.0{{0*}}e+00 : f64
# CHECK-NEXT: return %[[GA]], %[[GB]], %[[Z0]], %[[Z1]], %[[GX]], %[[GY]]
# matrix @ vector, forward: (da x + dx a) + (db y + dy b).
# CHECK-LABEL: func.func @__dg_fwd_matvec0_
# CHECK-SAME: (%[[A:[a-z0-9_]+]]: f64, %[[B:[a-z0-9_]+]]: f64, %[[C:[a-z0-9_]+]]: f64, %[[D:[a-z0-9_]+]]: f64, %[[X:[a-z0-9_]+]]: f64, %[[Y:[a-z0-9_]+]]: f64, %[[DA:[a-z0-9_]+]]: f64, %[[DB:[a-z0-9_]+]]: f64, %[[DC:[a-z0-9_]+]]: f64, %[[DD:[a-z0-9_]+]]: f64, %[[DX:[a-z0-9_]+]]: f64, %[[DY:[a-z0-9_]+]]: f64)
# CHECK-NEXT: %[[AX:.+]] = arith.mulf %[[A]], %[[X]] : f64
# CHECK-NEXT: %[[AX1:.+]] = arith.mulf %[[DA]], %[[X]] : f64
# CHECK-NEXT: %[[AX2:.+]] = arith.mulf %[[DX]], %[[A]] : f64
# CHECK-NEXT: %[[TAX:.+]] = arith.addf %[[AX1]], %[[AX2]] : f64
# CHECK-NEXT: %[[BY:.+]] = arith.mulf %[[B]], %[[Y]] : f64
# CHECK-NEXT: %[[BY1:.+]] = arith.mulf %[[DB]], %[[Y]] : f64
# CHECK-NEXT: %[[BY2:.+]] = arith.mulf %[[DY]], %[[B]] : f64
# CHECK-NEXT: %[[TBY:.+]] = arith.addf %[[BY1]], %[[BY2]] : f64
# CHECK-NEXT: %[[R:.+]] = arith.addf %[[AX]], %[[BY]] : f64
# CHECK-NEXT: %[[T:.+]] = arith.addf %[[TAX]], %[[TBY]] : f64
# CHECK: return %[[R]], %[[T]] : f64, f64
case(matvec0, 6)

# -----

# matrix @ matrix: (m m)[0, 1] = a b + b d: gradients s b, s d + s a, 0, s b.
# CHECK-LABEL: func.func @__dg_rev_matmat01_
# CHECK-SAME: (%[[A:[a-z0-9_]+]]: f64, %[[B:[a-z0-9_]+]]: f64, %[[C:[a-z0-9_]+]]: f64, %[[D:[a-z0-9_]+]]: f64, %[[S:[a-z0-9_]+]]: f64)
# CHECK: %[[SD:.+]] = arith.mulf %[[S]], %[[D]] : f64
# CHECK-NEXT: %[[GD:.+]] = arith.mulf %[[S]], %[[B]] : f64
# CHECK-NEXT: %[[GA:.+]] = arith.mulf %[[S]], %[[B]] : f64
# CHECK-NEXT: %[[SA:.+]] = arith.mulf %[[S]], %[[A]] : f64
# CHECK-NEXT: %[[GB:.+]] = arith.addf %[[SD]], %[[SA]] : f64
# CHECK-NEXT: %[[Z:.+]] = arith.constant 0.0{{0*}}e+00 : f64
# CHECK-NEXT: return %[[GA]], %[[GB]], %[[Z]], %[[GD]] : f64, f64, f64, f64
# matrix @ matrix, forward: (da b + db a) + (db d + dd b).
# CHECK-LABEL: func.func @__dg_fwd_matmat01_
# CHECK-SAME: (%[[A:[a-z0-9_]+]]: f64, %[[B:[a-z0-9_]+]]: f64, %[[C:[a-z0-9_]+]]: f64, %[[D:[a-z0-9_]+]]: f64, %[[DA:[a-z0-9_]+]]: f64, %[[DB:[a-z0-9_]+]]: f64, %[[DC:[a-z0-9_]+]]: f64, %[[DD:[a-z0-9_]+]]: f64)
# CHECK: %[[AB:.+]] = arith.mulf %[[A]], %[[B]] : f64
# CHECK-NEXT: %[[AB1:.+]] = arith.mulf %[[DA]], %[[B]] : f64
# CHECK-NEXT: %[[AB2:.+]] = arith.mulf %[[DB]], %[[A]] : f64
# CHECK-NEXT: %[[TAB:.+]] = arith.addf %[[AB1]], %[[AB2]] : f64
# CHECK-NEXT: %[[BD:.+]] = arith.mulf %[[B]], %[[D]] : f64
# CHECK-NEXT: %[[BD1:.+]] = arith.mulf %[[DB]], %[[D]] : f64
# CHECK-NEXT: %[[BD2:.+]] = arith.mulf %[[DD]], %[[B]] : f64
# CHECK-NEXT: %[[TBD:.+]] = arith.addf %[[BD1]], %[[BD2]] : f64
# CHECK-NEXT: %[[R:.+]] = arith.addf %[[AB]], %[[BD]] : f64
# CHECK-NEXT: %[[T:.+]] = arith.addf %[[TAB]], %[[TBD]] : f64
# CHECK: return %[[R]], %[[T]] : f64, f64
case(matmat01, 4)

# -----

# indexing a vector: p[0] * p[2] reads the components x and z themselves:
# gradients s z, 0, s x.
# CHECK-LABEL: func.func @__dg_rev_index02_
# CHECK-SAME: (%[[X:[a-z0-9_]+]]: f64, %[[Y:[a-z0-9_]+]]: f64, %[[Z:[a-z0-9_]+]]: f64, %[[S:[a-z0-9_]+]]: f64)
# CHECK-NEXT: arith.mulf %[[X]], %[[Z]] : f64
# CHECK-NEXT: %[[GX:.+]] = arith.mulf %[[S]], %[[Z]] : f64
# CHECK-NEXT: %[[GZ:.+]] = arith.mulf %[[S]], %[[X]] : f64
# CHECK-NEXT: %[[Z0:.+]] = arith.constant 0.0{{0*}}e+00 : f64
# CHECK-NEXT: return %[[GX]], %[[Z0]], %[[GZ]] : f64, f64, f64
# indexing, forward: dx z + dz x.
# CHECK-LABEL: func.func @__dg_fwd_index02_
# CHECK-SAME: (%[[X:[a-z0-9_]+]]: f64, %[[Y:[a-z0-9_]+]]: f64, %[[Z:[a-z0-9_]+]]: f64, %[[DX:[a-z0-9_]+]]: f64, %[[DY:[a-z0-9_]+]]: f64, %[[DZ:[a-z0-9_]+]]: f64)
# CHECK-NEXT: %[[R:.+]] = arith.mulf %[[X]], %[[Z]] : f64
# CHECK-NEXT: %[[T1:.+]] = arith.mulf %[[DX]], %[[Z]] : f64
# CHECK-NEXT: %[[T2:.+]] = arith.mulf %[[DZ]], %[[X]] : f64
# CHECK-NEXT: %[[T:.+]] = arith.addf %[[T1]], %[[T2]] : f64
# CHECK-NEXT: return %[[R]], %[[T]] : f64, f64
case(index02, 3)

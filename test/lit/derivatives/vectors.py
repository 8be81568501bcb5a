# Derivatives of the vector builtins (frontend/vector_builtins.py): vectors
# are scalarised in the frontend, so each builtin's derivative is the scalar
# rules' IR; this prints, per case, the derivative function diffgpu-autodiff
# makes in reverse mode (dg.autodiff) and forward mode (dg.fwddiff).
# RUN: %python %s | FileCheck %s
import linecache

import numpy as np

import diffgpu as dg


@dg.func
def length3(x, y, z):
    return dg.length(dg.vec3(x, y, z))


@dg.func
def normalize_x(x, y):
    return dg.normalize(dg.vec2(x, y))[0]


@dg.func
def inverse00(a, b, c, d):
    return dg.inverse(dg.mat22(a, b, c, d))[0, 0]


@dg.func
def cross_z(a, b, c, d):
    return dg.cross(dg.vec3(a, b, 0.0), dg.vec3(c, d, 0.0))[2]


@dg.func
def rotate_x(w, x, v):
    return dg.quat_rotate(dg.quat(x, 0.0, 0.0, w), dg.vec3(0.0, v, 0.0))[1]


@dg.func
def det22(a, b, c, d):
    return dg.determinant(dg.mat22(a, b, c, d))


@dg.func
def axis_angle_w(x, t):
    return dg.quat_from_axis_angle(dg.vec3(x, 0.0, 0.0), t)[3]


@dg.func
def dot2(a, b):
    return dg.dot(dg.vec2(a, b), dg.vec2(b, a))


def case(f, n):
    args = ", ".join(f"dg.Active(a[{k}])" for k in range(n))
    tangents = ", ".join(f"dg.Duplicated(a[{k}], 1.0)" for k in range(n))
    ns = {"dg": dg, "f": f}
    src = (f"def rev(out, a):\n    out[0] = dg.autodiff(f, {args})[0]\n"
           f"def fwd(out, a):\n    out[0] = dg.fwddiff(f, {tangents})\n")
    name = f"<vectors-{f.name}>"
    linecache.cache[name] = (len(src), None, src.splitlines(True), name)  # for the frontend
    exec(compile(src, name, "exec"), ns)
    for mode in ("rev", "fwd"):
        ir = dg.kernel(ns[mode]).ir(np.zeros(1), np.zeros(n), stage="autodiff")
        start = ir.index(f"func.func @__dg_{mode}_")
        print(ir[start:ir.index("\n  }", start)])
        print("// -----")


# length: the squared length s is replaced by 1 where s == 0 before the sqrt
# (its partial 0.5 / sqrt is finite), and the cotangent reaching the sqrt is
# gated by s != 0: the gradient at v = 0 is 0, as Warp's.
# CHECK-LABEL: func.func @__dg_rev_length3_
# CHECK-SAME: (%[[X:.+]]: f64, %[[Y:.+]]: f64, %[[Z:.+]]: f64, %[[D:.+]]: f64)
# CHECK: %[[NZ:.+]] = arith.cmpf une, %[[S:.+]], %{{.+}} : f64
# CHECK-NEXT: %[[ONE:.+]] = arith.constant 1.0
# CHECK-NEXT: %[[SAFE:.+]] = arith.select %[[NZ]], %[[S]], %[[ONE]] : f64
# CHECK-NEXT: %[[R:.+]] = math.sqrt %[[SAFE]] : f64
# CHECK: %[[LEN:.+]] = arith.select %[[NZ]], %[[R]], %{{.+}} : f64
# CHECK-NEXT: %[[GONE:.+]] = arith.constant 1.0
# CHECK-NEXT: %[[GZERO:.+]] = arith.constant 0.0
# CHECK-NEXT: %[[GATE:.+]] = arith.select %[[NZ]], %[[GONE]], %[[GZERO]] : f64
# CHECK-NEXT: %[[DR:.+]] = arith.mulf %[[D]], %[[GATE]] : f64
# CHECK: %[[P:.+]] = arith.divf %{{.+}}, %[[R]] : f64
# CHECK-NEXT: %{{.+}} = arith.mulf %[[DR]], %[[P]] : f64
# CHECK: return
case(length3, 3)

# length, forward: the tangent of the sqrt's operand is gated by s != 0 too.
# CHECK-LABEL: func.func @__dg_fwd_length3_
# CHECK: %[[NZ:.+]] = arith.cmpf une, %[[S:.+]], %{{.+}} : f64
# CHECK: %[[SAFE:.+]] = arith.select %[[NZ]], %[[S]], %{{.+}} : f64
# CHECK: %[[DSAFE:.+]] = arith.select %[[NZ]], %{{.+}}, %{{.+}} : f64
# CHECK: %[[R:.+]] = math.sqrt %[[SAFE]] : f64
# CHECK: arith.divf %{{.+}}, %[[R]] : f64
# CHECK: arith.select %[[NZ]], %{{.+}}, %{{.+}} : f64
# CHECK: return

# -----

# normalize: each component is select(s != 0, x / sqrt(safe), 0); the
# derivative of the division by the root is gated the same way (0 at v = 0).
# CHECK-LABEL: func.func @__dg_rev_normalize_x_
# CHECK-SAME: (%[[X:.+]]: f64, %[[Y:.+]]: f64, %[[D:.+]]: f64)
# CHECK: %[[NZ:.+]] = arith.cmpf une, %{{.+}}, %{{.+}} : f64
# CHECK: %[[R:.+]] = math.sqrt %{{.+}} : f64
# CHECK-NEXT: %[[Q:.+]] = arith.divf %[[X]], %[[R]] : f64
# CHECK: arith.select %[[NZ]], %[[Q]], %{{.+}} : f64
# CHECK: %[[GONE:.+]] = arith.constant 1.0
# CHECK-NEXT: %[[GZERO:.+]] = arith.constant 0.0
# CHECK-NEXT: %[[GATE:.+]] = arith.select %[[NZ]], %[[GONE]], %[[GZERO]] : f64
# CHECK-NEXT: arith.mulf %[[D]], %[[GATE]] : f64
# CHECK: return
# CHECK-LABEL: func.func @__dg_fwd_normalize_x_
# CHECK: %[[NZ:.+]] = arith.cmpf une, %{{.+}}, %{{.+}} : f64
# CHECK: math.sqrt
# CHECK: arith.divf
# CHECK: arith.select %[[NZ]], %{{.+}}, %{{.+}} : f64
# CHECK: return
case(normalize_x, 2)

# -----

# inverse: 1 / det of the guarded determinant (det replaced by 1 where it is
# 0), the result selected to 0 there: the derivative of the reciprocal is
# taken of the safe value and gated by det != 0.
# CHECK-LABEL: func.func @__dg_rev_inverse00_
# CHECK-SAME: (%[[A:.+]]: f64, %[[B:.+]]: f64, %[[C:.+]]: f64, %[[DD:.+]]: f64, %[[SEED:.+]]: f64)
# CHECK: %[[AD:.+]] = arith.mulf %[[A]], %[[DD]] : f64
# CHECK-NEXT: %[[BC:.+]] = arith.mulf %[[B]], %[[C]] : f64
# CHECK-NEXT: %[[DET:.+]] = arith.subf %[[AD]], %[[BC]] : f64
# CHECK: %[[NZ:.+]] = arith.cmpf une, %[[DET]], %{{.+}} : f64
# CHECK: %[[SAFE:.+]] = arith.select %[[NZ]], %[[DET]], %{{.+}} : f64
# CHECK: %[[INV:.+]] = arith.divf %{{.+}}, %[[SAFE]] : f64
# CHECK: arith.select %[[NZ]], %{{.+}}, %{{.+}} : f64
# CHECK: return
# CHECK-LABEL: func.func @__dg_fwd_inverse00_
# CHECK: %[[NZ:.+]] = arith.cmpf une, %{{.+}}, %{{.+}} : f64
# CHECK: arith.select %[[NZ]]
# CHECK: return
case(inverse00, 4)

# -----

# cross: plain products and differences, so the derivative of a component is
# the scalar rules' (a * d - b * c: two products per partial, no guard).
# CHECK-LABEL: func.func @__dg_rev_cross_z_
# CHECK-SAME: (%[[A:.+]]: f64, %[[B:.+]]: f64, %[[C:.+]]: f64, %[[D:.+]]: f64, %[[SEED:.+]]: f64)
# CHECK-NOT: arith.select
# CHECK-NOT: arith.cmpf
# CHECK: return
# CHECK-LABEL: func.func @__dg_fwd_cross_z_
# CHECK-NOT: arith.select
# CHECK: return
case(cross_z, 4)

# -----

# quat_rotate: written out in products and sums (Warp's formula), no guard,
# no division: a rotation's derivative is polynomial in q and v.
# CHECK-LABEL: func.func @__dg_rev_rotate_x_
# CHECK-NOT: arith.divf
# CHECK-NOT: math.sqrt
# CHECK: return
# CHECK-LABEL: func.func @__dg_fwd_rotate_x_
# CHECK-NOT: arith.divf
# CHECK: return
case(rotate_x, 3)

# -----

# determinant (2x2): a d - b c, whose partials are the cofactors: the seed
# times d, -c, -b, a.
# CHECK-LABEL: func.func @__dg_rev_det22_
# CHECK-SAME: (%[[A:.+]]: f64, %[[B:.+]]: f64, %[[C:.+]]: f64, %[[D:.+]]: f64, %[[S:.+]]: f64)
# CHECK: %[[NS:.+]] = arith.negf %[[S]] : f64
# CHECK-NEXT: %[[GB:.+]] = arith.mulf %[[NS]], %[[C]] : f64
# CHECK-NEXT: %[[GC:.+]] = arith.mulf %[[NS]], %[[B]] : f64
# CHECK-NEXT: %[[GA:.+]] = arith.mulf %[[S]], %[[D]] : f64
# CHECK-NEXT: %[[GD:.+]] = arith.mulf %[[S]], %[[A]] : f64
# CHECK-NEXT: return %[[GA]], %[[GB]], %[[GC]], %[[GD]]
# CHECK-LABEL: func.func @__dg_fwd_det22_
# CHECK: arith.subf
# CHECK: return
case(det22, 4)

# -----

# quat_from_axis_angle: w = cos(angle / 2), so d w / d angle = -sin(angle / 2) / 2
# (math.cos's rule), and w does not depend on the axis (gradient 0).
# CHECK-LABEL: func.func @__dg_rev_axis_angle_w_
# CHECK-SAME: (%[[X:.+]]: f64, %[[T:.+]]: f64, %[[S:.+]]: f64)
# CHECK: %[[HALF:.+]] = arith.constant 5.0{{0*}}e-01 : f64
# CHECK-NEXT: %[[H:.+]] = arith.mulf %[[T]], %[[HALF]] : f64
# CHECK: math.cos %[[H]] : f64
# CHECK: %[[SIN:.+]] = math.sin %[[H]] : f64
# CHECK-NEXT: %[[NSIN:.+]] = arith.negf %[[SIN]] : f64
# CHECK-NEXT: %[[G:.+]] = arith.mulf %[[S]], %[[NSIN]] : f64
# CHECK-NEXT: %[[GT:.+]] = arith.mulf %[[G]], %[[HALF]] : f64
# CHECK-NEXT: %[[Z:.+]] = arith.constant 0.0{{0*}}e+00 : f64
# CHECK-NEXT: return %[[Z]], %[[GT]]
# CHECK-LABEL: func.func @__dg_fwd_axis_angle_w_
# CHECK: math.sin
# CHECK: return
case(axis_angle_w, 2)

# -----

# dot: a sum of products; d/da of dot((a, b), (b, a)) = 2 b, the seed times b
# twice, summed.
# CHECK-LABEL: func.func @__dg_rev_dot2_
# CHECK-SAME: (%[[A:.+]]: f64, %[[B:.+]]: f64, %[[S:.+]]: f64)
# CHECK: %[[P1:.+]] = arith.mulf %[[S]], %[[B]] : f64
# CHECK-NEXT: %[[P2:.+]] = arith.mulf %[[S]], %[[B]] : f64
# CHECK-NEXT: %[[GA:.+]] = arith.addf %[[P1]], %[[P2]] : f64
# CHECK: return %[[GA]], %{{.+}}
# CHECK-LABEL: func.func @__dg_fwd_dot2_
# CHECK-NOT: arith.select
# CHECK: return
case(dot2, 2)

# -----

# memref.load's forward rule keeps the frontend's mark on the tangent load of a
# vector's component (diffgpu.vector_row), so diffgpu-vector-access merges the
# tangent row as it merges the primal one.
# CHECK-LABEL: func.func @__dg_fwd_row_sum_
# CHECK-SAME: (%[[X:.+]]: memref<?x?xf64, strided<[?, ?], offset: ?>>, %[[DX:.+]]: memref<?x?xf64, strided<[?, ?], offset: ?>>)
# CHECK: memref.load %[[X]][%{{.+}}, %{{.+}}] {diffgpu.vector_row}
# CHECK: memref.load %[[DX]][%{{.+}}, %{{.+}}] {diffgpu.vector_row}
# CHECK: memref.load %[[X]][%{{.+}}, %{{.+}}] {diffgpu.vector_row}
# CHECK: memref.load %[[DX]][%{{.+}}, %{{.+}}] {diffgpu.vector_row}
# CHECK: return


@dg.func
def row_sum(x):
    v = dg.load_vec2(x, 0)
    return v[0] * v[1]


def row_case():
    src = ("def fwd(out, x, dx):\n"
           "    out[0] = dg.fwddiff(row_sum, dg.Duplicated(x, dx))\n")
    ns = {"dg": dg, "row_sum": row_sum}
    linecache.cache["<vectors-row>"] = (len(src), None, src.splitlines(True), "<vectors-row>")
    exec(compile(src, "<vectors-row>", "exec"), ns)
    x = np.zeros((1, 2))
    ir = dg.kernel(ns["fwd"]).ir(np.zeros(1), x, x, stage="autodiff")
    start = ir.index("func.func @__dg_fwd_")
    print(ir[start:ir.index("\n  }", start)])


row_case()

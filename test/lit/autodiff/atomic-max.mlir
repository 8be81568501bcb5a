// dg.vjp / dg.jvp of dg.atomic_max (lowering/autodiff/rules/collectives.py): the
// array is 'rmw', its primal the final values F of a launch that already ran (NaN
// where the original value won). Reverse: the contribution v equal to F[i] takes
// dA[i] by exchanging it with 0 (the first one to exchange gets it, the others 0),
// and the forward's atomic max is gone (F stays F; the array is only read).
// Forward: the winner exchanges its tangent in and puts back a number it finds
// (the host leaves NaN where a contribution wins: the first one stays).
// RUN: diffgpu-opt %s --diffgpu-autodiff --diffgpu-verify-targets | FileCheck %s

!A = memref<?xf32, strided<[?], offset: ?>>
#sm90 = #nvvm.target<O = 3, chip = "sm_90">

func.func @amax(%a: !A, %x: !A) attributes {diffgpu.target = #sm90} {
  %b = "diffgpu.block_id"() {dim = 0 : i64} : () -> index
  %n = "diffgpu.block_dim"() {dim = 0 : i64} : () -> index
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %m = arith.muli %b, %n : index
  %i = arith.addi %m, %t : index
  %c0 = arith.constant 0 : index
  %v = memref.load %x[%i] : !A
  %p = arith.mulf %v, %v : f32
  %old = "diffgpu.atomic_rmw"(%a, %p, %c0) {kind = "max"} : (!A, f32, index) -> f32
  return
}
func.func @vjp(%a: !A, %da: !A, %x: !A, %dx: !A) attributes {diffgpu.kernel, diffgpu.target = #sm90} {
  "diffgpu.autodiff"(%a, %da, %x, %dx) {callee = @amax, activity = ["rmw", "dup"], diffgpu.target = #sm90, groups = array<i32: 2, 2>, operandSegmentSizes = array<i32: 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (!A, !A, !A, !A) -> ()
  return
}
func.func @jvp(%a: !A, %ta: !A, %x: !A, %tx: !A) attributes {diffgpu.kernel, diffgpu.target = #sm90} {
  "diffgpu.fwddiff"(%a, %ta, %x, %tx) {callee = @amax, activity = ["rmw", "dup"], diffgpu.target = #sm90, groups = array<i32: 2, 2>, operandSegmentSizes = array<i32: 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (!A, !A, !A, !A) -> ()
  return
}
// CHECK-LABEL: func.func @__dg_rev_amax_
// CHECK-SAME: (%[[A:[a-z0-9]+]]: memref<{{.+}}>, %[[X:[a-z0-9]+]]: memref<{{.+}}>, %[[DA:[a-z0-9]+]]: memref<{{.+}}>, %[[DX:[a-z0-9]+]]: memref<{{.+}}>)
// CHECK-SAME: diffgpu.rmw_final = array<i64: 0>
// CHECK-NOT: kind = "max"
// CHECK: %[[V:.+]] = arith.mulf
// CHECK-NOT: kind = "max"
// CHECK: %[[F:.+]] = memref.load %[[A]][%[[C0:[a-z0-9_]+]]]
// CHECK-NEXT: %[[WON:.+]] = arith.cmpf oeq, %[[V]], %[[F]]
// CHECK-NEXT: %[[D:.+]] = scf.if %[[WON]] -> (f32) {
// CHECK-NEXT: %[[Z:.+]] = arith.constant 0.0
// CHECK-NEXT: %[[OLD:.+]] = "diffgpu.atomic_rmw"(%[[DA]], %[[Z]], %[[C0]]) {kind = "exch"}
// CHECK-NEXT: scf.yield %[[OLD]]
// CHECK-NEXT: } else {
// CHECK: "diffgpu.atomic_add"(%[[DX]]
// CHECK-NOT: "diffgpu.atomic_rmw"
// CHECK: return
// CHECK-LABEL: func.func @__dg_fwd_amax_
// CHECK-SAME: (%[[A:[a-z0-9]+]]: memref<{{.+}}>, %[[X:[a-z0-9]+]]: memref<{{.+}}>, %[[TA:[a-z0-9]+]]: memref<{{.+}}>, %[[TX:[a-z0-9]+]]: memref<{{.+}}>)
// CHECK-SAME: diffgpu.rmw_final = array<i64: 0>
// CHECK-NOT: kind = "max"
// CHECK: %[[T:.+]] = arith.addf
// CHECK-NEXT: %[[F:.+]] = memref.load %[[A]][%[[C0:[a-z0-9_]+]]]
// CHECK-NEXT: %[[WON:.+]] = arith.cmpf oeq, %{{.+}}, %[[F]]
// CHECK-NEXT: scf.if %[[WON]] {
// CHECK-NEXT: %[[OLD:.+]] = "diffgpu.atomic_rmw"(%[[TA]], %[[T]], %[[C0]]) {kind = "exch"}
// CHECK-NEXT: %[[NUM:.+]] = arith.cmpf ord, %[[OLD]], %[[OLD]]
// CHECK-NEXT: scf.if %[[NUM]] {
// CHECK-NEXT: "diffgpu.atomic_rmw"(%[[TA]], %[[OLD]], %[[C0]]) {kind = "exch"}
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NOT: kind = "max"
// CHECK: return

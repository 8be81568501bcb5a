// Forward mode (diffgpu.fwddiff): the generated function runs the primal
// and computes tangents with the same rule tables; loads of dup arrays read
// the shadow, stores write the tangent; loop-carried tangents go through a
// slot so the loop keeps its signature.
// RUN: diffgpu-opt %s --split-input-file --diffgpu-autodiff --diffgpu-verify-targets | FileCheck %s

!A = memref<?xf32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @f(%A: !A, %s: f32, %n: index) attributes {diffgpu.target = #host} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = memref.load %A[%c0] : !A
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%x = %a) -> (f32) {
    %e = math.exp %x : f32
    %m = arith.mulf %e, %s : f32
    scf.yield %m : f32
  }
  memref.store %r, %A[%c0] : !A
  return
}
func.func @k(%A: !A, %dA: !A, %s: f32, %ds: f32, %n: index) attributes {diffgpu.kernel, diffgpu.target = #host} {
  "diffgpu.fwddiff"(%A, %dA, %s, %ds, %n) {callee = @f, activity = ["dup", "dup", "const"], diffgpu.target = #host, groups = array<i32: 2, 2, 1>, operandSegmentSizes = array<i32: 2, 2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (!A, !A, f32, f32, index) -> ()
  return
}
// CHECK-LABEL: func.func @k
// CHECK-SAME: (%[[A:[a-z0-9]+]]: memref<{{.+}}>, %[[DA:[a-z0-9]+]]: memref<{{.+}}>, %[[S:[a-z0-9]+]]: f32, %[[DS:[a-z0-9]+]]: f32, %[[N:[a-z0-9]+]]: index)
// CHECK-NEXT: call @[[F:__dg_fwd_f_[0-9a-f]+]](%[[A]], %[[S]], %[[N]], %[[DA]], %[[DS]])
// CHECK-LABEL: func.func @__dg_fwd_f_
// CHECK-SAME: (%[[A:[a-z0-9]+]]: memref<{{.+}}>, %[[S:[a-z0-9]+]]: f32, %[[N:[a-z0-9]+]]: index, %[[DA:[a-z0-9]+]]: memref<{{.+}}>, %[[DS:[a-z0-9]+]]: f32)
// CHECK-SAME: diffgpu.target = #llvm.target
// CHECK-NEXT: %[[SLOT:.+]] = memref.alloca() : memref<f32>
// CHECK:      %[[X0:.+]] = memref.load %[[A]]
// CHECK-NEXT: %[[T0:.+]] = memref.load %[[DA]]
// CHECK-NEXT: memref.store %[[T0]], %[[SLOT]][]
// CHECK-NEXT: %[[R:.+]] = scf.for %{{.+}} iter_args(%[[X:.+]] = %[[X0]]) -> (f32) {
// CHECK-NEXT:   %[[TX:.+]] = memref.load %[[SLOT]][]
// CHECK-NEXT:   %[[E:.+]] = math.exp %[[X]]
// CHECK-NEXT:   %[[TE:.+]] = arith.mulf %[[TX]], %[[E]]
// CHECK-NEXT:   %[[M:.+]] = arith.mulf %[[E]], %[[S]]
// CHECK-NEXT:   %[[T1:.+]] = arith.mulf %[[TE]], %[[S]]
// CHECK-NEXT:   %[[T2:.+]] = arith.mulf %[[DS]], %[[E]]
// CHECK-NEXT:   %[[TM:.+]] = arith.addf %[[T1]], %[[T2]]
// CHECK-NEXT:   memref.store %[[TM]], %[[SLOT]][]
// CHECK-NEXT:   scf.yield %[[M]] : f32
// CHECK:      %[[TR:.+]] = memref.load %[[SLOT]][]
// CHECK-NEXT: memref.store %[[R]], %[[A]]
// CHECK-NEXT: memref.store %[[TR]], %[[DA]]
// CHECK-NEXT: return

// -----

#sm90 = #nvvm.target<O = 3, chip = "sm_90">

// A scalar function: the op's result is the tangent of the callee's result
// (the generated function returns primal result, then tangent), sm_90 kept.
func.func @g(%x: f64) -> f64 attributes {diffgpu.target = #sm90} {
  %s = math.sin %x : f64
  return %s : f64
}
func.func @k(%x: f64, %dx: f64) attributes {diffgpu.kernel, diffgpu.target = #sm90} {
  %t = "diffgpu.fwddiff"(%x, %dx) {callee = @g, activity = ["dup"], diffgpu.target = #sm90, groups = array<i32: 2>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64) -> f64
  return
}
// CHECK-LABEL: func.func @k
// CHECK-NEXT: %{{.+}}:2 = call @[[G:__dg_fwd_g_[0-9a-f]+]](%{{.+}}, %{{.+}}) : (f64, f64) -> (f64, f64)
// CHECK-LABEL: func.func @__dg_fwd_g_
// CHECK-SAME: (%[[X:.+]]: f64, %[[DX:.+]]: f64) -> (f64, f64) attributes {diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">}
// CHECK-NEXT: %[[S:.+]] = math.sin %[[X]]
// CHECK-NEXT: %[[C:.+]] = math.cos %[[X]]
// CHECK-NEXT: %[[T:.+]] = arith.mulf %[[DX]], %[[C]]
// CHECK-NEXT: return %[[S]], %[[T]] : f64, f64

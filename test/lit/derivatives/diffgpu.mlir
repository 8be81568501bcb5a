// Reverse-mode rules of the diffgpu dialect: geometry is inactive, a
// barrier is mirrored in the reverse sweep, an atomic addition's adjoint
// reads the shadow without consuming it.
// RUN: diffgpu-opt %s --split-input-file --diffgpu-autodiff | FileCheck %s

!A = memref<?xf32, strided<[?], offset: ?>>
#sm90 = #nvvm.target<O = 3, chip = "sm_90">

// X[t] = X[t] * X[t] with a barrier in between: the reverse sweep has its own
// barrier between the adjoint of the store and that of the load; the index
// (thread_id) gets no derivative code.
func.func @f(%X: !A) attributes {diffgpu.kernel, diffgpu.target = #sm90} {
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %x = memref.load %X[%t] : !A
  "diffgpu.barrier"() : () -> ()
  %p = arith.mulf %x, %x : f32
  memref.store %p, %X[%t] : !A
  return
}
func.func @k(%X: !A, %dX: !A) attributes {diffgpu.kernel, diffgpu.target = #sm90} {
  "diffgpu.autodiff"(%X, %dX) {callee = @f, activity = ["dup"], diffgpu.target = #sm90, groups = array<i32: 2>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (!A, !A) -> ()
  return
}
// CHECK-LABEL: func.func @__dg_rev_f_
// CHECK-SAME: (%[[X:[a-z0-9]+]]: memref<{{.+}}>, %[[DX:[a-z0-9]+]]: memref<{{.+}}>)
// CHECK-NEXT: %[[T:.+]] = "diffgpu.thread_id"()
// CHECK-NEXT: %[[V:.+]] = memref.load %[[X]][%[[T]]]
// CHECK-NEXT: "diffgpu.barrier"()
// CHECK-NEXT: %[[P:.+]] = arith.mulf %[[V]], %[[V]]
// CHECK-NEXT: memref.store %[[P]], %[[X]][%[[T]]]
// CHECK-NEXT: %[[D:.+]] = memref.load %[[DX]][%[[T]]]
// CHECK-NEXT: %[[Z:.+]] = arith.constant 0.0
// CHECK-NEXT: memref.store %[[Z]], %[[DX]][%[[T]]]
// CHECK-NEXT: %[[G1:.+]] = arith.mulf %[[D]], %[[V]]
// CHECK-NEXT: %[[G2:.+]] = arith.mulf %[[D]], %[[V]]
// CHECK-NEXT: %[[G:.+]] = arith.addf %[[G1]], %[[G2]]
// CHECK-NEXT: "diffgpu.barrier"()
// CHECK-NEXT: "diffgpu.atomic_add"(%[[DX]], %[[G]], %[[T]])
// CHECK-NEXT: return

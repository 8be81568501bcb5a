// Shared memory in a differentiated kernel: the generated function takes the
// shared array and its shadow as arguments (it is no kernel), the kernel
// holding the autodiff op allocates both; the shadow is cleared by thread
// (0, 0, 0) behind a barrier, loads add into it atomically, stores consume
// it, and the barrier is mirrored.
// RUN: diffgpu-opt %s --diffgpu-autodiff --diffgpu-verify-targets | FileCheck %s

!A = memref<?xf32, strided<[?], offset: ?>>
!S = memref<4xf32, #gpu.address_space<workgroup>>
#sm90 = #nvvm.target<O = 3, chip = "sm_90">

func.func @f(%X: !A) attributes {diffgpu.kernel, diffgpu.target = #sm90} {
  %s = "diffgpu.shared_alloc"() : () -> !S
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %x = memref.load %X[%t] : !A
  memref.store %x, %s[%t] : !S
  "diffgpu.barrier"() : () -> ()
  %c0 = arith.constant 0 : index
  %y = memref.load %s[%c0] : !S
  %p = arith.mulf %y, %x : f32
  memref.store %p, %X[%t] : !A
  return
}
func.func @k(%X: !A, %dX: !A) attributes {diffgpu.kernel, diffgpu.target = #sm90} {
  "diffgpu.autodiff"(%X, %dX) {callee = @f, activity = ["dup"], diffgpu.target = #sm90, groups = array<i32: 2>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (!A, !A) -> ()
  return
}
// CHECK-LABEL: func.func @k
// CHECK-SAME: (%[[X:[a-z0-9]+]]: memref<{{.+}}>, %[[DX:[a-z0-9]+]]: memref<{{.+}}>)
// CHECK-NEXT: %[[S:.+]] = "diffgpu.shared_alloc"() : () -> memref<4xf32, #gpu.address_space<workgroup>>
// CHECK-NEXT: %[[DS:.+]] = "diffgpu.shared_alloc"() : () -> memref<4xf32, #gpu.address_space<workgroup>>
// CHECK-NEXT: call @{{__dg_rev_f_[0-9a-f]+}}(%[[X]], %[[DX]], %[[S]], %[[DS]])
// CHECK-LABEL: func.func @__dg_rev_f_
// CHECK-SAME: (%[[X:[a-z0-9]+]]: memref<{{.+}}>, %[[DX:[a-z0-9]+]]: memref<{{.+}}>, %[[S:[a-z0-9]+]]: memref<4xf32, #gpu.address_space<workgroup>>, %[[DS:[a-z0-9]+]]: memref<4xf32, #gpu.address_space<workgroup>>)
// CHECK-SAME: diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">
// CHECK-NOT:  diffgpu.shared_alloc
// CHECK:      scf.if
// CHECK:        scf.for %[[E:.+]] = {{.+}} {
// CHECK-NEXT:     memref.store %{{.+}}, %[[DS]][%[[E]]]
// CHECK:      "diffgpu.barrier"()
// CHECK:      memref.store %{{.+}}, %[[S]][%[[T:.+]]] : memref<4xf32
// CHECK-NEXT: "diffgpu.barrier"()
// CHECK:      %[[Y:.+]] = memref.load %[[S]][%[[C0:[a-z0-9_]+]]]
// CHECK:      "diffgpu.atomic_add"(%[[DS]], %{{.+}}, %[[C0]])
// CHECK-NEXT: "diffgpu.barrier"()
// CHECK-NEXT: %[[G:.+]] = memref.load %[[DS]][%[[T]]]
// CHECK-NEXT: %[[Z:.+]] = arith.constant 0.0
// CHECK-NEXT: memref.store %[[Z]], %[[DS]][%[[T]]]
// CHECK:      "diffgpu.atomic_add"(%[[DX]], %{{.+}}, %[[T]])
// CHECK-NEXT: "diffgpu.barrier"()
// CHECK-NEXT: return

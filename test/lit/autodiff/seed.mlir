// The seed case (docs/seed.md): kernel f(A): A[0] *= A[0], differentiated inside
// kernel df(A, dA) on sm_90. The generated function runs the primal, then
// uses the value of A[0] loaded before the store (SSA), never a re-read of A:
// with A = 3, dA = 1 it leaves A = 9, dA = 6 (test_autodiff_ir.py runs it).
// RUN: diffgpu-opt %s --diffgpu-autodiff --diffgpu-verify-targets | FileCheck %s

!A = memref<?xf32, strided<[?], offset: ?>>
#sm90 = #nvvm.target<O = 3, chip = "sm_90">

func.func @f(%A: !A) attributes {diffgpu.kernel, diffgpu.target = #sm90} {
  %c0 = arith.constant 0 : index
  %a = memref.load %A[%c0] : !A
  %b = memref.load %A[%c0] : !A
  %p = arith.mulf %a, %b : f32
  memref.store %p, %A[%c0] : !A
  return
}
func.func @df(%A: !A, %dA: !A) attributes {diffgpu.kernel, diffgpu.target = #sm90} {
  "diffgpu.autodiff"(%A, %dA) {callee = @f, activity = ["dup"], diffgpu.target = #sm90, groups = array<i32: 2>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (!A, !A) -> ()
  return
}
// CHECK-LABEL: func.func @df
// CHECK-SAME: (%[[A:[a-z0-9]+]]: memref<{{.+}}>, %[[DA:[a-z0-9]+]]: memref<{{.+}}>)
// CHECK-NEXT: call @[[REV:__dg_rev_f_[0-9a-f]+]](%[[A]], %[[DA]])
// CHECK-NEXT: return
// CHECK-LABEL: func.func @__dg_rev_f_
// CHECK-SAME: (%[[A:[a-z0-9]+]]: memref<{{.+}}>, %[[DA:[a-z0-9]+]]: memref<{{.+}}>)
// CHECK-SAME: attributes {diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">}
// CHECK-NEXT: %[[C0:.+]] = arith.constant 0 : index
// CHECK-NEXT: %[[X:.+]] = memref.load %[[A]][%[[C0]]]
// CHECK-NEXT: %[[Y:.+]] = memref.load %[[A]][%[[C0]]]
// CHECK-NEXT: %[[P:.+]] = arith.mulf %[[X]], %[[Y]] : f32
// CHECK-NEXT: memref.store %[[P]], %[[A]][%[[C0]]]
// CHECK-NEXT: %[[D:.+]] = memref.load %[[DA]][%[[C0]]]
// CHECK-NEXT: %[[Z:.+]] = arith.constant 0.0
// CHECK-NEXT: memref.store %[[Z]], %[[DA]][%[[C0]]]
// CHECK-NEXT: %[[DX:.+]] = arith.mulf %[[D]], %[[Y]] : f32
// CHECK-NEXT: %[[DY:.+]] = arith.mulf %[[D]], %[[X]] : f32
// CHECK-NEXT: "diffgpu.atomic_add"(%[[DA]], %[[DY]], %[[C0]])
// CHECK-NEXT: "diffgpu.atomic_add"(%[[DA]], %[[DX]], %[[C0]])
// CHECK-NEXT: return
// CHECK-NOT: diffgpu.autodiff

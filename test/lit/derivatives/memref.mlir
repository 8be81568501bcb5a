// Reverse-mode rules of memref: loads of dup arrays add into the shadow
// atomically, stores consume the overwritten element's adjoint.
// RUN: diffgpu-opt %s --split-input-file --diffgpu-autodiff | FileCheck %s

!A = memref<?xf32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">

// B[i] = A[i] * C[i]; A[i] = 1: A and B dup, C const. The store of B[i]
// reads and zeroes dB[i]; the constant store into A only zeroes dA[i]; the
// load of A[i] adds dB[i] * C[i] into dA[i] atomically; C gets nothing.
func.func @f(%A: !A, %B: !A, %C: !A, %i: index) attributes {diffgpu.target = #host} {
  %a = memref.load %A[%i] : !A
  %c = memref.load %C[%i] : !A
  %p = arith.mulf %a, %c : f32
  memref.store %p, %B[%i] : !A
  %z = arith.constant 1.0 : f32
  memref.store %z, %A[%i] : !A
  return
}
func.func @k(%A: !A, %dA: !A, %B: !A, %dB: !A, %C: !A, %i: index) attributes {diffgpu.kernel, diffgpu.target = #host} {
  "diffgpu.autodiff"(%A, %dA, %B, %dB, %C, %i) {callee = @f, activity = ["dup", "dup", "const", "const"], diffgpu.target = #host, groups = array<i32: 2, 2, 1, 1>, operandSegmentSizes = array<i32: 5, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (!A, !A, !A, !A, !A, index) -> ()
  return
}
// CHECK-LABEL: func.func @k
// CHECK: call @__dg_rev_f_{{[0-9a-f]+}}(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}})
// CHECK-LABEL: func.func @__dg_rev_f_
// CHECK-SAME: (%[[A:.+]]: memref<?xf32, {{.+}}>, %[[B:.+]]: memref<?xf32, {{.+}}>, %[[C:.+]]: memref<?xf32, {{.+}}>, %[[I:.+]]: index, %[[DA:.+]]: memref<?xf32, {{.+}}>, %[[DB:.+]]: memref<?xf32, {{.+}}>)
// CHECK-NEXT: %[[X:.+]] = memref.load %[[A]][%[[I]]]
// CHECK-NEXT: %[[Y:.+]] = memref.load %[[C]][%[[I]]]
// CHECK-NEXT: %[[P:.+]] = arith.mulf %[[X]], %[[Y]]
// CHECK-NEXT: memref.store %[[P]], %[[B]][%[[I]]]
// CHECK-NEXT: %[[ONE:.+]] = arith.constant 1.0
// CHECK-NEXT: memref.store %[[ONE]], %[[A]][%[[I]]]
// CHECK-NEXT: %[[Z:.+]] = arith.constant 0.0
// CHECK-NEXT: memref.store %[[Z]], %[[DA]][%[[I]]]
// CHECK-NEXT: %[[G:.+]] = memref.load %[[DB]][%[[I]]]
// CHECK-NEXT: %[[Z2:.+]] = arith.constant 0.0
// CHECK-NEXT: memref.store %[[Z2]], %[[DB]][%[[I]]]
// CHECK-NEXT: %[[GX:.+]] = arith.mulf %[[G]], %[[Y]]
// CHECK-NEXT: "diffgpu.atomic_add"(%[[DA]], %[[GX]], %[[I]])
// CHECK-NEXT: return

// -----

!A = memref<?xf64, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">

// The seed case, A[0] *= A[0]: the loaded value (SSA) is reused by the
// reverse sweep after the store, never re-read from the overwritten array.
func.func @sq(%A: !A) attributes {diffgpu.kernel, diffgpu.target = #host} {
  %c0 = arith.constant 0 : index
  %a = memref.load %A[%c0] : !A
  %p = arith.mulf %a, %a : f64
  memref.store %p, %A[%c0] : !A
  return
}
func.func @dsq(%A: !A, %dA: !A) attributes {diffgpu.kernel, diffgpu.target = #host} {
  "diffgpu.autodiff"(%A, %dA) {callee = @sq, activity = ["dup"], diffgpu.target = #host, groups = array<i32: 2>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (!A, !A) -> ()
  return
}
// CHECK-LABEL: func.func @__dg_rev_sq_
// CHECK-SAME: (%[[A:.+]]: memref<?xf64, {{.+}}>, %[[DA:.+]]: memref<?xf64, {{.+}}>)
// CHECK:      %[[X:.+]] = memref.load %[[A]][%[[C0:[a-z0-9_]+]]]
// CHECK-NEXT: %[[P:.+]] = arith.mulf %[[X]], %[[X]]
// CHECK-NEXT: memref.store %[[P]], %[[A]][%[[C0]]]
// CHECK-NEXT: %[[D:.+]] = memref.load %[[DA]][%[[C0]]]
// CHECK-NEXT: %[[Z:.+]] = arith.constant 0.0
// CHECK-NEXT: memref.store %[[Z]], %[[DA]][%[[C0]]]
// CHECK-NEXT: %[[T1:.+]] = arith.mulf %[[D]], %[[X]]
// CHECK-NEXT: %[[T2:.+]] = arith.mulf %[[D]], %[[X]]
// CHECK-NEXT: %[[G:.+]] = arith.addf %[[T1]], %[[T2]]
// CHECK-NEXT: "diffgpu.atomic_add"(%[[DA]], %[[G]], %[[C0]])
// CHECK-NOT: memref.load %[[A]]
// CHECK: return

// -----

!A = memref<?xf64, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">

// diffgpu.atomic_add in the primal: the adjoint of the added value is the
// shadow element, read but not consumed (additions do not overwrite).
func.func @acc(%A: !A, %x: f64) attributes {diffgpu.target = #host} {
  %c0 = arith.constant 0 : index
  %s = math.sin %x : f64
  %old = "diffgpu.atomic_add"(%A, %s, %c0) : (!A, f64, index) -> f64
  return
}
func.func @dacc(%A: !A, %dA: !A, %x: f64) attributes {diffgpu.kernel, diffgpu.target = #host} {
  %g = "diffgpu.autodiff"(%A, %dA, %x) {callee = @acc, activity = ["dup", "active"], diffgpu.target = #host, groups = array<i32: 2, 1>, operandSegmentSizes = array<i32: 2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (!A, !A, f64) -> f64
  return
}
// CHECK-LABEL: func.func @dacc
// CHECK: %{{.+}} = call @__dg_rev_acc_{{.+}} -> f64
// CHECK-LABEL: func.func @__dg_rev_acc_
// CHECK-SAME: (%[[A:.+]]: memref<?xf64, {{.+}}>, %[[X:.+]]: f64, %[[DA:.+]]: memref<?xf64, {{.+}}>) -> f64
// CHECK:      "diffgpu.atomic_add"(%[[A]], %{{.+}}, %[[C0:[a-z0-9_]+]])
// CHECK-NEXT: %[[D:.+]] = memref.load %[[DA]][%[[C0]]]
// CHECK-NOT:  memref.store {{.+}}, %[[DA]]
// CHECK-NEXT: %[[COS:.+]] = math.cos %[[X]]
// CHECK-NEXT: %[[G:.+]] = arith.mulf %[[D]], %[[COS]]
// CHECK-NEXT: return %[[G]] : f64

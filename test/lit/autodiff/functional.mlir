// The functional kinds of dg.vjp (lowering/autodiff/functional/kinds.py): y = x * x
// with y 'cot' (an output whose cotangent is only read) and x 'grad' (an input
// whose gradient is written). The primal store into y and the consuming store
// into dy are gone; dx's updates go to a register, zeroed and written once to
// dx inside the kernel's own guard (x in bounds): dx is never read, and the
// function keeps one guard.
// RUN: diffgpu-opt %s --diffgpu-autodiff --diffgpu-verify-targets | FileCheck %s

!A = memref<?xf32, strided<[?], offset: ?>>
#sm90 = #nvvm.target<O = 3, chip = "sm_90">

func.func @square(%y: !A, %x: !A) attributes {diffgpu.kernel, diffgpu.target = #sm90} {
  %b = "diffgpu.block_id"() {dim = 0 : i64} : () -> index
  %n = "diffgpu.block_dim"() {dim = 0 : i64} : () -> index
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %m = arith.muli %b, %n : index
  %i = arith.addi %m, %t : index
  %c0 = arith.constant 0 : index
  %len = memref.dim %x, %c0 : !A
  %in = arith.cmpi slt, %i, %len : index
  scf.if %in {
    %v = memref.load %x[%i] : !A
    %p = arith.mulf %v, %v : f32
    memref.store %p, %y[%i] : !A
  }
  return
}
func.func @vjp(%y: !A, %dy: !A, %x: !A, %dx: !A) attributes {diffgpu.kernel, diffgpu.target = #sm90} {
  "diffgpu.autodiff"(%y, %dy, %x, %dx) {callee = @square, activity = ["cot", "grad"], diffgpu.target = #sm90, groups = array<i32: 2, 2>, operandSegmentSizes = array<i32: 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (!A, !A, !A, !A) -> ()
  return
}
// CHECK-LABEL: func.func @vjp
// CHECK-NEXT: call @[[REV:__dg_rev_square_[0-9a-f]+]]
// CHECK-LABEL: func.func @__dg_rev_square_
// CHECK-SAME: (%[[Y:[a-z0-9]+]]: memref<{{.+}}>, %[[X:[a-z0-9]+]]: memref<{{.+}}>, %[[DY:[a-z0-9]+]]: memref<{{.+}}>, %[[DX:[a-z0-9]+]]: memref<{{.+}}>)
// CHECK-NEXT: %[[ACC:.+]] = memref.alloca() : memref<f32>
// CHECK: %[[G:.+]] = arith.addi
// CHECK: %[[E:.+]] = memref.dim %[[X]]
// CHECK-NEXT: %[[OK:.+]] = arith.cmpi slt, %[[G]], %[[E]]
// CHECK-NEXT: scf.if %[[OK]] {
// CHECK-NEXT: %[[Z:.+]] = arith.constant 0.0
// CHECK-NEXT: memref.store %[[Z]], %[[ACC]][]
// CHECK-NOT: memref.store {{.+}}, %[[Y]]
// CHECK-NOT: %[[DX]]
// CHECK: scf.if %[[OK]] {
// CHECK-NOT: memref.store {{.+}}, %[[DY]]
// CHECK-NOT: %[[DX]]
// CHECK: memref.load %[[DY]]
// CHECK-NOT: memref.store {{.+}}, %[[DY]]
// CHECK-NOT: %[[DX]]
// CHECK: %[[OLD:.+]] = memref.load %[[ACC]][]
// CHECK-NEXT: %[[NEW:.+]] = arith.addf %[[OLD]]
// CHECK-NEXT: memref.store %[[NEW]], %[[ACC]][]
// CHECK-NOT: diffgpu.atomic_add
// CHECK-NOT: memref.load %[[DX]]
// CHECK: } else {
// CHECK: }
// CHECK-NEXT: %[[V:.+]] = memref.load %[[ACC]][]
// CHECK-NEXT: memref.store %[[V]], %[[DX]][%[[G]]]
// CHECK-NEXT: }
// CHECK-NEXT: return

// The kernel's guard bounds y, not x: dx's zero and its write-back then get
// their own bounds check on x, at entry and exit.
func.func @square_by_y(%y: !A, %x: !A) attributes {diffgpu.kernel, diffgpu.target = #sm90} {
  %b = "diffgpu.block_id"() {dim = 0 : i64} : () -> index
  %n = "diffgpu.block_dim"() {dim = 0 : i64} : () -> index
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %m = arith.muli %b, %n : index
  %i = arith.addi %m, %t : index
  %c0 = arith.constant 0 : index
  %len = memref.dim %y, %c0 : !A
  %in = arith.cmpi slt, %i, %len : index
  scf.if %in {
    %v = memref.load %x[%i] : !A
    %p = arith.mulf %v, %v : f32
    memref.store %p, %y[%i] : !A
  }
  return
}
func.func @vjp_by_y(%y: !A, %dy: !A, %x: !A, %dx: !A) attributes {diffgpu.kernel, diffgpu.target = #sm90} {
  "diffgpu.autodiff"(%y, %dy, %x, %dx) {callee = @square_by_y, activity = ["cot", "grad"], diffgpu.target = #sm90, groups = array<i32: 2, 2>, operandSegmentSizes = array<i32: 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (!A, !A, !A, !A) -> ()
  return
}
// CHECK-LABEL: func.func @__dg_rev_square_by_y_
// CHECK-SAME: (%[[Y:[a-z0-9]+]]: memref<{{.+}}>, %[[X:[a-z0-9]+]]: memref<{{.+}}>, %[[DY:[a-z0-9]+]]: memref<{{.+}}>, %[[DX:[a-z0-9]+]]: memref<{{.+}}>)
// CHECK-NEXT: %[[ACC:.+]] = memref.alloca() : memref<f32>
// CHECK-NEXT: %[[Z:.+]] = arith.constant 0.0
// CHECK-NEXT: memref.store %[[Z]], %[[ACC]][]
// CHECK-NOT: %[[DX]]
// CHECK: memref.dim %[[X]]
// CHECK: %[[OK:.+]] = arith.cmpi slt, {{.+}} : i64
// CHECK-NEXT: scf.if %[[OK]] {
// CHECK-NEXT: %[[V:.+]] = memref.load %[[ACC]][]
// CHECK-NEXT: memref.store %[[V]], %[[DX]][%{{.+}}]
// CHECK-NEXT: }
// CHECK-NEXT: return

// An in-out array only added to (out[0] += x * x) is 'cot' too: its final
// value is its initial value plus the sum, so the primal adds go and its
// cotangent is only read.
func.func @total(%out: !A, %x: !A) attributes {diffgpu.kernel, diffgpu.target = #sm90} {
  %b = "diffgpu.block_id"() {dim = 0 : i64} : () -> index
  %n = "diffgpu.block_dim"() {dim = 0 : i64} : () -> index
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %m = arith.muli %b, %n : index
  %i = arith.addi %m, %t : index
  %c0 = arith.constant 0 : index
  %v = memref.load %x[%i] : !A
  %p = arith.mulf %v, %v : f32
  %old = "diffgpu.atomic_add"(%out, %p, %c0) : (!A, f32, index) -> f32
  return
}
func.func @vjp_total(%o: !A, %do: !A, %x: !A, %dx: !A) attributes {diffgpu.kernel, diffgpu.target = #sm90} {
  "diffgpu.autodiff"(%o, %do, %x, %dx) {callee = @total, activity = ["cot", "grad"], diffgpu.target = #sm90, groups = array<i32: 2, 2>, operandSegmentSizes = array<i32: 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (!A, !A, !A, !A) -> ()
  return
}
// CHECK-LABEL: func.func @__dg_rev_total_
// CHECK-SAME: (%[[O:[a-z0-9]+]]: memref<{{.+}}>, %[[X:[a-z0-9]+]]: memref<{{.+}}>, %[[DO:[a-z0-9]+]]: memref<{{.+}}>, %[[DX:[a-z0-9]+]]: memref<{{.+}}>)
// CHECK-NOT: diffgpu.atomic_add
// CHECK: memref.load %[[DO]]
// CHECK-NOT: memref.store {{.+}}, %[[DO]]
// CHECK-NOT: diffgpu.atomic_add
// CHECK: memref.store {{.+}}, %[[DX]]
// CHECK-NOT: diffgpu.atomic_add
// CHECK: return

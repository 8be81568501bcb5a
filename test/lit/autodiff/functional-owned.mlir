// The functional kinds of dg.vjp at constant offsets of a global id
// (lowering/autodiff/functional/owned.py, owned_grad.py): each thread reads
// x[i] and x[i + 4], sums them over the block (no stencil gather replays a
// collective) and writes y[i] and y[i + 4] (dg.vjp takes them as 'grad'
// and 'cot' when the launch's x extent is at most 4, so no two threads share
// an element). x's adjoint goes to one register per offset, each written once
// to dx at exit under a bounds test; y's primal stores and dy's consuming
// stores are gone, dy is only read, dx never read.
// RUN: diffgpu-opt %s --split-input-file --diffgpu-autodiff --diffgpu-verify-targets | FileCheck %s

!A = memref<?xf32, strided<[?], offset: ?>>
#sm90 = #nvvm.target<O = 3, chip = "sm_90">

func.func @pairs(%y: !A, %x: !A) attributes {diffgpu.kernel, diffgpu.target = #sm90} {
  %b = "diffgpu.block_id"() {dim = 0 : i64} : () -> index
  %n = "diffgpu.block_dim"() {dim = 0 : i64} : () -> index
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %m = arith.muli %b, %n : index
  %i = arith.addi %m, %t : index
  %c4 = arith.constant 4 : index
  %i4 = arith.addi %i, %c4 : index
  %u = memref.load %x[%i] : !A
  %v = memref.load %x[%i4] : !A
  %w = arith.addf %u, %v : f32
  %s = "diffgpu.block_reduce"(%w) {kind = "sum"} : (f32) -> f32
  %p = arith.mulf %u, %s : f32
  %q = arith.mulf %v, %s : f32
  memref.store %p, %y[%i] : !A
  memref.store %q, %y[%i4] : !A
  return
}
func.func @vjp(%y: !A, %dy: !A, %x: !A, %dx: !A) attributes {diffgpu.kernel, diffgpu.target = #sm90} {
  "diffgpu.autodiff"(%y, %dy, %x, %dx) {callee = @pairs, activity = ["cot", "grad"], diffgpu.target = #sm90, groups = array<i32: 2, 2>, operandSegmentSizes = array<i32: 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (!A, !A, !A, !A) -> ()
  return
}
// CHECK-LABEL: func.func @vjp
// CHECK-NEXT: call @[[REV:__dg_rev_pairs_[0-9a-f]+]]
// CHECK-LABEL: func.func @__dg_rev_pairs_
// CHECK-SAME: (%[[Y:[a-z0-9]+]]: memref<{{.+}}>, %[[X:[a-z0-9]+]]: memref<{{.+}}>, %[[DY:[a-z0-9]+]]: memref<{{.+}}>, %[[DX:[a-z0-9]+]]: memref<{{.+}}>)
// CHECK-NEXT: %[[A0:.+]] = memref.alloca() : memref<f32>
// CHECK-NEXT: %[[Z0:.+]] = arith.constant 0.0
// CHECK-NEXT: memref.store %[[Z0]], %[[A0]][]
// CHECK-NEXT: %[[A4:.+]] = memref.alloca() : memref<f32>
// CHECK-NEXT: %[[Z4:.+]] = arith.constant 0.0
// CHECK-NEXT: memref.store %[[Z4]], %[[A4]][]
// CHECK-NOT: memref.store {{.+}}, %[[Y]]
// CHECK-NOT: memref.store {{.+}}, %[[DY]]
// CHECK-NOT: %[[DX]]
// CHECK: "diffgpu.block_reduce"
// CHECK: memref.load %[[DY]]
// CHECK: memref.load %[[DY]]
// CHECK-NOT: memref.store {{.+}}, %[[DY]]
// CHECK-NOT: %[[DX]]
// CHECK: "diffgpu.block_reduce"
// CHECK: %[[O4:.+]] = memref.load %[[A4]][]
// CHECK-NEXT: %[[N4:.+]] = arith.addf %[[O4]]
// CHECK-NEXT: memref.store %[[N4]], %[[A4]][]
// CHECK-NEXT: %[[O0:.+]] = memref.load %[[A0]][]
// CHECK-NEXT: %[[N0:.+]] = arith.addf %[[O0]]
// CHECK-NEXT: memref.store %[[N0]], %[[A0]][]
// CHECK-NOT: diffgpu.atomic_add
// CHECK: %[[G:.+]] = arith.addi
// CHECK: %[[E:.+]] = memref.dim %[[X]]
// CHECK: %[[OK0:.+]] = arith.cmpi slt
// CHECK-NEXT: scf.if %[[OK0]] {
// CHECK-NEXT: %[[V0:.+]] = memref.load %[[A0]][]
// CHECK-NEXT: memref.store %[[V0]], %[[DX]][%[[G]]]
// CHECK: %[[G4:.+]] = arith.addi %[[G]], %c4
// CHECK: %[[OK4:.+]] = arith.cmpi slt
// CHECK-NEXT: scf.if %[[OK4]] {
// CHECK-NEXT: %[[V4:.+]] = memref.load %[[A4]][]
// CHECK-NEXT: memref.store %[[V4]], %[[DX]][%[[G4]]]
// CHECK-NOT: memref.load %[[DX]]
// CHECK: return

// -----

!A = memref<?xf32, strided<[?], offset: ?>>
#sm90 = #nvvm.target<O = 3, chip = "sm_90">

// Offsets under a factor: x[2 i] and x[2 i + 1] are thread i's alone in any
// launch (no stencil: the stride is 2). Each gets a register, written once at
// exit to dx[2 gid] and dx[2 gid + 1] when in bounds.
func.func @pairs2(%y: !A, %x: !A) attributes {diffgpu.kernel, diffgpu.target = #sm90} {
  %b = "diffgpu.block_id"() {dim = 0 : i64} : () -> index
  %n = "diffgpu.block_dim"() {dim = 0 : i64} : () -> index
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %m = arith.muli %b, %n : index
  %i = arith.addi %m, %t : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %i2 = arith.muli %i, %c2 : index
  %i3 = arith.addi %i2, %c1 : index
  %u = memref.load %x[%i2] : !A
  %v = memref.load %x[%i3] : !A
  %p = arith.mulf %u, %v : f32
  memref.store %p, %y[%i] : !A
  return
}
func.func @vjp2(%y: !A, %dy: !A, %x: !A, %dx: !A) attributes {diffgpu.kernel, diffgpu.target = #sm90} {
  "diffgpu.autodiff"(%y, %dy, %x, %dx) {callee = @pairs2, activity = ["cot", "grad"], diffgpu.target = #sm90, groups = array<i32: 2, 2>, operandSegmentSizes = array<i32: 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (!A, !A, !A, !A) -> ()
  return
}
// CHECK-LABEL: func.func @vjp2
// CHECK-NEXT: call @[[REV2:__dg_rev_pairs2_[0-9a-f]+]]
// CHECK-LABEL: func.func @__dg_rev_pairs2_
// CHECK-SAME: (%[[Y2:[a-z0-9]+]]: memref<{{.+}}>, %[[X2:[a-z0-9]+]]: memref<{{.+}}>, %[[DY2:[a-z0-9]+]]: memref<{{.+}}>, %[[DX2:[a-z0-9]+]]: memref<{{.+}}>)
// CHECK-NEXT: %[[B0:.+]] = memref.alloca() : memref<f32>
// CHECK: %[[B1:.+]] = memref.alloca() : memref<f32>
// CHECK-NOT: %[[DX2]]
// CHECK: memref.load %[[DY2]]
// CHECK-NOT: memref.store {{.+}}, %[[DY2]]
// CHECK-NOT: diffgpu.atomic_add
// CHECK-NOT: %[[DX2]]
// CHECK: %[[G2:.+]] = arith.muli %{{.+}}, %c2{{(_[0-9]+)?}} : index
// CHECK: scf.if
// CHECK-NEXT: %[[W0:.+]] = memref.load %[[B0]][]
// CHECK-NEXT: memref.store %[[W0]], %[[DX2]][%[[G2]]]
// CHECK: %[[G3:.+]] = arith.addi %[[G2]], %{{.+}} : index
// CHECK: scf.if
// CHECK-NEXT: %[[W1:.+]] = memref.load %[[B1]][]
// CHECK-NEXT: memref.store %[[W1]], %[[DX2]][%[[G3]]]
// CHECK-NOT: memref.load %[[DX2]]
// CHECK: return

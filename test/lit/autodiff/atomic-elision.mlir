// Atomic elision (lowering/autodiff/elision.py): in the reverse sweep of a
// whole launch, a shadow update skips diffgpu.atomic_add only when every
// access of every shadowed array uses one thread-unique global-id index;
// dimensions the index does not name are checked at run time.
// RUN: diffgpu-opt %s --split-input-file --diffgpu-autodiff --diffgpu-verify-targets | FileCheck %s

// A thread-unique 3-D index x[gid_z, gid_y, gid_x] in every access of both arrays: the
// shadow update is a plain load/add/store, without any atomic and without a guard.
!A = memref<?xf32, strided<[?], offset: ?>>
!B = memref<?x?xf32, strided<[?, ?], offset: ?>>
!C = memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
!I = memref<?xi32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @k3(%x: !C, %y: !C) attributes {diffgpu.target = #host} {
  %b0 = "diffgpu.block_id"() {dim = 0 : i64} : () -> index
  %n0 = "diffgpu.block_dim"() {dim = 0 : i64} : () -> index
  %t0 = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %m0 = arith.muli %b0, %n0 : index
  %g0 = arith.addi %m0, %t0 : index
  %b1 = "diffgpu.block_id"() {dim = 1 : i64} : () -> index
  %n1 = "diffgpu.block_dim"() {dim = 1 : i64} : () -> index
  %t1 = "diffgpu.thread_id"() {dim = 1 : i64} : () -> index
  %m1 = arith.muli %b1, %n1 : index
  %g1 = arith.addi %m1, %t1 : index
  %b2 = "diffgpu.block_id"() {dim = 2 : i64} : () -> index
  %n2 = "diffgpu.block_dim"() {dim = 2 : i64} : () -> index
  %t2 = "diffgpu.thread_id"() {dim = 2 : i64} : () -> index
  %m2 = arith.muli %b2, %n2 : index
  %g2 = arith.addi %m2, %t2 : index
  %a = memref.load %x[%g2, %g1, %g0] : !C
  %p = arith.mulf %a, %a : f32
  memref.store %p, %y[%g2, %g1, %g0] : !C
  return
}
func.func @__dg_reverse_k3(%x: !C, %dx: !C, %y: !C, %dy: !C) attributes {diffgpu.kernel, diffgpu.target = #host} {
  "diffgpu.autodiff"(%x, %dx, %y, %dy) {callee = @k3, activity = ["dup", "dup"], diffgpu.target = #host, groups = array<i32: 2, 2>, operandSegmentSizes = array<i32: 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (!C, !C, !C, !C) -> ()
  return
}
// CHECK-LABEL: func.func @__dg_rev_k3_
// CHECK-SAME: (%[[X:[a-z0-9]+]]: memref<{{[^%]+}}, %[[Y:[a-z0-9]+]]: memref<{{[^%]+}}, %[[DX:[a-z0-9]+]]: memref<{{[^%]+}}, %[[DY:[a-z0-9]+]]: memref<
// CHECK-NOT: diffgpu.atomic_add
// CHECK-NOT: diffgpu.grid_dim
// CHECK: %[[OLD:.+]] = memref.load %[[DX]][%[[I2:[a-z0-9]+]], %[[I1:[a-z0-9]+]], %[[I0:[a-z0-9]+]]]
// CHECK-NEXT: %[[NEW:.+]] = arith.addf %[[OLD]], %{{.+}} : f32
// CHECK-NEXT: memref.store %[[NEW]], %[[DX]][%[[I2]], %[[I1]], %[[I0]]]
// CHECK-NOT: diffgpu.atomic_add
// CHECK: return

// -----

// x[gid] (through index_cast to i64 and back, as the frontend emits it): the plain
// update runs when dimensions 1 and 2 have one thread and one block; a launch with
// more (where threads share gid_x) takes the atomic.
!A = memref<?xf32, strided<[?], offset: ?>>
!B = memref<?x?xf32, strided<[?, ?], offset: ?>>
!C = memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
!I = memref<?xi32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @k1(%x: !A, %y: !A) attributes {diffgpu.target = #host} {
  %b0 = "diffgpu.block_id"() {dim = 0 : i64} : () -> index
  %n0 = "diffgpu.block_dim"() {dim = 0 : i64} : () -> index
  %t0 = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %m0 = arith.muli %b0, %n0 : index
  %g0 = arith.addi %m0, %t0 : index
  %g64 = arith.index_cast %g0 : index to i64
  %gi = arith.index_cast %g64 : i64 to index
  %a = memref.load %x[%gi] : !A
  %p = arith.mulf %a, %a : f32
  memref.store %p, %y[%g0] : !A
  return
}
func.func @__dg_reverse_k1(%x: !A, %dx: !A, %y: !A, %dy: !A) attributes {diffgpu.kernel, diffgpu.target = #host} {
  "diffgpu.autodiff"(%x, %dx, %y, %dy) {callee = @k1, activity = ["dup", "dup"], diffgpu.target = #host, groups = array<i32: 2, 2>, operandSegmentSizes = array<i32: 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (!A, !A, !A, !A) -> ()
  return
}
// CHECK-LABEL: func.func @__dg_rev_k1_
// CHECK-SAME: (%[[X:[a-z0-9]+]]: memref<{{[^%]+}}, %[[Y:[a-z0-9]+]]: memref<{{[^%]+}}, %[[DX:[a-z0-9]+]]: memref<{{[^%]+}}, %[[DY:[a-z0-9]+]]: memref<
// CHECK: %[[ONE:.+]] = arith.constant 1 : index
// CHECK-NEXT: %[[BD1:.+]] = "diffgpu.block_dim"() {dim = 1 : i64}
// CHECK-NEXT: %[[C1:.+]] = arith.cmpi eq, %[[BD1]], %[[ONE]]
// CHECK-NEXT: %[[GD1:.+]] = "diffgpu.grid_dim"() {dim = 1 : i64}
// CHECK-NEXT: %[[C2:.+]] = arith.cmpi eq, %[[GD1]], %[[ONE]]
// CHECK-NEXT: %[[A1:.+]] = arith.andi %[[C1]], %[[C2]]
// CHECK-NEXT: %[[BD2:.+]] = "diffgpu.block_dim"() {dim = 2 : i64}
// CHECK-NEXT: %[[C3:.+]] = arith.cmpi eq, %[[BD2]], %[[ONE]]
// CHECK-NEXT: %[[A2:.+]] = arith.andi %[[A1]], %[[C3]]
// CHECK-NEXT: %[[GD2:.+]] = "diffgpu.grid_dim"() {dim = 2 : i64}
// CHECK-NEXT: %[[C4:.+]] = arith.cmpi eq, %[[GD2]], %[[ONE]]
// CHECK-NEXT: %[[COND:.+]] = arith.andi %[[A2]], %[[C4]]
// CHECK-NEXT: scf.if %[[COND]] {
// CHECK-NEXT: %[[OLD:.+]] = memref.load %[[DX]][%[[I:[a-z0-9]+]]]
// CHECK-NEXT: %[[NEW:.+]] = arith.addf %[[OLD]], %[[D:.+]] : f32
// CHECK-NEXT: memref.store %[[NEW]], %[[DX]][%[[I]]]
// CHECK-NEXT: } else {
// CHECK-NEXT: "diffgpu.atomic_add"(%[[DX]], %[[D]], %[[I]])
// CHECK-NEXT: }

// -----

// x[gid_y, gid_x] with a 2-D array: the guard checks dimension 2 only.
!A = memref<?xf32, strided<[?], offset: ?>>
!B = memref<?x?xf32, strided<[?, ?], offset: ?>>
!C = memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
!I = memref<?xi32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @k2(%x: !B, %y: !B) attributes {diffgpu.target = #host} {
  %b0 = "diffgpu.block_id"() {dim = 0 : i64} : () -> index
  %n0 = "diffgpu.block_dim"() {dim = 0 : i64} : () -> index
  %t0 = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %m0 = arith.muli %b0, %n0 : index
  %g0 = arith.addi %m0, %t0 : index
  %b1 = "diffgpu.block_id"() {dim = 1 : i64} : () -> index
  %n1 = "diffgpu.block_dim"() {dim = 1 : i64} : () -> index
  %t1 = "diffgpu.thread_id"() {dim = 1 : i64} : () -> index
  %m1 = arith.muli %b1, %n1 : index
  %g1 = arith.addi %m1, %t1 : index
  %a = memref.load %x[%g1, %g0] : !B
  %p = arith.mulf %a, %a : f32
  memref.store %p, %y[%g1, %g0] : !B
  return
}
func.func @__dg_reverse_k2(%x: !B, %dx: !B, %y: !B, %dy: !B) attributes {diffgpu.kernel, diffgpu.target = #host} {
  "diffgpu.autodiff"(%x, %dx, %y, %dy) {callee = @k2, activity = ["dup", "dup"], diffgpu.target = #host, groups = array<i32: 2, 2>, operandSegmentSizes = array<i32: 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (!B, !B, !B, !B) -> ()
  return
}
// CHECK-LABEL: func.func @__dg_rev_k2_
// CHECK-NOT: "diffgpu.grid_dim"() {dim = 1
// CHECK: "diffgpu.block_dim"() {dim = 2 : i64}
// CHECK: "diffgpu.grid_dim"() {dim = 2 : i64}
// CHECK: scf.if
// CHECK-NEXT: memref.load
// CHECK-NEXT: arith.addf
// CHECK-NEXT: memref.store
// CHECK-NEXT: } else {
// CHECK-NEXT: "diffgpu.atomic_add"

// -----

// Gather through an index array: x[idx[gid]] may repeat elements: atomic kept.
!A = memref<?xf32, strided<[?], offset: ?>>
!B = memref<?x?xf32, strided<[?, ?], offset: ?>>
!C = memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
!I = memref<?xi32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @gather(%x: !A, %y: !A, %idx: !I) attributes {diffgpu.target = #host} {
  %b0 = "diffgpu.block_id"() {dim = 0 : i64} : () -> index
  %n0 = "diffgpu.block_dim"() {dim = 0 : i64} : () -> index
  %t0 = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %m0 = arith.muli %b0, %n0 : index
  %g0 = arith.addi %m0, %t0 : index
  %j32 = memref.load %idx[%g0] : !I
  %j = arith.index_cast %j32 : i32 to index
  %a = memref.load %x[%j] : !A
  %p = arith.mulf %a, %a : f32
  memref.store %p, %y[%g0] : !A
  return
}
func.func @__dg_reverse_gather(%x: !A, %dx: !A, %y: !A, %dy: !A, %idx: !I) attributes {diffgpu.kernel, diffgpu.target = #host} {
  "diffgpu.autodiff"(%x, %dx, %y, %dy, %idx) {callee = @gather, activity = ["dup", "dup", "const"], diffgpu.target = #host, groups = array<i32: 2, 2, 1>, operandSegmentSizes = array<i32: 4, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (!A, !A, !A, !A, !I) -> ()
  return
}
// CHECK-LABEL: func.func @__dg_rev_gather_
// CHECK-SAME: (%[[X:[a-z0-9]+]]: memref<{{[^%]+}}, %[[Y:[a-z0-9]+]]: memref<{{[^%]+}}, %{{[a-z0-9]+}}: memref<{{[^%]+}}, %[[DX:[a-z0-9]+]]: memref<{{[^%]+}}, %[[DY:[a-z0-9]+]]: memref<
// CHECK-NOT: diffgpu.grid_dim
// CHECK-NOT: memref.store {{.+}}, %[[DX]]
// CHECK: "diffgpu.atomic_add"(%[[DX]],
// CHECK-NOT: diffgpu.grid_dim
// CHECK-NOT: memref.store {{.+}}, %[[DX]]
// CHECK: return

// -----

// A constant index x[0]: every thread hits it: atomic kept.
!A = memref<?xf32, strided<[?], offset: ?>>
!B = memref<?x?xf32, strided<[?, ?], offset: ?>>
!C = memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
!I = memref<?xi32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @constant(%x: !A, %y: !A) attributes {diffgpu.target = #host} {
  %b0 = "diffgpu.block_id"() {dim = 0 : i64} : () -> index
  %n0 = "diffgpu.block_dim"() {dim = 0 : i64} : () -> index
  %t0 = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %m0 = arith.muli %b0, %n0 : index
  %g0 = arith.addi %m0, %t0 : index
  %c0 = arith.constant 0 : index
  %a = memref.load %x[%c0] : !A
  %p = arith.mulf %a, %a : f32
  memref.store %p, %y[%g0] : !A
  return
}
func.func @__dg_reverse_constant(%x: !A, %dx: !A, %y: !A, %dy: !A) attributes {diffgpu.kernel, diffgpu.target = #host} {
  "diffgpu.autodiff"(%x, %dx, %y, %dy) {callee = @constant, activity = ["dup", "dup"], diffgpu.target = #host, groups = array<i32: 2, 2>, operandSegmentSizes = array<i32: 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (!A, !A, !A, !A) -> ()
  return
}
// CHECK-LABEL: func.func @__dg_rev_constant_
// CHECK-SAME: (%[[X:[a-z0-9]+]]: memref<{{[^%]+}}, %[[Y:[a-z0-9]+]]: memref<{{[^%]+}}, %[[DX:[a-z0-9]+]]: memref<{{[^%]+}}, %[[DY:[a-z0-9]+]]: memref<
// CHECK-NOT: diffgpu.grid_dim
// CHECK-NOT: memref.store {{.+}}, %[[DX]]
// CHECK: "diffgpu.atomic_add"(%[[DX]],
// CHECK-NOT: diffgpu.grid_dim
// CHECK-NOT: memref.store {{.+}}, %[[DX]]
// CHECK: return

// -----

// thread_id alone: threads of different blocks share it: atomic kept.
!A = memref<?xf32, strided<[?], offset: ?>>
!B = memref<?x?xf32, strided<[?, ?], offset: ?>>
!C = memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
!I = memref<?xi32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @tidonly(%x: !A, %y: !A) attributes {diffgpu.target = #host} {
  %b0 = "diffgpu.block_id"() {dim = 0 : i64} : () -> index
  %n0 = "diffgpu.block_dim"() {dim = 0 : i64} : () -> index
  %t0 = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %m0 = arith.muli %b0, %n0 : index
  %g0 = arith.addi %m0, %t0 : index
  %a = memref.load %x[%t0] : !A
  %p = arith.mulf %a, %a : f32
  memref.store %p, %y[%g0] : !A
  return
}
func.func @__dg_reverse_tidonly(%x: !A, %dx: !A, %y: !A, %dy: !A) attributes {diffgpu.kernel, diffgpu.target = #host} {
  "diffgpu.autodiff"(%x, %dx, %y, %dy) {callee = @tidonly, activity = ["dup", "dup"], diffgpu.target = #host, groups = array<i32: 2, 2>, operandSegmentSizes = array<i32: 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (!A, !A, !A, !A) -> ()
  return
}
// CHECK-LABEL: func.func @__dg_rev_tidonly_
// CHECK-SAME: (%[[X:[a-z0-9]+]]: memref<{{[^%]+}}, %[[Y:[a-z0-9]+]]: memref<{{[^%]+}}, %[[DX:[a-z0-9]+]]: memref<{{[^%]+}}, %[[DY:[a-z0-9]+]]: memref<
// CHECK-NOT: diffgpu.grid_dim
// CHECK-NOT: memref.store {{.+}}, %[[DX]]
// CHECK: "diffgpu.atomic_add"(%[[DX]],
// CHECK-NOT: diffgpu.grid_dim
// CHECK-NOT: memref.store {{.+}}, %[[DX]]
// CHECK: return

// -----

// x[gid // 2]: two threads per element: atomic kept.
!A = memref<?xf32, strided<[?], offset: ?>>
!B = memref<?x?xf32, strided<[?, ?], offset: ?>>
!C = memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
!I = memref<?xi32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @half(%x: !A, %y: !A) attributes {diffgpu.target = #host} {
  %b0 = "diffgpu.block_id"() {dim = 0 : i64} : () -> index
  %n0 = "diffgpu.block_dim"() {dim = 0 : i64} : () -> index
  %t0 = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %m0 = arith.muli %b0, %n0 : index
  %g0 = arith.addi %m0, %t0 : index
  %c2 = arith.constant 2 : index
  %h = arith.divui %g0, %c2 : index
  %a = memref.load %x[%h] : !A
  %p = arith.mulf %a, %a : f32
  memref.store %p, %y[%g0] : !A
  return
}
func.func @__dg_reverse_half(%x: !A, %dx: !A, %y: !A, %dy: !A) attributes {diffgpu.kernel, diffgpu.target = #host} {
  "diffgpu.autodiff"(%x, %dx, %y, %dy) {callee = @half, activity = ["dup", "dup"], diffgpu.target = #host, groups = array<i32: 2, 2>, operandSegmentSizes = array<i32: 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (!A, !A, !A, !A) -> ()
  return
}
// CHECK-LABEL: func.func @__dg_rev_half_
// CHECK-SAME: (%[[X:[a-z0-9]+]]: memref<{{[^%]+}}, %[[Y:[a-z0-9]+]]: memref<{{[^%]+}}, %[[DX:[a-z0-9]+]]: memref<{{[^%]+}}, %[[DY:[a-z0-9]+]]: memref<
// CHECK-NOT: diffgpu.grid_dim
// CHECK-NOT: memref.store {{.+}}, %[[DX]]
// CHECK: "diffgpu.atomic_add"(%[[DX]],
// CHECK-NOT: diffgpu.grid_dim
// CHECK-NOT: memref.store {{.+}}, %[[DX]]
// CHECK: return

// -----

// block_id * block_dim + thread_id of DIFFERENT dimensions is not a global id: atomic kept.
!A = memref<?xf32, strided<[?], offset: ?>>
!B = memref<?x?xf32, strided<[?, ?], offset: ?>>
!C = memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
!I = memref<?xi32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @mixed(%x: !A, %y: !A) attributes {diffgpu.target = #host} {
  %b0 = "diffgpu.block_id"() {dim = 0 : i64} : () -> index
  %n0 = "diffgpu.block_dim"() {dim = 0 : i64} : () -> index
  %t0 = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %m0 = arith.muli %b0, %n0 : index
  %g0 = arith.addi %m0, %t0 : index
  %b1 = "diffgpu.block_id"() {dim = 1 : i64} : () -> index
  %n1 = "diffgpu.block_dim"() {dim = 1 : i64} : () -> index
  %t1 = "diffgpu.thread_id"() {dim = 1 : i64} : () -> index
  %m1 = arith.muli %b1, %n1 : index
  %g1 = arith.addi %m1, %t1 : index
  %mx = arith.muli %b1, %n1 : index
  %gm = arith.addi %mx, %t0 : index
  %a = memref.load %x[%gm] : !A
  %p = arith.mulf %a, %a : f32
  memref.store %p, %y[%g0] : !A
  return
}
func.func @__dg_reverse_mixed(%x: !A, %dx: !A, %y: !A, %dy: !A) attributes {diffgpu.kernel, diffgpu.target = #host} {
  "diffgpu.autodiff"(%x, %dx, %y, %dy) {callee = @mixed, activity = ["dup", "dup"], diffgpu.target = #host, groups = array<i32: 2, 2>, operandSegmentSizes = array<i32: 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (!A, !A, !A, !A) -> ()
  return
}
// CHECK-LABEL: func.func @__dg_rev_mixed_
// CHECK-SAME: (%[[X:[a-z0-9]+]]: memref<{{[^%]+}}, %[[Y:[a-z0-9]+]]: memref<{{[^%]+}}, %[[DX:[a-z0-9]+]]: memref<{{[^%]+}}, %[[DY:[a-z0-9]+]]: memref<
// CHECK-NOT: diffgpu.grid_dim
// CHECK-NOT: memref.store {{.+}}, %[[DX]]
// CHECK: "diffgpu.atomic_add"(%[[DX]],
// CHECK-NOT: diffgpu.grid_dim
// CHECK-NOT: memref.store {{.+}}, %[[DX]]
// CHECK: return

// -----

// A stencil: x read at gid and gid + 1, so thread i - 1 also updates dx[i]: every
// update of dx keeps its atomic, the one at gid included.
!A = memref<?xf32, strided<[?], offset: ?>>
!B = memref<?x?xf32, strided<[?, ?], offset: ?>>
!C = memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
!I = memref<?xi32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @stencil(%x: !A, %y: !A) attributes {diffgpu.target = #host} {
  %b0 = "diffgpu.block_id"() {dim = 0 : i64} : () -> index
  %n0 = "diffgpu.block_dim"() {dim = 0 : i64} : () -> index
  %t0 = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %m0 = arith.muli %b0, %n0 : index
  %g0 = arith.addi %m0, %t0 : index
  %c1 = arith.constant 1 : index
  %g1 = arith.addi %g0, %c1 : index
  %a = memref.load %x[%g0] : !A
  %b = memref.load %x[%g1] : !A
  %p = arith.addf %a, %b : f32
  memref.store %p, %y[%g0] : !A
  return
}
func.func @__dg_reverse_stencil(%x: !A, %dx: !A, %y: !A, %dy: !A) attributes {diffgpu.kernel, diffgpu.target = #host} {
  "diffgpu.autodiff"(%x, %dx, %y, %dy) {callee = @stencil, activity = ["dup", "dup"], diffgpu.target = #host, groups = array<i32: 2, 2>, operandSegmentSizes = array<i32: 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (!A, !A, !A, !A) -> ()
  return
}
// CHECK-LABEL: func.func @__dg_rev_stencil_
// CHECK-SAME: (%[[X:[a-z0-9]+]]: memref<{{[^%]+}}, %[[Y:[a-z0-9]+]]: memref<{{[^%]+}}, %[[DX:[a-z0-9]+]]: memref<{{[^%]+}}, %[[DY:[a-z0-9]+]]: memref<
// CHECK-NOT: diffgpu.grid_dim
// CHECK: "diffgpu.atomic_add"(%[[DX]], %{{.+}}, %[[G1:.+]])
// CHECK-NEXT: "diffgpu.atomic_add"(%[[DX]], %{{.+}}, %[[G0:.+]])
// CHECK-NOT: diffgpu.grid_dim
// CHECK: return

// -----

// Two arrays each accessed at one index, x at gid and y at gid + 1: shadows of
// distinct arguments may overlap, so neither update is elided.
!A = memref<?xf32, strided<[?], offset: ?>>
!B = memref<?x?xf32, strided<[?, ?], offset: ?>>
!C = memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
!I = memref<?xi32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @alias(%x: !A, %y: !A) attributes {diffgpu.target = #host} {
  %b0 = "diffgpu.block_id"() {dim = 0 : i64} : () -> index
  %n0 = "diffgpu.block_dim"() {dim = 0 : i64} : () -> index
  %t0 = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %m0 = arith.muli %b0, %n0 : index
  %g0 = arith.addi %m0, %t0 : index
  %c1 = arith.constant 1 : index
  %g1 = arith.addi %g0, %c1 : index
  %a = memref.load %x[%g0] : !A
  %b = memref.load %y[%g1] : !A
  %p = arith.addf %a, %b : f32
  memref.store %p, %y[%g1] : !A
  return
}
func.func @__dg_reverse_alias(%x: !A, %dx: !A, %y: !A, %dy: !A) attributes {diffgpu.kernel, diffgpu.target = #host} {
  "diffgpu.autodiff"(%x, %dx, %y, %dy) {callee = @alias, activity = ["dup", "dup"], diffgpu.target = #host, groups = array<i32: 2, 2>, operandSegmentSizes = array<i32: 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (!A, !A, !A, !A) -> ()
  return
}
// CHECK-LABEL: func.func @__dg_rev_alias_
// CHECK-NOT: diffgpu.grid_dim
// CHECK: "diffgpu.atomic_add"
// CHECK-NOT: diffgpu.grid_dim
// CHECK: return

// -----

// Two arrays read at gid (x[i] * w[i]): their shadows could overlap at an offset
// (dw = dx[1:]), so with two accumulating shadows both keep their atomics.
!A = memref<?xf32, strided<[?], offset: ?>>
!B = memref<?x?xf32, strided<[?, ?], offset: ?>>
!C = memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
!I = memref<?xi32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @twoin(%x: !A, %w: !A, %y: !A) attributes {diffgpu.target = #host} {
  %b0 = "diffgpu.block_id"() {dim = 0 : i64} : () -> index
  %n0 = "diffgpu.block_dim"() {dim = 0 : i64} : () -> index
  %t0 = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %m0 = arith.muli %b0, %n0 : index
  %g0 = arith.addi %m0, %t0 : index
  %a = memref.load %x[%g0] : !A
  %b = memref.load %w[%g0] : !A
  %p = arith.mulf %a, %b : f32
  memref.store %p, %y[%g0] : !A
  return
}
func.func @__dg_reverse_twoin(%x: !A, %dx: !A, %w: !A, %dw: !A, %y: !A, %dy: !A) attributes {diffgpu.kernel, diffgpu.target = #host} {
  "diffgpu.autodiff"(%x, %dx, %w, %dw, %y, %dy) {callee = @twoin, activity = ["dup", "dup", "dup"], diffgpu.target = #host, groups = array<i32: 2, 2, 2>, operandSegmentSizes = array<i32: 6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (!A, !A, !A, !A, !A, !A) -> ()
  return
}
// CHECK-LABEL: func.func @__dg_rev_twoin_
// CHECK-NOT: diffgpu.grid_dim
// CHECK: "diffgpu.atomic_add"
// CHECK: "diffgpu.atomic_add"
// CHECK-NOT: diffgpu.grid_dim
// CHECK: return

// -----

// An index from a loop variable: x[i] for i in range(n) in every thread: atomic kept.
!A = memref<?xf32, strided<[?], offset: ?>>
!B = memref<?x?xf32, strided<[?, ?], offset: ?>>
!C = memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
!I = memref<?xi32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @loop(%x: !A, %y: !A) attributes {diffgpu.target = #host} {
  %b0 = "diffgpu.block_id"() {dim = 0 : i64} : () -> index
  %n0 = "diffgpu.block_dim"() {dim = 0 : i64} : () -> index
  %t0 = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %m0 = arith.muli %b0, %n0 : index
  %g0 = arith.addi %m0, %t0 : index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f32
  %n = memref.dim %x, %c0 : !A
  %s = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %z) -> (f32) {
    %a = memref.load %x[%i] : !A
    %q = arith.addf %acc, %a : f32
    scf.yield %q : f32
  }
  memref.store %s, %y[%g0] : !A
  return
}
func.func @__dg_reverse_loop(%x: !A, %dx: !A, %y: !A, %dy: !A) attributes {diffgpu.kernel, diffgpu.target = #host} {
  "diffgpu.autodiff"(%x, %dx, %y, %dy) {callee = @loop, activity = ["dup", "dup"], diffgpu.target = #host, groups = array<i32: 2, 2>, operandSegmentSizes = array<i32: 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (!A, !A, !A, !A) -> ()
  return
}
// CHECK-LABEL: func.func @__dg_rev_loop_
// CHECK-SAME: (%[[X:[a-z0-9]+]]: memref<{{[^%]+}}, %[[Y:[a-z0-9]+]]: memref<{{[^%]+}}, %[[DX:[a-z0-9]+]]: memref<{{[^%]+}}, %[[DY:[a-z0-9]+]]: memref<
// CHECK-NOT: diffgpu.grid_dim
// CHECK: "diffgpu.atomic_add"(%[[DX]],
// CHECK-NOT: diffgpu.grid_dim
// CHECK: return

// -----

// x[gid_x, 0] with a 2-D array: threads that differ in y share the element, so the
// plain update only runs under the guard that dimensions 1 and 2 are trivial.
!A = memref<?xf32, strided<[?], offset: ?>>
!B = memref<?x?xf32, strided<[?, ?], offset: ?>>
!C = memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
!I = memref<?xi32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @row(%x: !B, %y: !B) attributes {diffgpu.target = #host} {
  %b0 = "diffgpu.block_id"() {dim = 0 : i64} : () -> index
  %n0 = "diffgpu.block_dim"() {dim = 0 : i64} : () -> index
  %t0 = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %m0 = arith.muli %b0, %n0 : index
  %g0 = arith.addi %m0, %t0 : index
  %c0 = arith.constant 0 : index
  %a = memref.load %x[%g0, %c0] : !B
  %p = arith.mulf %a, %a : f32
  memref.store %p, %y[%g0, %c0] : !B
  return
}
func.func @__dg_reverse_row(%x: !B, %dx: !B, %y: !B, %dy: !B) attributes {diffgpu.kernel, diffgpu.target = #host} {
  "diffgpu.autodiff"(%x, %dx, %y, %dy) {callee = @row, activity = ["dup", "dup"], diffgpu.target = #host, groups = array<i32: 2, 2>, operandSegmentSizes = array<i32: 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (!B, !B, !B, !B) -> ()
  return
}
// CHECK-LABEL: func.func @__dg_rev_row_
// CHECK-SAME: (%[[X:[a-z0-9]+]]: memref<{{[^%]+}}, %[[Y:[a-z0-9]+]]: memref<{{[^%]+}}, %[[DX:[a-z0-9]+]]: memref<{{[^%]+}}, %[[DY:[a-z0-9]+]]: memref<
// CHECK: "diffgpu.grid_dim"() {dim = 1 : i64}
// CHECK: "diffgpu.grid_dim"() {dim = 2 : i64}
// CHECK: scf.if
// CHECK: memref.store {{.+}}, %[[DX]]
// CHECK: } else {
// CHECK-NEXT: "diffgpu.atomic_add"(%[[DX]],

// -----

// Not a whole launch: the kernel asking for the derivative also adds into dx
// itself, concurrently with other threads' reverse sweeps: atomic kept.
!A = memref<?xf32, strided<[?], offset: ?>>
!B = memref<?x?xf32, strided<[?, ?], offset: ?>>
!C = memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
!I = memref<?xi32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @busy(%x: !A, %y: !A) attributes {diffgpu.target = #host} {
  %b0 = "diffgpu.block_id"() {dim = 0 : i64} : () -> index
  %n0 = "diffgpu.block_dim"() {dim = 0 : i64} : () -> index
  %t0 = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %m0 = arith.muli %b0, %n0 : index
  %g0 = arith.addi %m0, %t0 : index
  %a = memref.load %x[%g0] : !A
  %p = arith.mulf %a, %a : f32
  memref.store %p, %y[%g0] : !A
  return
}
func.func @__dg_reverse_busy(%x: !A, %dx: !A, %y: !A, %dy: !A) attributes {diffgpu.kernel, diffgpu.target = #host} {
  "diffgpu.autodiff"(%x, %dx, %y, %dy) {callee = @busy, activity = ["dup", "dup"], diffgpu.target = #host, groups = array<i32: 2, 2>, operandSegmentSizes = array<i32: 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (!A, !A, !A, !A) -> ()
  %c0 = arith.constant 0 : index
  %one = arith.constant 1.0 : f32
  %o = "diffgpu.atomic_add"(%dx, %one, %c0) : (!A, f32, index) -> f32
  return
}
// CHECK-LABEL: func.func @__dg_rev_busy_
// CHECK-SAME: (%[[X:[a-z0-9]+]]: memref<{{[^%]+}}, %[[Y:[a-z0-9]+]]: memref<{{[^%]+}}, %[[DX:[a-z0-9]+]]: memref<{{[^%]+}}, %[[DY:[a-z0-9]+]]: memref<
// CHECK-NOT: diffgpu.grid_dim
// CHECK-NOT: memref.store {{.+}}, %[[DX]]
// CHECK: "diffgpu.atomic_add"(%[[DX]],
// CHECK-NOT: diffgpu.grid_dim
// CHECK-NOT: memref.store {{.+}}, %[[DX]]
// CHECK: return

// -----

// Not a whole launch: the op sits in a device function, not a kernel: atomic kept.
!A = memref<?xf32, strided<[?], offset: ?>>
!B = memref<?x?xf32, strided<[?, ?], offset: ?>>
!C = memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
!I = memref<?xi32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @devfn(%x: !A, %y: !A) attributes {diffgpu.target = #host} {
  %b0 = "diffgpu.block_id"() {dim = 0 : i64} : () -> index
  %n0 = "diffgpu.block_dim"() {dim = 0 : i64} : () -> index
  %t0 = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %m0 = arith.muli %b0, %n0 : index
  %g0 = arith.addi %m0, %t0 : index
  %a = memref.load %x[%g0] : !A
  %p = arith.mulf %a, %a : f32
  memref.store %p, %y[%g0] : !A
  return
}
func.func @__dg_reverse_devfn(%x: !A, %dx: !A, %y: !A, %dy: !A) attributes {diffgpu.target = #host} {
  "diffgpu.autodiff"(%x, %dx, %y, %dy) {callee = @devfn, activity = ["dup", "dup"], diffgpu.target = #host, groups = array<i32: 2, 2>, operandSegmentSizes = array<i32: 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (!A, !A, !A, !A) -> ()
  return
}
// CHECK-LABEL: func.func @__dg_rev_devfn_
// CHECK-SAME: (%[[X:[a-z0-9]+]]: memref<{{[^%]+}}, %[[Y:[a-z0-9]+]]: memref<{{[^%]+}}, %[[DX:[a-z0-9]+]]: memref<{{[^%]+}}, %[[DY:[a-z0-9]+]]: memref<
// CHECK-NOT: diffgpu.grid_dim
// CHECK-NOT: memref.store {{.+}}, %[[DX]]
// CHECK: "diffgpu.atomic_add"(%[[DX]],
// CHECK-NOT: diffgpu.grid_dim
// CHECK-NOT: memref.store {{.+}}, %[[DX]]
// CHECK: return

// -----

// The differentiated function hands x to a call (its accesses are unknown here):
// atomic kept.
!A = memref<?xf32, strided<[?], offset: ?>>
!B = memref<?x?xf32, strided<[?, ?], offset: ?>>
!C = memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
!I = memref<?xi32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @use(%v: !A) -> f32 attributes {diffgpu.target = #host} {
  %c0 = arith.constant 0 : index
  %r = memref.load %v[%c0] : !A
  return %r : f32
}
func.func @callee(%x: !A, %y: !A) attributes {diffgpu.target = #host} {
  %b0 = "diffgpu.block_id"() {dim = 0 : i64} : () -> index
  %n0 = "diffgpu.block_dim"() {dim = 0 : i64} : () -> index
  %t0 = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %m0 = arith.muli %b0, %n0 : index
  %g0 = arith.addi %m0, %t0 : index
  %a = memref.load %x[%g0] : !A
  %p = arith.mulf %a, %a : f32
  memref.store %p, %y[%g0] : !A
  %r = func.call @use(%x) : (!A) -> f32
  return
}
func.func @__dg_reverse_callee(%x: !A, %dx: !A, %y: !A, %dy: !A) attributes {diffgpu.kernel, diffgpu.target = #host} {
  "diffgpu.autodiff"(%x, %dx, %y, %dy) {callee = @callee, activity = ["dup", "dup"], diffgpu.target = #host, groups = array<i32: 2, 2>, operandSegmentSizes = array<i32: 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (!A, !A, !A, !A) -> ()
  return
}
// CHECK-LABEL: func.func @__dg_rev_callee_
// CHECK-SAME: (%[[X:[a-z0-9]+]]: memref<{{[^%]+}}, %[[Y:[a-z0-9]+]]: memref<{{[^%]+}}, %[[DX:[a-z0-9]+]]: memref<{{[^%]+}}, %[[DY:[a-z0-9]+]]: memref<
// CHECK-NOT: diffgpu.grid_dim
// CHECK-NOT: memref.store {{.+}}, %[[DX]]
// CHECK: "diffgpu.atomic_add"(%[[DX]],
// CHECK-NOT: diffgpu.grid_dim
// CHECK-NOT: memref.store {{.+}}, %[[DX]]
// CHECK: return

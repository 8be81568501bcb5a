// diffgpu-combine-adds, its last step (lowering/reduce/owned_adds.py): adds into
// an add-only array at elements only the adding thread can reach become plain
// read-modify-writes, under a launch-uniform test of the dimensions the index
// does not name (the atomic kept in the other branch). Cases that must keep
// their atomics come after.
// RUN: diffgpu-opt %s --split-input-file --diffgpu-combine-adds | FileCheck %s

// Unrolled rows: dx[block_id * 2 + 1, thread_id] (the block's row, the thread's
// column). Dimensions 1 and 2 are not named: one thread and one block there.
!M = memref<?x?xf32, strided<[?, ?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @rows(%dx: !M, %v: f32) attributes {diffgpu.kernel, diffgpu.noalias, diffgpu.target = #host} {
  %b = "diffgpu.block_id"() {dim = 0 : i64} : () -> index
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %c2 = arith.constant 2 : index
  %c1 = arith.constant 1 : index
  %m = arith.muli %b, %c2 : index
  %r = arith.addi %m, %c1 : index
  %o = "diffgpu.atomic_add"(%dx, %v, %r, %t) : (!M, f32, index, index) -> f32
  return
}
// CHECK-LABEL: func.func @rows
// CHECK-SAME: (%[[DX:[a-z0-9]+]]: memref<{{[^%]+}}, %[[V:[a-z0-9]+]]: f32)
// CHECK: "diffgpu.block_dim"() {dim = 1 : i64}
// CHECK: "diffgpu.grid_dim"() {dim = 2 : i64}
// CHECK: %[[OK:.+]] = arith.andi
// CHECK-NEXT: "diffgpu.block_id"() {dim = 0 : i64}
// CHECK: %[[R:.+]] = arith.addi
// CHECK: scf.if %[[OK]] {
// CHECK-NEXT: %[[OLD:.+]] = memref.load %[[DX]][%[[R]], %{{.+}}]
// CHECK-NEXT: %[[NEW:.+]] = arith.addf %[[OLD]], %[[V]] : f32
// CHECK-NEXT: memref.store %[[NEW]], %[[DX]][%[[R]], %{{.+}}]
// CHECK: } else {
// CHECK-NEXT: "diffgpu.atomic_add"(%[[DX]], %[[V]], %[[R]], %{{.+}})
// CHECK: return

// -----

// A grid-stride row loop over dimension 1 (r = block_id(1) + i * grid_dim(1))
// and a global-id column: the test is block_dim(1) == 1 and dimension 2's.
!M = memref<?x?xf32, strided<[?, ?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @stride(%dx: !M, %v: f32, %n: index) attributes {diffgpu.kernel, diffgpu.noalias, diffgpu.target = #host} {
  %b0 = "diffgpu.block_id"() {dim = 0 : i64} : () -> index
  %d0 = "diffgpu.block_dim"() {dim = 0 : i64} : () -> index
  %t0 = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %m0 = arith.muli %b0, %d0 : index
  %j = arith.addi %m0, %t0 : index
  %b1 = "diffgpu.block_id"() {dim = 1 : i64} : () -> index
  %g1 = "diffgpu.grid_dim"() {dim = 1 : i64} : () -> index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    %s = arith.muli %i, %g1 : index
    %r = arith.addi %b1, %s : index
    %o = "diffgpu.atomic_add"(%dx, %v, %r, %j) : (!M, f32, index, index) -> f32
  }
  return
}
// CHECK-LABEL: func.func @stride
// CHECK: "diffgpu.block_dim"() {dim = 1 : i64}
// CHECK-NOT: "diffgpu.grid_dim"() {dim = 0 : i64}
// CHECK: scf.for
// CHECK: scf.if
// CHECK-NEXT: memref.load
// CHECK-NEXT: arith.addf
// CHECK-NEXT: memref.store
// CHECK: } else {
// CHECK-NEXT: "diffgpu.atomic_add"

// -----

// Kept: dg[thread_id] (every block adds into the same elements), and dy[r, t]
// whose adds disagree on their index kinds (a constant row in one of them).
!A = memref<?xf32, strided<[?], offset: ?>>
!M = memref<?x?xf32, strided<[?, ?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @shared(%dg: !A, %dy: !M, %v: f32) attributes {diffgpu.kernel, diffgpu.noalias, diffgpu.target = #host} {
  %b = "diffgpu.block_id"() {dim = 0 : i64} : () -> index
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %c0 = arith.constant 0 : index
  %o = "diffgpu.atomic_add"(%dg, %v, %t) : (!A, f32, index) -> f32
  %o2 = "diffgpu.atomic_add"(%dy, %v, %b, %t) : (!M, f32, index, index) -> f32
  %o3 = "diffgpu.atomic_add"(%dy, %v, %c0, %t) : (!M, f32, index, index) -> f32
  return
}
// CHECK-LABEL: func.func @shared
// CHECK-NOT: memref.store
// CHECK-NOT: memref.load
// CHECK: "diffgpu.atomic_add"
// CHECK: "diffgpu.atomic_add"
// CHECK: "diffgpu.atomic_add"
// CHECK: return

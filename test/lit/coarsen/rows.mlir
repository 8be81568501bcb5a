// diffgpu-coarsen-rows (lowering/coarsen/rows.py) on derivative kernels marked
// `diffgpu.coarsen_rows = array<i64: R, G % R>`: the body runs in an scf.for
// over R rows (the last block's count G % R when non-zero), gid(1) becomes
// block_id(1) * R + k, slots are hoisted, and the mark is dropped. A kernel
// reading grid_dim(1), or one without an add at an index independent of
// gid(1), keeps its body (the mark dropped too).
// RUN: diffgpu-opt %s --split-input-file --diffgpu-coarsen-rows | FileCheck %s

!M = memref<?x?xf32, strided<[?, ?], offset: ?>>
!V = memref<?xf32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @rows(%x: !M, %dy: !M, %dx: !M, %g: !V, %dg: !V) attributes {diffgpu.kernel, diffgpu.target = #host, diffgpu.noalias, diffgpu.coarsen_rows = array<i64: 16, 3>} {
  %slot = memref.alloca() : memref<f32>
  %b = "diffgpu.block_id"() {dim = 1 : i64} : () -> index
  %n = "diffgpu.block_dim"() {dim = 1 : i64} : () -> index
  %t = "diffgpu.thread_id"() {dim = 1 : i64} : () -> index
  %m = arith.muli %b, %n : index
  %r = arith.addi %m, %t : index
  %j = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %v = memref.load %x[%r, %j] : !M
  %d = memref.load %dy[%r, %j] : !M
  %w = memref.load %g[%j] : !V
  %p = arith.mulf %v, %d : f32
  %o = "diffgpu.atomic_add"(%dg, %p, %j) : (!V, f32, index) -> f32
  %q = arith.mulf %w, %d : f32
  memref.store %q, %slot[] : memref<f32>
  %s = memref.load %slot[] : memref<f32>
  memref.store %s, %dx[%r, %j] : !M
  return
}
// CHECK-LABEL: func.func @rows
// CHECK-NOT: diffgpu.coarsen_rows
// CHECK: %[[C0:.*]] = arith.constant 0 : index
// CHECK: %[[C1:.*]] = arith.constant 1 : index
// CHECK: %[[C16:.*]] = arith.constant 16 : index
// CHECK: %[[B:.*]] = "diffgpu.block_id"() {dim = 1 : i64}
// CHECK: %[[G:.*]] = "diffgpu.grid_dim"() {dim = 1 : i64}
// CHECK: %[[L:.*]] = arith.subi %[[G]], %[[C1]]
// CHECK: %[[LAST:.*]] = arith.cmpi eq, %[[B]], %[[L]]
// CHECK: %[[C3:.*]] = arith.constant 3 : index
// CHECK: %[[N:.*]] = arith.select %[[LAST]], %[[C3]], %[[C16]]
// CHECK: memref.alloca() : memref<f32>
// The loads of x and dy (never written) move an iteration ahead: the first
// row's before the loop, row min(k + 1, n - 1)'s at the top of iteration k;
// g's load does not depend on the row and stays.
// CHECK: %[[LASTK:.*]] = arith.subi %[[N]], %{{.*}} : index
// CHECK: %[[R0:.*]] = arith.addi %{{.*}}, %[[C0]] : index
// CHECK: %[[X0:.*]] = memref.load %arg0[%[[R0]], %{{.*}}]
// CHECK: %[[D0:.*]] = memref.load %arg1[%{{.*}}, %{{.*}}]
// CHECK: scf.for %[[K:.*]] = %[[C0]] to %[[N]] step %[[C1]] iter_args(%[[X:.*]] = %[[X0]], %[[D:.*]] = %[[D0]]) -> (f32, f32) {
// CHECK:   %[[K1:.*]] = arith.addi %[[K]], %[[C1]] : index
// CHECK:   %[[KN:.*]] = arith.minui %[[K1]], %[[LASTK]] : index
// CHECK:   %[[RN:.*]] = arith.addi %{{.*}}, %[[KN]] : index
// CHECK:   %[[XN:.*]] = memref.load %arg0[%[[RN]], %{{.*}}]
// CHECK:   %[[DN:.*]] = memref.load %arg1[%{{.*}}, %{{.*}}]
// CHECK:   %[[BR:.*]] = arith.muli %[[B]], %[[C16]]
// CHECK:   %[[R:.*]] = arith.addi %[[BR]], %[[K]]
// CHECK-NOT: "diffgpu.thread_id"() {dim = 1
// CHECK:   memref.load %arg3[
// CHECK:   arith.mulf %[[X]], %[[D]]
// CHECK:   "diffgpu.atomic_add"
// CHECK:   memref.store %{{.*}}, %{{.*}}[%[[R]], %{{.*}}]
// CHECK-NOT: diffgpu.barrier
// CHECK:   scf.yield %[[XN]], %[[DN]] : f32, f32
// CHECK: }
// CHECK-NEXT: return

// -----

!M = memref<?x?xf32, strided<[?, ?], offset: ?>>
!V = memref<?xf32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @grid_dim(%x: !M, %dg: !V) attributes {diffgpu.kernel, diffgpu.target = #host, diffgpu.noalias, diffgpu.coarsen_rows = array<i64: 4, 0>} {
  %b = "diffgpu.block_id"() {dim = 1 : i64} : () -> index
  %n = "diffgpu.block_dim"() {dim = 1 : i64} : () -> index
  %t = "diffgpu.thread_id"() {dim = 1 : i64} : () -> index
  %m = arith.muli %b, %n : index
  %r = arith.addi %m, %t : index
  %gy = "diffgpu.grid_dim"() {dim = 1 : i64} : () -> index
  %c1 = arith.constant 1 : index
  %r1 = arith.addi %r, %c1 : index
  %rr = arith.remui %r1, %gy : index
  %j = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %v = memref.load %x[%rr, %j] : !M
  %o = "diffgpu.atomic_add"(%dg, %v, %j) : (!V, f32, index) -> f32
  return
}
// CHECK-LABEL: func.func @grid_dim
// CHECK-NOT: diffgpu.coarsen_rows
// CHECK-NOT: scf.for
// CHECK: return

// -----

!M = memref<?x?xf32, strided<[?, ?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @nothing_to_sum(%x: !M, %dx: !M) attributes {diffgpu.kernel, diffgpu.target = #host, diffgpu.noalias, diffgpu.coarsen_rows = array<i64: 4, 0>} {
  %b = "diffgpu.block_id"() {dim = 1 : i64} : () -> index
  %n = "diffgpu.block_dim"() {dim = 1 : i64} : () -> index
  %t = "diffgpu.thread_id"() {dim = 1 : i64} : () -> index
  %m = arith.muli %b, %n : index
  %r = arith.addi %m, %t : index
  %j = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %v = memref.load %x[%r, %j] : !M
  memref.store %v, %dx[%r, %j] : !M
  return
}
// CHECK-LABEL: func.func @nothing_to_sum
// CHECK-NOT: diffgpu.coarsen_rows
// CHECK-NOT: scf.for
// CHECK: return

// -----

// gid(1) computed in i64: the loop's index row cast to i64 in its place
!M = memref<?x?xf32, strided<[?, ?], offset: ?>>
!V = memref<?xf32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @rows_i64(%x: !M, %dg: !V) attributes {diffgpu.kernel, diffgpu.target = #host, diffgpu.noalias, diffgpu.coarsen_rows = array<i64: 4, 0>} {
  %b = "diffgpu.block_id"() {dim = 1 : i64} : () -> index
  %n = "diffgpu.block_dim"() {dim = 1 : i64} : () -> index
  %t = "diffgpu.thread_id"() {dim = 1 : i64} : () -> index
  %bi = arith.index_cast %b : index to i64
  %ni = arith.index_cast %n : index to i64
  %ti = arith.index_cast %t : index to i64
  %m = arith.muli %bi, %ni : i64
  %r = arith.addi %m, %ti : i64
  %ri = arith.index_cast %r : i64 to index
  %j = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %v = memref.load %x[%ri, %j] : !M
  %o = "diffgpu.atomic_add"(%dg, %v, %j) : (!V, f32, index) -> f32
  return
}
// CHECK-LABEL: func.func @rows_i64
// CHECK: scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[V:.*]] = %{{.*}}) -> (f32) {
// CHECK:   %[[K1:.*]] = arith.minui
// CHECK:   %[[BR:.*]] = arith.muli %{{.*}}, %{{.*}} : index
// CHECK:   %[[R:.*]] = arith.addi %[[BR]], %[[K1]] : index
// CHECK:   %[[R64:.*]] = arith.index_cast %[[R]] : index to i64
// CHECK:   %[[RI:.*]] = arith.index_cast %[[R64]] : i64 to index
// CHECK:   %[[NEXT:.*]] = memref.load %{{.*}}[%[[RI]], %{{.*}}]
// CHECK:   "diffgpu.atomic_add"(%{{.*}}, %[[V]], %{{.*}})
// CHECK:   scf.yield %[[NEXT]] : f32

// -----

// An array read and written in its own rows (an in-out x) is not loaded
// ahead: the iteration that writes row k must not be passed by a read of it.
// Only dy moves.
!M = memref<?x?xf32, strided<[?, ?], offset: ?>>
!V = memref<?xf32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @in_out(%x: !M, %dy: !M, %dg: !V) attributes {diffgpu.kernel, diffgpu.target = #host, diffgpu.noalias, diffgpu.coarsen_rows = array<i64: 4, 0>} {
  %b = "diffgpu.block_id"() {dim = 1 : i64} : () -> index
  %n = "diffgpu.block_dim"() {dim = 1 : i64} : () -> index
  %t = "diffgpu.thread_id"() {dim = 1 : i64} : () -> index
  %m = arith.muli %b, %n : index
  %r = arith.addi %m, %t : index
  %j = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %v = memref.load %x[%r, %j] : !M
  %d = memref.load %dy[%r, %j] : !M
  %p = arith.mulf %v, %d : f32
  memref.store %p, %x[%r, %j] : !M
  %o = "diffgpu.atomic_add"(%dg, %p, %j) : (!V, f32, index) -> f32
  return
}
// CHECK-LABEL: func.func @in_out
// CHECK: scf.for %{{.*}} iter_args(%[[D:.*]] = %{{.*}}) -> (f32) {
// CHECK:   %[[DN:.*]] = memref.load %arg1[
// CHECK:   %[[V:.*]] = memref.load %arg0[
// CHECK:   %[[P:.*]] = arith.mulf %[[V]], %[[D]]
// CHECK:   memref.store %[[P]], %arg0[
// CHECK:   scf.yield %[[DN]] : f32

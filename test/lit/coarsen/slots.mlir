// diffgpu-coarsen (lowering/coarsen/coarsen.py, coarsen_reduce.slot_epilogue) on a
// derivative kernel with an Active scalar: after its last guard each thread
// adds its gradient (a private slot) into the slot buffer at its block's
// index; the add is marked `diffgpu.active_slots` (the runtime sums every
// slot). Coarsened by 4: the copies' gradients summed pairwise, one add.
// The same add without the mark (a kernel's own per-block sum) must stay.
// RUN: diffgpu-opt %s --split-input-file --diffgpu-coarsen | FileCheck %s

!A = memref<?xf32, strided<[?], offset: ?>>
!S = memref<?xf64, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @grad_a(%x: !A, %dy: !A, %slots: !S) attributes {diffgpu.kernel, diffgpu.target = #host, diffgpu.noalias, diffgpu.coarsen = 4 : i64} {
  %acc = memref.alloca() : memref<f64>
  %zero = arith.constant 0.000000e+00 : f64
  memref.store %zero, %acc[] : memref<f64>
  %b = "diffgpu.block_id"() {dim = 0 : i64} : () -> index
  %n = "diffgpu.block_dim"() {dim = 0 : i64} : () -> index
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %m = arith.muli %b, %n : index
  %i = arith.addi %m, %t : index
  %c0 = arith.constant 0 : index
  %len = memref.dim %x, %c0 : !A
  %in = arith.cmpi slt, %i, %len : index
  scf.if %in {
    %old = memref.load %acc[] : memref<f64>
    %v = memref.load %x[%i] : !A
    %d = memref.load %dy[%i] : !A
    %p = arith.mulf %v, %d : f32
    %p64 = arith.extf %p : f32 to f64
    %new = arith.addf %old, %p64 : f64
    memref.store %new, %acc[] : memref<f64>
  }
  %g = memref.load %acc[] : memref<f64>
  %bx = "diffgpu.block_id"() {dim = 0 : i64} : () -> index
  %ns = memref.dim %slots, %c0 : !S
  %s = arith.remui %bx, %ns : index
  %o = "diffgpu.atomic_add"(%slots, %g, %s) {diffgpu.active_slots} : (!S, f64, index) -> f64
  return
}
// CHECK-LABEL: func.func private @grad_a__dg_tail
// CHECK-COUNT-4: "diffgpu.atomic_add"
// CHECK-NOT: "diffgpu.atomic_add"
// CHECK: return
// CHECK-LABEL: func.func @grad_a
// CHECK-SAME: (%[[X:[a-z0-9]+]]: memref<{{[^%]+}}, %[[DY:[a-z0-9]+]]: memref<{{[^%]+}}, %[[SL:[a-z0-9]+]]: memref
// CHECK-SAME: diffgpu.coarsen = 4
// CHECK: scf.if %{{.+}} {
// CHECK-NOT: "diffgpu.atomic_add"
// CHECK-COUNT-4: memref.load %[[DY]]
// CHECK-NOT: "diffgpu.atomic_add"
// the copies' gradients (their accumulations start from the constant 0)
// CHECK: %[[S01:.+]] = arith.addf %{{[0-9]+}}, %{{[0-9]+}} : f64
// CHECK-NEXT: %[[S23:.+]] = arith.addf %{{[0-9]+}}, %{{[0-9]+}} : f64
// CHECK-NEXT: %[[SUM:.+]] = arith.addf %[[S01]], %[[S23]] : f64
// CHECK-NEXT: "diffgpu.atomic_add"(%[[SL]], %[[SUM]], %{{.+}}) {diffgpu.active_slots}
// CHECK: } else {
// CHECK-NEXT: func.call @grad_a__dg_tail
// CHECK-NOT: "diffgpu.atomic_add"
// CHECK: return

// -----

// The same add without the mark: the kernel's own per-block sum, whose
// index would change with the coarsened block numbering. Left alone.
!A = memref<?xf32, strided<[?], offset: ?>>
!S = memref<?xf64, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @per_block(%x: !A, %dy: !A, %sums: !S) attributes {diffgpu.kernel, diffgpu.target = #host, diffgpu.noalias, diffgpu.coarsen = 4 : i64} {
  %acc = memref.alloca() : memref<f64>
  %zero = arith.constant 0.000000e+00 : f64
  memref.store %zero, %acc[] : memref<f64>
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
    %v64 = arith.extf %v : f32 to f64
    memref.store %v64, %acc[] : memref<f64>
  }
  %g = memref.load %acc[] : memref<f64>
  %bx = "diffgpu.block_id"() {dim = 0 : i64} : () -> index
  %ns = memref.dim %sums, %c0 : !S
  %s = arith.remui %bx, %ns : index
  %o = "diffgpu.atomic_add"(%sums, %g, %s) : (!S, f64, index) -> f64
  return
}
// CHECK-LABEL: func.func @per_block
// CHECK-NOT: diffgpu.coarsen
// CHECK-NOT: __dg_tail
// CHECK: scf.if
// CHECK: "diffgpu.atomic_add"
// CHECK-NOT: "diffgpu.atomic_add"
// CHECK: return

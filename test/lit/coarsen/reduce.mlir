// diffgpu-coarsen (lowering/coarsen/coarsen.py) on a reduction kernel: a kernel marked
// `diffgpu.coarsen = 16` whose only cross-thread interaction is an atomic add
// to one address (result unused, arrays disjoint: `diffgpu.noalias`) gives each
// thread 16 consecutive elements; their values are summed in registers
// (pairwise) and added once. Cases that must stay as they are come after.
// RUN: diffgpu-opt %s --split-input-file --diffgpu-coarsen | FileCheck %s

!A = memref<?xf32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @sumsq(%out: !A, %x: !A) attributes {diffgpu.kernel, diffgpu.target = #host, diffgpu.noalias, diffgpu.coarsen = 16 : i64} {
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
    %k = arith.constant 0 : index
    %sq = arith.mulf %v, %v : f32
    %o = "diffgpu.atomic_add"(%out, %sq, %k) : (!A, f32, index) -> f32
  }
  return
}
// CHECK-LABEL: func.func private @sumsq__dg_tail_x16
// CHECK-COUNT-16: "diffgpu.atomic_add"
// CHECK: return
// CHECK-LABEL: func.func @sumsq
// CHECK-SAME: (%[[OUT:[a-z0-9]+]]: memref<{{[^%]+}}, %[[X:[a-z0-9]+]]: memref
// CHECK-SAME: diffgpu.coarsen = 16
// CHECK: %[[C16:.+]] = arith.constant 16 : index
// CHECK: %[[BASE:.+]] = arith.muli %{{.+}}, %[[C16]] : index
// CHECK: %[[C15:.+]] = arith.constant 15 : index
// CHECK: %[[LAST:.+]] = arith.addi %[[BASE]], %[[C15]] : index
// CHECK: %[[ALL:.+]] = arith.cmpi slt, %[[LAST]],
// CHECK: scf.if %[[ALL]] {
// CHECK-NOT: diffgpu.atomic_add
// CHECK-COUNT-16: memref.load %[[X]]
// CHECK-NOT: diffgpu.atomic_add
// CHECK-COUNT-14: arith.addf
// CHECK-NEXT: %[[SUM:.+]] = arith.addf
// CHECK-NEXT: "diffgpu.atomic_add"(%[[OUT]], %[[SUM]], %{{.+}})
// CHECK-NOT: diffgpu.atomic_add
// CHECK: } else {
// CHECK-NEXT: func.call @sumsq__dg_tail_x16(%[[OUT]], %[[X]], %[[BASE]])
// CHECK-NOT: diffgpu.atomic_add
// CHECK: return

// -----

// Without `diffgpu.noalias` another array may be `out`: a later copy's load
// could see the moved add. Left alone, the request dropped.
!A = memref<?xf32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @maybe_alias(%out: !A, %x: !A) attributes {diffgpu.kernel, diffgpu.target = #host, diffgpu.coarsen = 16 : i64} {
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
    %k = arith.constant 0 : index
    %o = "diffgpu.atomic_add"(%out, %v, %k) : (!A, f32, index) -> f32
  }
  return
}
// CHECK-LABEL: func.func @maybe_alias
// CHECK-NOT: diffgpu.coarsen
// CHECK-NOT: __dg_tail
// CHECK: scf.if
// CHECK-NEXT: memref.load
// CHECK: "diffgpu.atomic_add"
// CHECK-NOT: diffgpu.atomic_add
// CHECK: return

// -----

// The old value is used: the adds cannot be merged.
!A = memref<?xf32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @result_used(%out: !A, %y: !A, %x: !A) attributes {diffgpu.kernel, diffgpu.target = #host, diffgpu.noalias, diffgpu.coarsen = 16 : i64} {
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
    %k = arith.constant 0 : index
    %o = "diffgpu.atomic_add"(%out, %v, %k) : (!A, f32, index) -> f32
    memref.store %o, %y[%i] : !A
  }
  return
}
// CHECK-LABEL: func.func @result_used
// CHECK-NOT: diffgpu.coarsen
// CHECK: scf.if
// CHECK: %[[O:.+]] = "diffgpu.atomic_add"
// CHECK-NEXT: memref.store %[[O]]
// CHECK-NOT: diffgpu.atomic_add
// CHECK: return

// -----

// The address depends on the thread (a scatter): every element its own add.
!A = memref<?xf32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @scatter(%out: !A, %x: !A) attributes {diffgpu.kernel, diffgpu.target = #host, diffgpu.noalias, diffgpu.coarsen = 16 : i64} {
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
    %c4 = arith.constant 4 : index
    %k = arith.remui %i, %c4 : index
    %o = "diffgpu.atomic_add"(%out, %v, %k) : (!A, f32, index) -> f32
  }
  return
}
// CHECK-LABEL: func.func @scatter
// CHECK-NOT: diffgpu.coarsen
// CHECK-NOT: __dg_tail
// CHECK: scf.if
// CHECK: arith.remui
// CHECK-NEXT: "diffgpu.atomic_add"
// CHECK-NOT: diffgpu.atomic_add
// CHECK: return

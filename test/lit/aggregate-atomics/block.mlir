// diffgpu-aggregate-atomics (lowering/reduce/aggregate_atomics.py): an atomic add to a
// block-uniform element under a kernel's guards is hoisted out of them (the
// guards yield the value, zero elsewhere) and summed over the block; one thread
// adds the sum. Cases that must keep their per-thread atomic come after.
// RUN: diffgpu-opt %s --split-input-file --diffgpu-aggregate-atomics | FileCheck %s

// Host target: sum of squares into out[0] under a bounds guard. The guard yields
// v*v or 0; every thread stores it in shared memory, a barrier, thread 0 sums
// pairwise and adds once.
!A = memref<?xf32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @sumsq(%out: !A, %x: !A) attributes {diffgpu.kernel, diffgpu.target = #host} {
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
// CHECK-LABEL: func.func @sumsq
// CHECK-SAME: (%[[OUT:[a-z0-9]+]]: memref<{{[^%]+}}, %[[X:[a-z0-9]+]]: memref
// CHECK: %[[V:.+]] = scf.if %{{.+}} -> (f32) {
// CHECK: %[[SQ:.+]] = arith.mulf
// CHECK-NOT: diffgpu.atomic_add
// CHECK: scf.yield %[[SQ]] : f32
// CHECK-NEXT: } else {
// CHECK-NEXT: %[[Z:.+]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: scf.yield %[[Z]] : f32
// CHECK: %[[K:.+]] = arith.constant 0 : index
// CHECK: %[[SH:.+]] = "diffgpu.shared_alloc"() : () -> memref<1024xf32, #gpu.address_space<workgroup>>
// CHECK-NEXT: memref.store %[[V]], %[[SH]][%[[LIN:.+]]] :
// CHECK-NEXT: "diffgpu.barrier"()
// CHECK: scf.if
// CHECK: scf.while
// CHECK: scf.for
// CHECK: arith.addf
// CHECK: %[[S:.+]] = memref.load %[[SH]]
// CHECK-NEXT: "diffgpu.atomic_add"(%[[OUT]], %[[S]], %[[K]]) {diffgpu.aggregated = "block"}
// CHECK-NOT: diffgpu.atomic_add
// CHECK: return

// -----

// GPU target, out[block_id] (uniform per block), nested guards: a butterfly
// gpu.shuffle sum per warp, 32 shared slots, warp 0 sums them; blocks that are
// not a multiple of 32 threads keep one atomic per thread (else branch).
!A = memref<?xf32, strided<[?], offset: ?>>
#gpu = #nvvm.target<O = 3, chip = "sm_90">
func.func @per_block(%out: !A, %x: !A, %on: i1) attributes {diffgpu.kernel, diffgpu.target = #gpu} {
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
    scf.if %on {
    } else {
      %o = "diffgpu.atomic_add"(%out, %v, %b) : (!A, f32, index) -> f32
    }
  }
  return
}
// CHECK-LABEL: func.func @per_block
// CHECK-SAME: (%[[OUT:[a-z0-9]+]]: memref<{{[^%]+}}, %[[X:[a-z0-9]+]]: memref<{{[^%]+}}, %[[ON:[a-z0-9]+]]: i1)
// CHECK: %[[B:.+]] = "diffgpu.block_id"() {dim = 0 : i64}
// CHECK: %[[V:.+]] = scf.if %{{.+}} -> (f32) {
// CHECK: %[[L:.+]] = memref.load %[[X]]
// CHECK: %[[INNER:.+]] = scf.if %[[ON]] -> (f32) {
// CHECK-NEXT: %[[Z:.+]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: scf.yield %[[Z]] : f32
// CHECK-NEXT: } else {
// CHECK-NEXT: scf.yield %[[L]] : f32
// CHECK: scf.yield %[[INNER]] : f32
// CHECK: %[[FULL:.+]] = arith.cmpi eq, %{{.+}}, %{{.+}} : index
// CHECK-NEXT: scf.if %[[FULL]] {
// CHECK: "diffgpu.shared_alloc"() : () -> memref<32xf32, #gpu.address_space<workgroup>>
// CHECK: gpu.shuffle xor %[[V]], %{{.+}}, %{{.+}} : f32
// CHECK-COUNT-4: gpu.shuffle xor
// CHECK: "diffgpu.barrier"()
// CHECK-COUNT-5: gpu.shuffle xor
// CHECK: "diffgpu.atomic_add"(%[[OUT]], %{{.+}}, %[[B]]) {diffgpu.aggregated = "block"}
// CHECK: } else {
// CHECK-NEXT: "diffgpu.atomic_add"(%[[OUT]], %[[V]], %[[B]]) {diffgpu.aggregated = "thread"}
// CHECK: return

// -----

// Kept: the element depends on the thread (out[tid]).
!A = memref<?xf32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @kept_tid(%out: !A, %x: !A, %n: index) attributes {diffgpu.kernel, diffgpu.target = #host} {
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %v = memref.load %x[%t] : !A
  %o = "diffgpu.atomic_add"(%out, %v, %t) : (!A, f32, index) -> f32
  return
}
// CHECK-LABEL: func.func @kept_tid
// CHECK-NOT: diffgpu.barrier
// CHECK: "diffgpu.atomic_add"
// CHECK-NOT: diffgpu.aggregated
// CHECK: return

// -----

// Kept: the old value is used.
!A = memref<?xf32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @kept_used(%out: !A, %x: !A, %n: index) attributes {diffgpu.kernel, diffgpu.target = #host} {
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %c0 = arith.constant 0 : index
  %v = memref.load %x[%t] : !A
  %o = "diffgpu.atomic_add"(%out, %v, %c0) : (!A, f32, index) -> f32
  memref.store %o, %x[%t] : !A
  return
}
// CHECK-LABEL: func.func @kept_used
// CHECK-NOT: diffgpu.barrier
// CHECK: "diffgpu.atomic_add"
// CHECK-NOT: diffgpu.aggregated
// CHECK: return

// -----

// Kept: the add sits in a loop (threads may run different trip counts).
!A = memref<?xf32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @kept_loop(%out: !A, %x: !A, %n: index) attributes {diffgpu.kernel, diffgpu.target = #host} {
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %v = memref.load %x[%t] : !A
  scf.for %j = %c0 to %n step %c1 {
    %o = "diffgpu.atomic_add"(%out, %v, %c0) : (!A, f32, index) -> f32
  }
  return
}
// CHECK-LABEL: func.func @kept_loop
// CHECK-NOT: diffgpu.barrier
// CHECK: "diffgpu.atomic_add"
// CHECK-NOT: diffgpu.aggregated
// CHECK: return

// -----

// Kept: a load follows the add inside its guard.
!A = memref<?xf32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @kept_load_in_guard(%out: !A, %x: !A, %n: index) attributes {diffgpu.kernel, diffgpu.target = #host} {
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %c0 = arith.constant 0 : index
  %v = memref.load %x[%t] : !A
  %in = arith.cmpi slt, %t, %n : index
  scf.if %in {
    %o = "diffgpu.atomic_add"(%out, %v, %c0) : (!A, f32, index) -> f32
    %w = memref.load %out[%c0] : !A
  }
  return
}
// CHECK-LABEL: func.func @kept_load_in_guard
// CHECK-NOT: diffgpu.barrier
// CHECK: "diffgpu.atomic_add"
// CHECK-NOT: diffgpu.aggregated
// CHECK: return

// -----

// Kept: a load of the target follows the guard: this thread would miss its own
// contribution.
!A = memref<?xf32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @kept_load_after(%out: !A, %x: !A, %n: index) attributes {diffgpu.kernel, diffgpu.target = #host} {
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %c0 = arith.constant 0 : index
  %v = memref.load %x[%t] : !A
  %in = arith.cmpi slt, %t, %n : index
  scf.if %in {
    %o = "diffgpu.atomic_add"(%out, %v, %c0) : (!A, f32, index) -> f32
  }
  %r = memref.load %out[%c0] : !A
  memref.store %r, %x[%t] : !A
  return
}
// CHECK-LABEL: func.func @kept_load_after
// CHECK-NOT: diffgpu.barrier
// CHECK: "diffgpu.atomic_add"
// CHECK-NOT: diffgpu.aggregated
// CHECK: return

// -----

// Kept: a kernel that another function calls (its barrier would sit in a call).
!A = memref<?xf32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @called(%out: !A, %v: f32) attributes {diffgpu.kernel, diffgpu.target = #host} {
  %c0 = arith.constant 0 : index
  %o = "diffgpu.atomic_add"(%out, %v, %c0) : (!A, f32, index) -> f32
  return
}
func.func @caller(%out: !A, %v: f32) attributes {diffgpu.kernel, diffgpu.target = #host} {
  func.call @called(%out, %v) : (!A, f32) -> ()
  return
}
// CHECK-LABEL: func.func @called
// CHECK-NOT: diffgpu.barrier
// CHECK: "diffgpu.atomic_add"
// CHECK-NOT: diffgpu.aggregated
// CHECK-LABEL: func.func @caller

// -----

// A derivative function called once from a reverse kernel's body: the add moves
// out as one more result of the function and the kernel sums it. Later, the
// function loads another array (allowed: its arrays are disjoint, diffgpu.noalias)
// and uses a private alloca.
!A = memref<?xf32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @rev(%out: !A, %x: !A, %dy: !A) attributes {diffgpu.noalias, diffgpu.target = #host} {
  %tape = memref.alloca() : memref<f32>
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %c0 = arith.constant 0 : index
  %len = memref.dim %x, %c0 : !A
  %in = arith.cmpi slt, %t, %len : index
  scf.if %in {
    %v = memref.load %x[%t] : !A
    %o = "diffgpu.atomic_add"(%out, %v, %c0) : (!A, f32, index) -> f32
    memref.store %v, %tape[] : memref<f32>
    %d = memref.load %dy[%t] : !A
  }
  return
}
func.func @reverse_kernel(%out: !A, %x: !A, %dy: !A) attributes {diffgpu.kernel, diffgpu.noalias, diffgpu.target = #host} {
  func.call @rev(%out, %x, %dy) : (!A, !A, !A) -> ()
  return
}
// CHECK-LABEL: func.func @rev
// CHECK-SAME: -> f32
// CHECK: %[[V:.+]] = scf.if %{{.+}} -> (f32) {
// CHECK: %[[L:.+]] = memref.load
// CHECK-NOT: diffgpu.atomic_add
// CHECK: scf.yield %[[L]] : f32
// CHECK: return %[[V]] : f32
// CHECK-LABEL: func.func @reverse_kernel
// CHECK-SAME: (%[[OUT:[a-z0-9]+]]: memref
// CHECK: %[[R:.+]] = call @rev(%[[OUT]], %{{.+}}, %{{.+}}) : (memref<{{.+}}>) -> f32
// CHECK: %[[K:.+]] = arith.constant 0 : index
// CHECK: memref.store %[[R]], %[[SH:.+]][%{{.+}}] : memref<1024xf32, #gpu.address_space<workgroup>>
// CHECK-NEXT: "diffgpu.barrier"()
// CHECK: "diffgpu.atomic_add"(%[[OUT]], %{{.+}}, %[[K]]) {diffgpu.aggregated = "block"}

// -----

// Kept: the same without diffgpu.noalias (dy may overlap out: the thread's load
// of dy could miss its own add), and a function with two calls.
!A = memref<?xf32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @rev_alias(%out: !A, %x: !A, %dy: !A) attributes {diffgpu.target = #host} {
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %c0 = arith.constant 0 : index
  %v = memref.load %x[%t] : !A
  %o = "diffgpu.atomic_add"(%out, %v, %c0) : (!A, f32, index) -> f32
  %d = memref.load %dy[%t] : !A
  return
}
func.func @alias_kernel(%out: !A, %x: !A, %dy: !A) attributes {diffgpu.kernel, diffgpu.target = #host} {
  func.call @rev_alias(%out, %x, %dy) : (!A, !A, !A) -> ()
  return
}
func.func @twice(%out: !A, %v: f32) attributes {diffgpu.noalias, diffgpu.target = #host} {
  %c0 = arith.constant 0 : index
  %o = "diffgpu.atomic_add"(%out, %v, %c0) : (!A, f32, index) -> f32
  return
}
func.func @twice_kernel(%out: !A, %v: f32) attributes {diffgpu.kernel, diffgpu.noalias, diffgpu.target = #host} {
  func.call @twice(%out, %v) : (!A, f32) -> ()
  func.call @twice(%out, %v) : (!A, f32) -> ()
  return
}
// CHECK-LABEL: func.func @rev_alias
// CHECK-NOT: -> f32
// CHECK: "diffgpu.atomic_add"
// CHECK-NOT: diffgpu.aggregated
// CHECK-LABEL: func.func @alias_kernel
// CHECK-NOT: diffgpu.barrier
// CHECK-LABEL: func.func @twice
// CHECK: "diffgpu.atomic_add"
// CHECK-LABEL: func.func @twice_kernel
// CHECK-NOT: diffgpu.barrier
// CHECK: return

// diffgpu-combine-adds (lowering/reduce/combine_adds.py): a thread's atomic adds
// into one element of an add-only array (a noalias function's argument that
// only receives unused-result adds) are summed in registers, one add remains.
// Cases that must keep their adds come after the rewrites.
// RUN: diffgpu-opt %s --split-input-file --diffgpu-combine-adds | FileCheck %s

// Two guarded adds into dg[%c] (unrolled rows): each guard yields its value
// and a flag, the values are summed, one add under the flags' or.
!A = memref<?xf32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @rows(%dg: !A, %x: !A, %p: i1, %q: i1) attributes {diffgpu.kernel, diffgpu.noalias, diffgpu.target = #host} {
  %c = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  scf.if %p {
    %v = memref.load %x[%c] : !A
    %o = "diffgpu.atomic_add"(%dg, %v, %c) : (!A, f32, index) -> f32
  }
  scf.if %q {
    %w = memref.load %x[%c] : !A
    %s = arith.mulf %w, %w : f32
    %o = "diffgpu.atomic_add"(%dg, %s, %c) : (!A, f32, index) -> f32
  }
  return
}
// CHECK-LABEL: func.func @rows
// CHECK-SAME: (%[[DG:[a-z0-9]+]]: memref
// CHECK: %[[C:.+]] = "diffgpu.thread_id"
// CHECK: %[[A:.+]]:2 = scf.if %{{.+}} -> (f32, i1) {
// CHECK-NOT: diffgpu.atomic_add
// CHECK: scf.yield %{{.+}}, %true{{.*}} : f32, i1
// CHECK: } else {
// CHECK: scf.yield %{{.+}}, %false{{.*}} : f32, i1
// CHECK: %[[B:.+]]:2 = scf.if %{{.+}} -> (f32, i1) {
// CHECK-NOT: diffgpu.atomic_add
// CHECK: %[[S:.+]] = arith.addf %[[A]]#0, %[[B]]#0 : f32
// CHECK-NEXT: %[[F:.+]] = arith.ori %[[A]]#1, %[[B]]#1 : i1
// CHECK-NEXT: scf.if %[[F]] {
// CHECK-NEXT: "diffgpu.atomic_add"(%[[DG]], %[[S]], %[[C]])
// CHECK-NOT: diffgpu.atomic_add
// CHECK: return

// -----

// Equal indices computed separately in each guard (%c + 256 twice): one key,
// recomputed before the combined add; unguarded adds need no flag.
!A = memref<?xf32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @recomputed(%dg: !A, %x: !A, %p: i1) attributes {diffgpu.kernel, diffgpu.noalias, diffgpu.target = #host} {
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %k = arith.constant 256 : index
  %c1 = arith.addi %t, %k : index
  %v = memref.load %x[%c1] : !A
  %o = "diffgpu.atomic_add"(%dg, %v, %c1) : (!A, f32, index) -> f32
  %c2 = arith.addi %t, %k : index
  %w = memref.load %x[%c2] : !A
  %o2 = "diffgpu.atomic_add"(%dg, %w, %c2) : (!A, f32, index) -> f32
  return
}
// CHECK-LABEL: func.func @recomputed
// CHECK-SAME: (%[[DG:[a-z0-9]+]]: memref
// CHECK: %[[V:.+]] = memref.load
// CHECK-NOT: diffgpu.atomic_add
// CHECK: %[[W:.+]] = memref.load
// CHECK-NEXT: %[[S:.+]] = arith.addf %[[V]], %[[W]] : f32
// CHECK-NEXT: "diffgpu.atomic_add"(%[[DG]], %[[S]], %{{.+}})
// CHECK-NOT: diffgpu.atomic_add
// CHECK: return

// -----

// A loop over rows (runtime trip count) adding into dg[%c], %c invariant in the
// loop: the sum and a flag become iteration arguments, one add after the loop.
!A = memref<?xf32, strided<[?], offset: ?>>
!M = memref<?x?xf32, strided<[?, ?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @loop(%dg: !A, %x: !M, %n: index) attributes {diffgpu.kernel, diffgpu.noalias, diffgpu.target = #host} {
  %c = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %w = memref.dim %dg, %c0 : !A
  %in = arith.cmpi slt, %c, %w : index
  scf.for %r = %c0 to %n step %c1 {
    scf.if %in {
      %v = memref.load %x[%r, %c] : !M
      %o = "diffgpu.atomic_add"(%dg, %v, %c) : (!A, f32, index) -> f32
    }
  }
  return
}
// CHECK-LABEL: func.func @loop
// CHECK-SAME: (%[[DG:[a-z0-9]+]]: memref
// CHECK: %[[C:.+]] = "diffgpu.thread_id"
// CHECK: %[[Z:.+]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[L:.+]]:2 = scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[ACC:.+]] = %[[Z]], %[[FL:.+]] = %false) -> (f32, i1) {
// CHECK: %[[G:.+]]:2 = scf.if %{{.+}} -> (f32, i1) {
// CHECK-NOT: diffgpu.atomic_add
// CHECK: %[[N:.+]] = arith.addf %[[ACC]], %[[G]]#0 : f32
// CHECK-NEXT: %[[NF:.+]] = arith.ori %[[FL]], %[[G]]#1 : i1
// CHECK-NEXT: scf.yield %[[N]], %[[NF]] : f32, i1
// CHECK: scf.if %[[L]]#1 {
// CHECK-NEXT: "diffgpu.atomic_add"(%[[DG]], %[[L]]#0, %[[C]])
// CHECK: return

// -----

// Nested loops, an integer add: both loops carry it, one add at the end.
!I = memref<?xi32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @nested(%cnt: !I, %n: index) attributes {diffgpu.kernel, diffgpu.noalias, diffgpu.target = #host} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1 : i32
  scf.for %i = %c0 to %n step %c1 {
    scf.for %j = %c0 to %n step %c1 {
      %o = "diffgpu.atomic_add"(%cnt, %one, %c0) : (!I, i32, index) -> i32
    }
  }
  return
}
// CHECK-LABEL: func.func @nested
// CHECK-SAME: (%[[CNT:[a-z0-9]+]]: memref
// CHECK: %[[OUTER:.+]] = scf.for {{.+}} -> (i32) {
// CHECK: %[[INNER:.+]] = scf.for {{.+}} -> (i32) {
// CHECK-NOT: diffgpu.atomic_add
// CHECK: arith.addi
// CHECK: scf.yield
// CHECK: arith.addi
// CHECK: scf.yield
// CHECK: "diffgpu.atomic_add"(%[[CNT]], %[[OUTER]], %{{.+}})
// CHECK-NOT: diffgpu.atomic_add
// CHECK: return

// -----

// The added value is the loop's own iteration argument: the rebuilt loop
// carries the sum of the new loop's argument (the old one is gone).
!I = memref<?xi32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @loop_arg(%cnt: !I, %n: index) attributes {diffgpu.kernel, diffgpu.noalias, diffgpu.target = #host} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0 : i32
  %one = arith.constant 1 : i32
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%s = %z) -> (i32) {
    %o = "diffgpu.atomic_add"(%cnt, %s, %c0) : (!I, i32, index) -> i32
    %t = arith.addi %s, %one : i32
    scf.yield %t : i32
  }
  return
}
// CHECK-LABEL: func.func @loop_arg
// CHECK-SAME: (%[[CNT:[a-z0-9]+]]: memref
// CHECK: %[[L:.+]]:2 = scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[S:.+]] = %{{.+}}, %[[ACC:.+]] = %{{.+}}) -> (i32, i32) {
// CHECK: %[[T:.+]] = arith.addi %[[S]], %{{.+}} : i32
// CHECK-NEXT: %[[N:.+]] = arith.addi %[[ACC]], %[[S]] : i32
// CHECK-NEXT: scf.yield %[[T]], %[[N]] : i32, i32
// CHECK: "diffgpu.atomic_add"(%[[CNT]], %[[L]]#1, %{{.+}})
// CHECK: return

// -----

// Kept: the array is also loaded (not add-only), so a later read could see
// the adds; both adds stay where they are.
!A = memref<?xf32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @read_too(%dg: !A, %x: !A) attributes {diffgpu.kernel, diffgpu.noalias, diffgpu.target = #host} {
  %c = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %v = memref.load %x[%c] : !A
  %o = "diffgpu.atomic_add"(%dg, %v, %c) : (!A, f32, index) -> f32
  %r = memref.load %dg[%c] : !A
  %o2 = "diffgpu.atomic_add"(%dg, %r, %c) : (!A, f32, index) -> f32
  return
}
// CHECK-LABEL: func.func @read_too
// CHECK: "diffgpu.atomic_add"
// CHECK: memref.load
// CHECK: "diffgpu.atomic_add"
// CHECK: return

// -----

// Kept: no diffgpu.noalias (another argument may be the same array).
!A = memref<?xf32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @may_alias(%dg: !A, %x: !A) attributes {diffgpu.kernel, diffgpu.target = #host} {
  %c = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %v = memref.load %x[%c] : !A
  %o = "diffgpu.atomic_add"(%dg, %v, %c) : (!A, f32, index) -> f32
  %w = memref.load %x[%c] : !A
  %o2 = "diffgpu.atomic_add"(%dg, %w, %c) : (!A, f32, index) -> f32
  return
}
// CHECK-LABEL: func.func @may_alias
// CHECK: "diffgpu.atomic_add"
// CHECK: memref.load
// CHECK: "diffgpu.atomic_add"
// CHECK: return

// -----

// Kept: the index is the loop variable (a different element each iteration),
// and the old value of an add that is used.
!A = memref<?xf32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @varying(%dg: !A, %out: !A, %x: !A, %n: index) attributes {diffgpu.kernel, diffgpu.noalias, diffgpu.target = #host} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %r = %c0 to %n step %c1 {
    %v = memref.load %x[%r] : !A
    %o = "diffgpu.atomic_add"(%dg, %v, %r) : (!A, f32, index) -> f32
  }
  %w = memref.load %x[%c0] : !A
  %old = "diffgpu.atomic_add"(%out, %w, %c0) : (!A, f32, index) -> f32
  %old2 = "diffgpu.atomic_add"(%out, %old, %c0) : (!A, f32, index) -> f32
  return
}
// CHECK-LABEL: func.func @varying
// CHECK: scf.for
// CHECK-NOT: iter_args
// CHECK: "diffgpu.atomic_add"
// CHECK: }
// CHECK: %[[OLD:.+]] = "diffgpu.atomic_add"
// CHECK: "diffgpu.atomic_add"(%{{.+}}, %[[OLD]], %{{.+}})
// CHECK: return

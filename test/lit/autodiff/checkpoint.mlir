// Reverse of loops with a runtime trip count without the tape
// (lowering/autodiff/checkpoint.py, remat.py LOOP_OPS).
// RUN: diffgpu-opt %s --split-input-file --diffgpu-autodiff | FileCheck %s

// A recurrence s = sin(s) * x: the carried s is stored at every K-th trip
// (K = max(1, ceildiv(tc, 64))) into a 64-slot checkpoint array; the reverse
// replays a segment from its checkpoint into a 64-slot buffer on its first
// reversed trip, then each trip replays from the buffer; no tape stack.
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @recur(%x: f32, %n: index) -> f32 attributes {diffgpu.target = #host} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %t = %c0 to %n step %c1 iter_args(%s = %x) -> (f32) {
    %e = math.sin %s : f32
    %m = arith.mulf %e, %x : f32
    scf.yield %m : f32
  }
  return %r : f32
}
func.func @k_recur(%d: f32, %x0: f32, %n: index) attributes {diffgpu.kernel, diffgpu.target = #host} {
  %g:1 = "diffgpu.autodiff"(%d, %x0, %n) {callee = @recur, activity = ["active", "const"], diffgpu.target = #host, groups = array<i32: 1, 1>, operandSegmentSizes = array<i32: 2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f32, f32, index) -> (f32)
  return
}
// CHECK-LABEL: func.func @__dg_rev_recur_
// CHECK-SAME: (%[[X:[a-z0-9]+]]: f32, %[[N:[a-z0-9]+]]: index, %[[D:[a-z0-9]+]]: f32)
// CHECK-NOT: memref<1xmemref<?xi64>>
// CHECK: %[[CP:.+]] = memref.alloca() : memref<64xf32>
// CHECK: %[[C64:.+]] = arith.constant 64 : index
// CHECK-NEXT: %[[Q:.+]] = arith.ceildivsi %[[TC:.+]], %[[C64]] : index
// CHECK: %[[K:.+]] = arith.maxsi %[[Q]], %{{.+}} : index
// CHECK-NEXT: scf.for %[[T:.+]] = %{{.+}} to %[[N]] step %{{.+}} iter_args(%[[S:.+]] = %[[X]]) -> (f32) {
// CHECK: %[[R:.+]] = arith.remsi %[[TRIP:.+]], %[[K]] : index
// CHECK: %[[AT:.+]] = arith.cmpi eq, %[[R]], %{{.+}} : index
// CHECK-NEXT: scf.if %[[AT]] {
// CHECK-NEXT: %[[SEG:.+]] = arith.divsi %[[TRIP]], %[[K]] : index
// CHECK-NEXT: memref.store %[[S]], %[[CP]][%[[SEG]]] : memref<64xf32>
// CHECK: math.sin %[[S]]
// CHECK: %[[BUF:.+]] = memref.alloca() : memref<64xf32>
// CHECK: scf.for %{{.+}} iter_args(%[[DS:.+]] = %[[D]]) -> (f32) {
// CHECK: scf.if %{{.+}} {
// CHECK-NEXT: %[[FROM:.+]] = memref.load %[[CP]][%{{.+}}] : memref<64xf32>
// CHECK: scf.for %{{.+}} iter_args(%[[RS:.+]] = %[[FROM]]) -> (f32) {
// CHECK: memref.store %[[RS]], %[[BUF]][%{{.+}}] : memref<64xf32>
// CHECK: math.sin %[[RS]]
// CHECK: %[[B:.+]] = memref.load %[[BUF]][%{{.+}}] : memref<64xf32>
// CHECK: %[[ST:.+]] = scf.for %{{.+}} iter_args(%{{.+}} = %[[B]]) -> (f32) {
// CHECK: math.sin %[[ST]]
// CHECK: math.cos %[[ST]]
// CHECK: return

// -----

// An accumulator over t of (t - x) / sqrt(t - x): the body follows from the
// induction variable and x, so the reverse computes sqrt and the division
// again instead of taping them: no tape, no checkpoint (the carried sum is
// used only by an addition).
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @acc(%x: f32, %n: index) -> f32 attributes {diffgpu.target = #host} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f32
  %r = scf.for %t = %c0 to %n step %c1 iter_args(%s = %z) -> (f32) {
    %ti = arith.index_cast %t : index to i64
    %tf = arith.sitofp %ti : i64 to f32
    %d = arith.subf %tf, %x : f32
    %q = math.sqrt %d : f32
    %v = arith.divf %d, %q : f32
    %a = arith.addf %s, %v : f32
    scf.yield %a : f32
  }
  return %r : f32
}
func.func @k_acc(%d: f32, %x0: f32, %n: index) attributes {diffgpu.kernel, diffgpu.target = #host} {
  %g:1 = "diffgpu.autodiff"(%d, %x0, %n) {callee = @acc, activity = ["active", "const"], diffgpu.target = #host, groups = array<i32: 1, 1>, operandSegmentSizes = array<i32: 2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f32, f32, index) -> (f32)
  return
}
// CHECK-LABEL: func.func @__dg_rev_acc_
// CHECK-NOT: memref<1xmemref<?xi64>>
// CHECK-NOT: memref<64x
// CHECK: scf.for
// CHECK: math.sqrt
// CHECK: scf.for %[[K:.+]] = %{{.+}} iter_args(%[[DS:.+]] = %{{.+}}) -> (f32) {
// CHECK: %[[TF:.+]] = arith.sitofp %{{.+}} : i64 to f32
// CHECK-NEXT: %[[DX:.+]] = arith.subf %[[TF]], %{{.+}} : f32
// CHECK-NEXT: %[[Q:.+]] = math.sqrt %[[DX]] : f32
// CHECK-NEXT: %[[V:.+]] = arith.divf %[[DX]], %[[Q]] : f32
// CHECK: scf.yield %[[DS]] : f32
// CHECK: return

// Second order through a loop: @g computes df/dx by reverse mode, and @g is
// differentiated again. The inner derivative's tape words are tagged at both
// ends (push and pop carry the same number), so the outer derivative knows a
// popped value is the pushed one: in reverse mode the adjoint of the pop goes
// onto a tape of adjoints (16 words before it grows) and comes back at the
// push; in forward mode the tangent of the push goes onto a tape of tangents
// and comes back at the pop. Without the tags, d(df/dx)/dx came out as zero.
// (Checkpoints off: the tape of a loop is what this file is about; with
// them the loop keeps checkpoints instead: autodiff/checkpoint.mlir.)
// RUN: env DIFFGPU_CHECKPOINTS=0 diffgpu-opt %s --split-input-file --diffgpu-autodiff | FileCheck %s

#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">

// f(x) = x^(n+1) by a loop; g = df/dx, by reverse mode
func.func @f(%x: f64, %n: index) -> f64 attributes {diffgpu.target = #host} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%s = %x) -> (f64) {
    %t = arith.mulf %s, %x : f64
    scf.yield %t : f64
  }
  return %r : f64
}
func.func @g(%x: f64, %n: index) -> f64 attributes {diffgpu.target = #host} {
  %one = arith.constant 1.0 : f64
  %d = "diffgpu.autodiff"(%one, %x, %n) {callee = @f, activity = ["active", "const"], diffgpu.target = #host, groups = array<i32: 1, 1>, operandSegmentSizes = array<i32: 2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64, index) -> f64
  return %d : f64
}
func.func @k(%x: f64, %n: index, %seed: f64) attributes {diffgpu.kernel, diffgpu.target = #host} {
  %h = "diffgpu.autodiff"(%seed, %x, %n) {callee = @g, activity = ["active", "const"], diffgpu.target = #host, groups = array<i32: 1, 1>, operandSegmentSizes = array<i32: 2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64, index) -> f64
  return
}
// CHECK-LABEL: func.func @__dg_rev_g_
// CHECK: memref.alloca() : memref<16xi64>
// the inner forward loop (inlined) pushes the loop-carried value
// CHECK: scf.for
// CHECK: arith.bitcast %{{.+}} {diffgpu.tape_push = [[IN:[0-9]+]] : i64} : f64 to i64
// the inner reverse loop pops it
// CHECK: arith.bitcast %{{.+}} {diffgpu.tape_pop = [[IN]] : i64} : i64 to f64
// the outer reverse of the inner reverse loop (after popping its own two
// words) pushes the popped value's adjoint ...
// CHECK: scf.for
// CHECK: diffgpu.tape_pop =
// CHECK: diffgpu.tape_pop =
// CHECK: arith.bitcast %{{.+}} {diffgpu.tape_push = [[ADJ:[0-9]+]] : i64} : f64 to i64
// ... which the outer reverse of the inner forward loop pops
// CHECK: scf.for
// CHECK: diffgpu.tape_pop =
// CHECK: arith.bitcast %{{.+}} {diffgpu.tape_pop = [[ADJ]] : i64} : i64 to f64
// CHECK: return

// -----

#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">

// f(x) = x^(n+1) by a loop; g = df/dx, by reverse mode
func.func @f(%x: f64, %n: index) -> f64 attributes {diffgpu.target = #host} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%s = %x) -> (f64) {
    %t = arith.mulf %s, %x : f64
    scf.yield %t : f64
  }
  return %r : f64
}
func.func @g(%x: f64, %n: index) -> f64 attributes {diffgpu.target = #host} {
  %one = arith.constant 1.0 : f64
  %d = "diffgpu.autodiff"(%one, %x, %n) {callee = @f, activity = ["active", "const"], diffgpu.target = #host, groups = array<i32: 1, 1>, operandSegmentSizes = array<i32: 2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64, index) -> f64
  return %d : f64
}
func.func @k(%x: f64, %n: index, %seed: f64) attributes {diffgpu.kernel, diffgpu.target = #host} {
  %h = "diffgpu.fwddiff"(%x, %seed, %n) {callee = @g, activity = ["dup", "const"], diffgpu.target = #host, groups = array<i32: 2, 1>, operandSegmentSizes = array<i32: 2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64, index) -> f64
  return
}
// CHECK-LABEL: func.func @__dg_fwd_g_
// CHECK: memref.alloca() : memref<16xi64>
// CHECK: scf.for
// CHECK: arith.bitcast %{{.+}} {diffgpu.tape_push = [[IN:[0-9]+]] : i64} : f64 to i64
// the tangent of the pushed value follows on the tape of tangents
// CHECK-NEXT: arith.bitcast %{{.+}} {diffgpu.tape_push = [[TAN:[0-9]+]] : i64} : f64 to i64
// CHECK: arith.bitcast %{{.+}} {diffgpu.tape_pop = [[IN]] : i64} : i64 to f64
// CHECK: arith.bitcast %{{.+}} {diffgpu.tape_pop = [[TAN]] : i64} : i64 to f64
// CHECK: return

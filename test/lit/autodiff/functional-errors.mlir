// The functional kinds `cot` / `grad` are checked: an array they do not fit is
// an error at the offending op, never a wrong gradient.
// RUN: diffgpu-opt %s --split-input-file --diffgpu-autodiff --verify-diagnostics

!A = memref<?xf32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">

// 'cot' is for outputs: y is also read here.
func.func @f(%y: !A) attributes {diffgpu.target = #host} {
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  // expected-error@+1 {{argument 0 is 'cot' but 'memref.load' uses it (only stores, or only atomic adds, are allowed)}}
  %v = memref.load %y[%t] : !A
  %p = arith.mulf %v, %v : f32
  memref.store %p, %y[%t] : !A
  return
}
func.func @k(%y: !A, %dy: !A) attributes {diffgpu.kernel, diffgpu.target = #host} {
  "diffgpu.autodiff"(%y, %dy) {callee = @f, activity = ["cot"], diffgpu.target = #host, groups = array<i32: 2>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (!A, !A) -> ()
  return
}

// -----

!A = memref<?xf32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">

// 'cot' needs one store at a thread-unique index: thread_id alone is not one.
func.func @f(%y: !A, %x: !A) attributes {diffgpu.target = #host} {
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %v = memref.load %x[%t] : !A
  // expected-error@+1 {{argument 0 is 'cot' but its stores are neither stored once (outside loops, at one thread-unique index of global ids and constants, no two on one path) nor rows `c * gid + k` that no two threads share (nor stores at distinct constant offsets of global ids)}}
  memref.store %v, %y[%t] : !A
  return
}
func.func @k(%y: !A, %dy: !A, %x: !A, %dx: !A) attributes {diffgpu.kernel, diffgpu.target = #host} {
  "diffgpu.autodiff"(%y, %dy, %x, %dx) {callee = @f, activity = ["cot", "dup"], diffgpu.target = #host, groups = array<i32: 2, 2>, operandSegmentSizes = array<i32: 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (!A, !A, !A, !A) -> ()
  return
}

// -----

!A = memref<?xf32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">

// Rows must not overlap: out[2i + d] for d in range(4) is written by threads
// i and i + 1 alike (offsets 0..3 span more than the stride 2).
func.func @f(%y: !A, %x: !A) attributes {diffgpu.target = #host} {
  %b = "diffgpu.block_id"() {dim = 0 : i64} : () -> index
  %n = "diffgpu.block_dim"() {dim = 0 : i64} : () -> index
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %m = arith.muli %b, %n : index
  %i = arith.addi %m, %t : index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %base = arith.muli %i, %c2 : index
  %v = memref.load %x[%i] : !A
  scf.for %d = %c0 to %c4 step %c1 {
    %j = arith.addi %base, %d : index
    // expected-error@+1 {{argument 0 is 'cot' but its stores are neither stored once (outside loops, at one thread-unique index of global ids and constants, no two on one path) nor rows `c * gid + k` that no two threads share (nor stores at distinct constant offsets of global ids)}}
    memref.store %v, %y[%j] : !A
  }
  return
}
func.func @k(%y: !A, %dy: !A, %x: !A, %dx: !A) attributes {diffgpu.kernel, diffgpu.target = #host} {
  "diffgpu.autodiff"(%y, %dy, %x, %dx) {callee = @f, activity = ["cot", "dup"], diffgpu.target = #host, groups = array<i32: 2, 2>, operandSegmentSizes = array<i32: 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (!A, !A, !A, !A) -> ()
  return
}

// -----

!A = memref<?xf32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">

// 'grad' of x read at x[i] and x[i + 1]: not one global-id index, and no gather
// either, since y is 'dup' (its reverse reads and zeroes dy). The same stencil
// with y 'cot' is transposed into a gather: functional-stencil.mlir.
// expected-error@+1 {{argument 1 is 'grad' but its loads are not all at one index made of global ids, nor a 1-D stencil whose adjoint transposes into a gather}}
func.func @f(%y: !A, %x: !A) attributes {diffgpu.target = #host} {
  %b = "diffgpu.block_id"() {dim = 0 : i64} : () -> index
  %n = "diffgpu.block_dim"() {dim = 0 : i64} : () -> index
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %m = arith.muli %b, %n : index
  %i = arith.addi %m, %t : index
  %c1 = arith.constant 1 : index
  %j = arith.addi %i, %c1 : index
  %u = memref.load %x[%i] : !A
  %v = memref.load %x[%j] : !A
  %p = arith.mulf %u, %v : f32
  memref.store %p, %y[%i] : !A
  return
}
func.func @k(%y: !A, %dy: !A, %x: !A, %dx: !A) attributes {diffgpu.kernel, diffgpu.target = #host} {
  "diffgpu.autodiff"(%y, %dy, %x, %dx) {callee = @f, activity = ["dup", "grad"], diffgpu.target = #host, groups = array<i32: 2, 2>, operandSegmentSizes = array<i32: 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (!A, !A, !A, !A) -> ()
  return
}

// -----

!A = memref<?xf32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">

// The functional kinds are reverse mode only.
func.func @f(%y: !A) attributes {diffgpu.target = #host} {
  return
}
func.func @k(%y: !A, %dy: !A) attributes {diffgpu.kernel, diffgpu.target = #host} {
  // expected-error@+1 {{argument 0 of @f: 'cot' is for arrays in reverse mode (dg.vjp)}}
  "diffgpu.fwddiff"(%y, %dy) {callee = @f, activity = ["cot"], diffgpu.target = #host, groups = array<i32: 2>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (!A, !A) -> ()
  return
}

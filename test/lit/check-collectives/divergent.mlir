// RUN: diffgpu-opt %s -p 'diffgpu-check-collectives' --split-input-file --verify-diagnostics | FileCheck %s

!A = memref<?xf32>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">

// A collective under a condition computed from the thread id is an error at
// the collective, naming the builtin the user wrote.
func.func @branch(%A: !A) attributes {diffgpu.kernel, diffgpu.target = #host} {
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %c16 = arith.constant 16 : index
  %c = arith.cmpi slt, %t, %c16 : index
  %x = memref.load %A[%t] : !A
  scf.if %c {
    // expected-error @+1 {{dg.warp_sum under a condition that depends on the thread id}}
    %r = "diffgpu.warp_reduce"(%x) {kind = "sum"} : (f32) -> f32
    memref.store %r, %A[%t] : !A
  }
  return
}

// -----

!A = memref<?xf32>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">

// In a loop whose trip count depends on the thread id: an error; a call of a
// device function reaching a shuffle under such a branch: an error at the call.
func.func @dev(%x: f32) -> f32 attributes {diffgpu.target = #host} {
  %k = arith.constant 1 : i32
  %r = "diffgpu.shuffle"(%x, %k) {mode = "xor"} : (f32, i32) -> f32
  return %r : f32
}
func.func @loop(%A: !A) attributes {diffgpu.kernel, diffgpu.target = #host} {
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %x = memref.load %A[%t] : !A
  scf.for %i = %c0 to %t step %c1 {
    // expected-error @+1 {{dg.block_scan in a loop whose trip count depends on the thread id}}
    %r = "diffgpu.block_scan"(%x) {reverse = false} : (f32) -> f32
    memref.store %r, %A[%i] : !A
  }
  %c = arith.cmpi eq, %t, %c0 : index
  scf.if %c {
    // expected-error @+1 {{this call reaches dg.shfl_xor}}
    %r = func.call @dev(%x) : (f32) -> f32
    memref.store %r, %A[%t] : !A
  }
  return
}

// -----

!A = memref<?xf32>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">

// Uniform control flow is fine: a branch on a kernel argument, a loop with
// constant bounds; the IR is unchanged.
// CHECK-LABEL: func.func @uniform
// CHECK: scf.if
// CHECK: "diffgpu.block_reduce"
// CHECK: scf.for
// CHECK: "diffgpu.warp_reduce"
func.func @uniform(%A: !A, %on: i1) attributes {diffgpu.kernel, diffgpu.target = #host} {
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %x = memref.load %A[%t] : !A
  scf.if %on {
    %r = "diffgpu.block_reduce"(%x) {kind = "max"} : (f32) -> f32
    memref.store %r, %A[%t] : !A
  }
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.for %i = %c0 to %c4 step %c1 {
    %r = "diffgpu.warp_reduce"(%x) {kind = "min"} : (f32) -> f32
    memref.store %r, %A[%t] : !A
  }
  return
}

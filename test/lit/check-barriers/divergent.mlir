// RUN: diffgpu-opt %s -p 'diffgpu-check-barriers' --split-input-file --verify-diagnostics | FileCheck %s

// A barrier under a condition computed from the thread id, or in a loop whose
// trip count is, is an error at the barrier; one in a device function is
// checked with the divergence of the arguments of each call, and a call
// reaching a barrier under such a condition is an error at the call.
func.func @branch(%A: memref<?xf32>) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %c16 = arith.constant 16 : index
  %c = arith.cmpi slt, %t, %c16 : index
  scf.if %c {
    // expected-error @+1 {{dg.syncthreads() under a condition that depends on the thread id}}
    "diffgpu.barrier"() : () -> ()
  }
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %k = %c0 to %t step %c1 {
    // expected-error @+1 {{dg.syncthreads() in a loop whose trip count depends on the thread id}}
    "diffgpu.barrier"() : () -> ()
  }
  return
}

// -----

// The trip count of a while loop whose counter is carried from the thread id.
func.func @carried(%A: memref<?xf32>) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %r = scf.while (%i = %t) : (index) -> index {
    %go = arith.cmpi slt, %i, %c8 : index
    scf.condition(%go) %i : index
  } do {
  ^bb0(%i: index):
    // expected-error @+1 {{in a loop whose trip count depends on the thread id}}
    "diffgpu.barrier"() : () -> ()
    %n = arith.addi %i, %c1 : index
    scf.yield %n : index
  }
  return
}

// -----

// A value carried out of a uniform loop from the thread id (the thread id
// itself when the loop runs no iteration).
func.func @carried_out(%A: memref<?xf32>, %n: index) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %k = %c0 to %n step %c1 iter_args(%a = %t) -> (index) {
    scf.yield %c1 : index
  }
  %z = arith.cmpi eq, %r, %c0 : index
  scf.if %z {
    // expected-error @+1 {{under a condition that depends on the thread id}}
    "diffgpu.barrier"() : () -> ()
  }
  return
}

// -----

func.func @sync_if(%x: index) attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %c16 = arith.constant 16 : index
  %c = arith.cmpi slt, %x, %c16 : index
  scf.if %c {
    // expected-error @+1 {{dg.syncthreads() under a condition that depends on the thread id}}
    "diffgpu.barrier"() : () -> ()
  }
  return
}
func.func @sync() attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  "diffgpu.barrier"() : () -> ()
  return
}
func.func @calls(%A: memref<?xf32>) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %c3 = arith.constant 3 : index
  func.call @sync_if(%c3) : (index) -> ()
  func.call @sync_if(%t) : (index) -> ()
  %c = arith.cmpi eq, %t, %c3 : index
  scf.if %c {
    // expected-error @+1 {{this call reaches dg.syncthreads() (at}}
    func.call @sync() : () -> ()
  }
  return
}

// -----

// Uniform control passes: constants, kernel arguments, block ids, a counter
// carried from a constant (`stride //= 2`), and loaded values (checked at
// run time by the race check, not here).
// CHECK-LABEL: func.func @uniform
// CHECK-COUNT-5: "diffgpu.barrier"
func.func @uniform(%A: memref<?xf32>, %n: index) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %b = "diffgpu.block_id"() {dim = 0 : i64} : () -> index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  scf.for %k = %c0 to %n step %c1 {
    "diffgpu.barrier"() : () -> ()
  }
  %r = scf.while (%s = %c4) : (index) -> index {
    %go = arith.cmpi sgt, %s, %c0 : index
    scf.condition(%go) %s : index
  } do {
  ^bb0(%s: index):
    %in = arith.cmpi slt, %t, %s : index
    scf.if %in {
      %v = memref.load %A[%t] : memref<?xf32>
      memref.store %v, %A[%s] : memref<?xf32>
    }
    "diffgpu.barrier"() : () -> ()
    %h = arith.divui %s, %c2 : index
    scf.yield %h : index
  }
  %first = arith.cmpi eq, %b, %c0 : index
  scf.if %first {
    "diffgpu.barrier"() : () -> ()
  }
  %v = memref.load %A[%t] : memref<?xf32>
  %z = arith.constant 0.0 : f32
  %pos = arith.cmpf ogt, %v, %z : f32
  scf.if %pos {
    "diffgpu.barrier"() : () -> ()
  }
  "diffgpu.barrier"() : () -> ()
  return
}

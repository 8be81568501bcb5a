// RUN: diffgpu-opt %s --split-input-file --verify-diagnostics --diffgpu-lower-to-host

// A barrier in a region op other than scf.if/for/while cannot be split into
// phases: a clear error, never a wrong result.
func.func @k(%A: memref<?xf32, strided<[?], offset: ?>>)
    attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  scf.execute_region {
    // expected-error @+1 {{barrier inside 'scf.execute_region' is not supported on the host target}}
    "diffgpu.barrier"() : () -> ()
    scf.yield
  }
  return
}

// -----

// A recursive function with a barrier cannot be inlined into the kernel.
func.func @f() attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  "diffgpu.barrier"() : () -> ()
  func.call @f() : () -> ()
  return
}
// expected-error @+1 {{calls reaching barriers in '@k' nest too deeply (recursion?) to be inlined on the host target}}
func.func @k() attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  func.call @f() : () -> ()
  return
}

// -----

// diffgpu.autodiff must have been lowered by diffgpu-autodiff first.
func.func @f(%x: f32) -> f32 attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  return %x : f32
}
func.func @k(%x: f32) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %one = arith.constant 1.0 : f32
  // expected-error @+1 {{'diffgpu.autodiff' must be lowered by diffgpu-autodiff before diffgpu-lower-to-host}}
  %g = "diffgpu.autodiff"(%one, %x) {callee = @f, activity = ["active"], diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">, groups = array<i32: 1>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f32, f32) -> f32
  return
}

// -----

// Shared memory only in kernels.
func.func @f() attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  // expected-error @+1 {{diffgpu.shared_alloc must be in a kernel on the host target}}
  %s = "diffgpu.shared_alloc"() : () -> memref<4xf32, #gpu.address_space<workgroup>>
  return
}

// -----

// Only scalars and memrefs can be kept across a barrier.
func.func @k(%A: memref<?xf32, strided<[?], offset: ?>>, %f: f32)
    attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  // expected-error @+1 {{a value of type vector<4xf32> is live across a barrier; only scalars and memrefs may be on the host target}}
  %v = vector.broadcast %f : f32 to vector<4xf32>
  "diffgpu.barrier"() : () -> ()
  %e = vector.extract %v[0] : f32 from vector<4xf32>
  return
}

// -----

// A geometry op needs dim 0, 1 or 2.
func.func @k() attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  // expected-error @+1 {{'diffgpu.thread_id' needs a dim attribute of 0, 1 or 2}}
  %t = "diffgpu.thread_id"() {dim = 3 : i64} : () -> index
  return
}

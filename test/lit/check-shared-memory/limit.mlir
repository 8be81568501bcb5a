// RUN: diffgpu-opt %s -p 'diffgpu-to-gpu{chip=sm_90}' --split-input-file --verify-diagnostics | FileCheck %s

// The kernel's own shared array (32000 bytes) fits, but differentiating it
// adds a shadow of the same size: 64000 bytes, an error at the shadow, whose
// location is the autodiff op's.
func.func @one(%A: memref<?xf64, strided<[?], offset: ?>>) attributes {diffgpu.kernel, diffgpu.target = #nvvm.target<chip = "sm_90">} {
  %s = "diffgpu.shared_alloc"() : () -> memref<4000xf64, #gpu.address_space<workgroup>>
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %v = memref.load %A[%t] : memref<?xf64, strided<[?], offset: ?>>
  %w = arith.mulf %v, %v : f64
  memref.store %w, %s[%t] : memref<4000xf64, #gpu.address_space<workgroup>>
  "diffgpu.barrier"() : () -> ()
  %r = memref.load %s[%t] : memref<4000xf64, #gpu.address_space<workgroup>>
  memref.store %r, %A[%t] : memref<?xf64, strided<[?], offset: ?>>
  return
}
func.func @gone(%A: memref<?xf64, strided<[?], offset: ?>>, %dA: memref<?xf64, strided<[?], offset: ?>>) attributes {diffgpu.kernel, diffgpu.target = #nvvm.target<chip = "sm_90">} {
  // expected-error @+1 {{kernel @gone needs 64000 bytes of static shared memory, more than the 49152 bytes (48 KiB) a block can have on NVIDIA GPUs: 32000 bytes at line 19:3, 32000 bytes at line 19:3}}
  "diffgpu.autodiff"(%A, %dA) {activity = ["dup"], callee = @one, diffgpu.target = #nvvm.target<chip = "sm_90">, groups = array<i32: 2>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (memref<?xf64, strided<[?], offset: ?>>, memref<?xf64, strided<[?], offset: ?>>) -> ()
  return
}

// -----

// Two shared arrays of 24576 bytes: exactly 48 KiB, which fits.
// CHECK-LABEL: gpu.func @at_limit
// CHECK-SAME: workgroup(%[[A:.+]] : memref<6144xf32, #gpu.address_space<workgroup>>, %[[B:.+]] : memref<6144xf32, #gpu.address_space<workgroup>>)
func.func @at_limit(%A: memref<?xf32, strided<[?], offset: ?>>) attributes {diffgpu.kernel, diffgpu.target = #nvvm.target<chip = "sm_90">} {
  %s = "diffgpu.shared_alloc"() : () -> memref<6144xf32, #gpu.address_space<workgroup>>
  %u = "diffgpu.shared_alloc"() : () -> memref<6144xf32, #gpu.address_space<workgroup>>
  %c0 = arith.constant 0 : index
  %v = memref.load %A[%c0] : memref<?xf32, strided<[?], offset: ?>>
  memref.store %v, %s[%c0] : memref<6144xf32, #gpu.address_space<workgroup>>
  memref.store %v, %u[%c0] : memref<6144xf32, #gpu.address_space<workgroup>>
  return
}

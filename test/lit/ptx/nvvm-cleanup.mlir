// RUN: diffgpu-opt %s -p 'diffgpu-to-nvvm{chip=sm_90}' | FileCheck %s --check-prefix=NVVM
// RUN: diffgpu-opt %s -p 'diffgpu-to-nvvm{chip=sm_90}' | FileCheck %s --check-prefix=NOWRAP
// RUN: %if nvptx %{ diffgpu-opt %s -p 'diffgpu-to-ptx{chip=sm_90}' --emit=ptx | FileCheck %s --check-prefix=PTX %}

// diffgpu-nvvm-cleanup (in diffgpu-to-nvvm / diffgpu-to-ptx): the device
// function gets internal linkage and its C wrapper is gone, the f32 sqrt is
// LLVM's correctly rounded intrinsic instead of libdevice's approximation
// (the f64 one stays libdevice's, which is sqrt.rn.f64 already). In the PTX
// only the kernel is left: the device function was inlined and dropped.
// No `nuw` flag is left on the index arithmetic (strides may be negative).

// NOWRAP: llvm.mul
// NOWRAP-NOT: nuw
// NOWRAP: llvm.getelementptr
// NOWRAP-NOT: nuw

// NVVM-LABEL: gpu.module @diffgpu_sm_90
// NVVM-NOT: _mlir_ciface_
// NVVM: llvm.func internal @f(%[[X:.+]]: f32, %[[D:.+]]: f64) -> f32
// NVVM: %[[S:.+]] = llvm.intr.sqrt(%[[X]]) : (f32) -> f32
// NVVM: llvm.call @__nv_sqrt(%[[D]]) : (f64) -> f64
// NVVM: llvm.func @k(
// NVVM-SAME: gpu.kernel
// NVVM-NOT: _mlir_ciface_

// PTX-NOT: .func
// PTX-LABEL: .visible .entry k(
// PTX: sqrt.rn.f32
// PTX: sqrt.rn.f64
// PTX-NOT: .func

func.func @f(%x: f32, %d: f64) -> f32 attributes {diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  %s = math.sqrt %x : f32
  %e = math.sqrt %d : f64
  %t = arith.truncf %e : f64 to f32
  %r = arith.addf %s, %t : f32
  return %r : f32
}
func.func @k(%A: memref<?xf32, strided<[?], offset: ?>>, %B: memref<?xf64, strided<[?], offset: ?>>, %i: index) attributes {diffgpu.kernel, diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  %x = memref.load %A[%i] : memref<?xf32, strided<[?], offset: ?>>
  %d = memref.load %B[%i] : memref<?xf64, strided<[?], offset: ?>>
  %y = func.call @f(%x, %d) : (f32, f64) -> f32
  memref.store %y, %A[%i] : memref<?xf32, strided<[?], offset: ?>>
  return
}

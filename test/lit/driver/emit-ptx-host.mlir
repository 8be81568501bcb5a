// A module whose kernels all target the host, run through a GPU pipeline,
// fails (exit 1) at the kernel saying why no gpu.module was built: the kernel
// targets the host (host kernels beside GPU ones stay, test_to_gpu.py). Here the kernel holds no diffgpu op (like a host kernel
// whose dg.autodiff was already expanded), so nothing else would catch it;
// its helper @sq is not reported on its own. Without a pipeline, --emit=ptx
// names the host kernels too, instead of suggesting the GPU pipeline.
// RUN: not diffgpu-opt %s -p 'diffgpu-to-ptx{chip=sm_90}' --emit=ptx 2>&1 | FileCheck %s --check-prefix=PTX --implicit-check-not=error:
// RUN: not diffgpu-opt %s -p 'diffgpu-to-nvvm{chip=sm_90}' 2>&1 | FileCheck %s --check-prefix=NVVM --implicit-check-not=error:
// RUN: not diffgpu-opt %s --emit=ptx 2>&1 | FileCheck %s --check-prefix=EMIT --implicit-check-not=Traceback
// RUN: diffgpu-opt %s -p diffgpu-to-host --emit=llvm | FileCheck %s --check-prefix=HOST

// PTX: emit-ptx-host.mlir:[[# @LINE + 8]]:1: error: diffgpu-to-ptx produced no gpu.module: it lowers GPU targets, but kernel @k targets the host (#llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">): build the IR for a GPU chip (kernel.ir(..., target="sm_90")), or lower it with diffgpu-to-host
// NVVM: emit-ptx-host.mlir:[[# @LINE + 7]]:1: error: diffgpu-to-nvvm produced no gpu.module: it lowers GPU targets, but kernel @k targets the host
// EMIT: error: --emit=ptx: the module holds no gpu.binary, and its kernels (@k) target the host, which no GPU pipeline lowers: build the IR for a GPU chip, or use -p diffgpu-to-host --emit=llvm
// HOST: define {{.*}} @k(
func.func @sq(%x: f64) -> f64 attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %y = arith.mulf %x, %x : f64
  return %y : f64
}
func.func @k(%A: memref<?xf64, strided<[?], offset: ?>>) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %c0 = arith.constant 0 : index
  %v = memref.load %A[%c0] : memref<?xf64, strided<[?], offset: ?>>
  %w = func.call @sq(%v) : (f64) -> f64
  memref.store %w, %A[%c0] : memref<?xf64, strided<[?], offset: ?>>
  return
}

// REQUIRES: nvptx
// --emit=ptx prints the PTX held by the gpu.binary that diffgpu-to-ptx
// builds (pipeline given as -p or as a flag with options); the kernel is a
// PTX .entry of the chip's target.
// RUN: diffgpu-opt %s -p 'diffgpu-to-ptx{chip=sm_90}' --emit=ptx | FileCheck %s
// RUN: diffgpu-opt %s --diffgpu-to-ptx="chip=sm_90" --emit=ptx -o %t.ptx
// RUN: FileCheck %s < %t.ptx
// A cubin holds no PTX: a clear error, not garbage.
// RUN: not diffgpu-opt %s -p 'diffgpu-to-nvvm{chip=sm_90},gpu-module-to-binary{format=bin}' --emit=ptx 2>&1 | FileCheck %s --check-prefix=CUBIN --implicit-check-not=Traceback

// CHECK: .target sm_90
// CHECK: .visible .entry sq(
// CHECK: mul.rn.f32
// CHECK: ret;
// CUBIN: error: --emit=ptx: the gpu.binary ops hold no PTX (only cubin)
func.func @sq(%A: memref<?xf32, strided<[?], offset: ?>>) attributes {diffgpu.kernel, diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %a = memref.load %A[%t] : memref<?xf32, strided<[?], offset: ?>>
  %b = arith.mulf %a, %a : f32
  memref.store %b, %A[%t] : memref<?xf32, strided<[?], offset: ?>>
  return
}

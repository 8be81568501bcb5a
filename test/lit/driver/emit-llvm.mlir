// REQUIRES: nvptx
// --emit=llvm prints LLVM IR: of the gpu.module after the NVVM lowering, of
// LLVM bitcode in a gpu.binary (format=llvm), and of a host module lowered to
// the LLVM dialect.
// RUN: diffgpu-opt %s --diffgpu-to-nvvm=chip=sm_90 --emit=llvm | FileCheck %s --check-prefix=NVVM
// RUN: diffgpu-opt %s -p 'diffgpu-to-nvvm{chip=sm_90},gpu-module-to-binary{format=llvm}' --emit=llvm | FileCheck %s --check-prefix=BITCODE
// RUN: sed -e 's/#nvvm.target<O = 3, chip = "sm_90">/#llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">/' %s \
// RUN:   | diffgpu-opt - -p diffgpu-to-host --emit=llvm | FileCheck %s --check-prefix=HOST

// NVVM: ; gpu.module @{{.+}}
// NVVM: define ptx_kernel void @sq(
// NVVM: call {{.*}}i32 @llvm.nvvm.read.ptx.sreg.tid.x()
// NVVM: fmul float
// BITCODE: target triple = "nvptx64-nvidia-cuda"
// BITCODE: define ptx_kernel void @sq(
// HOST-DAG: fmul float
// HOST-DAG: define void @_mlir_ciface_sq(
func.func @sq(%A: memref<?xf32, strided<[?], offset: ?>>) attributes {diffgpu.kernel, diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %a = memref.load %A[%t] : memref<?xf32, strided<[?], offset: ?>>
  %b = arith.mulf %a, %a : f32
  memref.store %b, %A[%t] : memref<?xf32, strided<[?], offset: ?>>
  return
}

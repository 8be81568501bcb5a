// RUN: not diffgpu-opt %s -p 'diffgpu-to-ptx{chip=sm_80}' --emit=ptx 2>&1 | FileCheck %s --check-prefix=MISMATCH
// RUN: not diffgpu-opt %s -p 'diffgpu-to-ptx{chip=sm_99}' --emit=ptx 2>&1 | FileCheck %s --check-prefix=BADCHIP
// RUN: not diffgpu-opt %s -p 'diffgpu-to-ptx{arch=sm_90}' 2>&1 | FileCheck %s --check-prefix=BADOPT
// RUN: not diffgpu-opt %s -p 'diffgpu-to-nvvm,gpu-module-to-binary{format=ptx}' 2>&1 | FileCheck %s --check-prefix=BADFORMAT
// RUN: not diffgpu-opt %s -p 'nvvm-attach-target{chip=sm_91}' 2>&1 | FileCheck %s --check-prefix=ATTACH
// RUN: not diffgpu-opt %s -p 'nvvm-attach-target{O=4}' 2>&1 | FileCheck %s --check-prefix=ATTACH-O

// The pipeline's chip checks the kernels' targets, it never replaces them: a
// kernel for sm_90 compiled with chip=sm_80 is an error naming the kernel. A
// chip or option MLIR does not know is an option error before MLIR runs
// (MLIR would abort the process on some of them).

// MISMATCH: chip-errors.mlir:[[@LINE+6]]:1: error: kernel '@k' targets sm_90 but the pipeline compiles for sm_80
// BADCHIP: error: {{.*}}unknown NVIDIA chip 'sm_99'
// BADOPT: error: 'diffgpu-to-ptx' has no option 'arch' (options: chip)
// BADFORMAT: error: gpu-module-to-binary: unknown format 'ptx'
// ATTACH: error: nvvm-attach-target: unknown NVIDIA chip 'sm_91'
// ATTACH-O: error: nvvm-attach-target: O must be 0, 1, 2 or 3, got '4'
func.func @k(%A: memref<?xf32, strided<[?], offset: ?>>) attributes {diffgpu.kernel, diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  return
}

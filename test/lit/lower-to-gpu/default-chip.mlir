// RUN: diffgpu-opt %s --diffgpu-lower-to-gpu=chip=sm_50 | FileCheck %s

// MLIR prints #nvvm.target without its defaults: chip "sm_50" vanishes from
// the text (#nvvm.target<O = 3>), and the module is still named after it.

// CHECK: gpu.module @diffgpu_sm_50 [#nvvm.target<O = 3>]
// CHECK-NEXT: gpu.func @k
func.func @k() attributes {diffgpu.kernel, diffgpu.target = #nvvm.target<O = 3, chip = "sm_50">} {
  return
}

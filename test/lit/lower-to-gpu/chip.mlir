// RUN: diffgpu-opt %s --verify-diagnostics --diffgpu-lower-to-gpu=chip=sm_90
// RUN: not diffgpu-opt %s --diffgpu-lower-to-gpu=chip=sm_12 2>&1 | FileCheck %s --check-prefix=BAD

// With `chip` set, every GPU function must target that chip: the option
// checks, it never supplies a target. A bad chip is an option error.

// BAD: unknown NVIDIA chip 'sm_12'

func.func private @f() attributes {diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  return
}
// expected-error @+1 {{kernel '@k80' targets sm_80 but the pipeline compiles for sm_90}}
func.func @k80() attributes {diffgpu.kernel, diffgpu.target = #nvvm.target<O = 3, chip = "sm_80">} {
  return
}
func.func @k90() attributes {diffgpu.kernel, diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  func.call @f() : () -> ()
  return
}

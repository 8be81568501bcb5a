// RUN: diffgpu-opt %s --split-input-file --diffgpu-verify-targets | FileCheck %s

// One target throughout: kernel, device function, autodiff op; the pass
// changes nothing.
// CHECK-LABEL: func.func @f
// CHECK-LABEL: func.func @k
// CHECK: %[[G:.+]] = "diffgpu.autodiff"(%{{.+}}) {activity = ["active"], callee = @f, diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">
// CHECK: %{{.+}} = call @f(%{{.+}})
func.func @f(%x: f32) -> f32 attributes {diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  %y = arith.mulf %x, %x : f32
  return %y : f32
}
func.func @k(%x: f32) attributes {diffgpu.kernel, diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  %g = "diffgpu.autodiff"(%x) {callee = @f, activity = ["active"], diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">, groups = array<i32: 1>, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f32) -> f32
  %y = func.call @f(%x) : (f32) -> f32
  return
}

// -----

// Several targets in one module are fine as long as no call or autodiff
// crosses between them (the frontend suffixes the host copy: @f__host).
// CHECK-LABEL: func.func @f
// CHECK-SAME: #nvvm.target
// CHECK-LABEL: func.func @f__host
// CHECK-SAME: #llvm.target
// CHECK-LABEL: func.func @k_gpu
// CHECK: call @f(
// CHECK-LABEL: func.func @k_host
// CHECK: call @f__host(
func.func @f(%x: f32) -> f32 attributes {diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  return %x : f32
}
func.func @f__host(%x: f32) -> f32 attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  return %x : f32
}
func.func @k_gpu(%x: f32) attributes {diffgpu.kernel, diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  %y = func.call @f(%x) : (f32) -> f32
  return
}
func.func @k_host(%x: f32) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %y = func.call @f__host(%x) : (f32) -> f32
  return
}

// -----

// Functions in a gpu.module with its target, and external declarations
// (no body, no code) without a target.
// CHECK-LABEL: gpu.module @m
// CHECK: func.func @f() attributes {diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">}
// CHECK: func.func private @expf(f32) -> f32
module attributes {gpu.container_module} {
  gpu.module @m [#nvvm.target<O = 3, chip = "sm_90">] {
    func.func @f() attributes {diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
      return
    }
    func.func private @expf(f32) -> f32
  }
}

// -----

// An #nvvm.target without a chip is MLIR's default, sm_50 (MLIR prints
// sm_50 targets that way), and is accepted.
// CHECK-LABEL: func.func @k50
// CHECK-SAME: diffgpu.target = #nvvm.target<O = 3>
func.func @k50() attributes {diffgpu.kernel, diffgpu.target = #nvvm.target<O = 3>} {
  return
}

// RUN: diffgpu-opt %s --split-input-file --verify-diagnostics --diffgpu-verify-targets

// A kernel without diffgpu.target: nothing may pick a default for it.
// expected-error@below {{'func.func' @k has no diffgpu.target}}
func.func @k() attributes {diffgpu.kernel} {
  return
}

// -----

// A device function without a target, called from a GPU kernel: the missing
// target is reported on the function itself.
// expected-error@below {{'func.func' @f has no diffgpu.target}}
func.func @f(%x: f32) -> f32 {
  return %x : f32
}
func.func @k(%x: f32) attributes {diffgpu.kernel, diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  %y = func.call @f(%x) : (f32) -> f32
  return
}

// -----

// A diffgpu.autodiff without a target, inside a kernel that has one.
func.func @f(%x: f32) -> f32 attributes {diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  %y = arith.mulf %x, %x : f32
  return %y : f32
}
func.func @k(%x: f32) attributes {diffgpu.kernel, diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  %s = arith.constant 1.0 : f32
  // expected-error@+1 {{'diffgpu.autodiff' has no diffgpu.target}}
  %g = "diffgpu.autodiff"(%x) {callee = @f, activity = ["active"], groups = array<i32: 1>, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f32) -> f32
  return
}

// -----

// A diffgpu.fwddiff without a target.
func.func @f(%x: f32) -> f32 attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  return %x : f32
}
func.func @k(%x: f32, %dx: f32) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  // expected-error@+1 {{'diffgpu.fwddiff' has no diffgpu.target}}
  %t = "diffgpu.fwddiff"(%x, %dx) {callee = @f, activity = ["dup"], groups = array<i32: 2>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f32, f32) -> f32
  return
}

// -----

// diffgpu.target must be a target attribute, and a GPU chip must exist
// (LLVM would abort on an unknown one later).
// expected-error@below {{'func.func' @k has diffgpu.target = "sm_90", expected an #nvvm.target or #llvm.target attribute}}
func.func @k() attributes {diffgpu.kernel, diffgpu.target = "sm_90"} {
  return
}
// expected-error@below {{'func.func' @g has target #nvvm.target<O = 3, chip = "sm_999">: unknown NVIDIA chip 'sm_999'}}
func.func @g() attributes {diffgpu.target = #nvvm.target<O = 3, chip = "sm_999">} {
  return
}

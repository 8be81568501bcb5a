// RUN: diffgpu-opt %s --split-input-file --verify-diagnostics --diffgpu-verify-targets

// A GPU kernel calling a host function: a call across targets.
func.func @f(%x: f32) -> f32 attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  return %x : f32
}
func.func @k(%x: f32) attributes {diffgpu.kernel, diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  // expected-error@+1 {{'func.call' to @f crosses targets: caller @k has sm_90 (#nvvm.target<O = 3, chip = "sm_90">), callee @f has host (#llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">)}}
  %y = func.call @f(%x) : (f32) -> f32
  return
}

// -----

// Differentiating a host function inside a GPU kernel (the autodiff op has
// the kernel's target, its callee the host's).
func.func @f(%x: f32) -> f32 attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %y = arith.mulf %x, %x : f32
  return %y : f32
}
func.func @k(%x: f32) attributes {diffgpu.kernel, diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  // expected-error@+1 {{'diffgpu.autodiff' of @f crosses targets: 'diffgpu.autodiff' in @k has sm_90 (#nvvm.target<O = 3, chip = "sm_90">), callee @f has host (#llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">)}}
  %g = "diffgpu.autodiff"(%x) {callee = @f, activity = ["active"], diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">, groups = array<i32: 1>, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f32) -> f32
  return
}

// -----

// Forward mode, the other way round: a host kernel, an sm_90 callee.
func.func @f(%x: f32) -> f32 attributes {diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  return %x : f32
}
func.func @k(%x: f32, %dx: f32) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  // expected-error@+1 {{'diffgpu.fwddiff' of @f crosses targets: 'diffgpu.fwddiff' in @k has host}}
  %t = "diffgpu.fwddiff"(%x, %dx) {callee = @f, activity = ["dup"], diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">, groups = array<i32: 2>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f32, f32) -> f32
  return
}

// -----

// A derivative function called from a derivative function: calls are
// checked wherever they sit, here inside scf.for.
func.func @g(%x: f32) -> f32 attributes {diffgpu.target = #nvvm.target<O = 3, chip = "sm_80">} {
  return %x : f32
}
func.func @f(%x: f32, %n: index) -> f32 attributes {diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%a = %x) -> (f32) {
    // expected-error@+1 {{'func.call' to @g crosses targets: caller @f has sm_90 (#nvvm.target<O = 3, chip = "sm_90">), callee @g has sm_80 (#nvvm.target<O = 3, chip = "sm_80">)}}
    %b = func.call @g(%a) : (f32) -> f32
    scf.yield %b : f32
  }
  return %r : f32
}

// -----

// An autodiff op naming no function of the module.
func.func @k(%x: f32) attributes {diffgpu.kernel, diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  // expected-error@+1 {{'diffgpu.autodiff' refers to unknown function @nope}}
  %g = "diffgpu.autodiff"(%x) {callee = @nope, activity = ["active"], diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">, groups = array<i32: 1>, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f32) -> f32
  return
}

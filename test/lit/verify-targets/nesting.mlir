// RUN: diffgpu-opt %s --split-input-file --verify-diagnostics --diffgpu-verify-targets

// An autodiff op whose own target differs from its kernel's: the Enzyme.jl
// bug (a nested job built for the host inside a GPU kernel) is rejected
// naming both ops and both targets.
func.func @f(%x: f32) -> f32 attributes {diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  return %x : f32
}
func.func @k(%x: f32) attributes {diffgpu.kernel, diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  // expected-error@+2 {{'diffgpu.autodiff' has target host (#llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">) but its parent 'func.func' @k has sm_90 (#nvvm.target<O = 3, chip = "sm_90">)}}
  // expected-error@+1 {{'diffgpu.autodiff' of @f crosses targets: 'diffgpu.autodiff' in @k has host}}
  %g = "diffgpu.autodiff"(%x) {callee = @f, activity = ["active"], diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">, groups = array<i32: 1>, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f32) -> f32
  return
}

// -----

// The same for any op carrying a target inside a region: here an scf.if.
func.func @k(%p: i1) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  // expected-error@+1 {{'scf.if' has target sm_80 (#nvvm.target<O = 3, chip = "sm_80">) but its parent 'func.func' @k has host}}
  scf.if %p {
    scf.yield
  } {diffgpu.target = #nvvm.target<O = 3, chip = "sm_80">}
  return
}

// -----

// Two GPU targets differ too: sm_80 inside sm_90.
func.func @f(%x: f32) -> f32 attributes {diffgpu.target = #nvvm.target<O = 3, chip = "sm_80">} {
  return %x : f32
}
func.func @k(%x: f32, %dx: f32) attributes {diffgpu.kernel, diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  // expected-error@+2 {{'diffgpu.fwddiff' has target sm_80 (#nvvm.target<O = 3, chip = "sm_80">) but its parent 'func.func' @k has sm_90}}
  // expected-error@+1 {{'diffgpu.fwddiff' of @f crosses targets: caller @k has sm_90 (#nvvm.target<O = 3, chip = "sm_90">), callee @f has sm_80}}
  %t = "diffgpu.fwddiff"(%x, %dx) {callee = @f, activity = ["dup"], diffgpu.target = #nvvm.target<O = 3, chip = "sm_80">, groups = array<i32: 2>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f32, f32) -> f32
  return
}

// -----

// A function in a gpu.module must have one of the module's targets.
module attributes {gpu.container_module} {
  gpu.module @m [#nvvm.target<O = 3, chip = "sm_90">] {
    // expected-error@+1 {{'func.func' @f has target host (#llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">) but its 'gpu.module' @m has sm_90 (#nvvm.target<O = 3, chip = "sm_90">)}}
    func.func @f() attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
      return
    }
    // expected-error@+1 {{'gpu.func' @g has target sm_80 (#nvvm.target<O = 3, chip = "sm_80">) but its 'gpu.module' @m has sm_90}}
    gpu.func @g() kernel attributes {diffgpu.target = #nvvm.target<O = 3, chip = "sm_80">} {
      gpu.return
    }
  }
}

// -----

// The default chip is named in messages: sm_50 inside sm_90.
func.func @k() attributes {diffgpu.kernel, diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  // expected-error@+1 {{'scf.execute_region' has target sm_50 (#nvvm.target<O = 3>) but its parent 'func.func' @k has sm_90}}
  scf.execute_region {
    scf.yield
  } {diffgpu.target = #nvvm.target<O = 3>}
  return
}

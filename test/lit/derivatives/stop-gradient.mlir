// dg.stop_gradient (diffgpu.stop_gradient): its value is a constant for
// differentiation (an INACTIVE op: no adjoint for its operand, a zero
// tangent), and diffgpu-autodiff replaces it by its operand at the end.
// RUN: diffgpu-opt %s --split-input-file --diffgpu-autodiff | FileCheck %s

// x * stop_gradient(x): the second factor is a constant, so the adjoint of
// x is d * x alone (one product, no sum of two); the op is gone after the pass
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @half(%x: f64) -> f64 attributes {diffgpu.target = #host} {
  %c = "diffgpu.stop_gradient"(%x) : (f64) -> f64
  %r = arith.mulf %x, %c : f64
  return %r : f64
}
func.func @k_half(%d: f64, %x0: f64) attributes {diffgpu.kernel, diffgpu.target = #host} {
  %g:1 = "diffgpu.autodiff"(%d, %x0) {callee = @half, activity = ["active"], diffgpu.target = #host, groups = array<i32: 1>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64) -> (f64)
  return
}
// CHECK-NOT: diffgpu.stop_gradient
// CHECK-LABEL: func.func @__dg_rev_half_
// CHECK-SAME: (%[[X:.+]]: f64, %[[D:.+]]: f64) -> f64
// CHECK-NEXT: arith.mulf %[[X]], %[[X]]
// CHECK-NEXT: %[[G:.+]] = arith.mulf %[[D]], %[[X]]
// CHECK-NEXT: return %[[G]]

// -----

// x + stop_gradient(sin(x)) * 2: sin(x) depends on x but reaches the
// result only through stop_gradient: it is not differentiated at all (no
// cos in the reverse, useful.py); the gradient is the seed
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @shift(%x: f64) -> f64 attributes {diffgpu.target = #host} {
  %s = math.sin %x : f64
  %c = "diffgpu.stop_gradient"(%s) : (f64) -> f64
  %two = arith.constant 2.0 : f64
  %m = arith.mulf %c, %two : f64
  %r = arith.addf %x, %m : f64
  return %r : f64
}
func.func @k_shift(%d: f64, %x0: f64) attributes {diffgpu.kernel, diffgpu.target = #host} {
  %g:1 = "diffgpu.autodiff"(%d, %x0) {callee = @shift, activity = ["active"], diffgpu.target = #host, groups = array<i32: 1>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64) -> (f64)
  return
}
// CHECK-LABEL: func.func @__dg_rev_shift_
// CHECK-SAME: (%[[X:.+]]: f64, %[[D:.+]]: f64) -> f64
// CHECK: math.sin %[[X]]
// CHECK-NOT: math.cos
// CHECK: return %[[D]]

// -----

// forward mode: the tangent of x * stop_gradient(x) is dx * x
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @halff(%x: f64) -> f64 attributes {diffgpu.target = #host} {
  %c = "diffgpu.stop_gradient"(%x) : (f64) -> f64
  %r = arith.mulf %x, %c : f64
  return %r : f64
}
func.func @k_halff(%x0: f64, %dx0: f64) attributes {diffgpu.kernel, diffgpu.target = #host} {
  %g = "diffgpu.fwddiff"(%x0, %dx0) {callee = @halff, activity = ["dup"], diffgpu.target = #host, groups = array<i32: 2>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64) -> f64
  return
}
// CHECK-LABEL: func.func @__dg_fwd_halff_
// CHECK-SAME: (%[[X:.+]]: f64, %[[DX:.+]]: f64) -> (f64, f64)
// CHECK-NEXT: %[[R:.+]] = arith.mulf %[[X]], %[[X]]
// CHECK-NEXT: %[[T:.+]] = arith.mulf %[[DX]], %[[X]]
// CHECK-NEXT: return %[[R]], %[[T]]

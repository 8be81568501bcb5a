// Rules of the diffgpu special-math ops (rules/diffgpu.py DERIVATIVES): the
// inverse of erf / erfc differentiated from the forward result r,
// d/dx erfinv = sqrt(pi)/2 exp(r^2), d/dx erfcinv = -sqrt(pi)/2 exp(r^2),
// in reverse and forward mode; infinite at the ends of the domain, so the
// product with the adjoint (tangent) is guarded: a zero one gives zero
// (strong zeros, rules/partials.py).
// RUN: diffgpu-opt %s --split-input-file --diffgpu-autodiff | FileCheck %s

#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">

// erfinv, reverse: the forward result squared, exp, times sqrt(pi)/2, times
// the adjoint
func.func @erfinv(%a0: f32) -> f32 attributes {diffgpu.target = #host} {
  %r = "diffgpu.erfinv"(%a0) : (f32) -> f32
  return %r : f32
}
func.func @k_erfinv(%d: f32, %x0: f32) attributes {diffgpu.kernel, diffgpu.target = #host} {
  %g:1 = "diffgpu.autodiff"(%d, %x0) {callee = @erfinv, activity = ["active"], diffgpu.target = #host, groups = array<i32: 1>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f32, f32) -> (f32)
  return
}
// CHECK-LABEL: func.func @__dg_rev_erfinv_
// CHECK-SAME: (%[[X:.+]]: f32, %[[D:.+]]: f32) -> f32
// CHECK-NEXT: %[[R:.+]] = "diffgpu.erfinv"(%[[X]])
// CHECK-NEXT: %[[R2:.+]] = arith.mulf %[[R]], %[[R]]
// CHECK-NEXT: %[[E:.+]] = math.exp %[[R2]]
// CHECK-NEXT: %[[K:.+]] = arith.constant 0.886226
// CHECK-NEXT: %[[P:.+]] = arith.mulf %[[E]], %[[K]]
// CHECK-NEXT: %[[M:.+]] = arith.mulf %[[D]], %[[P]]
// CHECK-NEXT: %[[Z:.+]] = arith.constant 0.0
// CHECK-NEXT: %[[C:.+]] = arith.cmpf oeq, %[[D]], %[[Z]]
// CHECK-NEXT: %[[Z2:.+]] = arith.constant 0.0
// CHECK-NEXT: %[[G:.+]] = arith.select %[[C]], %[[Z2]], %[[M]]
// CHECK-NEXT: return %[[G]]

// -----

#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">

// erfcinv, reverse: the same with -sqrt(pi)/2
func.func @erfcinv(%a0: f64) -> f64 attributes {diffgpu.target = #host} {
  %r = "diffgpu.erfcinv"(%a0) : (f64) -> f64
  return %r : f64
}
func.func @k_erfcinv(%d: f64, %x0: f64) attributes {diffgpu.kernel, diffgpu.target = #host} {
  %g:1 = "diffgpu.autodiff"(%d, %x0) {callee = @erfcinv, activity = ["active"], diffgpu.target = #host, groups = array<i32: 1>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64) -> (f64)
  return
}
// CHECK-LABEL: func.func @__dg_rev_erfcinv_
// CHECK-SAME: (%[[X:.+]]: f64, %[[D:.+]]: f64) -> f64
// CHECK-NEXT: %[[R:.+]] = "diffgpu.erfcinv"(%[[X]])
// CHECK-NEXT: %[[R2:.+]] = arith.mulf %[[R]], %[[R]]
// CHECK-NEXT: %[[E:.+]] = math.exp %[[R2]]
// CHECK-NEXT: %[[K:.+]] = arith.constant -0.886226
// CHECK-NEXT: %[[P:.+]] = arith.mulf %[[E]], %[[K]]
// CHECK-NEXT: %[[M:.+]] = arith.mulf %[[D]], %[[P]]
// CHECK-NEXT: %[[Z:.+]] = arith.constant 0.0
// CHECK-NEXT: %[[C:.+]] = arith.cmpf oeq, %[[D]], %[[Z]]
// CHECK-NEXT: %[[Z2:.+]] = arith.constant 0.0
// CHECK-NEXT: %[[G:.+]] = arith.select %[[C]], %[[Z2]], %[[M]]
// CHECK-NEXT: return %[[G]]

// -----

#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">

// erfinv, forward: the tangent times the same partial, after the primal op
func.func @g(%a0: f32) -> f32 attributes {diffgpu.target = #host} {
  %r = "diffgpu.erfinv"(%a0) : (f32) -> f32
  return %r : f32
}
func.func @k_g(%x: f32, %dx: f32) attributes {diffgpu.kernel, diffgpu.target = #host} {
  %t = "diffgpu.fwddiff"(%x, %dx) {callee = @g, activity = ["dup"], diffgpu.target = #host, groups = array<i32: 2>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f32, f32) -> f32
  return
}
// CHECK-LABEL: func.func @__dg_fwd_g_
// CHECK-SAME: (%[[X:.+]]: f32, %[[DX:.+]]: f32) -> (f32, f32)
// CHECK-NEXT: %[[R:.+]] = "diffgpu.erfinv"(%[[X]])
// CHECK-NEXT: %[[R2:.+]] = arith.mulf %[[R]], %[[R]]
// CHECK-NEXT: %[[E:.+]] = math.exp %[[R2]]
// CHECK-NEXT: %[[K:.+]] = arith.constant 0.886226
// CHECK-NEXT: %[[P:.+]] = arith.mulf %[[E]], %[[K]]
// CHECK-NEXT: %[[M:.+]] = arith.mulf %[[DX]], %[[P]]
// CHECK-NEXT: %[[Z:.+]] = arith.constant 0.0
// CHECK-NEXT: %[[C:.+]] = arith.cmpf oeq, %[[DX]], %[[Z]]
// CHECK-NEXT: %[[Z2:.+]] = arith.constant 0.0
// CHECK-NEXT: %[[T:.+]] = arith.select %[[C]], %[[Z2]], %[[M]]
// CHECK-NEXT: return %[[R]], %[[T]]

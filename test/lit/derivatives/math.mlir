// Reverse-mode rules of the math dialect (Enzyme's MathDerivatives.td in
// our tables): one case per op, a device function of active f64 scalars.
// The partials as written, without the strong-zero guards of the singular
// ones (those: strong-zeros.mlir).
// RUN: env DIFFGPU_STRONG_ZEROS=0 diffgpu-opt %s --split-input-file --diffgpu-autodiff | FileCheck %s

// exp: d/dx = exp(x), the forward result reused
func.func @exp(%a0: f64) -> f64 attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %r = math.exp %a0 : f64
  return %r : f64
}
func.func @k_exp(%d: f64, %x0: f64) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %g:1 = "diffgpu.autodiff"(%d, %x0) {callee = @exp, activity = ["active"], diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">, groups = array<i32: 1>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64) -> (f64)
  return
}
// CHECK-LABEL: func.func @__dg_rev_exp_
// CHECK-SAME: (%[[X:.+]]: f64, %[[D:.+]]: f64) -> f64
// CHECK-NEXT: %[[R:.+]] = math.exp %[[X]]
// CHECK-NEXT: %[[G:.+]] = arith.mulf %[[D]], %[[R]]
// CHECK-NEXT: return %[[G]]

// -----

// exp2: d/dx = exp2(x) * ln 2
func.func @exp2(%a0: f64) -> f64 attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %r = math.exp2 %a0 : f64
  return %r : f64
}
func.func @k_exp2(%d: f64, %x0: f64) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %g:1 = "diffgpu.autodiff"(%d, %x0) {callee = @exp2, activity = ["active"], diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">, groups = array<i32: 1>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64) -> (f64)
  return
}
// CHECK-LABEL: func.func @__dg_rev_exp2_
// CHECK-SAME: (%[[X:.+]]: f64, %[[D:.+]]: f64) -> f64
// CHECK-NEXT: %[[R:.+]] = math.exp2 %[[X]]
// CHECK-NEXT: %[[LN2:.+]] = arith.constant 0.693147
// CHECK-NEXT: %[[P:.+]] = arith.mulf %[[R]], %[[LN2]]
// CHECK-NEXT: %[[G:.+]] = arith.mulf %[[D]], %[[P]]
// CHECK-NEXT: return %[[G]]

// -----

// expm1: d/dx = expm1(x) + 1
func.func @expm1(%a0: f64) -> f64 attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %r = math.expm1 %a0 : f64
  return %r : f64
}
func.func @k_expm1(%d: f64, %x0: f64) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %g:1 = "diffgpu.autodiff"(%d, %x0) {callee = @expm1, activity = ["active"], diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">, groups = array<i32: 1>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64) -> (f64)
  return
}
// CHECK-LABEL: func.func @__dg_rev_expm1_
// CHECK-SAME: (%[[X:.+]]: f64, %[[D:.+]]: f64) -> f64
// CHECK-NEXT: %[[R:.+]] = math.expm1 %[[X]]
// CHECK-NEXT: %[[ONE:.+]] = arith.constant 1.0
// CHECK-NEXT: %[[P:.+]] = arith.addf %[[R]], %[[ONE]]
// CHECK-NEXT: %[[G:.+]] = arith.mulf %[[D]], %[[P]]
// CHECK-NEXT: return %[[G]]

// -----

// log: d/dx = 1/x
func.func @log(%a0: f64) -> f64 attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %r = math.log %a0 : f64
  return %r : f64
}
func.func @k_log(%d: f64, %x0: f64) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %g:1 = "diffgpu.autodiff"(%d, %x0) {callee = @log, activity = ["active"], diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">, groups = array<i32: 1>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64) -> (f64)
  return
}
// CHECK-LABEL: func.func @__dg_rev_log_
// CHECK-SAME: (%[[X:.+]]: f64, %[[D:.+]]: f64) -> f64
// CHECK-NEXT: math.log %[[X]]
// CHECK-NEXT: %[[ONE:.+]] = arith.constant 1.0
// CHECK-NEXT: %[[P:.+]] = arith.divf %[[ONE]], %[[X]]
// CHECK-NEXT: %[[G:.+]] = arith.mulf %[[D]], %[[P]]
// CHECK-NEXT: return %[[G]]

// -----

// log2: d/dx = 1/(x ln 2)
func.func @log2(%a0: f64) -> f64 attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %r = math.log2 %a0 : f64
  return %r : f64
}
func.func @k_log2(%d: f64, %x0: f64) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %g:1 = "diffgpu.autodiff"(%d, %x0) {callee = @log2, activity = ["active"], diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">, groups = array<i32: 1>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64) -> (f64)
  return
}
// CHECK-LABEL: func.func @__dg_rev_log2_
// CHECK-SAME: (%[[X:.+]]: f64, %[[D:.+]]: f64) -> f64
// CHECK-NEXT: math.log2 %[[X]]
// CHECK-NEXT: %[[LN2:.+]] = arith.constant 0.693147
// CHECK-NEXT: %[[XL:.+]] = arith.mulf %[[X]], %[[LN2]]
// CHECK-NEXT: %[[ONE:.+]] = arith.constant 1.0
// CHECK-NEXT: %[[P:.+]] = arith.divf %[[ONE]], %[[XL]]
// CHECK-NEXT: %[[G:.+]] = arith.mulf %[[D]], %[[P]]
// CHECK-NEXT: return %[[G]]

// -----

// log10: d/dx = 1/(x ln 10)
func.func @log10(%a0: f64) -> f64 attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %r = math.log10 %a0 : f64
  return %r : f64
}
func.func @k_log10(%d: f64, %x0: f64) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %g:1 = "diffgpu.autodiff"(%d, %x0) {callee = @log10, activity = ["active"], diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">, groups = array<i32: 1>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64) -> (f64)
  return
}
// CHECK-LABEL: func.func @__dg_rev_log10_
// CHECK-SAME: (%[[X:.+]]: f64, %[[D:.+]]: f64) -> f64
// CHECK-NEXT: math.log10 %[[X]]
// CHECK-NEXT: %[[LN10:.+]] = arith.constant 2.302585
// CHECK-NEXT: %[[XL:.+]] = arith.mulf %[[X]], %[[LN10]]
// CHECK-NEXT: %[[ONE:.+]] = arith.constant 1.0
// CHECK-NEXT: %[[P:.+]] = arith.divf %[[ONE]], %[[XL]]
// CHECK-NEXT: %[[G:.+]] = arith.mulf %[[D]], %[[P]]
// CHECK-NEXT: return %[[G]]

// -----

// log1p: d/dx = 1/(x + 1)
func.func @log1p(%a0: f64) -> f64 attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %r = math.log1p %a0 : f64
  return %r : f64
}
func.func @k_log1p(%d: f64, %x0: f64) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %g:1 = "diffgpu.autodiff"(%d, %x0) {callee = @log1p, activity = ["active"], diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">, groups = array<i32: 1>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64) -> (f64)
  return
}
// CHECK-LABEL: func.func @__dg_rev_log1p_
// CHECK-SAME: (%[[X:.+]]: f64, %[[D:.+]]: f64) -> f64
// CHECK-NEXT: math.log1p %[[X]]
// CHECK-NEXT: %[[ONE:.+]] = arith.constant 1.0
// CHECK-NEXT: %[[XP:.+]] = arith.addf %[[X]], %[[ONE]]
// CHECK-NEXT: %[[ONE2:.+]] = arith.constant 1.0
// CHECK-NEXT: %[[P:.+]] = arith.divf %[[ONE2]], %[[XP]]
// CHECK-NEXT: %[[G:.+]] = arith.mulf %[[D]], %[[P]]
// CHECK-NEXT: return %[[G]]

// -----

// sin: d/dx = cos(x)
func.func @sin(%a0: f64) -> f64 attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %r = math.sin %a0 : f64
  return %r : f64
}
func.func @k_sin(%d: f64, %x0: f64) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %g:1 = "diffgpu.autodiff"(%d, %x0) {callee = @sin, activity = ["active"], diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">, groups = array<i32: 1>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64) -> (f64)
  return
}
// CHECK-LABEL: func.func @__dg_rev_sin_
// CHECK-SAME: (%[[X:.+]]: f64, %[[D:.+]]: f64) -> f64
// CHECK-NEXT: math.sin %[[X]]
// CHECK-NEXT: %[[C:.+]] = math.cos %[[X]]
// CHECK-NEXT: %[[G:.+]] = arith.mulf %[[D]], %[[C]]
// CHECK-NEXT: return %[[G]]

// -----

// cos: d/dx = -sin(x)
func.func @cos(%a0: f64) -> f64 attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %r = math.cos %a0 : f64
  return %r : f64
}
func.func @k_cos(%d: f64, %x0: f64) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %g:1 = "diffgpu.autodiff"(%d, %x0) {callee = @cos, activity = ["active"], diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">, groups = array<i32: 1>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64) -> (f64)
  return
}
// CHECK-LABEL: func.func @__dg_rev_cos_
// CHECK-SAME: (%[[X:.+]]: f64, %[[D:.+]]: f64) -> f64
// CHECK-NEXT: math.cos %[[X]]
// CHECK-NEXT: %[[S:.+]] = math.sin %[[X]]
// CHECK-NEXT: %[[N:.+]] = arith.negf %[[S]]
// CHECK-NEXT: %[[G:.+]] = arith.mulf %[[D]], %[[N]]
// CHECK-NEXT: return %[[G]]

// -----

// tan: d/dx = tan(x)^2 + 1
func.func @tan(%a0: f64) -> f64 attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %r = math.tan %a0 : f64
  return %r : f64
}
func.func @k_tan(%d: f64, %x0: f64) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %g:1 = "diffgpu.autodiff"(%d, %x0) {callee = @tan, activity = ["active"], diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">, groups = array<i32: 1>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64) -> (f64)
  return
}
// CHECK-LABEL: func.func @__dg_rev_tan_
// CHECK-SAME: (%[[X:.+]]: f64, %[[D:.+]]: f64) -> f64
// CHECK-NEXT: %[[R:.+]] = math.tan %[[X]]
// CHECK-NEXT: %[[SQ:.+]] = arith.mulf %[[R]], %[[R]]
// CHECK-NEXT: %[[ONE:.+]] = arith.constant 1.0
// CHECK-NEXT: %[[P:.+]] = arith.addf %[[SQ]], %[[ONE]]
// CHECK-NEXT: %[[G:.+]] = arith.mulf %[[D]], %[[P]]
// CHECK-NEXT: return %[[G]]

// -----

// tanh: d/dx = 1 - tanh(x)^2
func.func @tanh(%a0: f64) -> f64 attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %r = math.tanh %a0 : f64
  return %r : f64
}
func.func @k_tanh(%d: f64, %x0: f64) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %g:1 = "diffgpu.autodiff"(%d, %x0) {callee = @tanh, activity = ["active"], diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">, groups = array<i32: 1>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64) -> (f64)
  return
}
// CHECK-LABEL: func.func @__dg_rev_tanh_
// CHECK-SAME: (%[[X:.+]]: f64, %[[D:.+]]: f64) -> f64
// CHECK-NEXT: %[[R:.+]] = math.tanh %[[X]]
// CHECK-NEXT: %[[SQ:.+]] = arith.mulf %[[R]], %[[R]]
// CHECK-NEXT: %[[ONE:.+]] = arith.constant 1.0
// CHECK-NEXT: %[[P:.+]] = arith.subf %[[ONE]], %[[SQ]]
// CHECK-NEXT: %[[G:.+]] = arith.mulf %[[D]], %[[P]]
// CHECK-NEXT: return %[[G]]

// -----

// sinh: d/dx = cosh(x)
func.func @sinh(%a0: f64) -> f64 attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %r = math.sinh %a0 : f64
  return %r : f64
}
func.func @k_sinh(%d: f64, %x0: f64) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %g:1 = "diffgpu.autodiff"(%d, %x0) {callee = @sinh, activity = ["active"], diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">, groups = array<i32: 1>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64) -> (f64)
  return
}
// CHECK-LABEL: func.func @__dg_rev_sinh_
// CHECK-SAME: (%[[X:.+]]: f64, %[[D:.+]]: f64) -> f64
// CHECK-NEXT: math.sinh %[[X]]
// CHECK-NEXT: %[[C:.+]] = math.cosh %[[X]]
// CHECK-NEXT: %[[G:.+]] = arith.mulf %[[D]], %[[C]]
// CHECK-NEXT: return %[[G]]

// -----

// cosh: d/dx = sinh(x)
func.func @cosh(%a0: f64) -> f64 attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %r = math.cosh %a0 : f64
  return %r : f64
}
func.func @k_cosh(%d: f64, %x0: f64) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %g:1 = "diffgpu.autodiff"(%d, %x0) {callee = @cosh, activity = ["active"], diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">, groups = array<i32: 1>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64) -> (f64)
  return
}
// CHECK-LABEL: func.func @__dg_rev_cosh_
// CHECK-SAME: (%[[X:.+]]: f64, %[[D:.+]]: f64) -> f64
// CHECK-NEXT: math.cosh %[[X]]
// CHECK-NEXT: %[[S:.+]] = math.sinh %[[X]]
// CHECK-NEXT: %[[G:.+]] = arith.mulf %[[D]], %[[S]]
// CHECK-NEXT: return %[[G]]

// -----

// sqrt: d/dx = 0.5 / sqrt(x)
func.func @sqrt(%a0: f64) -> f64 attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %r = math.sqrt %a0 : f64
  return %r : f64
}
func.func @k_sqrt(%d: f64, %x0: f64) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %g:1 = "diffgpu.autodiff"(%d, %x0) {callee = @sqrt, activity = ["active"], diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">, groups = array<i32: 1>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64) -> (f64)
  return
}
// CHECK-LABEL: func.func @__dg_rev_sqrt_
// CHECK-SAME: (%[[X:.+]]: f64, %[[D:.+]]: f64) -> f64
// CHECK-NEXT: %[[R:.+]] = math.sqrt %[[X]]
// CHECK-NEXT: %[[H:.+]] = arith.constant 5.0{{0*}}e-01
// CHECK-NEXT: %[[P:.+]] = arith.divf %[[H]], %[[R]]
// CHECK-NEXT: %[[G:.+]] = arith.mulf %[[D]], %[[P]]
// CHECK-NEXT: return %[[G]]

// -----

// rsqrt: d/dx = -0.5 r^3
func.func @rsqrt(%a0: f64) -> f64 attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %r = math.rsqrt %a0 : f64
  return %r : f64
}
func.func @k_rsqrt(%d: f64, %x0: f64) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %g:1 = "diffgpu.autodiff"(%d, %x0) {callee = @rsqrt, activity = ["active"], diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">, groups = array<i32: 1>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64) -> (f64)
  return
}
// CHECK-LABEL: func.func @__dg_rev_rsqrt_
// CHECK-SAME: (%[[X:.+]]: f64, %[[D:.+]]: f64) -> f64
// CHECK-NEXT: %[[R:.+]] = math.rsqrt %[[X]]
// CHECK-NEXT: %[[R2:.+]] = arith.mulf %[[R]], %[[R]]
// CHECK-NEXT: %[[R3:.+]] = arith.mulf %[[R2]], %[[R]]
// CHECK-NEXT: %[[H:.+]] = arith.constant -5.0{{0*}}e-01
// CHECK-NEXT: %[[P:.+]] = arith.mulf %[[R3]], %[[H]]
// CHECK-NEXT: %[[G:.+]] = arith.mulf %[[D]], %[[P]]
// CHECK-NEXT: return %[[G]]

// -----

// powf: d/dx = y x^(y-1) (0 where y == 0), d/dy = r log x (0 where x == 0)
func.func @powf(%a0: f64, %a1: f64) -> f64 attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %r = math.powf %a0, %a1 : f64
  return %r : f64
}
func.func @k_powf(%d: f64, %x0: f64, %x1: f64) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %g:2 = "diffgpu.autodiff"(%d, %x0, %x1) {callee = @powf, activity = ["active", "active"], diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">, groups = array<i32: 1, 1>, operandSegmentSizes = array<i32: 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64, f64) -> (f64, f64)
  return
}
// CHECK-LABEL: func.func @__dg_rev_powf_
// CHECK-SAME: (%[[X:.+]]: f64, %[[Y:.+]]: f64, %[[D:.+]]: f64) -> (f64, f64)
// CHECK-NEXT: %[[R:.+]] = math.powf %[[X]], %[[Y]]
// CHECK-NEXT: %[[Z:.+]] = arith.constant 0.0
// CHECK-NEXT: %[[Y0:.+]] = arith.cmpf oeq, %[[Y]], %[[Z]]
// CHECK-NEXT: %[[Z2:.+]] = arith.constant 0.0
// CHECK-NEXT: %[[ONE:.+]] = arith.constant 1.0
// CHECK-NEXT: %[[YM1:.+]] = arith.subf %[[Y]], %[[ONE]]
// CHECK-NEXT: %[[PW:.+]] = math.powf %[[X]], %[[YM1]]
// CHECK-NEXT: %[[YP:.+]] = arith.mulf %[[Y]], %[[PW]]
// CHECK-NEXT: %[[PX:.+]] = arith.select %[[Y0]], %[[Z2]], %[[YP]]
// CHECK-NEXT: %[[GX:.+]] = arith.mulf %[[D]], %[[PX]]
// CHECK-NEXT: %[[Z3:.+]] = arith.constant 0.0
// CHECK-NEXT: %[[X0:.+]] = arith.cmpf oeq, %[[X]], %[[Z3]]
// CHECK-NEXT: %[[Z4:.+]] = arith.constant 0.0
// CHECK-NEXT: %[[LG:.+]] = math.log %[[X]]
// CHECK-NEXT: %[[RL:.+]] = arith.mulf %[[R]], %[[LG]]
// CHECK-NEXT: %[[PY:.+]] = arith.select %[[X0]], %[[Z4]], %[[RL]]
// CHECK-NEXT: %[[GY:.+]] = arith.mulf %[[D]], %[[PY]]
// CHECK-NEXT: return %[[GX]], %[[GY]]

// -----

// fpowi: d/dx = n x^(n-1); the integer exponent is inactive
func.func @fpowi(%a0: f64) -> f64 attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %n = arith.constant 3 : i32
  %r = math.fpowi %a0, %n : f64, i32
  return %r : f64
}
func.func @k_fpowi(%d: f64, %x0: f64) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %g:1 = "diffgpu.autodiff"(%d, %x0) {callee = @fpowi, activity = ["active"], diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">, groups = array<i32: 1>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64) -> (f64)
  return
}
// CHECK-LABEL: func.func @__dg_rev_fpowi_
// CHECK-SAME: (%[[X:.+]]: f64, %[[D:.+]]: f64) -> f64
// CHECK-NEXT: %[[N:.+]] = arith.constant 3 : i32
// CHECK-NEXT: math.fpowi %[[X]], %[[N]]
// CHECK-NEXT: %[[ONE:.+]] = arith.constant 1 : i32
// CHECK-NEXT: %[[NM1:.+]] = arith.subi %[[N]], %[[ONE]]
// CHECK-NEXT: %[[NF:.+]] = arith.sitofp %[[N]] : i32 to f64
// CHECK-NEXT: %[[PW:.+]] = math.fpowi %[[X]], %[[NM1]]
// CHECK-NEXT: %[[P:.+]] = arith.mulf %[[NF]], %[[PW]]
// CHECK-NEXT: %[[G:.+]] = arith.mulf %[[D]], %[[P]]
// CHECK-NEXT: return %[[G]]

// -----

// absf: d/dx = sign(x), 0 at 0
func.func @absf(%a0: f64) -> f64 attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %r = math.absf %a0 : f64
  return %r : f64
}
func.func @k_absf(%d: f64, %x0: f64) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %g:1 = "diffgpu.autodiff"(%d, %x0) {callee = @absf, activity = ["active"], diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">, groups = array<i32: 1>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64) -> (f64)
  return
}
// CHECK-LABEL: func.func @__dg_rev_absf_
// CHECK-SAME: (%[[X:.+]]: f64, %[[D:.+]]: f64) -> f64
// CHECK-NEXT: math.absf %[[X]]
// CHECK: %[[POS:.+]] = arith.cmpf ogt, %[[X]]
// CHECK: %[[NEG:.+]] = arith.cmpf olt, %[[X]]
// CHECK: %[[SN:.+]] = arith.subf
// CHECK-NEXT: %[[G:.+]] = arith.mulf %[[D]], %[[SN]]
// CHECK-NEXT: return %[[G]]

// -----

// erf: d/dx = 2/sqrt(pi) exp(-x^2)
func.func @erf(%a0: f64) -> f64 attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %r = math.erf %a0 : f64
  return %r : f64
}
func.func @k_erf(%d: f64, %x0: f64) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %g:1 = "diffgpu.autodiff"(%d, %x0) {callee = @erf, activity = ["active"], diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">, groups = array<i32: 1>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64) -> (f64)
  return
}
// CHECK-LABEL: func.func @__dg_rev_erf_
// CHECK-SAME: (%[[X:.+]]: f64, %[[D:.+]]: f64) -> f64
// CHECK-NEXT: math.erf %[[X]]
// CHECK-NEXT: %[[SQ:.+]] = arith.mulf %[[X]], %[[X]]
// CHECK-NEXT: %[[N:.+]] = arith.negf %[[SQ]]
// CHECK-NEXT: %[[E:.+]] = math.exp %[[N]]
// CHECK-NEXT: %[[K:.+]] = arith.constant 1.128379
// CHECK-NEXT: %[[P:.+]] = arith.mulf %[[E]], %[[K]]
// CHECK-NEXT: %[[G:.+]] = arith.mulf %[[D]], %[[P]]
// CHECK-NEXT: return %[[G]]

// -----

// atan: d/dx = 1/(x^2 + 1)
func.func @atan(%a0: f64) -> f64 attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %r = math.atan %a0 : f64
  return %r : f64
}
func.func @k_atan(%d: f64, %x0: f64) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %g:1 = "diffgpu.autodiff"(%d, %x0) {callee = @atan, activity = ["active"], diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">, groups = array<i32: 1>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64) -> (f64)
  return
}
// CHECK-LABEL: func.func @__dg_rev_atan_
// CHECK-SAME: (%[[X:.+]]: f64, %[[D:.+]]: f64) -> f64
// CHECK-NEXT: math.atan %[[X]]
// CHECK-NEXT: %[[SQ:.+]] = arith.mulf %[[X]], %[[X]]
// CHECK-NEXT: %[[ONE:.+]] = arith.constant 1.0
// CHECK-NEXT: %[[DEN:.+]] = arith.addf %[[SQ]], %[[ONE]]
// CHECK-NEXT: %[[ONE2:.+]] = arith.constant 1.0
// CHECK-NEXT: %[[P:.+]] = arith.divf %[[ONE2]], %[[DEN]]
// CHECK-NEXT: %[[G:.+]] = arith.mulf %[[D]], %[[P]]
// CHECK-NEXT: return %[[G]]

// -----

// atan2(y, x): d/dy = x/(x^2+y^2), d/dx = -y/(x^2+y^2)
func.func @atan2(%a0: f64, %a1: f64) -> f64 attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %r = math.atan2 %a0, %a1 : f64
  return %r : f64
}
func.func @k_atan2(%d: f64, %x0: f64, %x1: f64) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %g:2 = "diffgpu.autodiff"(%d, %x0, %x1) {callee = @atan2, activity = ["active", "active"], diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">, groups = array<i32: 1, 1>, operandSegmentSizes = array<i32: 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64, f64) -> (f64, f64)
  return
}
// CHECK-LABEL: func.func @__dg_rev_atan2_
// CHECK-SAME: (%[[X:.+]]: f64, %[[Y:.+]]: f64, %[[D:.+]]: f64) -> (f64, f64)
// CHECK-NEXT: math.atan2 %[[X]], %[[Y]]
// CHECK-NEXT: %[[YY:.+]] = arith.mulf %[[X]], %[[X]]
// CHECK-NEXT: %[[XX:.+]] = arith.mulf %[[Y]], %[[Y]]
// CHECK-NEXT: %[[DEN:.+]] = arith.addf %[[YY]], %[[XX]]
// CHECK-NEXT: %[[P:.+]] = arith.divf %[[Y]], %[[DEN]]
// CHECK-NEXT: %[[G0:.+]] = arith.mulf %[[D]], %[[P]]
// CHECK: %[[Q:.+]] = arith.divf %[[X]], %{{.+}}
// CHECK-NEXT: %[[NQ:.+]] = arith.negf %[[Q]]
// CHECK-NEXT: %[[G1:.+]] = arith.mulf %[[D]], %[[NQ]]
// CHECK-NEXT: return %[[G0]], %[[G1]]

// -----

// fma(a, b, c): b, a, 1
func.func @fma(%a0: f64, %a1: f64, %a2: f64) -> f64 attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %r = math.fma %a0, %a1, %a2 : f64
  return %r : f64
}
func.func @k_fma(%d: f64, %x0: f64, %x1: f64, %x2: f64) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %g:3 = "diffgpu.autodiff"(%d, %x0, %x1, %x2) {callee = @fma, activity = ["active", "active", "active"], diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">, groups = array<i32: 1, 1, 1>, operandSegmentSizes = array<i32: 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64, f64, f64) -> (f64, f64, f64)
  return
}
// CHECK-LABEL: func.func @__dg_rev_fma_
// CHECK-SAME: (%[[A:.+]]: f64, %[[B:.+]]: f64, %[[C:.+]]: f64, %[[D:.+]]: f64) -> (f64, f64, f64)
// CHECK-NEXT: math.fma %[[A]], %[[B]], %[[C]]
// CHECK-NEXT: %[[GA:.+]] = arith.mulf %[[D]], %[[B]]
// CHECK-NEXT: %[[GB:.+]] = arith.mulf %[[D]], %[[A]]
// CHECK-NEXT: return %[[GA]], %[[GB]], %[[D]]

// -----

// copysign(a, b): d/da = +1 where the sign bits agree, else -1; d/db = 0
func.func @copysign(%a0: f64, %a1: f64) -> f64 attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %r = math.copysign %a0, %a1 : f64
  return %r : f64
}
func.func @k_copysign(%d: f64, %x0: f64, %x1: f64) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %g:2 = "diffgpu.autodiff"(%d, %x0, %x1) {callee = @copysign, activity = ["active", "active"], diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">, groups = array<i32: 1, 1>, operandSegmentSizes = array<i32: 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64, f64) -> (f64, f64)
  return
}
// CHECK-LABEL: func.func @__dg_rev_copysign_
// CHECK-SAME: (%[[X:.+]]: f64, %[[Y:.+]]: f64, %[[D:.+]]: f64) -> (f64, f64)
// CHECK-NEXT: math.copysign %[[X]], %[[Y]]
// CHECK-NEXT: %[[P1:.+]] = arith.constant 1.0
// CHECK-NEXT: %[[SX:.+]] = math.copysign %[[P1]], %[[X]]
// CHECK-NEXT: %[[SY:.+]] = math.copysign %[[P1]], %[[Y]]
// CHECK-NEXT: %[[S:.+]] = arith.mulf %[[SX]], %[[SY]]
// CHECK-NEXT: %[[G:.+]] = arith.mulf %[[D]], %[[S]]
// CHECK-NEXT: %[[Z0:.+]] = arith.constant 0.0
// CHECK-NEXT: return %[[G]], %[[Z0]]

// -----

// floor has a zero derivative: only the addf operand contributes
func.func @floor(%a0: f64) -> f64 attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %f = math.floor %a0 : f64
  %r = arith.addf %f, %a0 : f64
  return %r : f64
}
func.func @k_floor(%d: f64, %x0: f64) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %g:1 = "diffgpu.autodiff"(%d, %x0) {callee = @floor, activity = ["active"], diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">, groups = array<i32: 1>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64) -> (f64)
  return
}
// CHECK-LABEL: func.func @__dg_rev_floor_
// CHECK-SAME: (%[[X:.+]]: f64, %[[D:.+]]: f64) -> f64
// CHECK-NEXT: %[[F:.+]] = math.floor %[[X]]
// CHECK-NEXT: arith.addf %[[F]], %[[X]]
// CHECK-NEXT: return %[[D]]

// -----

// ceil has a zero derivative
func.func @ceil(%a0: f64) -> f64 attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %f = math.ceil %a0 : f64
  %r = arith.addf %f, %a0 : f64
  return %r : f64
}
func.func @k_ceil(%d: f64, %x0: f64) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %g:1 = "diffgpu.autodiff"(%d, %x0) {callee = @ceil, activity = ["active"], diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">, groups = array<i32: 1>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64) -> (f64)
  return
}
// CHECK-LABEL: func.func @__dg_rev_ceil_
// CHECK-SAME: (%[[X:.+]]: f64, %[[D:.+]]: f64) -> f64
// CHECK-NEXT: %[[F:.+]] = math.ceil %[[X]]
// CHECK-NEXT: arith.addf %[[F]], %[[X]]
// CHECK-NEXT: return %[[D]]

// -----

// round has a zero derivative
func.func @round(%a0: f64) -> f64 attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %f = math.round %a0 : f64
  %r = arith.addf %f, %a0 : f64
  return %r : f64
}
func.func @k_round(%d: f64, %x0: f64) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %g:1 = "diffgpu.autodiff"(%d, %x0) {callee = @round, activity = ["active"], diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">, groups = array<i32: 1>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64) -> (f64)
  return
}
// CHECK-LABEL: func.func @__dg_rev_round_
// CHECK-SAME: (%[[X:.+]]: f64, %[[D:.+]]: f64) -> f64
// CHECK-NEXT: %[[F:.+]] = math.round %[[X]]
// CHECK-NEXT: arith.addf %[[F]], %[[X]]
// CHECK-NEXT: return %[[D]]

// -----

// trunc has a zero derivative
func.func @trunc(%a0: f64) -> f64 attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %f = math.trunc %a0 : f64
  %r = arith.addf %f, %a0 : f64
  return %r : f64
}
func.func @k_trunc(%d: f64, %x0: f64) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %g:1 = "diffgpu.autodiff"(%d, %x0) {callee = @trunc, activity = ["active"], diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">, groups = array<i32: 1>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64) -> (f64)
  return
}
// CHECK-LABEL: func.func @__dg_rev_trunc_
// CHECK-SAME: (%[[X:.+]]: f64, %[[D:.+]]: f64) -> f64
// CHECK-NEXT: %[[F:.+]] = math.trunc %[[X]]
// CHECK-NEXT: arith.addf %[[F]], %[[X]]
// CHECK-NEXT: return %[[D]]

// -----

// roundeven has a zero derivative
func.func @roundeven(%a0: f64) -> f64 attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %f = math.roundeven %a0 : f64
  %r = arith.addf %f, %a0 : f64
  return %r : f64
}
func.func @k_roundeven(%d: f64, %x0: f64) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %g:1 = "diffgpu.autodiff"(%d, %x0) {callee = @roundeven, activity = ["active"], diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">, groups = array<i32: 1>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64) -> (f64)
  return
}
// CHECK-LABEL: func.func @__dg_rev_roundeven_
// CHECK-SAME: (%[[X:.+]]: f64, %[[D:.+]]: f64) -> f64
// CHECK-NEXT: %[[F:.+]] = math.roundeven %[[X]]
// CHECK-NEXT: arith.addf %[[F]], %[[X]]
// CHECK-NEXT: return %[[D]]

// -----

// asin: d/dx = 1/sqrt(1 - x^2)
func.func @asin(%a0: f64) -> f64 attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %r = math.asin %a0 : f64
  return %r : f64
}
func.func @k_asin(%d: f64, %x0: f64) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %g:1 = "diffgpu.autodiff"(%d, %x0) {callee = @asin, activity = ["active"], diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">, groups = array<i32: 1>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64) -> (f64)
  return
}
// CHECK-LABEL: func.func @__dg_rev_asin_
// CHECK-SAME: (%[[X:.+]]: f64, %[[D:.+]]: f64) -> f64
// CHECK-NEXT: %[[R:.+]] = math.asin %[[X]]
// CHECK-NEXT: %[[XX:.+]] = arith.mulf %[[X]], %[[X]]
// CHECK-NEXT: %[[ONE:.+]] = arith.constant 1.0
// CHECK-NEXT: %[[S:.+]] = arith.subf %[[ONE]], %[[XX]]
// CHECK-NEXT: %[[Q:.+]] = math.sqrt %[[S]]
// CHECK-NEXT: %[[ONE2:.+]] = arith.constant 1.0
// CHECK-NEXT: %[[P:.+]] = arith.divf %[[ONE2]], %[[Q]]
// CHECK-NEXT: %[[G:.+]] = arith.mulf %[[D]], %[[P]]
// CHECK-NEXT: return %[[G]]

// -----

// acos: d/dx = -1/sqrt(1 - x^2)
func.func @acos(%a0: f64) -> f64 attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %r = math.acos %a0 : f64
  return %r : f64
}
func.func @k_acos(%d: f64, %x0: f64) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %g:1 = "diffgpu.autodiff"(%d, %x0) {callee = @acos, activity = ["active"], diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">, groups = array<i32: 1>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64) -> (f64)
  return
}
// CHECK-LABEL: func.func @__dg_rev_acos_
// CHECK-SAME: (%[[X:.+]]: f64, %[[D:.+]]: f64) -> f64
// CHECK-NEXT: %[[R:.+]] = math.acos %[[X]]
// CHECK-NEXT: %[[XX:.+]] = arith.mulf %[[X]], %[[X]]
// CHECK-NEXT: %[[ONE:.+]] = arith.constant 1.0
// CHECK-NEXT: %[[S:.+]] = arith.subf %[[ONE]], %[[XX]]
// CHECK-NEXT: %[[Q:.+]] = math.sqrt %[[S]]
// CHECK-NEXT: %[[M1:.+]] = arith.constant -1.0
// CHECK-NEXT: %[[P:.+]] = arith.divf %[[M1]], %[[Q]]
// CHECK-NEXT: %[[G:.+]] = arith.mulf %[[D]], %[[P]]
// CHECK-NEXT: return %[[G]]

// -----

// asinh: d/dx = 1/sqrt(x^2 + 1)
func.func @asinh(%a0: f64) -> f64 attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %r = math.asinh %a0 : f64
  return %r : f64
}
func.func @k_asinh(%d: f64, %x0: f64) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %g:1 = "diffgpu.autodiff"(%d, %x0) {callee = @asinh, activity = ["active"], diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">, groups = array<i32: 1>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64) -> (f64)
  return
}
// CHECK-LABEL: func.func @__dg_rev_asinh_
// CHECK-SAME: (%[[X:.+]]: f64, %[[D:.+]]: f64) -> f64
// CHECK-NEXT: %[[R:.+]] = math.asinh %[[X]]
// CHECK-NEXT: %[[XX:.+]] = arith.mulf %[[X]], %[[X]]
// CHECK-NEXT: %[[ONE:.+]] = arith.constant 1.0
// CHECK-NEXT: %[[S:.+]] = arith.addf %[[XX]], %[[ONE]]
// CHECK-NEXT: %[[Q:.+]] = math.sqrt %[[S]]
// CHECK-NEXT: %[[ONE2:.+]] = arith.constant 1.0
// CHECK-NEXT: %[[P:.+]] = arith.divf %[[ONE2]], %[[Q]]
// CHECK-NEXT: %[[G:.+]] = arith.mulf %[[D]], %[[P]]
// CHECK-NEXT: return %[[G]]

// -----

// acosh: d/dx = 1/(sqrt(x - 1) sqrt(x + 1))
func.func @acosh(%a0: f64) -> f64 attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %r = math.acosh %a0 : f64
  return %r : f64
}
func.func @k_acosh(%d: f64, %x0: f64) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %g:1 = "diffgpu.autodiff"(%d, %x0) {callee = @acosh, activity = ["active"], diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">, groups = array<i32: 1>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64) -> (f64)
  return
}
// CHECK-LABEL: func.func @__dg_rev_acosh_
// CHECK-SAME: (%[[X:.+]]: f64, %[[D:.+]]: f64) -> f64
// CHECK-NEXT: %[[R:.+]] = math.acosh %[[X]]
// CHECK-NEXT: %[[ONE:.+]] = arith.constant 1.0
// CHECK-NEXT: %[[XM:.+]] = arith.subf %[[X]], %[[ONE]]
// CHECK-NEXT: %[[QM:.+]] = math.sqrt %[[XM]]
// CHECK-NEXT: %[[ONE2:.+]] = arith.constant 1.0
// CHECK-NEXT: %[[XP:.+]] = arith.addf %[[X]], %[[ONE2]]
// CHECK-NEXT: %[[QP:.+]] = math.sqrt %[[XP]]
// CHECK-NEXT: %[[Q:.+]] = arith.mulf %[[QM]], %[[QP]]
// CHECK-NEXT: %[[ONE3:.+]] = arith.constant 1.0
// CHECK-NEXT: %[[P:.+]] = arith.divf %[[ONE3]], %[[Q]]
// CHECK-NEXT: %[[G:.+]] = arith.mulf %[[D]], %[[P]]
// CHECK-NEXT: return %[[G]]

// -----

// atanh: d/dx = 1/(1 - x^2)
func.func @atanh(%a0: f64) -> f64 attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %r = math.atanh %a0 : f64
  return %r : f64
}
func.func @k_atanh(%d: f64, %x0: f64) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %g:1 = "diffgpu.autodiff"(%d, %x0) {callee = @atanh, activity = ["active"], diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">, groups = array<i32: 1>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64) -> (f64)
  return
}
// CHECK-LABEL: func.func @__dg_rev_atanh_
// CHECK-SAME: (%[[X:.+]]: f64, %[[D:.+]]: f64) -> f64
// CHECK-NEXT: %[[R:.+]] = math.atanh %[[X]]
// CHECK-NEXT: %[[XX:.+]] = arith.mulf %[[X]], %[[X]]
// CHECK-NEXT: %[[ONE:.+]] = arith.constant 1.0
// CHECK-NEXT: %[[S:.+]] = arith.subf %[[ONE]], %[[XX]]
// CHECK-NEXT: %[[ONE2:.+]] = arith.constant 1.0
// CHECK-NEXT: %[[P:.+]] = arith.divf %[[ONE2]], %[[S]]
// CHECK-NEXT: %[[G:.+]] = arith.mulf %[[D]], %[[P]]
// CHECK-NEXT: return %[[G]]

// -----

// cbrt: d/dx = 1/(3 cbrt(x)^2), the forward result reused
func.func @cbrt(%a0: f64) -> f64 attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %r = math.cbrt %a0 : f64
  return %r : f64
}
func.func @k_cbrt(%d: f64, %x0: f64) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %g:1 = "diffgpu.autodiff"(%d, %x0) {callee = @cbrt, activity = ["active"], diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">, groups = array<i32: 1>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64) -> (f64)
  return
}
// CHECK-LABEL: func.func @__dg_rev_cbrt_
// CHECK-SAME: (%[[X:.+]]: f64, %[[D:.+]]: f64) -> f64
// CHECK-NEXT: %[[R:.+]] = math.cbrt %[[X]]
// CHECK-NEXT: %[[RR:.+]] = arith.mulf %[[R]], %[[R]]
// CHECK-NEXT: %[[THREE:.+]] = arith.constant 3.0
// CHECK-NEXT: %[[S:.+]] = arith.mulf %[[RR]], %[[THREE]]
// CHECK-NEXT: %[[ONE:.+]] = arith.constant 1.0
// CHECK-NEXT: %[[P:.+]] = arith.divf %[[ONE]], %[[S]]
// CHECK-NEXT: %[[G:.+]] = arith.mulf %[[D]], %[[P]]
// CHECK-NEXT: return %[[G]]

// -----

// erfc: d/dx = -2/sqrt(pi) exp(-x^2)
func.func @erfc(%a0: f64) -> f64 attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %r = math.erfc %a0 : f64
  return %r : f64
}
func.func @k_erfc(%d: f64, %x0: f64) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %g:1 = "diffgpu.autodiff"(%d, %x0) {callee = @erfc, activity = ["active"], diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">, groups = array<i32: 1>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64) -> (f64)
  return
}
// CHECK-LABEL: func.func @__dg_rev_erfc_
// CHECK-SAME: (%[[X:.+]]: f64, %[[D:.+]]: f64) -> f64
// CHECK-NEXT: %[[R:.+]] = math.erfc %[[X]]
// CHECK-NEXT: %[[XX:.+]] = arith.mulf %[[X]], %[[X]]
// CHECK-NEXT: %[[N:.+]] = arith.negf %[[XX]]
// CHECK-NEXT: %[[E:.+]] = math.exp %[[N]]
// CHECK-NEXT: %[[C:.+]] = arith.constant -1.12837916709551
// CHECK-NEXT: %[[P:.+]] = arith.mulf %[[E]], %[[C]]
// CHECK-NEXT: %[[G:.+]] = arith.mulf %[[D]], %[[P]]
// CHECK-NEXT: return %[[G]]

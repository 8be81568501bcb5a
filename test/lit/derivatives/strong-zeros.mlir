// Strong zeros (rules/partials.py Singular): an adjoint that is exactly zero
// contributes exactly zero through a partial that may be infinite or NaN;
// only singular partials pay the compare and select.
// RUN: diffgpu-opt %s --split-input-file --diffgpu-autodiff | FileCheck %s
// RUN: env DIFFGPU_STRONG_ZEROS=0 diffgpu-opt %s --split-input-file --diffgpu-autodiff | FileCheck %s --check-prefix=OFF

// sqrt: 0.5 / sqrt(x) is infinite at 0: the product with the adjoint is
// guarded, select(d == 0, 0, d * p)
// (second RUN, strong zeros off: the plain product, as before)
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @sqrt(%a0: f64) -> f64 attributes {diffgpu.target = #host} {
  %r = math.sqrt %a0 : f64
  return %r : f64
}
func.func @k_sqrt(%d: f64, %x0: f64) attributes {diffgpu.kernel, diffgpu.target = #host} {
  %g:1 = "diffgpu.autodiff"(%d, %x0) {callee = @sqrt, activity = ["active"], diffgpu.target = #host, groups = array<i32: 1>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64) -> (f64)
  return
}
// CHECK-LABEL: func.func @__dg_rev_sqrt_
// CHECK-SAME: (%[[X:.+]]: f64, %[[D:.+]]: f64) -> f64
// CHECK-NEXT: %[[R:.+]] = math.sqrt %[[X]]
// CHECK-NEXT: %[[H:.+]] = arith.constant 5.0
// CHECK-NEXT: %[[P:.+]] = arith.divf %[[H]], %[[R]]
// CHECK-NEXT: %[[M:.+]] = arith.mulf %[[D]], %[[P]]
// CHECK-NEXT: %[[Z:.+]] = arith.constant 0.0
// CHECK-NEXT: %[[C:.+]] = arith.cmpf oeq, %[[D]], %[[Z]]
// CHECK-NEXT: %[[Z2:.+]] = arith.constant 0.0
// CHECK-NEXT: %[[G:.+]] = arith.select %[[C]], %[[Z2]], %[[M]]
// CHECK-NEXT: return %[[G]]
// OFF-LABEL: func.func @__dg_rev_sqrt_
// OFF-SAME: (%[[X:.+]]: f64, %[[D:.+]]: f64) -> f64
// OFF-NEXT: %[[R:.+]] = math.sqrt %[[X]]
// OFF-NEXT: %[[H:.+]] = arith.constant 5.0
// OFF-NEXT: %[[P:.+]] = arith.divf %[[H]], %[[R]]
// OFF-NEXT: %[[G:.+]] = arith.mulf %[[D]], %[[P]]
// OFF-NEXT: return %[[G]]

// -----

// divf by a nonzero constant: 1/c is finite, so no guard
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @divc(%a0: f64) -> f64 attributes {diffgpu.target = #host} {
  %c = arith.constant 4.0 : f64
  %r = arith.divf %a0, %c : f64
  return %r : f64
}
func.func @k_divc(%d: f64, %x0: f64) attributes {diffgpu.kernel, diffgpu.target = #host} {
  %g:1 = "diffgpu.autodiff"(%d, %x0) {callee = @divc, activity = ["active"], diffgpu.target = #host, groups = array<i32: 1>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64) -> (f64)
  return
}
// CHECK-LABEL: func.func @__dg_rev_divc_
// CHECK-SAME: (%[[X:.+]]: f64, %[[D:.+]]: f64) -> f64
// CHECK-NEXT: %[[C:.+]] = arith.constant 4.0
// CHECK-NEXT: arith.divf %[[X]], %[[C]]
// CHECK-NEXT: %[[ONE:.+]] = arith.constant 1.0
// CHECK-NEXT: %[[P:.+]] = arith.divf %[[ONE]], %[[C]]
// CHECK-NEXT: %[[G:.+]] = arith.mulf %[[D]], %[[P]]
// CHECK-NEXT: return %[[G]]

// -----

// log1p of an exp: its operand is >= 0, 1/(x + 1) <= 1: no guard; exp's
// partial is never guarded (infinite only where exp itself overflowed)
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @softplus(%a0: f64) -> f64 attributes {diffgpu.target = #host} {
  %e = math.exp %a0 : f64
  %r = math.log1p %e : f64
  return %r : f64
}
func.func @k_softplus(%d: f64, %x0: f64) attributes {diffgpu.kernel, diffgpu.target = #host} {
  %g:1 = "diffgpu.autodiff"(%d, %x0) {callee = @softplus, activity = ["active"], diffgpu.target = #host, groups = array<i32: 1>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64) -> (f64)
  return
}
// CHECK-LABEL: func.func @__dg_rev_softplus_
// CHECK-SAME: (%[[X:.+]]: f64, %[[D:.+]]: f64) -> f64
// CHECK-NEXT: %[[E:.+]] = math.exp %[[X]]
// CHECK-NEXT: math.log1p %[[E]]
// CHECK-NEXT: %[[ONE:.+]] = arith.constant 1.0
// CHECK-NEXT: %[[E1:.+]] = arith.addf %[[E]], %[[ONE]]
// CHECK-NEXT: %[[ONE2:.+]] = arith.constant 1.0
// CHECK-NEXT: %[[P:.+]] = arith.divf %[[ONE2]], %[[E1]]
// CHECK-NEXT: %[[DE:.+]] = arith.mulf %[[D]], %[[P]]
// CHECK-NEXT: %[[G:.+]] = arith.mulf %[[DE]], %[[E]]
// CHECK-NEXT: return %[[G]]

// -----

// atan2: both partials are 0/0 at (0, 0): both products guarded
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @atan2(%a0: f64, %a1: f64) -> f64 attributes {diffgpu.target = #host} {
  %r = math.atan2 %a0, %a1 : f64
  return %r : f64
}
func.func @k_atan2(%d: f64, %x0: f64, %x1: f64) attributes {diffgpu.kernel, diffgpu.target = #host} {
  %g:2 = "diffgpu.autodiff"(%d, %x0, %x1) {callee = @atan2, activity = ["active", "active"], diffgpu.target = #host, groups = array<i32: 1, 1>, operandSegmentSizes = array<i32: 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64, f64) -> (f64, f64)
  return
}
// CHECK-LABEL: func.func @__dg_rev_atan2_
// CHECK-SAME: (%[[Y:.+]]: f64, %[[X:.+]]: f64, %[[D:.+]]: f64)
// CHECK:      %[[PY:.+]] = arith.divf %[[X]], %{{.+}}
// CHECK-NEXT: %[[MY:.+]] = arith.mulf %[[D]], %[[PY]]
// CHECK-NEXT: %[[Z:.+]] = arith.constant 0.0
// CHECK-NEXT: %[[CY:.+]] = arith.cmpf oeq, %[[D]], %[[Z]]
// CHECK-NEXT: %[[Z2:.+]] = arith.constant 0.0
// CHECK-NEXT: %[[GY:.+]] = arith.select %[[CY]], %[[Z2]], %[[MY]]
// CHECK:      %[[Q:.+]] = arith.divf %[[Y]], %{{.+}}
// CHECK-NEXT: %[[PX:.+]] = arith.negf %[[Q]]
// CHECK-NEXT: %[[MX:.+]] = arith.mulf %[[D]], %[[PX]]
// CHECK-NEXT: %[[Z3:.+]] = arith.constant 0.0
// CHECK-NEXT: %[[CX:.+]] = arith.cmpf oeq, %[[D]], %[[Z3]]
// CHECK-NEXT: %[[Z4:.+]] = arith.constant 0.0
// CHECK-NEXT: %[[GX:.+]] = arith.select %[[CX]], %[[Z4]], %[[MX]]
// CHECK-NEXT: return %[[GY]], %[[GX]]

// -----

// mulf: its partials are the operands, never guarded
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @mul(%a0: f64, %a1: f64) -> f64 attributes {diffgpu.target = #host} {
  %r = arith.mulf %a0, %a1 : f64
  return %r : f64
}
func.func @k_mul(%d: f64, %x0: f64, %x1: f64) attributes {diffgpu.kernel, diffgpu.target = #host} {
  %g:2 = "diffgpu.autodiff"(%d, %x0, %x1) {callee = @mul, activity = ["active", "active"], diffgpu.target = #host, groups = array<i32: 1, 1>, operandSegmentSizes = array<i32: 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64, f64) -> (f64, f64)
  return
}
// CHECK-LABEL: func.func @__dg_rev_mul_
// CHECK-SAME: (%[[A:.+]]: f64, %[[B:.+]]: f64, %[[D:.+]]: f64)
// CHECK-NEXT: arith.mulf %[[A]], %[[B]]
// CHECK-NEXT: %[[DA:.+]] = arith.mulf %[[D]], %[[B]]
// CHECK-NEXT: %[[DB:.+]] = arith.mulf %[[D]], %[[A]]
// CHECK-NEXT: return %[[DA]], %[[DB]]

// Strong zeros in forward mode (rules/partials.py Singular): forward mode
// applies the same rules as reverse mode (forward.py tan_elementwise calls
// partials.scale), so a tangent that is exactly zero gives exactly zero
// through a partial that may be infinite or NaN: t * p becomes
// select(t == 0, 0, t * p). Forward mode needs the guard as much as reverse
// mode does: an input whose tangent is 0 (not varied in this direction, or
// a branch's value that does not depend on the varied input) must not turn
// the tangent into NaN where the op's partial is infinite (sqrt at 0, a
// division by 0); 0 * inf would. strong-zeros.mlir has the reverse mode.
// RUN: diffgpu-opt %s --split-input-file --diffgpu-autodiff | FileCheck %s
// RUN: env DIFFGPU_STRONG_ZEROS=0 diffgpu-opt %s --split-input-file --diffgpu-autodiff | FileCheck %s --check-prefix=OFF

// sqrt: the tangent times 0.5 / sqrt(x), infinite at 0: guarded by the
// tangent, select(t == 0, 0, t * p); with strong zeros off, the plain product
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @sqrt(%a0: f64) -> f64 attributes {diffgpu.target = #host} {
  %r = math.sqrt %a0 : f64
  return %r : f64
}
func.func @k_sqrt(%x: f64, %dx: f64) attributes {diffgpu.kernel, diffgpu.target = #host} {
  %t = "diffgpu.fwddiff"(%x, %dx) {callee = @sqrt, activity = ["dup"], diffgpu.target = #host, groups = array<i32: 2>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64) -> f64
  return
}
// CHECK-LABEL: func.func @__dg_fwd_sqrt_
// CHECK-SAME: (%[[X:[a-z0-9_]+]]: f64, %[[T:[a-z0-9_]+]]: f64) -> (f64, f64)
// CHECK-NEXT: %[[R:.+]] = math.sqrt %[[X]] : f64
// CHECK-NEXT: %[[H:.+]] = arith.constant 5.0{{0*}}e-01 : f64
// CHECK-NEXT: %[[P:.+]] = arith.divf %[[H]], %[[R]] : f64
// CHECK-NEXT: %[[M:.+]] = arith.mulf %[[T]], %[[P]] : f64
// CHECK-NEXT: %[[Z:.+]] = arith.constant 0.0{{0*}}e+00 : f64
// CHECK-NEXT: %[[C:.+]] = arith.cmpf oeq, %[[T]], %[[Z]] : f64
// CHECK-NEXT: %[[Z2:.+]] = arith.constant 0.0{{0*}}e+00 : f64
// CHECK-NEXT: %[[G:.+]] = arith.select %[[C]], %[[Z2]], %[[M]] : f64
// CHECK-NEXT: return %[[R]], %[[G]] : f64, f64
// OFF-LABEL: func.func @__dg_fwd_sqrt_
// OFF-SAME: (%[[X:[a-z0-9_]+]]: f64, %[[T:[a-z0-9_]+]]: f64) -> (f64, f64)
// OFF-NEXT: %[[R:.+]] = math.sqrt %[[X]] : f64
// OFF-NEXT: %[[H:.+]] = arith.constant 5.0{{0*}}e-01 : f64
// OFF-NEXT: %[[P:.+]] = arith.divf %[[H]], %[[R]] : f64
// OFF-NEXT: %[[G:.+]] = arith.mulf %[[T]], %[[P]] : f64
// OFF-NEXT: return %[[R]], %[[G]] : f64, f64

// -----

// divf by a nonzero constant: 1/c is finite, no guard
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @divc(%a0: f64) -> f64 attributes {diffgpu.target = #host} {
  %c = arith.constant 4.0 : f64
  %r = arith.divf %a0, %c : f64
  return %r : f64
}
func.func @k_divc(%x: f64, %dx: f64) attributes {diffgpu.kernel, diffgpu.target = #host} {
  %t = "diffgpu.fwddiff"(%x, %dx) {callee = @divc, activity = ["dup"], diffgpu.target = #host, groups = array<i32: 2>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64) -> f64
  return
}
// CHECK-LABEL: func.func @__dg_fwd_divc_
// CHECK-SAME: (%[[X:[a-z0-9_]+]]: f64, %[[T:[a-z0-9_]+]]: f64) -> (f64, f64)
// CHECK-NEXT: %[[C:.+]] = arith.constant 4.0{{0*}}e+00 : f64
// CHECK-NEXT: %[[R:.+]] = arith.divf %[[X]], %[[C]] : f64
// CHECK-NEXT: %[[ONE:.+]] = arith.constant 1.0{{0*}}e+00 : f64
// CHECK-NEXT: %[[P:.+]] = arith.divf %[[ONE]], %[[C]] : f64
// CHECK-NEXT: %[[G:.+]] = arith.mulf %[[T]], %[[P]] : f64
// CHECK-NEXT: return %[[R]], %[[G]] : f64, f64

// -----

// log1p of an exp: 1/(x + 1) <= 1, no guard; exp's partial is never guarded
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @softplus(%a0: f64) -> f64 attributes {diffgpu.target = #host} {
  %e = math.exp %a0 : f64
  %r = math.log1p %e : f64
  return %r : f64
}
func.func @k_softplus(%x: f64, %dx: f64) attributes {diffgpu.kernel, diffgpu.target = #host} {
  %t = "diffgpu.fwddiff"(%x, %dx) {callee = @softplus, activity = ["dup"], diffgpu.target = #host, groups = array<i32: 2>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64) -> f64
  return
}
// CHECK-LABEL: func.func @__dg_fwd_softplus_
// CHECK-SAME: (%[[X:[a-z0-9_]+]]: f64, %[[T:[a-z0-9_]+]]: f64) -> (f64, f64)
// CHECK-NEXT: %[[E:.+]] = math.exp %[[X]] : f64
// CHECK-NEXT: %[[TE:.+]] = arith.mulf %[[T]], %[[E]] : f64
// CHECK-NEXT: %[[R:.+]] = math.log1p %[[E]] : f64
// CHECK-NEXT: %[[ONE:.+]] = arith.constant 1.0{{0*}}e+00 : f64
// CHECK-NEXT: %[[E1:.+]] = arith.addf %[[E]], %[[ONE]] : f64
// CHECK-NEXT: %[[ONE2:.+]] = arith.constant 1.0{{0*}}e+00 : f64
// CHECK-NEXT: %[[P:.+]] = arith.divf %[[ONE2]], %[[E1]] : f64
// CHECK-NEXT: %[[G:.+]] = arith.mulf %[[TE]], %[[P]] : f64
// CHECK-NEXT: return %[[R]], %[[G]] : f64, f64

// -----

// atan2: both partials are 0/0 at (0, 0): each tangent's product guarded by
// that tangent, then summed (the forward function takes y, x, then dy, dx)
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @atan2(%a0: f64, %a1: f64) -> f64 attributes {diffgpu.target = #host} {
  %r = math.atan2 %a0, %a1 : f64
  return %r : f64
}
func.func @k_atan2(%x: f64, %dx: f64, %y: f64, %dy: f64) attributes {diffgpu.kernel, diffgpu.target = #host} {
  %t = "diffgpu.fwddiff"(%x, %dx, %y, %dy) {callee = @atan2, activity = ["dup", "dup"], diffgpu.target = #host, groups = array<i32: 2, 2>, operandSegmentSizes = array<i32: 2, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64, f64, f64) -> f64
  return
}
// CHECK-LABEL: func.func @__dg_fwd_atan2_
// CHECK-SAME: (%[[Y:[a-z0-9_]+]]: f64, %[[X:[a-z0-9_]+]]: f64, %[[DY:[a-z0-9_]+]]: f64, %[[DX:[a-z0-9_]+]]: f64) -> (f64, f64)
// CHECK-NEXT: %[[R:.+]] = math.atan2 %[[Y]], %[[X]] : f64
// CHECK:      %[[PY:.+]] = arith.divf %[[X]], %{{.+}} : f64
// CHECK-NEXT: %[[MY:.+]] = arith.mulf %[[DY]], %[[PY]] : f64
// CHECK-NEXT: %[[Z:.+]] = arith.constant 0.0{{0*}}e+00 : f64
// CHECK-NEXT: %[[CY:.+]] = arith.cmpf oeq, %[[DY]], %[[Z]] : f64
// CHECK-NEXT: %[[Z2:.+]] = arith.constant 0.0{{0*}}e+00 : f64
// CHECK-NEXT: %[[GY:.+]] = arith.select %[[CY]], %[[Z2]], %[[MY]] : f64
// CHECK:      %[[Q:.+]] = arith.divf %[[Y]], %{{.+}} : f64
// CHECK-NEXT: %[[PX:.+]] = arith.negf %[[Q]] : f64
// CHECK-NEXT: %[[MX:.+]] = arith.mulf %[[DX]], %[[PX]] : f64
// CHECK-NEXT: %[[Z3:.+]] = arith.constant 0.0{{0*}}e+00 : f64
// CHECK-NEXT: %[[CX:.+]] = arith.cmpf oeq, %[[DX]], %[[Z3]] : f64
// CHECK-NEXT: %[[Z4:.+]] = arith.constant 0.0{{0*}}e+00 : f64
// CHECK-NEXT: %[[GX:.+]] = arith.select %[[CX]], %[[Z4]], %[[MX]] : f64
// CHECK-NEXT: %[[G:.+]] = arith.addf %[[GY]], %[[GX]] : f64
// CHECK-NEXT: return %[[R]], %[[G]] : f64, f64
// OFF-LABEL: func.func @__dg_fwd_atan2_
// OFF-SAME: (%[[Y:[a-z0-9_]+]]: f64, %[[X:[a-z0-9_]+]]: f64, %[[DY:[a-z0-9_]+]]: f64, %[[DX:[a-z0-9_]+]]: f64) -> (f64, f64)
// OFF-NOT: arith.select
// OFF-NOT: arith.cmpf
// OFF: %[[MY:.+]] = arith.mulf %[[DY]], %{{.+}} : f64
// OFF-NOT: arith.select
// OFF: %[[MX:.+]] = arith.mulf %[[DX]], %{{.+}} : f64
// OFF-NEXT: %[[G:.+]] = arith.addf %[[MY]], %[[MX]] : f64
// OFF-NEXT: return %{{.+}}, %[[G]] : f64, f64

// -----

// divf by a value: 1/y and -(r/y) are infinite at y == 0: both products guarded
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @div(%a0: f64, %a1: f64) -> f64 attributes {diffgpu.target = #host} {
  %r = arith.divf %a0, %a1 : f64
  return %r : f64
}
func.func @k_div(%x: f64, %dx: f64, %y: f64, %dy: f64) attributes {diffgpu.kernel, diffgpu.target = #host} {
  %t = "diffgpu.fwddiff"(%x, %dx, %y, %dy) {callee = @div, activity = ["dup", "dup"], diffgpu.target = #host, groups = array<i32: 2, 2>, operandSegmentSizes = array<i32: 2, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64, f64, f64) -> f64
  return
}
// CHECK-LABEL: func.func @__dg_fwd_div_
// CHECK-SAME: (%[[A:[a-z0-9_]+]]: f64, %[[B:[a-z0-9_]+]]: f64, %[[DA:[a-z0-9_]+]]: f64, %[[DB:[a-z0-9_]+]]: f64) -> (f64, f64)
// CHECK-NEXT: %[[R:.+]] = arith.divf %[[A]], %[[B]] : f64
// CHECK-NEXT: %[[ONE:.+]] = arith.constant 1.0{{0*}}e+00 : f64
// CHECK-NEXT: %[[PA:.+]] = arith.divf %[[ONE]], %[[B]] : f64
// CHECK-NEXT: %[[MA:.+]] = arith.mulf %[[DA]], %[[PA]] : f64
// CHECK-NEXT: %[[Z:.+]] = arith.constant 0.0{{0*}}e+00 : f64
// CHECK-NEXT: %[[CA:.+]] = arith.cmpf oeq, %[[DA]], %[[Z]] : f64
// CHECK-NEXT: %[[Z2:.+]] = arith.constant 0.0{{0*}}e+00 : f64
// CHECK-NEXT: %[[GA:.+]] = arith.select %[[CA]], %[[Z2]], %[[MA]] : f64
// CHECK-NEXT: %[[Q:.+]] = arith.divf %[[R]], %[[B]] : f64
// CHECK-NEXT: %[[PB:.+]] = arith.negf %[[Q]] : f64
// CHECK-NEXT: %[[MB:.+]] = arith.mulf %[[DB]], %[[PB]] : f64
// CHECK-NEXT: %[[Z3:.+]] = arith.constant 0.0{{0*}}e+00 : f64
// CHECK-NEXT: %[[CB:.+]] = arith.cmpf oeq, %[[DB]], %[[Z3]] : f64
// CHECK-NEXT: %[[Z4:.+]] = arith.constant 0.0{{0*}}e+00 : f64
// CHECK-NEXT: %[[GB:.+]] = arith.select %[[CB]], %[[Z4]], %[[MB]] : f64
// CHECK-NEXT: %[[G:.+]] = arith.addf %[[GA]], %[[GB]] : f64
// CHECK-NEXT: return %[[R]], %[[G]] : f64, f64

// -----

// mulf: its partials are the operands, never guarded
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @mul(%a0: f64, %a1: f64) -> f64 attributes {diffgpu.target = #host} {
  %r = arith.mulf %a0, %a1 : f64
  return %r : f64
}
func.func @k_mul(%x: f64, %dx: f64, %y: f64, %dy: f64) attributes {diffgpu.kernel, diffgpu.target = #host} {
  %t = "diffgpu.fwddiff"(%x, %dx, %y, %dy) {callee = @mul, activity = ["dup", "dup"], diffgpu.target = #host, groups = array<i32: 2, 2>, operandSegmentSizes = array<i32: 2, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64, f64, f64) -> f64
  return
}
// CHECK-LABEL: func.func @__dg_fwd_mul_
// CHECK-SAME: (%[[A:[a-z0-9_]+]]: f64, %[[B:[a-z0-9_]+]]: f64, %[[DA:[a-z0-9_]+]]: f64, %[[DB:[a-z0-9_]+]]: f64) -> (f64, f64)
// CHECK-NEXT: %[[R:.+]] = arith.mulf %[[A]], %[[B]] : f64
// CHECK-NEXT: %[[TA:.+]] = arith.mulf %[[DA]], %[[B]] : f64
// CHECK-NEXT: %[[TB:.+]] = arith.mulf %[[DB]], %[[A]] : f64
// CHECK-NEXT: %[[G:.+]] = arith.addf %[[TA]], %[[TB]] : f64
// CHECK-NEXT: return %[[R]], %[[G]] : f64, f64

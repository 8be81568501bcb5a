// Reverse-mode rules of the arith dialect: one case per op, each a device
// function of active f64 scalars differentiated from a host kernel; the
// generated function returns one gradient per operand.
// The partials as written, without the strong-zero guards of the singular
// ones (those: strong-zeros.mlir).
// RUN: env DIFFGPU_STRONG_ZEROS=0 diffgpu-opt %s --split-input-file --diffgpu-autodiff | FileCheck %s

// addf: both adjoints are the incoming adjoint itself
func.func @addf(%a0: f64, %a1: f64) -> f64 attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %r = arith.addf %a0, %a1 : f64
  return %r : f64
}
func.func @k_addf(%d: f64, %x0: f64, %x1: f64) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %g:2 = "diffgpu.autodiff"(%d, %x0, %x1) {callee = @addf, activity = ["active", "active"], diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">, groups = array<i32: 1, 1>, operandSegmentSizes = array<i32: 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64, f64) -> (f64, f64)
  return
}
// CHECK-LABEL: func.func @__dg_rev_addf_
// CHECK-SAME: (%[[A:.+]]: f64, %[[B:.+]]: f64, %[[D:.+]]: f64) -> (f64, f64)
// CHECK-SAME: diffgpu.target = #llvm.target
// CHECK-NEXT: arith.addf %[[A]], %[[B]]
// CHECK-NEXT: return %[[D]], %[[D]] : f64, f64

// -----

// subf: d/da = 1, d/db = -1
func.func @subf(%a0: f64, %a1: f64) -> f64 attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %r = arith.subf %a0, %a1 : f64
  return %r : f64
}
func.func @k_subf(%d: f64, %x0: f64, %x1: f64) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %g:2 = "diffgpu.autodiff"(%d, %x0, %x1) {callee = @subf, activity = ["active", "active"], diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">, groups = array<i32: 1, 1>, operandSegmentSizes = array<i32: 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64, f64) -> (f64, f64)
  return
}
// CHECK-LABEL: func.func @__dg_rev_subf_
// CHECK-SAME: (%[[A:.+]]: f64, %[[B:.+]]: f64, %[[D:.+]]: f64)
// CHECK-NEXT: arith.subf %[[A]], %[[B]]
// CHECK-NEXT: %[[DB:.+]] = arith.negf %[[D]]
// CHECK-NEXT: return %[[D]], %[[DB]]

// -----

// mulf: d/da = b, d/db = a
func.func @mulf(%a0: f64, %a1: f64) -> f64 attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %r = arith.mulf %a0, %a1 : f64
  return %r : f64
}
func.func @k_mulf(%d: f64, %x0: f64, %x1: f64) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %g:2 = "diffgpu.autodiff"(%d, %x0, %x1) {callee = @mulf, activity = ["active", "active"], diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">, groups = array<i32: 1, 1>, operandSegmentSizes = array<i32: 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64, f64) -> (f64, f64)
  return
}
// CHECK-LABEL: func.func @__dg_rev_mulf_
// CHECK-SAME: (%[[A:.+]]: f64, %[[B:.+]]: f64, %[[D:.+]]: f64)
// CHECK-NEXT: arith.mulf %[[A]], %[[B]]
// CHECK-NEXT: %[[DA:.+]] = arith.mulf %[[D]], %[[B]]
// CHECK-NEXT: %[[DB:.+]] = arith.mulf %[[D]], %[[A]]
// CHECK-NEXT: return %[[DA]], %[[DB]]

// -----

// divf: d/da = 1/b, d/db = -r/b
func.func @divf(%a0: f64, %a1: f64) -> f64 attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %r = arith.divf %a0, %a1 : f64
  return %r : f64
}
func.func @k_divf(%d: f64, %x0: f64, %x1: f64) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %g:2 = "diffgpu.autodiff"(%d, %x0, %x1) {callee = @divf, activity = ["active", "active"], diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">, groups = array<i32: 1, 1>, operandSegmentSizes = array<i32: 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64, f64) -> (f64, f64)
  return
}
// CHECK-LABEL: func.func @__dg_rev_divf_
// CHECK-SAME: (%[[A:.+]]: f64, %[[B:.+]]: f64, %[[D:.+]]: f64)
// CHECK-NEXT: %[[R:.+]] = arith.divf %[[A]], %[[B]]
// CHECK-NEXT: %[[ONE:.+]] = arith.constant 1.0
// CHECK-NEXT: %[[INV:.+]] = arith.divf %[[ONE]], %[[B]]
// CHECK-NEXT: %[[DA:.+]] = arith.mulf %[[D]], %[[INV]]
// CHECK-NEXT: %[[Q:.+]] = arith.divf %[[R]], %[[B]]
// CHECK-NEXT: %[[NQ:.+]] = arith.negf %[[Q]]
// CHECK-NEXT: %[[DB:.+]] = arith.mulf %[[D]], %[[NQ]]
// CHECK-NEXT: return %[[DA]], %[[DB]]

// -----

// negf: d/da = -1
func.func @negf(%a0: f64) -> f64 attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %r = arith.negf %a0 : f64
  return %r : f64
}
func.func @k_negf(%d: f64, %x0: f64) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %g:1 = "diffgpu.autodiff"(%d, %x0) {callee = @negf, activity = ["active"], diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">, groups = array<i32: 1>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64) -> (f64)
  return
}
// CHECK-LABEL: func.func @__dg_rev_negf_
// CHECK-SAME: (%[[A:.+]]: f64, %[[D:.+]]: f64) -> f64
// CHECK-NEXT: arith.negf %[[A]]
// CHECK-NEXT: %[[DA:.+]] = arith.negf %[[D]]
// CHECK-NEXT: return %[[DA]]

// -----

// remf: d/da = 1, d/db = -trunc(a/b)
func.func @remf(%a0: f64, %a1: f64) -> f64 attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %r = arith.remf %a0, %a1 : f64
  return %r : f64
}
func.func @k_remf(%d: f64, %x0: f64, %x1: f64) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %g:2 = "diffgpu.autodiff"(%d, %x0, %x1) {callee = @remf, activity = ["active", "active"], diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">, groups = array<i32: 1, 1>, operandSegmentSizes = array<i32: 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64, f64) -> (f64, f64)
  return
}
// CHECK-LABEL: func.func @__dg_rev_remf_
// CHECK-SAME: (%[[A:.+]]: f64, %[[B:.+]]: f64, %[[D:.+]]: f64)
// CHECK-NEXT: arith.remf %[[A]], %[[B]]
// CHECK-NEXT: %[[Q:.+]] = arith.divf %[[A]], %[[B]]
// CHECK-NEXT: %[[T:.+]] = math.trunc %[[Q]]
// CHECK-NEXT: %[[NT:.+]] = arith.negf %[[T]]
// CHECK-NEXT: %[[DB:.+]] = arith.mulf %[[D]], %[[NT]]
// CHECK-NEXT: return %[[D]], %[[DB]]

// -----

// minimumf: the adjoint goes to the smaller operand (a on ties)
func.func @minimumf(%a0: f64, %a1: f64) -> f64 attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %r = arith.minimumf %a0, %a1 : f64
  return %r : f64
}
func.func @k_minimumf(%d: f64, %x0: f64, %x1: f64) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %g:2 = "diffgpu.autodiff"(%d, %x0, %x1) {callee = @minimumf, activity = ["active", "active"], diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">, groups = array<i32: 1, 1>, operandSegmentSizes = array<i32: 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64, f64) -> (f64, f64)
  return
}
// CHECK-LABEL: func.func @__dg_rev_minimumf_
// CHECK-SAME: (%[[A:.+]]: f64, %[[B:.+]]: f64, %[[D:.+]]: f64)
// CHECK-NEXT: arith.minimumf %[[A]], %[[B]]
// CHECK-NEXT: %[[LE:.+]] = arith.cmpf ole, %[[A]], %[[B]]
// CHECK-NEXT: %[[X:.+]] = arith.constant 1.0
// CHECK-NEXT: %[[Y:.+]] = arith.constant 0.0
// CHECK-NEXT: %[[S:.+]] = arith.select %[[LE]], %[[X]], %[[Y]]
// CHECK-NEXT: %[[DA:.+]] = arith.mulf %[[D]], %[[S]]
// CHECK-NEXT: %[[LE2:.+]] = arith.cmpf ole, %[[A]], %[[B]]
// CHECK-NEXT: %[[X2:.+]] = arith.constant 0.0
// CHECK-NEXT: %[[Y2:.+]] = arith.constant 1.0
// CHECK-NEXT: %[[S2:.+]] = arith.select %[[LE2]], %[[X2]], %[[Y2]]
// CHECK-NEXT: %[[DB:.+]] = arith.mulf %[[D]], %[[S2]]
// CHECK-NEXT: return %[[DA]], %[[DB]]

// -----

// maximumf: the adjoint goes to the larger operand
func.func @maximumf(%a0: f64, %a1: f64) -> f64 attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %r = arith.maximumf %a0, %a1 : f64
  return %r : f64
}
func.func @k_maximumf(%d: f64, %x0: f64, %x1: f64) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %g:2 = "diffgpu.autodiff"(%d, %x0, %x1) {callee = @maximumf, activity = ["active", "active"], diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">, groups = array<i32: 1, 1>, operandSegmentSizes = array<i32: 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64, f64) -> (f64, f64)
  return
}
// CHECK-LABEL: func.func @__dg_rev_maximumf_
// CHECK-SAME: (%[[A:.+]]: f64, %[[B:.+]]: f64, %[[D:.+]]: f64)
// CHECK-NEXT: arith.maximumf %[[A]], %[[B]]
// CHECK-NEXT: %[[LE:.+]] = arith.cmpf ole, %[[A]], %[[B]]
// CHECK-NEXT: %[[X:.+]] = arith.constant 0.0
// CHECK-NEXT: %[[Y:.+]] = arith.constant 1.0
// CHECK-NEXT: %[[S:.+]] = arith.select %[[LE]], %[[X]], %[[Y]]
// CHECK-NEXT: %[[DA:.+]] = arith.mulf %[[D]], %[[S]]
// CHECK-NEXT: %[[LE2:.+]] = arith.cmpf ole, %[[A]], %[[B]]
// CHECK-NEXT: %[[X2:.+]] = arith.constant 1.0
// CHECK-NEXT: %[[Y2:.+]] = arith.constant 0.0
// CHECK-NEXT: %[[S2:.+]] = arith.select %[[LE2]], %[[X2]], %[[Y2]]
// CHECK-NEXT: %[[DB:.+]] = arith.mulf %[[D]], %[[S2]]
// CHECK-NEXT: return %[[DA]], %[[DB]]

// -----

// minnumf: as minimumf
func.func @minnumf(%a0: f64, %a1: f64) -> f64 attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %r = arith.minnumf %a0, %a1 : f64
  return %r : f64
}
func.func @k_minnumf(%d: f64, %x0: f64, %x1: f64) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %g:2 = "diffgpu.autodiff"(%d, %x0, %x1) {callee = @minnumf, activity = ["active", "active"], diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">, groups = array<i32: 1, 1>, operandSegmentSizes = array<i32: 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64, f64) -> (f64, f64)
  return
}
// CHECK-LABEL: func.func @__dg_rev_minnumf_
// CHECK-SAME: (%[[A:.+]]: f64, %[[B:.+]]: f64, %[[D:.+]]: f64)
// CHECK-NEXT: arith.minnumf %[[A]], %[[B]]
// CHECK-NEXT: %[[LE:.+]] = arith.cmpf ole, %[[A]], %[[B]]
// CHECK-NEXT: %[[X:.+]] = arith.constant 1.0
// CHECK-NEXT: %[[Y:.+]] = arith.constant 0.0
// CHECK-NEXT: %[[S:.+]] = arith.select %[[LE]], %[[X]], %[[Y]]
// CHECK-NEXT: %[[DA:.+]] = arith.mulf %[[D]], %[[S]]
// CHECK-NEXT: %[[LE2:.+]] = arith.cmpf ole, %[[A]], %[[B]]
// CHECK-NEXT: %[[X2:.+]] = arith.constant 0.0
// CHECK-NEXT: %[[Y2:.+]] = arith.constant 1.0
// CHECK-NEXT: %[[S2:.+]] = arith.select %[[LE2]], %[[X2]], %[[Y2]]
// CHECK-NEXT: %[[DB:.+]] = arith.mulf %[[D]], %[[S2]]
// CHECK-NEXT: return %[[DA]], %[[DB]]

// -----

// maxnumf: as maximumf
func.func @maxnumf(%a0: f64, %a1: f64) -> f64 attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %r = arith.maxnumf %a0, %a1 : f64
  return %r : f64
}
func.func @k_maxnumf(%d: f64, %x0: f64, %x1: f64) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %g:2 = "diffgpu.autodiff"(%d, %x0, %x1) {callee = @maxnumf, activity = ["active", "active"], diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">, groups = array<i32: 1, 1>, operandSegmentSizes = array<i32: 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64, f64) -> (f64, f64)
  return
}
// CHECK-LABEL: func.func @__dg_rev_maxnumf_
// CHECK-SAME: (%[[A:.+]]: f64, %[[B:.+]]: f64, %[[D:.+]]: f64)
// CHECK-NEXT: arith.maxnumf %[[A]], %[[B]]
// CHECK-NEXT: %[[LE:.+]] = arith.cmpf ole, %[[A]], %[[B]]
// CHECK-NEXT: %[[X:.+]] = arith.constant 0.0
// CHECK-NEXT: %[[Y:.+]] = arith.constant 1.0
// CHECK-NEXT: %[[S:.+]] = arith.select %[[LE]], %[[X]], %[[Y]]
// CHECK-NEXT: %[[DA:.+]] = arith.mulf %[[D]], %[[S]]
// CHECK-NEXT: %[[LE2:.+]] = arith.cmpf ole, %[[A]], %[[B]]
// CHECK-NEXT: %[[X2:.+]] = arith.constant 1.0
// CHECK-NEXT: %[[Y2:.+]] = arith.constant 0.0
// CHECK-NEXT: %[[S2:.+]] = arith.select %[[LE2]], %[[X2]], %[[Y2]]
// CHECK-NEXT: %[[DB:.+]] = arith.mulf %[[D]], %[[S2]]
// CHECK-NEXT: return %[[DA]], %[[DB]]

// -----

// select: the adjoint follows the selected operand; cmpf is inactive
func.func @select(%a0: f64, %a1: f64) -> f64 attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %c = arith.cmpf olt, %a0, %a1 : f64
  %r = arith.select %c, %a0, %a1 : f64
  return %r : f64
}
func.func @k_select(%d: f64, %x0: f64, %x1: f64) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %g:2 = "diffgpu.autodiff"(%d, %x0, %x1) {callee = @select, activity = ["active", "active"], diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">, groups = array<i32: 1, 1>, operandSegmentSizes = array<i32: 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64, f64) -> (f64, f64)
  return
}
// CHECK-LABEL: func.func @__dg_rev_select_
// CHECK-SAME: (%[[A:.+]]: f64, %[[B:.+]]: f64, %[[D:.+]]: f64)
// CHECK-NEXT: %[[C:.+]] = arith.cmpf olt, %[[A]], %[[B]]
// CHECK-NEXT: arith.select %[[C]], %[[A]], %[[B]]
// CHECK-NEXT: %[[ONE:.+]] = arith.constant 1.0
// CHECK-NEXT: %[[ZERO:.+]] = arith.constant 0.0
// CHECK-NEXT: %[[S:.+]] = arith.select %[[C]], %[[ONE]], %[[ZERO]]
// CHECK-NEXT: %[[DA:.+]] = arith.mulf %[[D]], %[[S]]
// CHECK:      %[[S2:.+]] = arith.select %[[C]], %{{.+}}, %{{.+}}
// CHECK-NEXT: %[[DB:.+]] = arith.mulf %[[D]], %[[S2]]
// CHECK-NEXT: return %[[DA]], %[[DB]]

// -----

// truncf/extf: the adjoint is converted back to the operand's type
func.func @extf(%a0: f64) -> f64 attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %t = arith.truncf %a0 : f64 to f32
  %s = arith.mulf %t, %t : f32
  %r = arith.extf %s : f32 to f64
  return %r : f64
}
func.func @k_extf(%d: f64, %x0: f64) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %g:1 = "diffgpu.autodiff"(%d, %x0) {callee = @extf, activity = ["active"], diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">, groups = array<i32: 1>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64) -> (f64)
  return
}
// CHECK-LABEL: func.func @__dg_rev_extf_
// CHECK-SAME: (%[[A:.+]]: f64, %[[D:.+]]: f64) -> f64
// CHECK-NEXT: %[[T:.+]] = arith.truncf %[[A]] : f64 to f32
// CHECK-NEXT: %[[S:.+]] = arith.mulf %[[T]], %[[T]] : f32
// CHECK-NEXT: arith.extf %[[S]] : f32 to f64
// CHECK-NEXT: %[[DS:.+]] = arith.truncf %[[D]] : f64 to f32
// CHECK-NEXT: %[[P1:.+]] = arith.mulf %[[DS]], %[[T]] : f32
// CHECK-NEXT: %[[P2:.+]] = arith.mulf %[[DS]], %[[T]] : f32
// CHECK-NEXT: %[[DT:.+]] = arith.addf %[[P1]], %[[P2]] : f32
// CHECK-NEXT: %[[DA:.+]] = arith.extf %[[DT]] : f32 to f64
// CHECK-NEXT: return %[[DA]]

// -----

// fptosi/sitofp are inactive: only the direct use of a0 gets an adjoint
func.func @sitofp(%a0: f64) -> f64 attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %i = arith.fptosi %a0 : f64 to i64
  %f = arith.sitofp %i : i64 to f64
  %r = arith.mulf %f, %a0 : f64
  return %r : f64
}
func.func @k_sitofp(%d: f64, %x0: f64) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %g:1 = "diffgpu.autodiff"(%d, %x0) {callee = @sitofp, activity = ["active"], diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">, groups = array<i32: 1>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64) -> (f64)
  return
}
// CHECK-LABEL: func.func @__dg_rev_sitofp_
// CHECK-SAME: (%[[A:.+]]: f64, %[[D:.+]]: f64) -> f64
// CHECK-NEXT: %[[I:.+]] = arith.fptosi %[[A]]
// CHECK-NEXT: %[[F:.+]] = arith.sitofp %[[I]]
// CHECK-NEXT: arith.mulf %[[F]], %[[A]]
// CHECK-NEXT: %[[DA:.+]] = arith.mulf %[[D]], %[[F]]
// CHECK-NEXT: return %[[DA]]

// -----

// fptoui/uitofp are inactive too
func.func @uitofp(%a0: f64) -> f64 attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %i = arith.fptoui %a0 : f64 to i64
  %f = arith.uitofp %i : i64 to f64
  %r = arith.mulf %f, %a0 : f64
  return %r : f64
}
func.func @k_uitofp(%d: f64, %x0: f64) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %g:1 = "diffgpu.autodiff"(%d, %x0) {callee = @uitofp, activity = ["active"], diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">, groups = array<i32: 1>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64) -> (f64)
  return
}
// CHECK-LABEL: func.func @__dg_rev_uitofp_
// CHECK-SAME: (%[[A:.+]]: f64, %[[D:.+]]: f64) -> f64
// CHECK-NEXT: %[[I:.+]] = arith.fptoui %[[A]]
// CHECK-NEXT: %[[F:.+]] = arith.uitofp %[[I]]
// CHECK-NEXT: arith.mulf %[[F]], %[[A]]
// CHECK-NEXT: %[[DA:.+]] = arith.mulf %[[D]], %[[F]]
// CHECK-NEXT: return %[[DA]]

// An op that touches an active value and has no derivative rule is an error
// naming the op at its location, never a silent zero: unstructured control
// flow, region ops without rules, a float reinterpreted as an integer. The
// same ops on inactive values need no rule (the last cases).
// RUN: diffgpu-opt %s --split-input-file --diffgpu-autodiff --verify-diagnostics

#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">

// cf.cond_br: d(y*y)/dx through two blocks (it used to come out as 1, not 6)
func.func @f(%x: f64) -> f64 attributes {diffgpu.target = #host} {
  %y = arith.mulf %x, %x : f64
  %c = arith.constant true
  // expected-error@+1 {{no derivative rule for 'cf.cond_br': @f has unstructured control flow (3 blocks)}}
  cf.cond_br %c, ^a(%y : f64), ^b(%x : f64)
^a(%u: f64):
  %r = arith.mulf %u, %u : f64
  return %r : f64
^b(%v: f64):
  return %v : f64
}
func.func @k(%x: f64, %d: f64) attributes {diffgpu.kernel, diffgpu.target = #host} {
  %g = "diffgpu.autodiff"(%d, %x) {callee = @f, activity = ["active"], diffgpu.target = #host, groups = array<i32: 1>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64) -> f64
  return
}

// -----

#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">

// cf.br in a callee of the differentiated function, in forward mode
func.func @g(%x: f64) -> f64 attributes {diffgpu.target = #host} {
  // expected-error@+1 {{no derivative rule for 'cf.br': @g has unstructured control flow (2 blocks)}}
  cf.br ^next(%x : f64)
^next(%u: f64):
  %r = arith.mulf %u, %u : f64
  return %r : f64
}
func.func @f(%x: f64) -> f64 attributes {diffgpu.target = #host} {
  %r = func.call @g(%x) : (f64) -> f64
  return %r : f64
}
func.func @k(%x: f64, %t: f64) attributes {diffgpu.kernel, diffgpu.target = #host} {
  %r = "diffgpu.fwddiff"(%x, %t) {callee = @f, activity = ["dup"], diffgpu.target = #host, groups = array<i32: 2>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64) -> f64
  return
}

// -----

!A = memref<?xf64, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">

// scf.parallel has no rule: the active code inside it is reported at the op
func.func @f(%A: !A, %n: index) attributes {diffgpu.target = #host} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // expected-error@+1 {{no derivative rule for 'scf.parallel'}}
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %a = memref.load %A[%i] : !A
    %s = arith.mulf %a, %a : f64
    memref.store %s, %A[%i] : !A
    scf.reduce
  }
  return
}
func.func @k(%A: !A, %dA: !A, %n: index) attributes {diffgpu.kernel, diffgpu.target = #host} {
  "diffgpu.autodiff"(%A, %dA, %n) {callee = @f, activity = ["dup", "const"], diffgpu.target = #host, groups = array<i32: 2, 1>, operandSegmentSizes = array<i32: 2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (!A, !A, index) -> ()
  return
}

// -----

!A = memref<?xf64, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">

// the same scf.parallel in forward mode
func.func @f(%A: !A, %n: index) attributes {diffgpu.target = #host} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // expected-error@+1 {{no derivative rule for 'scf.parallel'}}
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %a = memref.load %A[%i] : !A
    %s = math.sin %a : f64
    memref.store %s, %A[%i] : !A
    scf.reduce
  }
  return
}
func.func @k(%A: !A, %dA: !A, %n: index) attributes {diffgpu.kernel, diffgpu.target = #host} {
  "diffgpu.fwddiff"(%A, %dA, %n) {callee = @f, activity = ["dup", "const"], diffgpu.target = #host, groups = array<i32: 2, 1>, operandSegmentSizes = array<i32: 2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (!A, !A, index) -> ()
  return
}

// -----

#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">

// f64 -> i64 -> f64 through arith.bitcast: the bits carry no derivative
func.func @f(%x: f64) -> f64 attributes {diffgpu.target = #host} {
  // expected-error@+1 {{no derivative rule for 'arith.bitcast'}}
  %i = arith.bitcast %x : f64 to i64
  %y = arith.bitcast %i : i64 to f64
  %r = arith.mulf %y, %x : f64
  return %r : f64
}
func.func @k(%x: f64, %d: f64) attributes {diffgpu.kernel, diffgpu.target = #host} {
  %g = "diffgpu.autodiff"(%d, %x) {callee = @f, activity = ["active"], diffgpu.target = #host, groups = array<i32: 1>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64) -> f64
  return
}

// -----

#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">

// the same bitcast in forward mode
func.func @f(%x: f64) -> f64 attributes {diffgpu.target = #host} {
  // expected-error@+1 {{no derivative rule for 'arith.bitcast'}}
  %i = arith.bitcast %x : f64 to i64
  %y = arith.bitcast %i : i64 to f64
  return %y : f64
}
func.func @k(%x: f64, %t: f64) attributes {diffgpu.kernel, diffgpu.target = #host} {
  %r = "diffgpu.fwddiff"(%x, %t) {callee = @f, activity = ["dup"], diffgpu.target = #host, groups = array<i32: 2>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64) -> f64
  return
}

// -----

#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">

// scf.execute_region has a rule for one block, not for several
func.func @f(%x: f64) -> f64 attributes {diffgpu.target = #host} {
  // expected-error@+1 {{no derivative rule for 'scf.execute_region' with 2 blocks (unstructured control flow)}}
  %r = scf.execute_region -> f64 {
    cf.br ^b
  ^b:
    %s = arith.mulf %x, %x : f64
    scf.yield %s : f64
  }
  return %r : f64
}
func.func @k(%x: f64, %d: f64) attributes {diffgpu.kernel, diffgpu.target = #host} {
  %g = "diffgpu.autodiff"(%d, %x) {callee = @f, activity = ["active"], diffgpu.target = #host, groups = array<i32: 1>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64) -> f64
  return
}

// -----

!A = memref<?xf64, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">

// Inactive values need no rule: a bitcast of a constant argument and an
// scf.parallel over an array without a shadow pass without a diagnostic.
func.func @f(%x: f64, %c: f64, %B: !A, %n: index) -> f64 attributes {diffgpu.target = #host} {
  %i = arith.bitcast %c : f64 to i64
  %y = arith.bitcast %i : i64 to f64
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.parallel (%j) = (%c0) to (%n) step (%c1) {
    %b = memref.load %B[%j] : !A
    %s = arith.mulf %b, %y : f64
    memref.store %s, %B[%j] : !A
    scf.reduce
  }
  %r = arith.mulf %y, %x : f64
  return %r : f64
}
func.func @k(%x: f64, %c: f64, %B: !A, %n: index, %d: f64) attributes {diffgpu.kernel, diffgpu.target = #host} {
  %g = "diffgpu.autodiff"(%d, %x, %c, %B, %n) {callee = @f, activity = ["active", "const", "const", "const"], diffgpu.target = #host, groups = array<i32: 1, 1, 1, 1>, operandSegmentSizes = array<i32: 3, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64, f64, !A, index) -> f64
  return
}

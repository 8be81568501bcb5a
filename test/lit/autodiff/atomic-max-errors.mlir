// dg.atomic_max has a derivative only in the launch after the forward (the
// array 'rmw': its primal holds the final values). Differentiated as 'dup' (an
// in-kernel dg.autodiff / dg.fwddiff) it is refused at the op, and the old value
// it returns cannot be used in either mode.
// RUN: diffgpu-opt %s --split-input-file --diffgpu-autodiff --verify-diagnostics

!A = memref<?xf32, strided<[?], offset: ?>>
#sm90 = #nvvm.target<O = 3, chip = "sm_90">

func.func @amax(%a: !A, %x: !A) attributes {diffgpu.target = #sm90} {
  %c0 = arith.constant 0 : index
  %v = memref.load %x[%c0] : !A
  // expected-error@+1 {{dg.atomic_max (diffgpu.atomic_rmw) of an active value or into a shadowed array has no derivative here}}
  %old = "diffgpu.atomic_rmw"(%a, %v, %c0) {kind = "max"} : (!A, f32, index) -> f32
  return
}
func.func @vjp(%a: !A, %da: !A, %x: !A, %dx: !A) attributes {diffgpu.kernel, diffgpu.target = #sm90} {
  "diffgpu.autodiff"(%a, %da, %x, %dx) {callee = @amax, activity = ["dup", "dup"], diffgpu.target = #sm90, groups = array<i32: 2, 2>, operandSegmentSizes = array<i32: 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (!A, !A, !A, !A) -> ()
  return
}

// -----

!A = memref<?xf32, strided<[?], offset: ?>>
#sm90 = #nvvm.target<O = 3, chip = "sm_90">

func.func @amin(%a: !A, %x: !A) attributes {diffgpu.target = #sm90} {
  %c0 = arith.constant 0 : index
  %v = memref.load %x[%c0] : !A
  // expected-error@+1 {{dg.atomic_min (diffgpu.atomic_rmw) of an active value or into a shadowed array has no derivative here}}
  %old = "diffgpu.atomic_rmw"(%a, %v, %c0) {kind = "min"} : (!A, f32, index) -> f32
  return
}
func.func @jvp(%a: !A, %ta: !A, %x: !A, %tx: !A) attributes {diffgpu.kernel, diffgpu.target = #sm90} {
  "diffgpu.fwddiff"(%a, %ta, %x, %tx) {callee = @amin, activity = ["dup", "dup"], diffgpu.target = #sm90, groups = array<i32: 2, 2>, operandSegmentSizes = array<i32: 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (!A, !A, !A, !A) -> ()
  return
}

// -----

!A = memref<?xf32, strided<[?], offset: ?>>
#sm90 = #nvvm.target<O = 3, chip = "sm_90">

func.func @used(%a: !A, %x: !A) attributes {diffgpu.target = #sm90} {
  %c0 = arith.constant 0 : index
  %v = memref.load %x[%c0] : !A
  // expected-error@+1 {{the old value returned by dg.atomic_max (diffgpu.atomic_rmw) is used}}
  %old = "diffgpu.atomic_rmw"(%a, %v, %c0) {kind = "max"} : (!A, f32, index) -> f32
  memref.store %old, %x[%c0] : !A
  return
}
func.func @vjp(%a: !A, %da: !A, %x: !A, %dx: !A) attributes {diffgpu.kernel, diffgpu.target = #sm90} {
  "diffgpu.autodiff"(%a, %da, %x, %dx) {callee = @used, activity = ["rmw", "dup"], diffgpu.target = #sm90, groups = array<i32: 2, 2>, operandSegmentSizes = array<i32: 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (!A, !A, !A, !A) -> ()
  return
}

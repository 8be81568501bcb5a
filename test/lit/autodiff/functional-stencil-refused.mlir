// The `grad` kind refused (lowering/autodiff/functional/transpose.py): x read at 2 i and
// 3 i (two strides) is no stencil at gid + k, nor constant offsets of one
// c * gid (owned.py: x[2 i], x[2 i + 1] would be), so the adjoint's scatter
// cannot become a gather and the kind is an error (dg.vjp never asks for it
// there: it passes `dup`, the zero-filled atomic form).
// RUN: not diffgpu-opt %s --diffgpu-autodiff 2>&1 | FileCheck %s

!A = memref<?xf32, strided<[?], offset: ?>>
#sm90 = #nvvm.target<O = 3, chip = "sm_90">

func.func @strided(%y: !A, %x: !A) attributes {diffgpu.kernel, diffgpu.target = #sm90} {
  %b = "diffgpu.block_id"() {dim = 0 : i64} : () -> index
  %n = "diffgpu.block_dim"() {dim = 0 : i64} : () -> index
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %m = arith.muli %b, %n : index
  %g = arith.addi %m, %t : index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %len = memref.dim %y, %c0 : !A
  %in = arith.cmpi slt, %g, %len : index
  scf.if %in {
    %c3 = arith.constant 3 : index
    %i2 = arith.muli %g, %c2 : index
    %i3 = arith.muli %g, %c3 : index
    %a = memref.load %x[%i2] : !A
    %c = memref.load %x[%i3] : !A
    %s = arith.addf %a, %c : f32
    memref.store %s, %y[%g] : !A
  }
  return
}
func.func @vjp(%y: !A, %dy: !A, %x: !A, %dx: !A) attributes {diffgpu.kernel, diffgpu.target = #sm90} {
  "diffgpu.autodiff"(%y, %dy, %x, %dx) {callee = @strided, activity = ["cot", "grad"], diffgpu.target = #sm90, groups = array<i32: 2, 2>, operandSegmentSizes = array<i32: 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (!A, !A, !A, !A) -> ()
  return
}
// CHECK: error: argument 1 is 'grad' but its loads are not all at one index made of global ids, nor a 1-D stencil

// 'cot' for an output written in rows (lowering/autodiff/functional/rows.py): the gather
// out[4i + d] = T[idx[i] * 4 + d] for d in range(4) writes each element of out
// once in a launch, so dg.vjp reads its cotangent without a copy: after the
// loop is unrolled, the reverse function has no store into out or dout left,
// only the cotangent's four loads and the four adds into dT.
// RUN: diffgpu-opt %s --diffgpu-autodiff --diffgpu-verify-targets | FileCheck %s

!A = memref<?xf32, strided<[?], offset: ?>>
!I = memref<?xi32, strided<[?], offset: ?>>
#sm90 = #nvvm.target<O = 3, chip = "sm_90">

func.func @rows(%T: !A, %idx: !I, %out: !A) attributes {diffgpu.kernel, diffgpu.target = #sm90} {
  %b = "diffgpu.block_id"() {dim = 0 : i64} : () -> index
  %n = "diffgpu.block_dim"() {dim = 0 : i64} : () -> index
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %m = arith.muli %b, %n : index
  %i = arith.addi %m, %t : index
  %r32 = memref.load %idx[%i] : !I
  %r = arith.index_cast %r32 : i32 to index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %base = arith.muli %i, %c4 : index
  %row = arith.muli %r, %c4 : index
  scf.for %d = %c0 to %c4 step %c1 {
    %src = arith.addi %row, %d : index
    %dst = arith.addi %base, %d : index
    %v = memref.load %T[%src] : !A
    memref.store %v, %out[%dst] : !A
  }
  return
}
func.func @vjp(%T: !A, %dT: !A, %idx: !I, %out: !A, %dout: !A) attributes {diffgpu.kernel, diffgpu.target = #sm90} {
  "diffgpu.autodiff"(%T, %dT, %idx, %out, %dout) {callee = @rows, activity = ["dup", "const", "cot"], diffgpu.target = #sm90, groups = array<i32: 2, 1, 2>, operandSegmentSizes = array<i32: 2, 1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (!A, !A, !I, !A, !A) -> ()
  return
}
// CHECK-LABEL: func.func @__dg_rev_rows_
// CHECK-SAME: (%[[T:[a-z0-9]+]]: memref<{{.+}}>, %[[IDX:[a-z0-9]+]]: memref<{{.+}}>, %[[OUT:[a-z0-9]+]]: memref<{{.+}}>, %[[DT:[a-z0-9]+]]: memref<{{.+}}>, %[[DOUT:[a-z0-9]+]]: memref<{{.+}}>)
// CHECK-NOT: memref.store {{.+}}, %[[OUT]]
// CHECK-NOT: memref.store {{.+}}, %[[DOUT]]
// CHECK-COUNT-4: memref.load %[[DOUT]]
// CHECK-NOT: memref.store {{.+}}, %[[DOUT]]
// CHECK-NOT: memref.store {{.+}}, %[[OUT]]
// CHECK: return

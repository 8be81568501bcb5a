// The `grad` kind for a 1-D stencil input (lowering/autodiff/functional/transpose.py):
// y[i] = 0.25 x[i-1] + 0.5 x[i] + 0.25 x[i+1] under 1 <= i < n - 1. The
// reverse body is replayed once per offset k as thread gid - k (its global
// ids replaced by gid - k; when that thread exists), its add into dx[gid]
// going to a register; dx is written once per element, with no atomic and no
// load of dx.
// RUN: diffgpu-opt %s --diffgpu-autodiff --diffgpu-verify-targets | FileCheck %s

!A = memref<?xf32, strided<[?], offset: ?>>
#sm90 = #nvvm.target<O = 3, chip = "sm_90">

func.func @stencil(%y: !A, %x: !A) attributes {diffgpu.kernel, diffgpu.target = #sm90} {
  %b = "diffgpu.block_id"() {dim = 0 : i64} : () -> index
  %n = "diffgpu.block_dim"() {dim = 0 : i64} : () -> index
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %m = arith.muli %b, %n : index
  %g = arith.addi %m, %t : index
  %g64 = arith.index_cast %g : index to i64
  %c1 = arith.constant 1 : i64
  %c0 = arith.constant 0 : index
  %len = memref.dim %x, %c0 : !A
  %len64 = arith.index_cast %len : index to i64
  %hi = arith.subi %len64, %c1 : i64
  %lo_ok = arith.cmpi sge, %g64, %c1 : i64
  %hi_ok = arith.cmpi slt, %g64, %hi : i64
  %in = arith.andi %lo_ok, %hi_ok : i1
  scf.if %in {
    %m1 = arith.subi %g64, %c1 : i64
    %im1 = arith.index_cast %m1 : i64 to index
    %p1 = arith.addi %g64, %c1 : i64
    %ip1 = arith.index_cast %p1 : i64 to index
    %a = memref.load %x[%im1] : !A
    %v = memref.load %x[%g] : !A
    %c = memref.load %x[%ip1] : !A
    %q = arith.constant 2.500000e-01 : f32
    %h = arith.constant 5.000000e-01 : f32
    %aq = arith.mulf %a, %q : f32
    %vh = arith.mulf %v, %h : f32
    %cq = arith.mulf %c, %q : f32
    %s1 = arith.addf %aq, %vh : f32
    %s = arith.addf %s1, %cq : f32
    memref.store %s, %y[%g] : !A
  }
  return
}
func.func @vjp(%y: !A, %dy: !A, %x: !A, %dx: !A) attributes {diffgpu.kernel, diffgpu.target = #sm90} {
  "diffgpu.autodiff"(%y, %dy, %x, %dx) {callee = @stencil, activity = ["cot", "grad"], diffgpu.target = #sm90, groups = array<i32: 2, 2>, operandSegmentSizes = array<i32: 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (!A, !A, !A, !A) -> ()
  return
}
// CHECK-LABEL: func.func @__dg_rev_stencil_
// CHECK-SAME: (%[[Y:[a-z0-9]+]]: memref<{{.+}}>, %[[X:[a-z0-9]+]]: memref<{{.+}}>, %[[DY:[a-z0-9]+]]: memref<{{.+}}>, %[[DX:[a-z0-9]+]]: memref<{{.+}}>)
// CHECK: %[[G:.+]] = arith.addi %{{.+}}, %{{.+}} : index
// CHECK-NEXT: %[[ACC:.+]] = memref.alloca() : memref<f32>
// CHECK-NEXT: %[[Z:.+]] = arith.constant 0.0
// CHECK-NEXT: memref.store %[[Z]], %[[ACC]][]
// CHECK-NOT: diffgpu.atomic_add
// CHECK-NOT: memref.store {{.+}}, %[[DX]]
// CHECK-NOT: memref.load %[[DX]]
// CHECK-NOT: memref.store {{.+}}, %[[Y]]
// the source thread gid + 1 (k = -1), replayed with its global id gid + 1;
// it exists when gid + 1 is below the launch's thread count
// CHECK: %[[K:.+]] = arith.constant -1 : index
// CHECK-NEXT: %[[SRC:.+]] = arith.subi %[[G]], %[[K]] : index
// CHECK: "diffgpu.grid_dim"() {dim = 0 : i64}
// CHECK: memref.load %[[DY]][%[[SRC]]]
// CHECK: %[[OLD:.+]] = memref.load %[[ACC]][]
// CHECK-NEXT: %[[NEW:.+]] = arith.addf %[[OLD]]
// CHECK-NEXT: memref.store %[[NEW]], %[[ACC]][]
// the thread itself (k = 0), then the source thread gid - 1 (k = 1)
// CHECK: %[[OLD0:.+]] = memref.load %[[ACC]][]
// CHECK-NEXT: %[[NEW0:.+]] = arith.addf %[[OLD0]]
// CHECK-NEXT: memref.store %[[NEW0]], %[[ACC]][]
// CHECK: %[[K1:.+]] = arith.constant 1 : index
// CHECK-NEXT: %[[SRC1:.+]] = arith.subi %[[G]], %[[K1]] : index
// CHECK: memref.load %[[DY]][%[[SRC1]]]
// CHECK: %[[OLD1:.+]] = memref.load %[[ACC]][]
// CHECK-NEXT: %[[NEW1:.+]] = arith.addf %[[OLD1]]
// CHECK-NEXT: memref.store %[[NEW1]], %[[ACC]][]
// CHECK-NOT: diffgpu.atomic_add
// CHECK-NOT: memref.store {{.+}}, %[[DX]]
// CHECK: %[[V:.+]] = memref.load %[[ACC]][]
// CHECK-NEXT: memref.store %[[V]], %[[DX]][%{{.+}}]
// CHECK-NEXT: }
// CHECK-NEXT: return

// The `grad` kind for other affine stencils (lowering/autodiff/functional/gather.py):
// dg.vjp's reverse function transposed into a gather over a grid-stride walk
// of the gradient's elements, each element written once, no atomic.
// RUN: diffgpu-opt %s --split-input-file --diffgpu-autodiff --canonicalize | FileCheck %s

// A 2-D stencil y[i, j] = x[i - 1, j] + 2 x[i, j + 1] (i >= 1): thread (p0, p1) walks
// p0 += N0, p1 += N1 over dx; per offset o it replays the source p - o when that
// thread exists (0 <= p - o < N per dimension) and adds its contribution to a
// register; dx[p0, p1] is stored once, after both offsets.
module {
  func.func @two(%arg0: memref<?x?xf32, strided<[?, ?], offset: ?>>, %arg1: memref<?x?xf32, strided<[?, ?], offset: ?>>) attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
    %0 = "diffgpu.block_id"() {dim = 0 : i64} : () -> index
    %1 = "diffgpu.block_dim"() {dim = 0 : i64} : () -> index
    %2 = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
    %3 = arith.muli %0, %1 : index
    %4 = arith.addi %3, %2 : index
    %5 = arith.index_cast %4 : index to i64
    %6 = "diffgpu.block_id"() {dim = 1 : i64} : () -> index
    %7 = "diffgpu.block_dim"() {dim = 1 : i64} : () -> index
    %8 = "diffgpu.thread_id"() {dim = 1 : i64} : () -> index
    %9 = arith.muli %6, %7 : index
    %10 = arith.addi %9, %8 : index
    %11 = arith.index_cast %10 : index to i64
    %c1_i64 = arith.constant 1 : i64
    %12 = arith.cmpi sge, %5, %c1_i64 : i64
    %13 = scf.if %12 -> (i1) {
      %c0 = arith.constant 0 : index
      %dim = memref.dim %arg0, %c0 : memref<?x?xf32, strided<[?, ?], offset: ?>>
      %15 = arith.index_cast %dim : index to i64
      %16 = arith.cmpi slt, %5, %15 : i64
      scf.yield %16 : i1
    } else {
      scf.yield %12 : i1
    }
    %14 = scf.if %13 -> (i1) {
      %c1 = arith.constant 1 : index
      %dim = memref.dim %arg0, %c1 : memref<?x?xf32, strided<[?, ?], offset: ?>>
      %15 = arith.index_cast %dim : index to i64
      %16 = arith.cmpi slt, %11, %15 : i64
      scf.yield %16 : i1
    } else {
      scf.yield %13 : i1
    }
    scf.if %14 {
      %c1_i64_0 = arith.constant 1 : i64
      %15 = arith.subi %5, %c1_i64_0 : i64
      %16 = arith.index_cast %15 : i64 to index
      %17 = memref.load %arg1[%16, %10] : memref<?x?xf32, strided<[?, ?], offset: ?>>
      %c1_i64_1 = arith.constant 1 : i64
      %18 = arith.addi %11, %c1_i64_1 : i64
      %19 = arith.index_cast %18 : i64 to index
      %20 = memref.load %arg1[%4, %19] : memref<?x?xf32, strided<[?, ?], offset: ?>>
      %cst = arith.constant 2.000000e+00 : f32
      %21 = arith.mulf %cst, %20 : f32
      %22 = arith.addf %17, %21 : f32
      memref.store %22, %arg0[%4, %10] : memref<?x?xf32, strided<[?, ?], offset: ?>>
    }
    return
  }
  func.func @__dg_reverse_two(%arg0: memref<?x?xf32, strided<[?, ?], offset: ?>>, %arg1: memref<?x?xf32, strided<[?, ?], offset: ?>>, %arg2: memref<?x?xf32, strided<[?, ?], offset: ?>>, %arg3: memref<?x?xf32, strided<[?, ?], offset: ?>>) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
    "diffgpu.autodiff"(%arg0, %arg1, %arg2, %arg3) {activity = ["cot", "grad"], callee = @two, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">, groups = array<i32: 2, 2>, operandSegmentSizes = array<i32: 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>) -> ()
    return
  }
}
// CHECK-LABEL: func.func @__dg_rev_two_
// CHECK-SAME: (%{{[a-z0-9]+}}: memref<{{.+}}>, %{{[a-z0-9]+}}: memref<{{.+}}>, %[[DY:[a-z0-9]+]]: memref<{{.+}}>, %[[DX:[a-z0-9]+]]: memref<{{.+}}>)
// CHECK-NOT: diffgpu.atomic_add
// CHECK: %[[ACC:.+]] = memref.alloca() : memref<f32>
// CHECK: %[[N0:.+]] = arith.muli %{{.+}}, %{{.+}} : index
// CHECK: %[[N1:.+]] = arith.muli %{{.+}}, %{{.+}} : index
// CHECK: %[[X0:.+]] = memref.dim %[[DX]], %{{.+}}
// CHECK-NEXT: scf.for %[[P0:.+]] = %{{.+}} to %[[X0]] step %[[N0]] {
// CHECK: scf.for %[[P1:.+]] = %{{.+}} to %{{.+}} step %[[N1]] {
// CHECK-NEXT: memref.store %{{.+}}, %[[ACC]][]
// offset (0, 1): the source (p0, p1 - 1)
// CHECK-NEXT: %[[S1:.+]] = arith.subi %[[P1]], %{{.+}} : index
// CHECK: arith.cmpi slt, %[[S1]], %[[N1]] : index
// CHECK: memref.load %[[DY]][%[[P0]], %[[S1]]]
// CHECK: memref.store %{{.+}}, %[[ACC]][]
// offset (-1, 0): the source (p0 + 1, p1)
// CHECK: %[[S0:.+]] = arith.subi %[[P0]], %{{.+}} : index
// CHECK: arith.cmpi slt, %[[S0]], %[[N0]] : index
// CHECK: memref.load %[[DY]][%[[S0]], %[[P1]]]
// CHECK: memref.store %{{.+}}, %[[ACC]][]
// CHECK-NOT: diffgpu.atomic_add
// CHECK: %[[V:.+]] = memref.load %[[ACC]][]
// CHECK-NEXT: memref.store %[[V]], %[[DX]][%[[P0]], %[[P1]]]
// CHECK-NOT: diffgpu.atomic_add
// CHECK: return

// -----

// A flattened offset that is a runtime value, y[i] = 3 x[i + W]: the offset
// is rebuilt from the argument W, the source is p - W.
module {
  func.func @rows(%arg0: memref<?xf32, strided<[?], offset: ?>>, %arg1: memref<?xf32, strided<[?], offset: ?>>, %arg2: i64) attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
    %0 = "diffgpu.block_id"() {dim = 0 : i64} : () -> index
    %1 = "diffgpu.block_dim"() {dim = 0 : i64} : () -> index
    %2 = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
    %3 = arith.muli %0, %1 : index
    %4 = arith.addi %3, %2 : index
    %5 = arith.index_cast %4 : index to i64
    %c0 = arith.constant 0 : index
    %dim = memref.dim %arg0, %c0 : memref<?xf32, strided<[?], offset: ?>>
    %6 = arith.index_cast %dim : index to i64
    %7 = arith.cmpi slt, %5, %6 : i64
    scf.if %7 {
      %8 = arith.addi %5, %arg2 : i64
      %9 = arith.index_cast %8 : i64 to index
      %10 = memref.load %arg1[%9] : memref<?xf32, strided<[?], offset: ?>>
      %cst = arith.constant 3.000000e+00 : f32
      %11 = arith.mulf %10, %cst : f32
      memref.store %11, %arg0[%4] : memref<?xf32, strided<[?], offset: ?>>
    }
    return
  }
  func.func @__dg_reverse_rows(%arg0: memref<?xf32, strided<[?], offset: ?>>, %arg1: memref<?xf32, strided<[?], offset: ?>>, %arg2: memref<?xf32, strided<[?], offset: ?>>, %arg3: memref<?xf32, strided<[?], offset: ?>>, %arg4: i64) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
    "diffgpu.autodiff"(%arg0, %arg1, %arg2, %arg3, %arg4) {activity = ["cot", "grad", "const"], callee = @rows, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">, groups = array<i32: 2, 2, 1>, operandSegmentSizes = array<i32: 4, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (memref<?xf32, strided<[?], offset: ?>>, memref<?xf32, strided<[?], offset: ?>>, memref<?xf32, strided<[?], offset: ?>>, memref<?xf32, strided<[?], offset: ?>>, i64) -> ()
    return
  }
}
// CHECK-LABEL: func.func @__dg_rev_rows_
// CHECK-SAME: (%{{[a-z0-9]+}}: memref<{{.+}}>, %{{[a-z0-9]+}}: memref<{{.+}}>, %[[W:[a-z0-9]+]]: i64, %[[DY:[a-z0-9]+]]: memref<{{.+}}>, %[[DX:[a-z0-9]+]]: memref<{{.+}}>)
// CHECK-NOT: diffgpu.atomic_add
// CHECK: %[[WI:.+]] = arith.index_cast %[[W]] : i64 to index
// CHECK: scf.for %[[P:.+]] = %{{.+}} to %{{.+}} step %{{.+}} {
// CHECK: %[[S:.+]] = arith.subi %[[P]], %[[WI]] : index
// CHECK: memref.load %[[DY]][%[[S]]]
// CHECK: memref.store %{{.+}}, %[[ACC:.+]][] : memref<f32>
// CHECK: %[[V:.+]] = memref.load %[[ACC]][]
// CHECK-NEXT: memref.store %[[V]], %[[DX]][%[[P]]]
// CHECK-NOT: diffgpu.atomic_add
// CHECK: return

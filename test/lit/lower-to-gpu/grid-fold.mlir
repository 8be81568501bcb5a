// RUN: diffgpu-opt %s --split-input-file --verify-diagnostics --diffgpu-lower-to-gpu | FileCheck %s

// A kernel marked `diffgpu.grid_fold = array<i64: y, z, hy, hz>` runs on the
// hardware grid (x, hy, hz): block_id(1) / block_id(2) come from the row
// by + bz * hy (its remainder and quotient by y), grid_dim(1) / grid_dim(2)
// are the constants y and z, in the kernel and in its module's device
// functions; x stays the hardware's. Here y * z = 131072 rows on 43691 x 3
// hardware rows: one spare row returns at entry.

// CHECK-LABEL: func.func private @ids
// CHECK-DAG: %[[BY:.+]] = gpu.block_id y
// CHECK-DAG: %[[BZ:.+]] = gpu.block_id z
// CHECK-DAG: %[[HY:.+]] = arith.constant 43691 : index
// CHECK: %[[M:.+]] = arith.muli %[[BZ]], %[[HY]] : index
// CHECK: %[[ROW:.+]] = arith.addi %[[BY]], %[[M]] : index
// CHECK: %[[Y:.+]] = arith.constant 65536 : index
// CHECK: %[[BIDY:.+]] = arith.remui %[[ROW]], %[[Y]] : index
// CHECK: %[[BIDZ:.+]] = arith.divui %{{.+}}, %{{.+}} : index
// CHECK: %[[GZ:.+]] = arith.constant 2 : index
// CHECK: %[[X:.+]] = gpu.block_id x
// CHECK-NOT: gpu.grid_dim y
// CHECK-NOT: gpu.grid_dim z
// CHECK: return
// CHECK-LABEL: gpu.func @k
// CHECK-SAME: kernel
// CHECK: %[[KBY:.+]] = gpu.block_id y
// CHECK: %[[KROW:.+]] = arith.addi %[[KBY]], %{{.+}} : index
// CHECK: %[[ROWS:.+]] = arith.constant 131072 : index
// CHECK: %[[IN:.+]] = arith.cmpi ult, %[[KROW]], %[[ROWS]] : index
// CHECK: cf.cond_br %[[IN]], ^[[BODY:.+]], ^[[DONE:.+]]
// CHECK: ^[[BODY]]:
// CHECK: func.call @ids
// CHECK: ^[[DONE]]:
// CHECK-NEXT: gpu.return
func.func private @ids() -> (index, index, index, index) attributes {diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  %y = "diffgpu.block_id"() {dim = 1 : i64} : () -> index
  %z = "diffgpu.block_id"() {dim = 2 : i64} : () -> index
  %gz = "diffgpu.grid_dim"() {dim = 2 : i64} : () -> index
  %x = "diffgpu.block_id"() {dim = 0 : i64} : () -> index
  return %y, %z, %gz, %x : index, index, index, index
}
func.func @k() attributes {diffgpu.kernel, diffgpu.grid_fold = array<i64: 65536, 2, 43691, 3>, diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  %r:4 = func.call @ids() : () -> (index, index, index, index)
  return
}

// -----

// z == 1 and no spare row (70000 rows on 35000 x 2): block_id(1) is the row
// itself, block_id(2) the constant 0, grid_dim(1) the constant 70000; no
// entry test.

// CHECK-LABEL: gpu.func @flat
// CHECK-NOT: cf.cond_br
// CHECK: %[[BY:.+]] = gpu.block_id y
// CHECK: %[[BZ:.+]] = gpu.block_id z
// CHECK: %[[HY:.+]] = arith.constant 35000 : index
// CHECK: %[[M:.+]] = arith.muli %[[BZ]], %[[HY]] : index
// CHECK: %[[ROW:.+]] = arith.addi %[[BY]], %[[M]] : index
// CHECK: %[[Z:.+]] = arith.constant 0 : index
// CHECK: %[[GY:.+]] = arith.constant 70000 : index
// CHECK: memref.store %{{.+}}, %{{.+}}[%[[ROW]]]
// CHECK: memref.store %{{.+}}, %{{.+}}[%[[Z]]]
// CHECK: memref.store %{{.+}}, %{{.+}}[%[[GY]]]
// CHECK-NOT: cf.cond_br
// CHECK: gpu.return
func.func @flat(%A: memref<?xf32, strided<[?], offset: ?>>, %v: f32) attributes {diffgpu.kernel, diffgpu.grid_fold = array<i64: 70000, 1, 35000, 2>, diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  %y = "diffgpu.block_id"() {dim = 1 : i64} : () -> index
  %z = "diffgpu.block_id"() {dim = 2 : i64} : () -> index
  %gy = "diffgpu.grid_dim"() {dim = 1 : i64} : () -> index
  memref.store %v, %A[%y] : memref<?xf32, strided<[?], offset: ?>>
  memref.store %v, %A[%z] : memref<?xf32, strided<[?], offset: ?>>
  memref.store %v, %A[%gy] : memref<?xf32, strided<[?], offset: ?>>
  return
}

// -----

// A fold that is no hardware grid for its rows (35000 x 1 < 70000) is an error.

// expected-error @+1 {{diffgpu.grid_fold = array<i64: 70000, 1, 35000, 1> is not (y, z, hy, hz) of a hardware grid}}
func.func @bad() attributes {diffgpu.kernel, diffgpu.grid_fold = array<i64: 70000, 1, 35000, 1>, diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  %y = "diffgpu.block_id"() {dim = 1 : i64} : () -> index
  return
}

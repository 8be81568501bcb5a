// diffgpu-vector-red (lowering/reduce/vector_red.py): on sm_90, f32 atomic adds
// with unused results into 4 (or 2) adjacent elements of one array become one
// call of a helper that the LLVM lowering turns into `red.global.add.v4.f32`.
// The earlier atomics move down to the last one, past loads and stores of other
// arrays (the function's arrays are disjoint: diffgpu.noalias); the module's
// target is raised to PTX 8.1 on the module and on every function in it.
// RUN: diffgpu-opt %s -p 'diffgpu-lower-to-gpu,diffgpu-vector-red' | FileCheck %s

!A = memref<?xf32, strided<[?], offset: ?>>
!M = memref<?x?xf32, strided<[?, ?], offset: ?>>
!I = memref<?xi32, strided<[?], offset: ?>>
#gpu = #nvvm.target<O = 3, chip = "sm_90">

// The gradient of a row gather T[idx[i]*4 + d], d = 0..3, after unrolling:
// the adds are interleaved with the consuming stores of the output's shadow.
func.func @rows(%dT: !A, %dO: !A, %idx: !I) attributes {diffgpu.kernel, diffgpu.noalias, diffgpu.target = #gpu} {
  %i = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %r32 = memref.load %idx[%i] : !I
  %r64 = arith.extsi %r32 : i32 to i64
  %c4 = arith.constant 4 : i64
  %b = arith.muli %r64, %c4 : i64
  %c1 = arith.constant 1 : i64
  %c2 = arith.constant 2 : i64
  %c3 = arith.constant 3 : i64
  %b1 = arith.addi %b, %c1 : i64
  %b2 = arith.addi %b, %c2 : i64
  %b3 = arith.addi %b, %c3 : i64
  %x0 = arith.index_cast %b : i64 to index
  %x1 = arith.index_cast %b1 : i64 to index
  %x2 = arith.index_cast %b2 : i64 to index
  %x3 = arith.index_cast %b3 : i64 to index
  %zero = arith.constant 0.0 : f32
  %g3 = memref.load %dO[%x3] : !A
  memref.store %zero, %dO[%x3] : !A
  %a3 = "diffgpu.atomic_add"(%dT, %g3, %x3) : (!A, f32, index) -> f32
  %g1 = memref.load %dO[%x1] : !A
  memref.store %zero, %dO[%x1] : !A
  %a1 = "diffgpu.atomic_add"(%dT, %g1, %x1) : (!A, f32, index) -> f32
  %g2 = memref.load %dO[%x2] : !A
  %a2 = "diffgpu.atomic_add"(%dT, %g2, %x2) : (!A, f32, index) -> f32
  %g0 = memref.load %dO[%x0] : !A
  %a0 = "diffgpu.atomic_add"(%dT, %g0, %x0) : (!A, f32, index) -> f32
  return
}
// CHECK: gpu.module @diffgpu_sm_90 [#nvvm.target<O = 3, chip = "sm_90", features = "+ptx81">]
// CHECK-DAG: func.func private @[[V4:__dg_red_add_v4_[0-9]+]](memref<?xf32, strided<[?], offset: ?>>, index, f32, f32, f32, f32) attributes {diffgpu.target = #nvvm.target<O = 3, chip = "sm_90", features = "+ptx81">}
// CHECK-DAG: func.func private @[[V2:__dg_red_add_v2_[0-9]+]](memref<?x?xf32, strided<[?, ?], offset: ?>>, index, index, f32, f32) attributes {diffgpu.target = #nvvm.target<O = 3, chip = "sm_90", features = "+ptx81">}
// CHECK-LABEL: gpu.func @rows
// CHECK-SAME: (%[[DT:[a-z0-9]+]]: memref<{{[^%]+}}, %[[DO:[a-z0-9]+]]: memref<{{[^%]+}}, %{{.+}}: memref<{{[^%]+}})
// CHECK-SAME: diffgpu.target = #nvvm.target<O = 3, chip = "sm_90", features = "+ptx81">
// CHECK-NOT: memref.atomic_rmw
// CHECK: %[[G3:.+]] = memref.load %[[DO]]
// CHECK: %[[G1:.+]] = memref.load %[[DO]]
// CHECK: %[[G2:.+]] = memref.load %[[DO]]
// CHECK: %[[G0:.+]] = memref.load %[[DO]][%[[X0:.+]]] :
// CHECK-NEXT: func.call @[[V4]](%[[DT]], %[[X0]], %[[G0]], %[[G1]], %[[G2]], %[[G3]])
// CHECK-NOT: memref.atomic_rmw
// CHECK: return

// 2-D: the innermost subscript is adjacent (j, j+1), the row the same; a
// third add to a repeated element stays a scalar atomic.
func.func @pairs(%m: !M, %x: !A, %row: index, %j: index) attributes {diffgpu.kernel, diffgpu.noalias, diffgpu.target = #gpu} {
  %c1 = arith.constant 1 : index
  %j1 = arith.addi %j, %c1 : index
  %v = memref.load %x[%j] : !A
  %w = memref.load %x[%j1] : !A
  %a = "diffgpu.atomic_add"(%m, %v, %row, %j) : (!M, f32, index, index) -> f32
  %b = "diffgpu.atomic_add"(%m, %w, %row, %j1) : (!M, f32, index, index) -> f32
  %c = "diffgpu.atomic_add"(%m, %w, %row, %j1) : (!M, f32, index, index) -> f32
  return
}
// CHECK-LABEL: gpu.func @pairs
// CHECK-SAME: (%[[M:[a-z0-9]+]]: memref<{{[^%]+}}, %{{.+}}: memref<{{[^%]+}}, %[[ROW:[a-z0-9]+]]: index, %[[J:[a-z0-9]+]]: index)
// CHECK: %[[V:.+]] = memref.load
// CHECK: %[[W:.+]] = memref.load
// CHECK: func.call @[[V2]](%[[M]], %[[ROW]], %[[J]], %[[V]], %[[W]])
// CHECK-NEXT: memref.atomic_rmw addf %[[W]], %[[M]][%[[ROW]], %{{.+}}]
// CHECK-NEXT: gpu.return

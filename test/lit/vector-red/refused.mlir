// diffgpu-vector-red leaves atomics alone when it cannot prove the vector form
// equal: chips before sm_90, results that are used, float64, elements that are
// not adjacent, another row, a store to the same array or a barrier between
// them, and loads of other arrays between them when the arrays may overlap
// (no diffgpu.noalias). DIFFGPU_VECTOR_RED=0 turns the rewrite off. No helper
// is declared and the targets keep their PTX version.
// RUN: diffgpu-opt %s -p 'diffgpu-lower-to-gpu,diffgpu-vector-red' | FileCheck %s
// RUN: diffgpu-opt %s -p 'diffgpu-lower-to-gpu,diffgpu-vector-red' | FileCheck %s --check-prefix=NOREWRITE
// RUN: env DIFFGPU_VECTOR_RED=0 diffgpu-opt %S/group.mlir -p 'diffgpu-lower-to-gpu,diffgpu-vector-red' | FileCheck %s --check-prefix=OFF

!A = memref<?xf32, strided<[?], offset: ?>>
!D = memref<?xf64, strided<[?], offset: ?>>
!M = memref<?x?xf32, strided<[?, ?], offset: ?>>
#gpu = #nvvm.target<O = 3, chip = "sm_90">

// CHECK-LABEL: gpu.func @used_result
// CHECK-COUNT-2: memref.atomic_rmw
func.func @used_result(%a: !A, %o: !A, %i: index, %v: f32) attributes {diffgpu.kernel, diffgpu.noalias, diffgpu.target = #gpu} {
  %c1 = arith.constant 1 : index
  %i1 = arith.addi %i, %c1 : index
  %x = "diffgpu.atomic_add"(%a, %v, %i) : (!A, f32, index) -> f32
  %y = "diffgpu.atomic_add"(%a, %v, %i1) : (!A, f32, index) -> f32
  memref.store %x, %o[%i] : !A
  return
}

// CHECK-LABEL: gpu.func @float64
// CHECK-COUNT-2: memref.atomic_rmw
func.func @float64(%a: !D, %i: index, %v: f64) attributes {diffgpu.kernel, diffgpu.noalias, diffgpu.target = #gpu} {
  %c1 = arith.constant 1 : index
  %i1 = arith.addi %i, %c1 : index
  %x = "diffgpu.atomic_add"(%a, %v, %i) : (!D, f64, index) -> f64
  %y = "diffgpu.atomic_add"(%a, %v, %i1) : (!D, f64, index) -> f64
  return
}

// CHECK-LABEL: gpu.func @gap
// CHECK-COUNT-2: memref.atomic_rmw
func.func @gap(%a: !A, %i: index, %v: f32) attributes {diffgpu.kernel, diffgpu.noalias, diffgpu.target = #gpu} {
  %c2 = arith.constant 2 : index
  %i2 = arith.addi %i, %c2 : index
  %x = "diffgpu.atomic_add"(%a, %v, %i) : (!A, f32, index) -> f32
  %y = "diffgpu.atomic_add"(%a, %v, %i2) : (!A, f32, index) -> f32
  return
}

// CHECK-LABEL: gpu.func @other_row
// CHECK-COUNT-2: memref.atomic_rmw
func.func @other_row(%m: !M, %r: index, %s: index, %j: index, %v: f32) attributes {diffgpu.kernel, diffgpu.noalias, diffgpu.target = #gpu} {
  %c1 = arith.constant 1 : index
  %j1 = arith.addi %j, %c1 : index
  %x = "diffgpu.atomic_add"(%m, %v, %r, %j) : (!M, f32, index, index) -> f32
  %y = "diffgpu.atomic_add"(%m, %v, %s, %j1) : (!M, f32, index, index) -> f32
  return
}

// CHECK-LABEL: gpu.func @store_between
// CHECK: memref.atomic_rmw
// CHECK-NEXT: memref.store
// CHECK-NEXT: memref.atomic_rmw
func.func @store_between(%a: !A, %i: index, %v: f32) attributes {diffgpu.kernel, diffgpu.noalias, diffgpu.target = #gpu} {
  %c1 = arith.constant 1 : index
  %i1 = arith.addi %i, %c1 : index
  %x = "diffgpu.atomic_add"(%a, %v, %i) : (!A, f32, index) -> f32
  memref.store %v, %a[%i1] : !A
  %y = "diffgpu.atomic_add"(%a, %v, %i1) : (!A, f32, index) -> f32
  return
}

// CHECK-LABEL: gpu.func @barrier_between
// CHECK: memref.atomic_rmw
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: memref.atomic_rmw
func.func @barrier_between(%a: !A, %i: index, %v: f32) attributes {diffgpu.kernel, diffgpu.noalias, diffgpu.target = #gpu} {
  %c1 = arith.constant 1 : index
  %i1 = arith.addi %i, %c1 : index
  %x = "diffgpu.atomic_add"(%a, %v, %i) : (!A, f32, index) -> f32
  "diffgpu.barrier"() : () -> ()
  %y = "diffgpu.atomic_add"(%a, %v, %i1) : (!A, f32, index) -> f32
  return
}

// CHECK-LABEL: gpu.func @may_alias
// CHECK: memref.atomic_rmw
// CHECK-NEXT: memref.load
// CHECK-NEXT: memref.atomic_rmw
func.func @may_alias(%a: !A, %b: !A, %i: index, %v: f32) attributes {diffgpu.kernel, diffgpu.target = #gpu} {
  %c1 = arith.constant 1 : index
  %i1 = arith.addi %i, %c1 : index
  %x = "diffgpu.atomic_add"(%a, %v, %i) : (!A, f32, index) -> f32
  %w = memref.load %b[%i] : !A
  %y = "diffgpu.atomic_add"(%a, %w, %i1) : (!A, f32, index) -> f32
  return
}
// NOREWRITE-NOT: __dg_red_add
// NOREWRITE-NOT: features

// OFF-NOT: __dg_red_add
// OFF-NOT: features
// OFF: memref.atomic_rmw

// Vector reductions are an sm_90 instruction: an sm_80 module keeps its scalar
// atomics and its PTX version (its PTX: sm80-ptx.mlir).
// RUN: diffgpu-opt %s -p 'diffgpu-lower-to-gpu,diffgpu-vector-red' | FileCheck %s

!A = memref<?xf32, strided<[?], offset: ?>>
#gpu = #nvvm.target<O = 3, chip = "sm_80">

func.func @k(%a: !A, %i: index, %v: f32, %w: f32) attributes {diffgpu.kernel, diffgpu.noalias, diffgpu.target = #gpu} {
  %c1 = arith.constant 1 : index
  %i1 = arith.addi %i, %c1 : index
  %x = "diffgpu.atomic_add"(%a, %v, %i) : (!A, f32, index) -> f32
  %y = "diffgpu.atomic_add"(%a, %w, %i1) : (!A, f32, index) -> f32
  return
}
// CHECK: gpu.module @diffgpu_sm_80 [#nvvm.target<O = 3, chip = "sm_80">]
// CHECK-NOT: __dg_red_add
// CHECK-COUNT-2: memref.atomic_rmw

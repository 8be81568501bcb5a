// diffgpu-warp-atomics (lowering/gpu/atomics.py): inside gpu.modules, an atomic
// add with unused result on a uniform element (here in a loop, where the block
// pass does not apply) is summed over the warp by a butterfly of shuffles when
// all 32 lanes are there (activemask), then added once by lane 0; a partial warp
// adds lane by lane. Thread-dependent elements keep a plain atomic.
// RUN: diffgpu-opt %s -p 'diffgpu-lower-to-gpu,diffgpu-warp-atomics' | FileCheck %s

!A = memref<?xf32, strided<[?], offset: ?>>
#gpu = #nvvm.target<O = 3, chip = "sm_90">
func.func @loop(%out: !A, %x: !A, %n: index) attributes {diffgpu.kernel, diffgpu.target = #gpu} {
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %v = memref.load %x[%t] : !A
  scf.for %j = %c0 to %n step %c1 {
    %o = "diffgpu.atomic_add"(%out, %v, %j) : (!A, f32, index) -> f32
    %p = "diffgpu.atomic_add"(%out, %v, %n) : (!A, f32, index) -> f32
  }
  %q = "diffgpu.atomic_add"(%out, %v, %t) : (!A, f32, index) -> f32
  return
}
// CHECK-LABEL: gpu.func @loop
// CHECK-SAME: (%[[OUT:[a-z0-9]+]]: memref<{{[^%]+}}, %[[X:[a-z0-9]+]]: memref<{{[^%]+}}, %[[N:[a-z0-9]+]]: index)
// CHECK: %[[V:.+]] = memref.load %[[X]]
// CHECK: scf.for %[[J:[a-z0-9]+]] =
// CHECK-NEXT: memref.atomic_rmw addf %[[V]], %[[OUT]][%[[J]]]
// CHECK-NEXT: %[[MASK:.+]] = llvm.inline_asm has_side_effects "activemask.b32 $0;", "=r"  : () -> i32
// CHECK-NEXT: %[[ALL:.+]] = arith.constant -1 : i32
// CHECK-NEXT: %[[FULL:.+]] = arith.cmpi eq, %[[MASK]], %[[ALL]] : i32
// CHECK-NEXT: scf.if %[[FULL]] {
// CHECK: %[[S1:[a-zA-Z0-9_]+]], %{{.+}} = gpu.shuffle  xor %[[V]], %{{.+}}, %{{.+}} : f32
// CHECK-NEXT: %[[A1:.+]] = arith.addf %[[V]], %[[S1]] : f32
// CHECK-COUNT-4: gpu.shuffle  xor
// CHECK: %[[SUM:.+]] = arith.addf
// CHECK-NEXT: %[[LANE:.+]] = gpu.lane_id
// CHECK: scf.if
// CHECK-NEXT: memref.atomic_rmw addf %[[SUM]], %[[OUT]][%[[N]]]
// CHECK: } else {
// CHECK-NEXT: memref.atomic_rmw addf %[[V]], %[[OUT]][%[[N]]]
// CHECK: }
// CHECK: }
// CHECK-NEXT: %{{.+}} = memref.atomic_rmw addf %[[V]], %[[OUT]][%{{.+}}]
// CHECK-NEXT: gpu.return

// diffgpu-index32 (lowering/facts/specialize_shapes.py, nsw_subscripts): in a module
// lowered to 32-bit indices, a subscript `index_cast(X + C)` computed in i64
// becomes `index_cast(X) + C` with nsw, so that LLVM sees one base for A[4i],
// A[4i + 1], ... and merges them into vector accesses. A negative C only on an
// index value (which fits in int32 by its type); a use of the value that is not
// a subscript (a tape slot) keeps the exact cast.
// RUN: diffgpu-opt %s --diffgpu-index32 | FileCheck %s

!A = memref<?xf32, strided<[?], offset: ?>>
#facts = {noalias = true, contiguous = [true, false], unit_dims = [1 : i64, 2 : i64], aligned = [true, false], grid_div = false, grid_div16 = false, extents = [[0 : i64], []], index32 = true, ranks = [1 : i64, -1 : i64]}
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @k(%x: !A, %w: i64) kernel attributes {diffgpu.launch_facts = #facts} {
      %i = gpu.thread_id x
      %i64 = arith.index_cast %i : index to i64
      %c4 = arith.constant 4 : i64
      %c1 = arith.constant 1 : index
      %one = arith.index_cast %c1 : index to i64
      %m1 = arith.constant -1 : i64
      %base = arith.muli %i64, %c4 : i64
      %j = arith.addi %base, %one : i64
      %jx = arith.index_cast %j : i64 to index
      %v = memref.load %x[%jx] : !A
      memref.store %v, %x[%jx] : !A
      %slot = memref.alloca() : memref<index>
      memref.store %jx, %slot[] : memref<index>
      %back = arith.addi %i64, %m1 : i64
      %bx = arith.index_cast %back : i64 to index
      %u = memref.load %x[%bx] : !A
      %far = arith.addi %w, %m1 : i64
      %fx = arith.index_cast %far : i64 to index
      %z = memref.load %x[%fx] : !A
      gpu.return
    }
  }
}
// CHECK-LABEL: gpu.func @k
// CHECK-SAME: (%[[X:[a-z0-9]+]]: memref<{{[^%]+}}, %[[W:[a-z0-9]+]]: i64)
// CHECK: %[[BASE:.+]] = arith.muli
// CHECK: %[[J:.+]] = arith.addi %[[BASE]]
// CHECK-NEXT: %[[B32:.+]] = arith.index_cast %[[BASE]] : i64 to index
// CHECK-NEXT: %[[C:.+]] = arith.constant 1 : index
// CHECK-NEXT: %[[JN:.+]] = arith.addi %[[B32]], %[[C]] overflow<nsw> : index
// CHECK-NEXT: %[[JX:.+]] = arith.index_cast %[[J]] : i64 to index
// CHECK-NEXT: memref.load %[[X]][%[[JN]]]
// CHECK-NEXT: memref.store %{{.+}}, %[[X]][%[[JN]]]
// CHECK: memref.store %[[JX]], %{{.+}}[] : memref<index>
// CHECK: arith.addi %{{.+}}, %{{.+}} overflow<nsw> : index
// CHECK: %[[FAR:.+]] = arith.addi %[[W]]
// CHECK-NEXT: %[[FX:.+]] = arith.index_cast %[[FAR]] : i64 to index
// CHECK-NEXT: memref.load %[[X]][%[[FX]]]

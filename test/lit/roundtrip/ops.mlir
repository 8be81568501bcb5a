// Every op of the diffgpu dialect parses, verifies, prints, and parses back
// to the same text: directly, after one print, and through the generic form.
// RUN: diffgpu-opt %s | FileCheck %s
// RUN: diffgpu-opt %s | diffgpu-opt | FileCheck %s
// RUN: diffgpu-opt %s --mlir-print-op-generic | diffgpu-opt | FileCheck %s
// RUN: diffgpu-opt %s --split-input-file --mlir-print-op-generic | FileCheck %s --check-prefix=GENERIC

// Geometry ops, one per axis.
// CHECK-LABEL: func.func @geometry
// CHECK-NEXT: %[[T:.+]] = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
// CHECK-NEXT: %[[B:.+]] = "diffgpu.block_id"() {dim = 1 : i64} : () -> index
// CHECK-NEXT: %[[D:.+]] = "diffgpu.block_dim"() {dim = 2 : i64} : () -> index
// CHECK-NEXT: %[[G:.+]] = "diffgpu.grid_dim"() {dim = 0 : i64} : () -> index
// CHECK-NEXT: return %[[T]], %[[B]], %[[D]], %[[G]]
// GENERIC: "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
func.func @geometry() -> (index, index, index, index) attributes {diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %b = "diffgpu.block_id"() {dim = 1 : i64} : () -> index
  %d = "diffgpu.block_dim"() {dim = 2 : i64} : () -> index
  %g = "diffgpu.grid_dim"() {dim = 0 : i64} : () -> index
  return %t, %b, %d, %g : index, index, index, index
}

// Barrier, shared memory and atomics (one and two indices).
// CHECK-LABEL: func.func @memory
// CHECK-NEXT: %[[S:.+]] = "diffgpu.shared_alloc"() : () -> memref<16x16xf32, #gpu.address_space<workgroup>>
// CHECK-NEXT: "diffgpu.barrier"() : () -> ()
// CHECK-NEXT: %[[O1:.+]] = "diffgpu.atomic_add"(%{{.+}}, %{{.+}}, %{{.+}}) : (memref<?xf32, strided<[?], offset: ?>>, f32, index) -> f32
// CHECK-NEXT: %[[O2:.+]] = "diffgpu.atomic_add"(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}) : (memref<?x?xf64, strided<[?, ?], offset: ?>>, f64, index, index) -> f64
// GENERIC: "diffgpu.atomic_add"
func.func @memory(%A: memref<?xf32, strided<[?], offset: ?>>, %B: memref<?x?xf64, strided<[?, ?], offset: ?>>, %v: f32, %w: f64, %i: index) attributes {diffgpu.kernel, diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  %s = "diffgpu.shared_alloc"() : () -> memref<16x16xf32, #gpu.address_space<workgroup>>
  "diffgpu.barrier"() : () -> ()
  %o1 = "diffgpu.atomic_add"(%A, %v, %i) : (memref<?xf32, strided<[?], offset: ?>>, f32, index) -> f32
  %o2 = "diffgpu.atomic_add"(%B, %w, %i, %i) : (memref<?x?xf64, strided<[?, ?], offset: ?>>, f64, index, index) -> f64
  return
}

// Reverse mode: seed for the scalar result, a dup array (primal, shadow),
// an active scalar (its gradient is the result), an integer const. The
// layout round-trips: `groups` holds each argument's operand count, the
// segment sizes the runs of equal operand (result) types.
// CHECK-LABEL: func.func @f
// CHECK-LABEL: func.func @rev
// CHECK-NEXT: %[[SEED:.+]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: %[[GX:.+]] = "diffgpu.autodiff"(%[[SEED]], %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}) {activity = ["dup", "active", "const"], callee = @f, diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">, groups = array<i32: 2, 1, 1>, operandSegmentSizes = array<i32: 1, 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f32, memref<?xf32, strided<[?], offset: ?>>, memref<?xf32, strided<[?], offset: ?>>, f32, i64) -> f32
// CHECK-NEXT: return %[[GX]] : f32
func.func @f(%A: memref<?xf32, strided<[?], offset: ?>>, %x: f32, %n: i64) -> f32 attributes {diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  %c0 = arith.constant 0 : index
  %a = memref.load %A[%c0] : memref<?xf32, strided<[?], offset: ?>>
  %y = arith.mulf %a, %x : f32
  return %y : f32
}
func.func @rev(%A: memref<?xf32, strided<[?], offset: ?>>, %dA: memref<?xf32, strided<[?], offset: ?>>, %x: f32, %n: i64) -> f32 attributes {diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  %seed = arith.constant 1.0 : f32
  %gx = "diffgpu.autodiff"(%seed, %A, %dA, %x, %n) {callee = @f, activity = ["dup", "active", "const"], diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">, groups = array<i32: 2, 1, 1>, operandSegmentSizes = array<i32: 1, 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f32, memref<?xf32, strided<[?], offset: ?>>, memref<?xf32, strided<[?], offset: ?>>, f32, i64) -> f32
  return %gx : f32
}

// Reverse mode of a kernel (no result, no seed, no gradient results), and
// forward mode with and without a tangent result.
// CHECK-LABEL: func.func @k
// CHECK-LABEL: func.func @modes
// CHECK-NEXT: "diffgpu.autodiff"(%{{.+}}, %{{.+}}) {activity = ["dupnoneed"], callee = @k
// CHECK-NEXT: "diffgpu.fwddiff"(%{{.+}}, %{{.+}}) {activity = ["dup"], callee = @k
// CHECK-NEXT: %[[T:.+]] = "diffgpu.fwddiff"(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}) {activity = ["dup", "dup", "const"], callee = @f
// CHECK-SAME: groups = array<i32: 2, 2, 1>, operandSegmentSizes = array<i32: 2, 2, 1, 0, {{.+}}>} : (memref<?xf32, strided<[?], offset: ?>>, memref<?xf32, strided<[?], offset: ?>>, f32, f32, i64) -> f32
func.func @k(%A: memref<?xf32, strided<[?], offset: ?>>) attributes {diffgpu.kernel, diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  return
}
func.func @modes(%A: memref<?xf32, strided<[?], offset: ?>>, %dA: memref<?xf32, strided<[?], offset: ?>>, %x: f32, %dx: f32, %n: i64) -> f32 attributes {diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  "diffgpu.autodiff"(%A, %dA) {callee = @k, activity = ["dupnoneed"], diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">, groups = array<i32: 2>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (memref<?xf32, strided<[?], offset: ?>>, memref<?xf32, strided<[?], offset: ?>>) -> ()
  "diffgpu.fwddiff"(%A, %dA) {callee = @k, activity = ["dup"], diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">, groups = array<i32: 2>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (memref<?xf32, strided<[?], offset: ?>>, memref<?xf32, strided<[?], offset: ?>>) -> ()
  %t = "diffgpu.fwddiff"(%A, %dA, %x, %dx, %n) {callee = @f, activity = ["dup", "dup", "const"], diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">, groups = array<i32: 2, 2, 1>, operandSegmentSizes = array<i32: 2, 2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (memref<?xf32, strided<[?], offset: ?>>, memref<?xf32, strided<[?], offset: ?>>, f32, f32, i64) -> f32
  return %t : f32
}

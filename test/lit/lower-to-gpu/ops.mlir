// RUN: diffgpu-opt %s --split-input-file --diffgpu-lower-to-gpu | FileCheck %s

// Geometry ops become gpu ops along the axis of their `dim` (0, 1, 2 = x, y,
// z), with the uses rewired.

// CHECK-LABEL: gpu.func @geometry
// CHECK-NEXT: %[[T:.+]] = gpu.thread_id x
// CHECK-NEXT: %[[B:.+]] = gpu.block_id y
// CHECK-NEXT: %[[D:.+]] = gpu.block_dim z
// CHECK-NEXT: %[[G:.+]] = gpu.grid_dim x
// CHECK-NEXT: %[[S0:.+]] = arith.addi %[[T]], %[[B]] : index
// CHECK-NEXT: %[[S1:.+]] = arith.addi %[[S0]], %[[D]] : index
// CHECK-NEXT: %[[S2:.+]] = arith.addi %[[S1]], %[[G]] : index
// CHECK-NEXT: memref.store %{{.+}}, %{{.+}}[%[[S2]]]
// CHECK-NOT: diffgpu.
func.func @geometry(%A: memref<?xf32, strided<[?], offset: ?>>, %x: f32) attributes {diffgpu.kernel, diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %b = "diffgpu.block_id"() {dim = 1 : i64} : () -> index
  %d = "diffgpu.block_dim"() {dim = 2 : i64} : () -> index
  %g = "diffgpu.grid_dim"() {dim = 0 : i64} : () -> index
  %s0 = arith.addi %t, %b : index
  %s1 = arith.addi %s0, %d : index
  %s2 = arith.addi %s1, %g : index
  memref.store %x, %A[%s2] : memref<?xf32, strided<[?], offset: ?>>
  return
}

// -----

// Geometry ops inside a device function (func.func in the gpu.module) are
// rewritten too.

// CHECK-LABEL: func.func private @tid
// CHECK-NEXT: %[[T:.+]] = gpu.thread_id y
// CHECK-NEXT: return %[[T]] : index
// CHECK-LABEL: gpu.func @k
func.func private @tid() -> index attributes {diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  %t = "diffgpu.thread_id"() {dim = 1 : i64} : () -> index
  return %t : index
}
func.func @k() attributes {diffgpu.kernel, diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  %t = func.call @tid() : () -> index
  return
}

// -----

// The barrier becomes gpu.barrier, also inside structured control flow.

// CHECK-LABEL: gpu.func @sync
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: scf.if %{{.+}} {
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: }
// CHECK-NEXT: gpu.return
func.func @sync(%c: i1) attributes {diffgpu.kernel, diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  "diffgpu.barrier"() : () -> ()
  scf.if %c {
    "diffgpu.barrier"() : () -> ()
  }
  return
}

// -----

// Atomic adds become memref.atomic_rmw: addf for floats, addi for integers;
// the old value replaces the op's result.

// CHECK-LABEL: gpu.func @atomics
// CHECK-SAME: (%[[A:.+]]: memref<?x?xf64, strided<[?, ?], offset: ?>>, %[[B:.+]]: memref<?xi32, strided<[?], offset: ?>>, %[[V:.+]]: f64, %[[W:.+]]: i32, %[[I:.+]]: index, %[[J:.+]]: index)
// CHECK-NEXT: %[[OLD:.+]] = memref.atomic_rmw addf %[[V]], %[[A]][%[[I]], %[[J]]] : (f64, memref<?x?xf64, strided<[?, ?], offset: ?>>) -> f64
// CHECK-NEXT: %[[OLDI:.+]] = memref.atomic_rmw addi %[[W]], %[[B]][%[[I]]] : (i32, memref<?xi32, strided<[?], offset: ?>>) -> i32
// CHECK-NEXT: memref.store %[[OLD]], %[[A]][%[[J]], %[[I]]]
// CHECK-NEXT: memref.store %[[OLDI]], %[[B]][%[[J]]]
func.func @atomics(%A: memref<?x?xf64, strided<[?, ?], offset: ?>>, %B: memref<?xi32, strided<[?], offset: ?>>, %v: f64, %w: i32, %i: index, %j: index) attributes {diffgpu.kernel, diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  %old = "diffgpu.atomic_add"(%A, %v, %i, %j) : (memref<?x?xf64, strided<[?, ?], offset: ?>>, f64, index, index) -> f64
  %oldi = "diffgpu.atomic_add"(%B, %w, %i) : (memref<?xi32, strided<[?], offset: ?>>, i32, index) -> i32
  memref.store %old, %A[%j, %i] : memref<?x?xf64, strided<[?, ?], offset: ?>>
  memref.store %oldi, %B[%j] : memref<?xi32, strided<[?], offset: ?>>
  return
}

// -----

// Shared arrays become workgroup attributions of the gpu.func, in order,
// after the arguments; their uses read the attribution.

// CHECK-LABEL: gpu.func @shared
// CHECK-SAME: (%[[I:.+]]: index)
// CHECK-SAME: workgroup(%[[S:.+]] : memref<16x16xf32, #gpu.address_space<workgroup>>, %[[T:.+]] : memref<8xi64, #gpu.address_space<workgroup>>)
// CHECK-SAME: kernel
// CHECK-NEXT: %[[X:.+]] = memref.load %[[S]][%[[I]], %[[I]]] : memref<16x16xf32, #gpu.address_space<workgroup>>
// CHECK-NEXT: %[[Y:.+]] = memref.load %[[T]][%[[I]]] : memref<8xi64, #gpu.address_space<workgroup>>
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: memref.store %[[X]], %[[S]][%[[I]], %[[I]]]
// CHECK-NOT: diffgpu.shared_alloc
func.func @shared(%i: index) attributes {diffgpu.kernel, diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  %s = "diffgpu.shared_alloc"() : () -> memref<16x16xf32, #gpu.address_space<workgroup>>
  %t = "diffgpu.shared_alloc"() : () -> memref<8xi64, #gpu.address_space<workgroup>>
  %x = memref.load %s[%i, %i] : memref<16x16xf32, #gpu.address_space<workgroup>>
  %y = memref.load %t[%i] : memref<8xi64, #gpu.address_space<workgroup>>
  "diffgpu.barrier"() : () -> ()
  memref.store %x, %s[%i, %i] : memref<16x16xf32, #gpu.address_space<workgroup>>
  return
}

// -----

// math.ipowi has no NVVM lowering: it becomes a call to a generated helper
// (exponentiation by squaring) of the same target, one per integer type.

// CHECK-LABEL: gpu.func @ipow
// CHECK-SAME: (%[[N:.+]]: i64, %[[M:.+]]: i32)
// CHECK-NEXT: %[[P:.+]] = func.call @__dg_ipowi_i64(%[[N]], %[[N]]) : (i64, i64) -> i64
// CHECK-NEXT: %[[Q:.+]] = func.call @__dg_ipowi_i32(%[[M]], %[[M]]) : (i32, i32) -> i32
// CHECK-NEXT: %[[R:.+]] = func.call @__dg_ipowi_i64(%[[P]], %[[N]]) : (i64, i64) -> i64
// CHECK-LABEL: func.func private @__dg_ipowi_i64
// CHECK-SAME: attributes {diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">}
// CHECK: scf.while
// CHECK: arith.muli
// CHECK-LABEL: func.func private @__dg_ipowi_i32
func.func @ipow(%n: i64, %m: i32) attributes {diffgpu.kernel, diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  %p = math.ipowi %n, %n : i64
  %q = math.ipowi %m, %m : i32
  %r = math.ipowi %p, %n : i64
  return
}

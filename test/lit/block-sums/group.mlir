// diffgpu-block-sums (lowering/reduce/block_sums.py): several atomic adds to
// uniform addresses at one site are summed over the block together, with one
// barrier. Host: one shared array of 1024 slots per value, thread 0 sums each
// row; GPU: a transposing warp sum, a [32 x 32] shared array, one barrier.
// RUN: diffgpu-opt %s --split-input-file --diffgpu-block-sums | FileCheck %s

// Three adds under the bounds guard of a host kernel: the guard yields the
// three values (zero where it is false), one barrier, thread 0 sums each of
// the three rows and adds it once.
!A = memref<?xf32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @moments(%out: !A, %x: !A) attributes {diffgpu.kernel, diffgpu.target = #host} {
  %b = "diffgpu.block_id"() {dim = 0 : i64} : () -> index
  %n = "diffgpu.block_dim"() {dim = 0 : i64} : () -> index
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %m = arith.muli %b, %n : index
  %g = arith.addi %m, %t : index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %len = memref.dim %x, %c0 : !A
  %in = arith.cmpi ult, %g, %len : index
  scf.if %in {
    %v = memref.load %x[%g] : !A
    %one = arith.constant 1.0 : f32
    %sq = arith.mulf %v, %v : f32
    %o0 = "diffgpu.atomic_add"(%out, %one, %c0) : (!A, f32, index) -> f32
    %o1 = "diffgpu.atomic_add"(%out, %v, %c1) : (!A, f32, index) -> f32
    %o2 = "diffgpu.atomic_add"(%out, %sq, %c2) : (!A, f32, index) -> f32
  }
  return
}
// CHECK-LABEL: func.func @moments
// CHECK-SAME: (%[[OUT:[a-z0-9]+]]: memref
// CHECK: %[[V:.+]]:3 = scf.if %{{.+}} -> (f32, f32, f32)
// CHECK: %[[SH:.+]] = "diffgpu.shared_alloc"() : () -> memref<3072xf32, #gpu.address_space<workgroup>>
// CHECK-COUNT-3: memref.store %[[V]]#{{[0-2]}}, %[[SH]]
// CHECK: "diffgpu.barrier"()
// CHECK-NOT: "diffgpu.barrier"()
// CHECK: "diffgpu.atomic_add"(%[[OUT]], %{{.+}}, %{{.+}}) {diffgpu.aggregated = "block"}
// CHECK: "diffgpu.atomic_add"(%[[OUT]], %{{.+}}, %{{.+}}) {diffgpu.aggregated = "block"}
// CHECK: "diffgpu.atomic_add"(%[[OUT]], %{{.+}}, %{{.+}}) {diffgpu.aggregated = "block"}
// CHECK-NOT: "diffgpu.atomic_add"
// CHECK: return

// -----

// The same on sm_90: a 4-value transposing warp sum (3 halving and 3 butterfly shuffles per
// warp), the warps' sums in a [32 x 32] shared array, one barrier, the same
// warp sum in warp 0, then one add per value by the lane holding its total
// (the lane's value picked by its index: one branch per value).
!A = memref<?xf32, strided<[?], offset: ?>>
#sm90 = #nvvm.target<O = 3, chip = "sm_90">
func.func @moments_gpu(%out: !A, %x: !A) attributes {diffgpu.kernel, diffgpu.target = #sm90} {
  %b = "diffgpu.block_id"() {dim = 0 : i64} : () -> index
  %n = "diffgpu.block_dim"() {dim = 0 : i64} : () -> index
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %m = arith.muli %b, %n : index
  %g = arith.addi %m, %t : index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %len = memref.dim %x, %c0 : !A
  %in = arith.cmpi ult, %g, %len : index
  scf.if %in {
    %v = memref.load %x[%g] : !A
    %one = arith.constant 1.0 : f32
    %sq = arith.mulf %v, %v : f32
    %o0 = "diffgpu.atomic_add"(%out, %one, %c0) : (!A, f32, index) -> f32
    %o1 = "diffgpu.atomic_add"(%out, %v, %c1) : (!A, f32, index) -> f32
    %o2 = "diffgpu.atomic_add"(%out, %sq, %c2) : (!A, f32, index) -> f32
  }
  return
}
// CHECK-LABEL: func.func @moments_gpu
// CHECK-SAME: (%[[OUT:[a-z0-9]+]]: memref
// CHECK: %[[SH:.+]] = "diffgpu.shared_alloc"() : () -> memref<1024xf32, #gpu.address_space<workgroup>>
// CHECK-COUNT-6: gpu.shuffle  xor
// CHECK-NOT: gpu.shuffle
// CHECK: memref.store %{{.+}}, %[[SH]]
// CHECK: "diffgpu.barrier"()
// CHECK-COUNT-6: gpu.shuffle  xor
// CHECK-NOT: gpu.shuffle
// CHECK-COUNT-3: "diffgpu.atomic_add"(%[[OUT]], %{{.+}}, %{{.+}}) {diffgpu.aggregated = "block"}
// blocks whose size is not a multiple of 32: each thread adds its values
// CHECK: } else {
// CHECK-COUNT-3: "diffgpu.atomic_add"(%[[OUT]], %{{.+}}, %{{.+}}) {diffgpu.aggregated = "block"}
// CHECK-NOT: "diffgpu.barrier"()
// CHECK: return

// -----

// One add alone is left to diffgpu-aggregate-atomics.
!A = memref<?xf32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @single(%out: !A, %x: !A) attributes {diffgpu.kernel, diffgpu.target = #host} {
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %c0 = arith.constant 0 : index
  %v = memref.load %x[%t] : !A
  %o = "diffgpu.atomic_add"(%out, %v, %c0) : (!A, f32, index) -> f32
  return
}
// CHECK-LABEL: func.func @single
// CHECK-NOT: "diffgpu.barrier"
// CHECK: %{{.+}} = "diffgpu.atomic_add"(%{{.+}}, %{{.+}}, %{{.+}}) : (memref
// CHECK-NOT: diffgpu.aggregated
// CHECK: return

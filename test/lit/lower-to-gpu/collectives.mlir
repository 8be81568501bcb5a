// RUN: diffgpu-opt %s --split-input-file -p 'diffgpu-lower-to-gpu,diffgpu-lower-collectives' | FileCheck %s

!A = memref<?xf32, strided<[?], offset: ?>>
#sm90 = #nvvm.target<O = 3, chip = "sm_90">

// A warp sum is the xor butterfly (offsets 16, 8, 4, 2, 1, width 32) when the
// block's thread count is a multiple of 32; other counts take the shared-memory
// expansion (workgroup globals, barriers).
// CHECK-LABEL: gpu.module @diffgpu_sm_90
// CHECK-DAG: memref.global "private" @__dg_collective_S_f32 : memref<1024xf32, #gpu.address_space<workgroup>>
// CHECK-DAG: memref.global "private" @__dg_collective_R_f32 : memref<1024xf32, #gpu.address_space<workgroup>>
// CHECK-LABEL: gpu.func @warp_sum
// CHECK: %[[V:.+]] = memref.load
// CHECK: %[[FULL:.+]] = arith.cmpi eq
// CHECK-NEXT: %[[R:.+]] = scf.if %[[FULL]] -> (f32) {
// CHECK: %[[O16:.+]] = arith.constant 16 : i32
// CHECK: %[[S16:.+]], %{{.+}} = gpu.shuffle  xor %[[V]], %[[O16]], %{{.+}} : f32
// CHECK-NEXT: %[[A16:.+]] = arith.addf %[[V]], %[[S16]]
// CHECK: gpu.shuffle  xor %[[A16]]
// CHECK-COUNT-3: gpu.shuffle  xor
// CHECK: } else {
// CHECK: memref.store %[[V]]
// CHECK-NEXT: gpu.barrier
// CHECK: gpu.barrier
// CHECK: memref.store %[[R]]
// CHECK-NOT: diffgpu.
func.func @warp_sum(%X: !A) attributes {diffgpu.kernel, diffgpu.target = #sm90} {
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %x = memref.load %X[%t] : !A
  %r = "diffgpu.warp_reduce"(%x) {kind = "sum"} : (f32) -> f32
  memref.store %r, %X[%t] : !A
  return
}

// -----

!A = memref<?xf32, strided<[?], offset: ?>>
#sm90 = #nvvm.target<O = 3, chip = "sm_90">

// A block max: the butterfly per warp, lane 0 stores the warp's value, a
// barrier, every warp reads the 32 slots (-inf past the last warp) and runs
// the butterfly again, a barrier: 10 shuffles, 2 barriers on the fast path.
// CHECK-LABEL: gpu.func @block_max
// CHECK: scf.if %{{.+}} -> (f32) {
// CHECK-COUNT-5: gpu.shuffle  xor
// CHECK: arith.maximumf
// CHECK: scf.if
// CHECK: memref.store
// CHECK: gpu.barrier
// CHECK: arith.constant 0xFF800000 : f32
// CHECK-COUNT-5: gpu.shuffle  xor
// CHECK: gpu.barrier
// CHECK: } else {
func.func @block_max(%X: !A) attributes {diffgpu.kernel, diffgpu.target = #sm90} {
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %x = memref.load %X[%t] : !A
  %r = "diffgpu.block_reduce"(%x) {kind = "max"} : (f32) -> f32
  memref.store %r, %X[%t] : !A
  return
}

// -----

!A = memref<?xf32, strided<[?], offset: ?>>
#sm90 = #nvvm.target<O = 3, chip = "sm_90">

// A shuffle is one gpu.shuffle of its mode; a device function reaches the
// module's staging globals with memref.get_global (no kernel attribution).
// CHECK-LABEL: func.func @dev
// CHECK: memref.get_global @__dg_collective_S_f32
// CHECK: scf.if
// CHECK: %[[S:.+]], %{{.+}} = gpu.shuffle  down %{{.+}}, %{{.+}}, %{{.+}} : f32
// CHECK-NEXT: scf.yield %[[S]]
func.func @dev(%x: f32) -> f32 attributes {diffgpu.target = #sm90} {
  %k = arith.constant 3 : i32
  %r = "diffgpu.shuffle"(%x, %k) {mode = "down"} : (f32, i32) -> f32
  return %r : f32
}
func.func @k(%X: !A) attributes {diffgpu.kernel, diffgpu.target = #sm90} {
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %x = memref.load %X[%t] : !A
  %r = func.call @dev(%x) : (f32) -> f32
  memref.store %r, %X[%t] : !A
  return
}

// -----

!A = memref<?xf32, strided<[?], offset: ?>>
#sm90 = #nvvm.target<O = 3, chip = "sm_90">

// Atomic max / min of floats: memref.atomic_rmw maximumf / minimumf.
// CHECK-LABEL: gpu.func @atomics
// CHECK: memref.atomic_rmw maximumf
// CHECK: memref.atomic_rmw minimumf
func.func @atomics(%M: !A, %v: f32) attributes {diffgpu.kernel, diffgpu.target = #sm90} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = "diffgpu.atomic_rmw"(%M, %v, %c0) {kind = "max"} : (!A, f32, index) -> f32
  %b = "diffgpu.atomic_rmw"(%M, %v, %c1) {kind = "min"} : (!A, f32, index) -> f32
  return
}

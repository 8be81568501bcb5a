// RUN: diffgpu-opt %s --split-input-file -p 'diffgpu-lower-to-gpu,diffgpu-lower-collectives' | FileCheck %s

!A = memref<?xf32, strided<[?], offset: ?>>
#sm90 = #nvvm.target<O = 3, chip = "sm_90">

// A warp sum is the xor butterfly (offsets 16, 8, 4, 2, 1, width 32). The GPU
// code has no path for blocks that are not whole warps (the runtime refuses
// such launches): the function starts with a trap for them instead, and no
// shared memory is declared for a warp collective.
// CHECK-LABEL: gpu.module @diffgpu_sm_90
// CHECK-NOT: memref.global
// CHECK-LABEL: gpu.func @warp_sum
// CHECK: %[[REM:.+]] = arith.remui %{{.+}}, %c32 : index
// CHECK: %[[BAD:.+]] = arith.cmpi ne, %[[REM]], %c0 : index
// CHECK-NEXT: scf.if %[[BAD]] {
// CHECK-NEXT: llvm.intr.trap
// CHECK-NEXT: }
// CHECK: %[[V:.+]] = memref.load
// CHECK: %[[O16:.+]] = arith.constant 16 : i32
// CHECK: %[[S16:.+]], %{{.+}} = gpu.shuffle  xor %[[V]], %[[O16]], %{{.+}} : f32
// CHECK-NEXT: %[[A16:.+]] = arith.addf %[[V]], %[[S16]]
// CHECK: gpu.shuffle  xor %[[A16]]
// CHECK-COUNT-3: gpu.shuffle  xor
// CHECK-NOT: gpu.barrier
// CHECK-NOT: scf.if
// CHECK: memref.store
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

// A block max: the butterfly per warp, lane 0 stores the warp's value in the
// module's 64 warp slots, a barrier, every warp reads its lane's slot (-inf
// past the last warp) and runs the butterfly again: 10 shuffles, 1 barrier
// (the kernel's last collective: no barrier after the read).
// CHECK: memref.global "private" @__dg_warp_slots_f32 : memref<64xf32, #gpu.address_space<workgroup>>
// CHECK-LABEL: gpu.func @block_max
// CHECK: llvm.intr.trap
// CHECK-COUNT-5: gpu.shuffle  xor
// CHECK: arith.maximumf
// CHECK: scf.if
// CHECK: memref.store
// CHECK: gpu.barrier
// CHECK: arith.constant 0xFF800000 : f32
// CHECK-COUNT-5: gpu.shuffle  xor
// CHECK-NOT: gpu.barrier
// CHECK: gpu.return
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

// A shuffle is one gpu.shuffle of its mode. A device function that runs a
// collective gets the trap too (it may be called from any kernel).
// CHECK-LABEL: func.func @dev
// CHECK: llvm.intr.trap
// CHECK: %[[S:.+]], %{{.+}} = gpu.shuffle  down %{{.+}}, %{{.+}}, %{{.+}} : f32
// CHECK-NEXT: return %[[S]]
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

// -----

!A = memref<?xf32, strided<[?], offset: ?>>
#sm90 = #nvvm.target<O = 3, chip = "sm_90">

// Consecutive block sums alternate between the slots [0..32) and [32..64):
// one barrier each on the fast path, none after a read (the next one writes
// the other slots and its barrier comes first).
// CHECK-LABEL: gpu.func @three_sums
// CHECK: %[[R0:.+]] = memref.get_global @__dg_warp_slots_f32
// CHECK: %[[W0:.+]] = arith.addi %c0{{(_[0-9]+)?}}, %{{.+}} : index
// CHECK-NEXT: memref.store %{{.+}}, %[[R0]][%[[W0]]]
// CHECK: gpu.barrier
// CHECK: %[[L0:.+]] = arith.addi %c0{{(_[0-9]+)?}}, %{{.+}} : index
// CHECK-NEXT: memref.load %[[R0]][%[[L0]]]
// CHECK-COUNT-5: gpu.shuffle  xor
// CHECK-NEXT: arith.addf
// CHECK-NOT: gpu.barrier
// CHECK: %[[R1:.+]] = memref.get_global @__dg_warp_slots_f32
// CHECK: %[[W1:.+]] = arith.addi %c32{{(_[0-9]+)?}}, %{{.+}} : index
// CHECK-NEXT: memref.store %{{.+}}, %[[R1]][%[[W1]]]
// CHECK: gpu.barrier
// CHECK: %[[L1:.+]] = arith.addi %c32{{(_[0-9]+)?}}, %{{.+}} : index
// CHECK-NEXT: memref.load %[[R1]][%[[L1]]]
// CHECK-COUNT-5: gpu.shuffle  xor
// CHECK-NEXT: arith.addf
// CHECK-NOT: gpu.barrier
// CHECK: %[[R2:.+]] = memref.get_global @__dg_warp_slots_f32
// CHECK: %[[W2:.+]] = arith.addi %c0{{(_[0-9]+)?}}, %{{.+}} : index
// CHECK-NEXT: memref.store %{{.+}}, %[[R2]][%[[W2]]]
// CHECK: gpu.barrier
// CHECK: %[[L2:.+]] = arith.addi %c0{{(_[0-9]+)?}}, %{{.+}} : index
// CHECK-NEXT: memref.load %[[R2]][%[[L2]]]
// CHECK-COUNT-5: gpu.shuffle  xor
// CHECK-NEXT: arith.addf
// CHECK-NOT: gpu.barrier
// CHECK: gpu.return
func.func @three_sums(%X: !A) attributes {diffgpu.kernel, diffgpu.target = #sm90} {
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %x = memref.load %X[%t] : !A
  %a = "diffgpu.block_reduce"(%x) {kind = "sum"} : (f32) -> f32
  %b = "diffgpu.block_reduce"(%a) {kind = "sum"} : (f32) -> f32
  memref.store %b, %X[%t] : !A
  %c = "diffgpu.block_reduce"(%b) {kind = "sum"} : (f32) -> f32
  memref.store %c, %X[%t] : !A
  return
}

// -----

!A = memref<?xf32, strided<[?], offset: ?>>
#sm90 = #nvvm.target<O = 3, chip = "sm_90">

// In a loop the last block sum of the body keeps a barrier after its read
// (the next iteration's first one would write the same slots), and so does
// one followed by a call (the callee may run a collective).
// CHECK-LABEL: gpu.func @in_loop
// CHECK: %[[S:.+]] = scf.for
// CHECK: gpu.barrier
// CHECK: memref.load
// CHECK-COUNT-5: gpu.shuffle  xor
// CHECK-NEXT: arith.addf
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: scf.yield
// CHECK: gpu.shuffle  xor %[[S]]
// CHECK: gpu.barrier
// CHECK: memref.load
// CHECK-COUNT-5: gpu.shuffle  xor
// CHECK-NEXT: arith.addf
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: func.call @dev
func.func @dev(%x: f32) -> f32 attributes {diffgpu.target = #sm90} {
  %r = "diffgpu.block_reduce"(%x) {kind = "sum"} : (f32) -> f32
  return %r : f32
}
func.func @in_loop(%X: !A, %n: index) attributes {diffgpu.kernel, diffgpu.target = #sm90} {
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %x = memref.load %X[%t] : !A
  %s = scf.for %i = %c0 to %n step %c1 iter_args(%a = %x) -> (f32) {
    %r = "diffgpu.block_reduce"(%a) {kind = "sum"} : (f32) -> f32
    scf.yield %r : f32
  }
  %b = "diffgpu.block_reduce"(%s) {kind = "sum"} : (f32) -> f32
  %c = func.call @dev(%b) : (f32) -> f32
  memref.store %c, %X[%t] : !A
  return
}

// -----

!A = memref<?xf32, strided<[?], offset: ?>>
#sm90 = #nvvm.target<O = 3, chip = "sm_90">

// A loop body of two block sums and nothing else running a collective: the
// second (slots [32..64)) is followed by the next iteration's first (slots
// [0..32)), so the alternation carries over the back edge and neither keeps
// a barrier after its read; the sum after the loop starts at [0..32) again.
// CHECK-LABEL: gpu.func @two_in_loop
// CHECK: scf.for
// CHECK: %[[W0:.+]] = arith.addi %c0{{(_[0-9]+)?}}, %{{.+}} : index
// CHECK-NEXT: memref.store %{{.+}}, %{{.+}}[%[[W0]]]
// CHECK: gpu.barrier
// CHECK-COUNT-5: gpu.shuffle  xor
// CHECK-NEXT: arith.addf
// CHECK-NOT: gpu.barrier
// CHECK: %[[W1:.+]] = arith.addi %c32{{(_[0-9]+)?}}, %{{.+}} : index
// CHECK-NEXT: memref.store %{{.+}}, %{{.+}}[%[[W1]]]
// CHECK: gpu.barrier
// CHECK-COUNT-5: gpu.shuffle  xor
// CHECK-NEXT: arith.addf
// CHECK-NEXT: scf.yield
// CHECK: %[[W2:.+]] = arith.addi %c0{{(_[0-9]+)?}}, %{{.+}} : index
// CHECK-NEXT: memref.store %{{.+}}, %{{.+}}[%[[W2]]]
// CHECK: gpu.barrier
func.func @two_in_loop(%X: !A, %n: index) attributes {diffgpu.kernel, diffgpu.target = #sm90} {
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %x = memref.load %X[%t] : !A
  %s = scf.for %i = %c0 to %n step %c1 iter_args(%a = %x) -> (f32) {
    %r = "diffgpu.block_reduce"(%a) {kind = "sum"} : (f32) -> f32
    %q = "diffgpu.block_reduce"(%r) {kind = "sum"} : (f32) -> f32
    scf.yield %q : f32
  }
  %b = "diffgpu.block_reduce"(%s) {kind = "sum"} : (f32) -> f32
  memref.store %b, %X[%t] : !A
  return
}

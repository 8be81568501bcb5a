// RUN: diffgpu-opt %s --split-input-file -p 'diffgpu-expand-collectives' | FileCheck %s

!A = memref<?xf32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">

// On the host a warp sum goes through the kernel's two staging arrays: every
// thread stores its value, a barrier, thread 0 reduces each warp (the tree of
// the xor butterfly: pairs 16 apart, then 8, 4, 2, 1), a barrier, every thread
// loads its warp's result.
// CHECK-LABEL: func.func @warp_sum
// CHECK-DAG: %[[S:.+]] = "diffgpu.shared_alloc"() : () -> memref<1024xf32, #gpu.address_space<workgroup>>
// CHECK-DAG: %[[R:.+]] = "diffgpu.shared_alloc"() : () -> memref<1024xf32, #gpu.address_space<workgroup>>
// CHECK: %[[V:.+]] = memref.load
// CHECK: memref.store %[[V]], %[[S]][%[[LIN:[0-9a-z_]+]]] :
// CHECK-NEXT: "diffgpu.barrier"()
// CHECK: %[[FIRST:.+]] = arith.cmpi eq, %[[LIN]], %{{.+}} : index
// CHECK-NEXT: scf.if %[[FIRST]] {
// CHECK: arith.constant 16 : index
// CHECK: arith.addf
// CHECK: arith.constant 8 : index
// CHECK: arith.constant 1 : index
// CHECK: "diffgpu.barrier"()
// CHECK-NEXT: %[[C32:.+]] = arith.constant 32 : index
// CHECK-NEXT: %[[W:.+]] = arith.divui %[[LIN]], %[[C32]] : index
// CHECK-NEXT: arith.constant 32 : index
// CHECK-NEXT: %[[AT:.+]] = arith.muli %[[W]], %{{.+}} : index
// CHECK-NEXT: %[[RES:.+]] = memref.load %{{.+}}[%[[AT]]]
// CHECK-NEXT: memref.store %[[RES]]
// CHECK-NOT: diffgpu.warp_reduce
func.func @warp_sum(%X: !A) attributes {diffgpu.kernel, diffgpu.target = #host} {
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %x = memref.load %X[%t] : !A
  %r = "diffgpu.warp_reduce"(%x) {kind = "sum"} : (f32) -> f32
  memref.store %r, %X[%t] : !A
  return
}

// -----

!A = memref<?xf32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">

// A shuffle: store, barrier, load the source lane's value (own value when the
// source is outside the warp or past the block), barrier.
// CHECK-LABEL: func.func @shuffle
// CHECK: %[[V:.+]] = memref.load
// CHECK: memref.store %[[V]]
// CHECK-NEXT: "diffgpu.barrier"()
// CHECK: arith.xori
// CHECK: %[[G:.+]] = scf.if %{{.+}} -> (f32) {
// CHECK: } else {
// CHECK-NEXT: scf.yield %[[V]] : f32
// CHECK: "diffgpu.barrier"()
// CHECK-NEXT: memref.store %[[G]]
func.func @shuffle(%X: !A) attributes {diffgpu.kernel, diffgpu.target = #host} {
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %x = memref.load %X[%t] : !A
  %k = arith.constant 1 : i32
  %r = "diffgpu.shuffle"(%x, %k) {mode = "xor"} : (f32, i32) -> f32
  memref.store %r, %X[%t] : !A
  return
}

// -----

!A = memref<?xf32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">

// A device function using a collective is inlined into its kernel first, so
// the staging arrays are the kernel's; the function is then gone.
// CHECK-NOT: func.func @dev
// CHECK-LABEL: func.func @caller
// CHECK: "diffgpu.shared_alloc"()
// CHECK: "diffgpu.barrier"()
// CHECK-NOT: func.call
func.func @dev(%x: f32) -> f32 attributes {diffgpu.target = #host} {
  %r = "diffgpu.block_scan"(%x) {reverse = false} : (f32) -> f32
  return %r : f32
}
func.func @caller(%X: !A) attributes {diffgpu.kernel, diffgpu.target = #host} {
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %x = memref.load %X[%t] : !A
  %r = func.call @dev(%x) : (f32) -> f32
  memref.store %r, %X[%t] : !A
  return
}

// -----

!A = memref<?xf32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">

// Atomic max on the host: a load, maximumf, a store, both marked atomic for
// the race detector.
// CHECK-LABEL: func.func @atomic_max
// CHECK: %[[O:.+]] = memref.load %[[M:.+]][%[[I:.+]]] {diffgpu.atomic}
// CHECK-NEXT: %[[N:.+]] = arith.maximumf %[[O]], %{{.+}} : f32
// CHECK-NEXT: memref.store %[[N]], %[[M]][%[[I]]] {diffgpu.atomic}
func.func @atomic_max(%M: !A, %v: f32) attributes {diffgpu.kernel, diffgpu.target = #host} {
  %c0 = arith.constant 0 : index
  %a = "diffgpu.atomic_rmw"(%M, %v, %c0) {kind = "max"} : (!A, f32, index) -> f32
  return
}

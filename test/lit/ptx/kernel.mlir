// REQUIRES: nvptx
// RUN: diffgpu-opt %s -p 'diffgpu-to-ptx{chip=sm_90}' --emit=ptx | FileCheck %s

// One kernel using every GPU feature compiles to PTX for sm_90: thread
// geometry, global loads and stores, scf.for / scf.if (branches), math
// through libdevice (no unresolved externals), a device function call, a
// float atomic add, and shared memory with a barrier.

// CHECK: .target sm_90
// CHECK-NOT: .extern
// CHECK-LABEL: .visible .entry k(
// CHECK: .shared .align 4 .b8 {{.+}}[128];
// CHECK-DAG: %tid.x
// CHECK-DAG: %ctaid.x
// CHECK-DAG: %ntid.x
// CHECK: ld.global.b32
// CHECK: ex2.approx
// CHECK: st.shared.b32
// CHECK: bar.sync 0;
// CHECK: ld.shared
// CHECK: atom.global.add.f32
// CHECK: st.global.b32
// CHECK: ret;

func.func private @sq(%x: f32) -> f32 attributes {diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  %y = arith.mulf %x, %x : f32
  return %y : f32
}
func.func @k(%A: memref<?xf32, strided<[?], offset: ?>>, %B: memref<?xf32, strided<[?], offset: ?>>, %n: i64) attributes {diffgpu.kernel, diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  %s = "diffgpu.shared_alloc"() : () -> memref<32xf32, #gpu.address_space<workgroup>>
  %tid = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %bid = "diffgpu.block_id"() {dim = 0 : i64} : () -> index
  %bdim = "diffgpu.block_dim"() {dim = 0 : i64} : () -> index
  %0 = arith.muli %bid, %bdim : index
  %i = arith.addi %0, %tid : index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %len = memref.dim %A, %c0 : memref<?xf32, strided<[?], offset: ?>>
  %in = arith.cmpi slt, %i, %len : index
  %x = scf.if %in -> f32 {
    %v = memref.load %A[%i] : memref<?xf32, strided<[?], offset: ?>>
    scf.yield %v : f32
  } else {
    scf.yield %zero : f32
  }
  %e = math.exp %x : f32
  memref.store %e, %s[%tid] : memref<32xf32, #gpu.address_space<workgroup>>
  "diffgpu.barrier"() : () -> ()
  %nn = arith.index_cast %n : i64 to index
  %sum = scf.for %j = %c0 to %nn step %c1 iter_args(%acc = %zero) -> f32 {
    %y = memref.load %s[%j] : memref<32xf32, #gpu.address_space<workgroup>>
    %z = arith.addf %acc, %y : f32
    scf.yield %z : f32
  }
  %old = "diffgpu.atomic_add"(%B, %sum, %c0) : (memref<?xf32, strided<[?], offset: ?>>, f32, index) -> f32
  scf.if %in {
    %q = func.call @sq(%sum) : (f32) -> f32
    memref.store %q, %A[%i] : memref<?xf32, strided<[?], offset: ?>>
  }
  return
}

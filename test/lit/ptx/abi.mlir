// REQUIRES: nvptx
// RUN: diffgpu-opt %s -p 'diffgpu-to-ptx{chip=sm_90}' --emit=ptx | FileCheck %s

// The kernel ABI (lowering/gpu/to_gpu.py): per memref of rank r, allocated and
// aligned pointers, offset, r sizes, r strides (all 64-bit); scalars by
// value (f32, f64, i32 as 32-bit, i64 and index as 64-bit), in argument order.

// CHECK-LABEL: .visible .entry abi(
// CHECK-NEXT: .param .u64 .ptr .align 1 abi_param_0,
// CHECK-NEXT: .param .u64 .ptr .align 1 abi_param_1,
// CHECK-NEXT: .param .u64 abi_param_2,
// CHECK-NEXT: .param .u64 abi_param_3,
// CHECK-NEXT: .param .u64 abi_param_4,
// CHECK-NEXT: .param .f32 abi_param_5,
// CHECK-NEXT: .param .u64 .ptr .align 1 abi_param_6,
// CHECK-NEXT: .param .u64 .ptr .align 1 abi_param_7,
// CHECK-NEXT: .param .u64 abi_param_8,
// CHECK-NEXT: .param .u64 abi_param_9,
// CHECK-NEXT: .param .u64 abi_param_10,
// CHECK-NEXT: .param .u64 abi_param_11,
// CHECK-NEXT: .param .u64 abi_param_12,
// CHECK-NEXT: .param .u64 abi_param_13,
// CHECK-NEXT: .param .u64 abi_param_14,
// CHECK-NEXT: .param .f64 abi_param_15,
// CHECK-NEXT: .param .u32 abi_param_16,
// CHECK-NEXT: .param .u64 abi_param_17,
// CHECK-NEXT: .param .u64 abi_param_18
// CHECK-NEXT: )

// Strides are read from their parameters (A's stride: 4, B's last: 14),
// scalars by value; the i64 store is one 64-bit store (the gpu.module
// carries NVPTX's data layout, so i64 is 8-byte aligned).
// CHECK-DAG: ld.param.b64 {{.+}}[abi_param_4]
// CHECK-DAG: ld.param.b64 {{.+}}[abi_param_14]
// CHECK-DAG: ld.param.b32 {{.+}}[abi_param_5]
// CHECK-DAG: ld.param.b64 {{.+}}[abi_param_15]
// CHECK-DAG: ld.param.s32 {{.+}}[abi_param_16]
// CHECK-DAG: ld.param.b64 {{.+}}[abi_param_17]
// CHECK-DAG: ld.param.b64 {{.+}}[abi_param_18]
// CHECK: st.global.b64
// CHECK-NOT: st.global
// CHECK: ret;

func.func @abi(%A: memref<?xf32, strided<[?], offset: ?>>, %a: f32,
               %B: memref<?x?x?xi64, strided<[?, ?, ?], offset: ?>>,
               %d: f64, %m: i32, %n: i64, %i: index)
    attributes {diffgpu.kernel, diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  %x = memref.load %A[%i] : memref<?xf32, strided<[?], offset: ?>>
  %y = arith.addf %x, %a : f32
  memref.store %y, %A[%i] : memref<?xf32, strided<[?], offset: ?>>
  %m64 = arith.extsi %m : i32 to i64
  %s = arith.addi %n, %m64 : i64
  %df = arith.fptosi %d : f64 to i64
  %t = arith.addi %s, %df : i64
  memref.store %t, %B[%i, %i, %i] : memref<?x?x?xi64, strided<[?, ?, ?], offset: ?>>
  return
}

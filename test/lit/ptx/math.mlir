// REQUIRES: nvptx
// RUN: diffgpu-opt %s -p 'diffgpu-to-ptx{chip=sm_90}' --emit=ptx | FileCheck %s

// Every math op the frontend emits reaches PTX for f32 and f64 with no
// unresolved external function: libdevice is linked in, math.fpowi is
// expanded, ops without a libdevice mapping (math.trunc) go through LLVM
// intrinsics. (test/python/test_to_gpu.py checks each op on its own.)

// CHECK: .target sm_90
// CHECK-NOT: .extern
// CHECK-LABEL: .visible .entry math_f32(
// CHECK: ex2.approx
// CHECK: sqrt
// CHECK: cvt.rzi.f32.f32
// CHECK: ret;
// CHECK-LABEL: .visible .entry math_f64(
// CHECK: ld.global.b64
// CHECK: sqrt.rn.f64
// CHECK: cvt.rzi.f64.f64
// CHECK: st.global.b64
// CHECK: ret;

func.func @math_f32(%A: memref<?xf32, strided<[?], offset: ?>>, %n: i32, %i: index) attributes {diffgpu.kernel, diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  %x = memref.load %A[%i] : memref<?xf32, strided<[?], offset: ?>>
  %v0 = math.exp %x : f32
  %v1 = math.log %v0 : f32
  %v2 = math.log1p %v1 : f32
  %v3 = math.expm1 %v2 : f32
  %v4 = math.sin %v3 : f32
  %v5 = math.cos %v4 : f32
  %v6 = math.tan %v5 : f32
  %v7 = math.tanh %v6 : f32
  %v8 = math.sinh %v7 : f32
  %v9 = math.cosh %v8 : f32
  %v10 = math.sqrt %v9 : f32
  %v11 = math.rsqrt %v10 : f32
  %v12 = math.absf %v11 : f32
  %v13 = math.erf %v12 : f32
  %v14 = math.floor %v13 : f32
  %v15 = math.ceil %v14 : f32
  %v16 = math.atan %v15 : f32
  %v17 = math.exp2 %v16 : f32
  %v18 = math.log2 %v17 : f32
  %v19 = math.log10 %v18 : f32
  %v20 = math.cbrt %v19 : f32
  %v21 = math.round %v20 : f32
  %v22 = math.trunc %v21 : f32
  %v23 = math.powf %v22, %x : f32
  %v24 = math.atan2 %v23, %x : f32
  %v25 = math.fma %v24, %x, %x : f32
  %v26 = math.fpowi %v25, %n : f32, i32
  %v27 = arith.remf %v26, %x : f32
  %v28 = arith.maximumf %v27, %x : f32
  %v29 = arith.minnumf %v28, %x : f32
  memref.store %v29, %A[%i] : memref<?xf32, strided<[?], offset: ?>>
  return
}

func.func @math_f64(%A: memref<?xf64, strided<[?], offset: ?>>, %n: i64, %i: index) attributes {diffgpu.kernel, diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  %x = memref.load %A[%i] : memref<?xf64, strided<[?], offset: ?>>
  %v0 = math.exp %x : f64
  %v1 = math.log %v0 : f64
  %v2 = math.log1p %v1 : f64
  %v3 = math.expm1 %v2 : f64
  %v4 = math.sin %v3 : f64
  %v5 = math.cos %v4 : f64
  %v6 = math.tan %v5 : f64
  %v7 = math.tanh %v6 : f64
  %v8 = math.sinh %v7 : f64
  %v9 = math.cosh %v8 : f64
  %v10 = math.sqrt %v9 : f64
  %v11 = math.rsqrt %v10 : f64
  %v12 = math.absf %v11 : f64
  %v13 = math.erf %v12 : f64
  %v14 = math.floor %v13 : f64
  %v15 = math.ceil %v14 : f64
  %v16 = math.atan %v15 : f64
  %v17 = math.exp2 %v16 : f64
  %v18 = math.log2 %v17 : f64
  %v19 = math.log10 %v18 : f64
  %v20 = math.cbrt %v19 : f64
  %v21 = math.round %v20 : f64
  %v22 = math.trunc %v21 : f64
  %v23 = math.powf %v22, %x : f64
  %v24 = math.atan2 %v23, %x : f64
  %v25 = math.fma %v24, %x, %x : f64
  %v26 = math.fpowi %v25, %n : f64, i64
  %v27 = arith.remf %v26, %x : f64
  %v28 = arith.maximumf %v27, %x : f64
  %v29 = arith.minnumf %v28, %x : f64
  memref.store %v29, %A[%i] : memref<?xf64, strided<[?], offset: ?>>
  return
}

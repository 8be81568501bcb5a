// RUN: diffgpu-opt %s --split-input-file --diffgpu-lower-to-gpu | FileCheck %s
// The moved functions keep their targets: diffgpu-verify-targets accepts the result.
// RUN: diffgpu-opt %s --split-input-file -p 'diffgpu-lower-to-gpu,diffgpu-verify-targets' | FileCheck %s

// A kernel becomes a gpu.func kernel of the same name and arguments inside a
// gpu.module whose target is the kernel's own (O = 1, not a default); the
// module gets gpu.container_module; func.return becomes gpu.return; the
// kernel keeps diffgpu.kernel and diffgpu.target. The gpu.module carries
// NVPTX's data layout (8-byte aligned i64).

// CHECK: module attributes {gpu.container_module}
// CHECK: gpu.module @diffgpu_sm_80 [#nvvm.target<O = 1, chip = "sm_80">]
// CHECK-SAME: attributes {llvm.data_layout = "e-p6:32:32-i64:64-i128:128-v16:16-v32:32-n16:32:64"}
// CHECK-LABEL: gpu.func @k
// CHECK-SAME: (%[[A:.+]]: memref<?xf32, strided<[?], offset: ?>>, %[[X:.+]]: f32) kernel
// CHECK-SAME: attributes {diffgpu.kernel, diffgpu.target = #nvvm.target<O = 1, chip = "sm_80">}
// CHECK-NEXT: %[[C0:.+]] = arith.constant 0 : index
// CHECK-NEXT: memref.store %[[X]], %[[A]][%[[C0]]]
// CHECK-NEXT: gpu.return
// CHECK-NOT: func.func
func.func @k(%A: memref<?xf32, strided<[?], offset: ?>>, %x: f32) attributes {diffgpu.kernel, diffgpu.target = #nvvm.target<O = 1, chip = "sm_80">} {
  %c0 = arith.constant 0 : index
  memref.store %x, %A[%c0] : memref<?xf32, strided<[?], offset: ?>>
  return
}

// -----

// Device functions called (transitively) by a kernel move into the kernel's
// gpu.module as func.func, keeping their target and their calls.

// CHECK: gpu.module @diffgpu_sm_90 [#nvvm.target<O = 3, chip = "sm_90">]
// CHECK-LABEL: func.func private @leaf
// CHECK-SAME: attributes {diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">}
// CHECK-LABEL: func.func private @mid
// CHECK-SAME: attributes {diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">}
// CHECK: %[[Y:.+]] = call @leaf(%{{.+}}) : (f32) -> f32
// CHECK-LABEL: gpu.func @k
// CHECK: %[[Z:.+]] = func.call @mid(%{{.+}}) : (f32) -> f32
// CHECK: gpu.return
func.func private @leaf(%x: f32) -> f32 attributes {diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  %y = arith.mulf %x, %x : f32
  return %y : f32
}
func.func private @mid(%x: f32) -> f32 attributes {diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  %y = func.call @leaf(%x) : (f32) -> f32
  return %y : f32
}
func.func @k(%A: memref<?xf32, strided<[?], offset: ?>>) attributes {diffgpu.kernel, diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  %c0 = arith.constant 0 : index
  %x = memref.load %A[%c0] : memref<?xf32, strided<[?], offset: ?>>
  %y = func.call @mid(%x) : (f32) -> f32
  memref.store %y, %A[%c0] : memref<?xf32, strided<[?], offset: ?>>
  return
}

// -----

// A kernel that another kernel calls stays a gpu.func kernel and gets a
// device copy (without diffgpu.kernel) that the call now targets.

// CHECK-LABEL: gpu.func @inner
// CHECK-SAME: kernel attributes {diffgpu.kernel
// CHECK-LABEL: gpu.func @outer
// CHECK: func.call @inner__dg_device(%{{.+}}) : (memref<?xf32, strided<[?], offset: ?>>) -> ()
// CHECK-LABEL: func.func @inner__dg_device
// CHECK-SAME: attributes {diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">}
// CHECK: return
func.func @inner(%A: memref<?xf32, strided<[?], offset: ?>>) attributes {diffgpu.kernel, diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  return
}
func.func @outer(%A: memref<?xf32, strided<[?], offset: ?>>) attributes {diffgpu.kernel, diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  func.call @inner(%A) : (memref<?xf32, strided<[?], offset: ?>>) -> ()
  return
}

// -----

// One gpu.module per distinct target: two chips give two modules, each with
// its own kernels; host functions (and a host kernel) stay untouched at the
// top level.

// CHECK-LABEL: func.func @host_k
// CHECK-SAME: attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">}
// CHECK: %[[T:.+]] = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
// CHECK: return
// CHECK-LABEL: func.func private @host_f
// CHECK: gpu.module @diffgpu_sm_90 [#nvvm.target<O = 3, chip = "sm_90">]
// CHECK-NEXT: gpu.func @a
// CHECK: gpu.module @diffgpu_sm_80 [#nvvm.target<O = 3, chip = "sm_80">]
// CHECK-NEXT: gpu.func @b
func.func @host_k(%A: memref<?xf32, strided<[?], offset: ?>>) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %x = func.call @host_f() : () -> f32
  return
}
func.func private @host_f() -> f32 attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %c = arith.constant 1.0 : f32
  return %c : f32
}
func.func @a() attributes {diffgpu.kernel, diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  return
}
func.func @b() attributes {diffgpu.kernel, diffgpu.target = #nvvm.target<O = 3, chip = "sm_80">} {
  return
}

// -----

// The module name avoids existing symbols: @diffgpu_sm_90 is taken by a
// host function, so the gpu.module is @diffgpu_sm_90_1.

// CHECK-LABEL: func.func private @diffgpu_sm_90
// CHECK: gpu.module @diffgpu_sm_90_1 [#nvvm.target<O = 3, chip = "sm_90">]
// CHECK-NEXT: gpu.func @k
func.func private @diffgpu_sm_90() attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  return
}
func.func @k() attributes {diffgpu.kernel, diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  return
}

// -----

// A module without GPU functions is left as it is (no container attribute).

// CHECK: module {
// CHECK-LABEL: func.func @h
func.func @h() attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  return
}

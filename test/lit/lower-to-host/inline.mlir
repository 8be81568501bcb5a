// RUN: diffgpu-opt %s --diffgpu-lower-to-host | FileCheck %s

// Calls from a kernel to a function reaching a barrier are inlined (here
// through two levels), so the kernel's body can be split at the barrier; the
// device functions with barriers are then erased. Functions without
// barriers stay calls.

// CHECK-NOT: func.func @__dg_dev_sync
// CHECK-NOT: func.func @__dg_dev_outer
// CHECK-LABEL: func.func @__dg_dev_plain
// CHECK-LABEL: func.func private @k__phase0
// CHECK: %[[X:.+]] = memref.load
// CHECK: memref.store %{{.+}}, %{{.+}}[%{{.+}}] : memref<?xf32>
// CHECK: return
// CHECK-LABEL: func.func private @k__phase1
// CHECK: %[[Y:.+]] = arith.addf %{{.+}}, %{{.+}} : f32
// CHECK-NEXT: %[[Z:.+]] = call @__dg_dev_plain(%[[Y]]) : (f32) -> f32
// CHECK: memref.store %[[Z]]
// CHECK-NOT: diffgpu.barrier
// CHECK-LABEL: func.func @k
// CHECK: func.call @k__phase0
// CHECK: func.call @k__phase1
func.func @sync(%x: f32) -> f32 attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  "diffgpu.barrier"() : () -> ()
  %y = arith.addf %x, %x : f32
  return %y : f32
}
func.func @outer(%x: f32) -> f32 attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %y = func.call @sync(%x) : (f32) -> f32
  %z = func.call @plain(%y) : (f32) -> f32
  return %z : f32
}
func.func @plain(%x: f32) -> f32 attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  return %x : f32
}
func.func @k(%A: memref<?xf32, strided<[?], offset: ?>>)
    attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %x = memref.load %A[%t] : memref<?xf32, strided<[?], offset: ?>>
  %r = func.call @outer(%x) : (f32) -> f32
  memref.store %r, %A[%t] : memref<?xf32, strided<[?], offset: ?>>
  return
}

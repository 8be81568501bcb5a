// A top-level `memref.global` the GPU functions read (the tape's overflow
// flag, lowering/autodiff/tape.py) moves into the gpu.module (public: the
// runtime finds it by name in the loaded module); one a host function also
// reads stays at the top level too.
// RUN: diffgpu-opt %s --split-input-file --diffgpu-lower-to-gpu | FileCheck %s

memref.global @__dg_tape_overflow : memref<1xindex> = dense<0> {alignment = 8 : i64}
func.func private @grow(%n: index) attributes {diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  %g = memref.get_global @__dg_tape_overflow : memref<1xindex>
  %c0 = arith.constant 0 : index
  memref.store %n, %g[%c0] : memref<1xindex>
  return
}
func.func @k(%n: index) attributes {diffgpu.kernel, diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  func.call @grow(%n) : (index) -> ()
  return
}
// CHECK-LABEL: module attributes {gpu.container_module}
// CHECK-NOT: memref.global
// CHECK: gpu.module @diffgpu_sm_90
// CHECK-NEXT: memref.global @__dg_tape_overflow : memref<1xindex> = dense<0> {alignment = 8 : i64}
// CHECK: func.func private @grow
// CHECK-NEXT: memref.get_global @__dg_tape_overflow
// CHECK: gpu.func @k
// CHECK-NOT: memref.global

// -----

memref.global @flag : memref<1xindex> = dense<0>
func.func @host_reads() -> index attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %g = memref.get_global @flag : memref<1xindex>
  %c0 = arith.constant 0 : index
  %v = memref.load %g[%c0] : memref<1xindex>
  return %v : index
}
func.func @k(%n: index) attributes {diffgpu.kernel, diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  %g = memref.get_global @flag : memref<1xindex>
  %c0 = arith.constant 0 : index
  memref.store %n, %g[%c0] : memref<1xindex>
  return
}
// CHECK-LABEL: module attributes {gpu.container_module}
// CHECK: memref.global @flag
// CHECK: gpu.module @diffgpu_sm_90
// CHECK-NEXT: memref.global @flag

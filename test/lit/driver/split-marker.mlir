// --split-input-file=MARK splits at a custom marker line and separates the
// outputs with it.
// RUN: diffgpu-opt %s '--split-input-file=// =====' | FileCheck %s

// CHECK-LABEL: func.func @a
// CHECK: // =====
// CHECK-LABEL: func.func @b
func.func @a() attributes {diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  return
}
// =====
func.func @b() attributes {diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  return
}

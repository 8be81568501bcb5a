// --mlir-print-ir-after-all dumps the IR on stderr after every pass, our
// Python passes and upstream ones alike, in command-line order.
// RUN: diffgpu-opt %s --mlir-print-ir-after-all --canonicalize --diffgpu-verify-targets --cse 2>&1 >/dev/null | FileCheck %s

// CHECK: IR Dump After Canonicalizer (canonicalize)
// CHECK: func.func @k
// CHECK: IR Dump After diffgpu-verify-targets
// CHECK: func.func @k
// CHECK: IR Dump After CSE (cse)
func.func @k() attributes {diffgpu.kernel, diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  return
}

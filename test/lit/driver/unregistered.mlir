// Ops of unknown dialects are errors, unless --allow-unregistered-dialect
// (as in mlir-opt); ops of our own dialect are always checked.
// RUN: diffgpu-opt %s --allow-unregistered-dialect --mlir-disable-threading | FileCheck %s
// RUN: not diffgpu-opt %s 2>&1 | FileCheck %s --check-prefix=ERR --implicit-check-not=Traceback

// CHECK-LABEL: func.func @k
// CHECK: "test.op"() : () -> ()
// ERR: unregistered.mlir:[[# @LINE + 2]]:12: error: operation being parsed with an unregistered dialect
func.func @k() attributes {diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  "test.op"() : () -> ()
  return
}

// --mlir-print-debuginfo prints locations, named after the input file (the
// frontend's Python locations are kept as they are); stdin is <stdin>.
// RUN: diffgpu-opt %s --mlir-print-debuginfo | FileCheck %s
// RUN: diffgpu-opt - --mlir-print-debuginfo < %s | FileCheck %s --check-prefix=STDIN

// CHECK-LABEL: func.func @k
// CHECK-DAG: loc("{{.*}}debuginfo.mlir":[[# @LINE + 5]]:8)
// CHECK-DAG: loc("kernel.py":3:5)
// STDIN-DAG: loc("<stdin>":[[# @LINE + 3]]:8)
// STDIN-DAG: loc("kernel.py":3:5)
func.func @k() attributes {diffgpu.kernel, diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %b = "diffgpu.block_id"() {dim = 0 : i64} : () -> index loc("kernel.py":3:5)
  return
}

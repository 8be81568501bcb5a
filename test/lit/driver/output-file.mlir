// -o writes the result to a file and nothing to stdout.
// RUN: diffgpu-opt %s -o %t | count 0
// RUN: FileCheck %s < %t
// `-o -` is stdout.
// RUN: diffgpu-opt %s -o - | FileCheck %s

// CHECK-LABEL: func.func @k
// CHECK-SAME: diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">
// CHECK: %[[T:.+]] = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
func.func @k() attributes {diffgpu.kernel, diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  return
}

// On failure no output file is written (as mlir-opt keeps it only on success).
// RUN: rm -f %t.fail
// RUN: sed -e 's/() -> index/() -> i32/' %s | not diffgpu-opt - -o %t.fail
// RUN: not ls %t.fail

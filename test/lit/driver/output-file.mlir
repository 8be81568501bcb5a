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

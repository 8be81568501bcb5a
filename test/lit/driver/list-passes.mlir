// --list-passes names every pass and pipeline of the registry with its
// summary and options, and says that upstream passes work by name.
// RUN: diffgpu-opt --list-passes | FileCheck %s

// CHECK: diffgpu passes
// CHECK-DAG: --diffgpu-autodiff:
// CHECK-DAG: --diffgpu-verify-targets: check that every function
// CHECK-DAG: --diffgpu-lower-to-gpu:
// CHECK-DAG: --diffgpu-lower-to-host:
// CHECK: diffgpu pipelines
// CHECK-DAG: --diffgpu-to-ptx:
// CHECK-DAG: chip: str
// CHECK-DAG: --diffgpu-to-host:
// CHECK: Every upstream MLIR pass is also available by its own name

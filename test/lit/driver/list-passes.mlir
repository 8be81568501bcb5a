// --list-passes names every pass and pipeline of the registry with its
// summary and options, then the upstream MLIR passes the bindings register.
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
// CHECK: upstream MLIR passes ({{[0-9]+}}), as flags (--NAME[=OPTIONS]) or inside -p:
// CHECK-DAG: canonicalize
// CHECK-DAG: convert-gpu-to-nvvm

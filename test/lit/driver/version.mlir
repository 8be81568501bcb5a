// --version names diffgpu's version and the pinned MLIR distribution.
// RUN: diffgpu-opt --version | FileCheck %s

// CHECK: diffgpu-opt (diffgpu) {{[0-9]+\.[0-9]+}}
// CHECK: MLIR: xtc-mlir-python-bindings==

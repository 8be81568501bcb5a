// --version names diffgpu's version and the pinned MLIR distribution.
// RUN: diffgpu-opt --version | FileCheck %s

// CHECK: diffgpu-opt (diffgpu) {{[0-9]+\.[0-9]+}}
// CHECK: MLIR: xtc-mlir-python-bindings==

// -h / --help print the usage, with the mlir-opt style flags.
// RUN: diffgpu-opt --help | FileCheck %s --check-prefix=HELP
// RUN: diffgpu-opt -h | FileCheck %s --check-prefix=HELP
// HELP: usage: diffgpu-opt [FILE|-] [-o OUT] [--pass-pipeline=PIPELINE | -p PIPELINE]
// HELP: --verify-diagnostics
// HELP: --emit=mlir|llvm|ptx

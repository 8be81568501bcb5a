// Input from stdin: `-` or no file at all; diagnostics then name <stdin>.
// RUN: diffgpu-opt - < %s | FileCheck %s
// RUN: cat %s | diffgpu-opt --diffgpu-verify-targets | FileCheck %s
// RUN: sed -e 's/dim = 1 : i64} : () -> index/dim = 1 : i64} : () -> i32/' %s \
// RUN:   | not diffgpu-opt - 2>&1 | FileCheck %s --check-prefix=ERR

// CHECK-LABEL: func.func @k
// CHECK: "diffgpu.block_id"() {dim = 1 : i64} : () -> index
// ERR: <stdin>:[[@LINE+3]]:{{[0-9]+}}: error: expected 'index' but got 'i32'
// ERR-NOT: Traceback
func.func @k() attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %b = "diffgpu.block_id"() {dim = 1 : i64} : () -> index
  return
}

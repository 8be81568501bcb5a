// --mlir-print-op-generic prints every op, upstream ones included, in the
// generic form, which diffgpu-opt (and upstream mlir-opt with --irdl-file)
// parses back to the same module.
// RUN: diffgpu-opt %s --mlir-print-op-generic | FileCheck %s
// RUN: diffgpu-opt %s --mlir-print-op-generic | diffgpu-opt | FileCheck %s --check-prefix=BACK

// CHECK: "builtin.module"() ({
// CHECK: "func.func"() <{function_type = (f32) -> f32, sym_name = "sq"}>
// CHECK: %[[P:.+]] = "arith.mulf"(%{{.+}}, %{{.+}})
// CHECK: "func.return"(%[[P]])
// BACK-LABEL: func.func @sq
// BACK: arith.mulf
func.func @sq(%x: f32) -> f32 attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %y = arith.mulf %x, %x : f32
  return %y : f32
}

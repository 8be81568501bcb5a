// --split-input-file: each chunk is parsed and run on its own, outputs are
// separated by `// -----`, and a bad chunk reports the file's own line
// numbers while the good ones still print.
// RUN: not diffgpu-opt %s --split-input-file --diffgpu-verify-targets 2>%t.err | FileCheck %s
// RUN: FileCheck %s --check-prefix=ERR < %t.err

// CHECK-LABEL: func.func @first
// CHECK: "diffgpu.thread_id"
func.func @first() attributes {diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  return
}

// -----

// ERR: split-input-file.mlir:[[@LINE+1]]:1: error: 'func.func' @second has no diffgpu.target
func.func @second() {
  return
}

// -----

// CHECK: // -----
// CHECK-LABEL: func.func @third
// CHECK: "diffgpu.block_dim"() {dim = 2 : i64}
func.func @third() attributes {diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  %t = "diffgpu.block_dim"() {dim = 2 : i64} : () -> index
  return
}

// -----

// ERR: split-input-file.mlir:[[@LINE+2]]:8: error: expected 'index' but got 'f32'
func.func @fourth() attributes {diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  %t = "diffgpu.grid_dim"() {dim = 0 : i64} : () -> f32
  return
}
// ERR-NOT: Traceback

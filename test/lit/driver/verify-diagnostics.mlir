// --verify-diagnostics checks expected-* comments like mlir-opt: matched
// diagnostics are silent (exit 0, and the IR of chunks that succeed is still
// printed); an unexpected diagnostic, an expectation nobody met, or a wrong
// severity is reported at its line, and the exit status is 1.
// RUN: diffgpu-opt %s --split-input-file --verify-diagnostics --diffgpu-verify-targets 2>&1 | FileCheck %s
// RUN: not diffgpu-opt %S/Inputs/mismatched-diagnostics.mlir --split-input-file --verify-diagnostics --diffgpu-verify-targets 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD --implicit-check-not=Traceback

// BAD: mismatched-diagnostics.mlir:4:8: error: unexpected error: expected 'index' but got 'i32'
// BAD: mismatched-diagnostics.mlir:3:6: error: expected error "a message nobody emits" was not produced
// BAD: mismatched-diagnostics.mlir:11:1: error: 'error' diagnostic emitted when expecting a 'warning'
// BAD: mismatched-diagnostics.mlir:10:4: error: expected warning "'func.func' @m has no diffgpu.target" was not produced

// A chunk whose expectations hold prints nothing on stderr ...
// CHECK-NOT: error
// expected-error@below {{'func.func' @m has no diffgpu.target}}
func.func @m() {
  return
}

// -----

// @above, @-N, -re (regex between {{ and }}) and diagnostics from frontend
// locations in other files (@unknown) work as in mlir-opt.
func.func @a() {
  // expected-error@above {{'func.func' @a has no diffgpu.target}}
  return
}
func.func @b() {
  return
}
// expected-error-re@-3 {{'func.func' @{{[a-z]}} has no {{diffgpu\.[a-z]+}}}}
// expected-error@unknown {{'func.func' @c has no diffgpu.target}}
func.func @c() {
  return
} loc("kernel.py":7:1)

// -----

// ... and a chunk without diagnostics prints its IR.
// CHECK-LABEL: func.func @ok
func.func @ok() attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  return
}

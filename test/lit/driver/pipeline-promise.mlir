// A pipeline that promises LLVM fails (exit 1, FILE:LINE:COL: error) when
// its result still holds diffgpu ops or unresolved casts: here a kernel whose
// target is sm_90 run through the host pipeline, and a host kernel through
// the NVVM one. The same kernel with a matching target lowers (exit 0).
// RUN: not diffgpu-opt %s -p diffgpu-to-host 2>&1 | FileCheck %s --check-prefix=HOST
// RUN: sed -e 's/#nvvm.target<chip = "sm_90">/#llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">/' %s \
// RUN:   | not diffgpu-opt - -p diffgpu-to-nvvm 2>&1 | FileCheck %s --check-prefix=NVVM
// RUN: sed -e 's/#nvvm.target<chip = "sm_90">/#llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">/' %s \
// RUN:   | diffgpu-opt - -p diffgpu-to-host | FileCheck %s --check-prefix=OK

// HOST: pipeline-promise.mlir:[[# @LINE + 10]]:8: error: diffgpu-to-host promises LLVM, but 'diffgpu.thread_id' is not LLVM dialect in @k: its target is #nvvm.target<chip = "sm_90">, which diffgpu-to-host does not lower (use diffgpu-to-ptx{chip=...})
// HOST-NEXT: %t = "diffgpu.thread_id"
// HOST-NOT: error:

// NVVM: <stdin>:[[# @LINE + 6]]:8: error: diffgpu-to-nvvm promises LLVM, but 'diffgpu.thread_id' was not lowered in @k: its target is #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">, which diffgpu-to-nvvm does not lower (use diffgpu-to-host)

// OK: llvm.func @k(
// OK-NOT: diffgpu.thread_id
// OK-NOT: unrealized_conversion_cast
func.func @k(%A: memref<?xf32, strided<[?], offset: ?>>) attributes {diffgpu.kernel, diffgpu.target = #nvvm.target<chip = "sm_90">} {
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %v = memref.load %A[%t] : memref<?xf32, strided<[?], offset: ?>>
  %w = arith.addf %v, %v : f32
  memref.store %w, %A[%t] : memref<?xf32, strided<[?], offset: ?>>
  return
}

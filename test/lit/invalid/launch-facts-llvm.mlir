// After lowering to NVVM the kernel's parameters are the descriptors the
// runtime packs (a scalar one word, a memref of rank r 3 + 2r words):
// `diffgpu-nvvm-cleanup` rewrites them by `ranks`, so ranks that need more
// parameters than the kernel has are an error, not a rewrite of the wrong ones.
// RUN: diffgpu-opt %s --verify-diagnostics --diffgpu-nvvm-cleanup

module attributes {gpu.container_module} {
  gpu.module @m {
    // expected-error@+1 {{malformed diffgpu.launch_facts of @k: 'ranks' = [1] needs 5 parameters, the function has 2}}
    llvm.func @k(%p: !llvm.ptr, %q: !llvm.ptr) attributes {gpu.kernel, nvvm.kernel, diffgpu.launch_facts = {noalias = true, contiguous = [true], unit_dims = [], ranks = [1 : i64]}} {
      llvm.return
    }
  }
}

// The diffgpu dialect, in IRDL. Loaded at run time by diffgpu.dialects, and by
// upstream `mlir-opt --irdl-file=dialects/diffgpu.irdl.mlir`, so our IR parses
// in both. Generic syntax only (IRDL ops have no custom assembly).
//
// Upstream ops (func, arith, math, scf, memref, gpu) carry everything whose
// meaning fits; this dialect holds what upstream lacks: thread geometry,
// barriers, shared memory, atomics, and differentiation.
//
// Targets: every kernel/device function (func.func) and every autodiff/fwddiff
// op carries the discardable attribute `diffgpu.target`, either an
// `#nvvm.target<...>` (GPU) or the host target
// `#llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">`.
// `diffgpu-verify-targets` checks it; IRDL only checks the op shapes.
irdl.dialect @diffgpu {
  // %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  // Index of the thread in its block along `dim` (0, 1, 2 = x, y, z).
  irdl.operation @thread_id {
    %index = irdl.is index
    %int = irdl.base "#builtin.integer"
    irdl.attributes {"dim" = %int}
    irdl.results(result: %index)
  }
  // Index of the block in the grid along `dim`.
  irdl.operation @block_id {
    %index = irdl.is index
    %int = irdl.base "#builtin.integer"
    irdl.attributes {"dim" = %int}
    irdl.results(result: %index)
  }
  // Threads per block along `dim`.
  irdl.operation @block_dim {
    %index = irdl.is index
    %int = irdl.base "#builtin.integer"
    irdl.attributes {"dim" = %int}
    irdl.results(result: %index)
  }
  // Blocks per grid along `dim`.
  irdl.operation @grid_dim {
    %index = irdl.is index
    %int = irdl.base "#builtin.integer"
    irdl.attributes {"dim" = %int}
    irdl.results(result: %index)
  }
  // "diffgpu.barrier"() : () -> ()
  // Block-wide barrier (CUDA __syncthreads): no thread of the block passes it
  // before every thread of the block has reached it.
  irdl.operation @barrier {
  }
  // %old = "diffgpu.atomic_add"(%A, %v, %i, %j) : (memref<?x?xf32, ...>, f32, index, index) -> f32
  // Atomically A[i, j] += v; returns the value held before the addition.
  irdl.operation @atomic_add {
    %memref = irdl.base "!builtin.memref"
    %value = irdl.any
    %index = irdl.is index
    irdl.operands(memref: %memref, value: %value, indices: variadic %index)
    irdl.results(old: %value)
  }
  // %old = "diffgpu.atomic_rmw"(%A, %v, %i) {kind = "max"} : (memref<?xf32, ...>, f32, index) -> f32
  // Atomically A[i] = max(A[i], v) ("max"), min ("min") or v ("exch", the
  // derivative's claim of an adjoint); returns the value held before.
  irdl.operation @atomic_rmw {
    %memref = irdl.base "!builtin.memref"
    %value = irdl.any
    %index = irdl.is index
    %str = irdl.base "#builtin.string"
    irdl.attributes {"kind" = %str}
    irdl.operands(memref: %memref, value: %value, indices: variadic %index)
    irdl.results(old: %value)
  }
  // %r = "diffgpu.warp_reduce"(%v) {kind = "sum"} : (f32) -> f32
  // Sum ("sum"), maximum ("max") or minimum ("min") of %v over the 32 lanes
  // of the warp (lanes by linear thread index), in every lane.
  // docs/collectives.md: uniform control flow only.
  irdl.operation @warp_reduce {
    %v = irdl.any
    %str = irdl.base "#builtin.string"
    irdl.attributes {"kind" = %str}
    irdl.operands(value: %v)
    irdl.results(result: %v)
  }
  // %r = "diffgpu.block_reduce"(%v) {kind = "sum"} : (f32) -> f32
  // The same over every thread of the block, in every thread.
  irdl.operation @block_reduce {
    %v = irdl.any
    %str = irdl.base "#builtin.string"
    irdl.attributes {"kind" = %str}
    irdl.operands(value: %v)
    irdl.results(result: %v)
  }
  // %r = "diffgpu.block_scan"(%v) {reverse = false} : (f32) -> f32
  // Inclusive prefix sum of %v over the block's linear thread index
  // (reverse = true: the suffix sum, threads n-1 down to this one).
  irdl.operation @block_scan {
    %v = irdl.any
    %int = irdl.base "#builtin.integer"
    irdl.attributes {"reverse" = %int}
    irdl.operands(value: %v)
    irdl.results(result: %v)
  }
  // %r = "diffgpu.shuffle"(%v, %k) {mode = "xor"} : (f32, i32) -> f32
  // The value of %v in another lane of the warp: lane ^ k ("xor"), lane - k
  // ("up"), lane + k ("down"), k & 31 ("idx"); out of range: its own value.
  irdl.operation @shuffle {
    %v = irdl.any
    %i32 = irdl.is i32
    %str = irdl.base "#builtin.string"
    irdl.attributes {"mode" = %str}
    irdl.operands(value: %v, lane: %i32)
    irdl.results(result: %v)
  }
  // %s = "diffgpu.shared_alloc"() : () -> memref<16x16xf32, #gpu.address_space<workgroup>>
  // A block-shared array of static shape (dg.shared_array). Only in kernels.
  irdl.operation @shared_alloc {
    %memref = irdl.base "!builtin.memref"
    irdl.results(result: %memref)
  }
  // %y = "diffgpu.erfinv"(%x) : (f32) -> f32
  // Inverse error function (dg.erfinv), x in [-1, 1]. No upstream math op has
  // it; diffgpu-expand-special-math (after autodiff) expands it into math ops.
  irdl.operation @erfinv {
    %f32 = irdl.is f32
    %f64 = irdl.is f64
    %float = irdl.any_of(%f32, %f64)
    irdl.operands(x: %float)
    irdl.results(result: %float)
  }
  // %y = "diffgpu.erfcinv"(%x) : (f32) -> f32
  // Inverse complementary error function (dg.erfcinv), x in [0, 2].
  irdl.operation @erfcinv {
    %f32 = irdl.is f32
    %f64 = irdl.is f64
    %float = irdl.any_of(%f32, %f64)
    irdl.operands(x: %float)
    irdl.results(result: %float)
  }
  // %g:k = "diffgpu.autodiff"(...) {callee = @f, activity = ["dup", "active", ...],
  //        diffgpu.target = #nvvm.target<...>, operandSegmentSizes = array<i32: ...>,
  //        resultSegmentSizes = array<i32: ...>}
  // Reverse-mode derivative of `callee` (dg.autodiff). Operand group `seed`
  // holds the adjoint seed of a scalar result (empty when the callee returns
  // nothing); group `argK` holds the K-th argument of the callee: the primal
  // alone ("const", "active") or primal then shadow ("dup", "dupnoneed").
  // Result group `gradK` is the gradient of argument K (one value when it is
  // "active", none otherwise). Up to 16 arguments: each group has its own type
  // variable because IRDL unifies a variable to one type across a variadic.
  irdl.operation @autodiff {
    %sym = irdl.base "#builtin.symbol_ref"
    %arr = irdl.base "#builtin.array"
    %seedty = irdl.any
    irdl.attributes {"callee" = %sym, "activity" = %arr}
    %a0 = irdl.any
    %a1 = irdl.any
    %a2 = irdl.any
    %a3 = irdl.any
    %a4 = irdl.any
    %a5 = irdl.any
    %a6 = irdl.any
    %a7 = irdl.any
    %a8 = irdl.any
    %a9 = irdl.any
    %a10 = irdl.any
    %a11 = irdl.any
    %a12 = irdl.any
    %a13 = irdl.any
    %a14 = irdl.any
    %a15 = irdl.any
    irdl.operands(seed: optional %seedty, arg0: variadic %a0, arg1: variadic %a1, arg2: variadic %a2, arg3: variadic %a3, arg4: variadic %a4, arg5: variadic %a5, arg6: variadic %a6, arg7: variadic %a7, arg8: variadic %a8, arg9: variadic %a9, arg10: variadic %a10, arg11: variadic %a11, arg12: variadic %a12, arg13: variadic %a13, arg14: variadic %a14, arg15: variadic %a15)
    %g0 = irdl.any
    %g1 = irdl.any
    %g2 = irdl.any
    %g3 = irdl.any
    %g4 = irdl.any
    %g5 = irdl.any
    %g6 = irdl.any
    %g7 = irdl.any
    %g8 = irdl.any
    %g9 = irdl.any
    %g10 = irdl.any
    %g11 = irdl.any
    %g12 = irdl.any
    %g13 = irdl.any
    %g14 = irdl.any
    %g15 = irdl.any
    irdl.results(grad0: variadic %g0, grad1: variadic %g1, grad2: variadic %g2, grad3: variadic %g3, grad4: variadic %g4, grad5: variadic %g5, grad6: variadic %g6, grad7: variadic %g7, grad8: variadic %g8, grad9: variadic %g9, grad10: variadic %g10, grad11: variadic %g11, grad12: variadic %g12, grad13: variadic %g13, grad14: variadic %g14, grad15: variadic %g15)
  }
  // %t = "diffgpu.fwddiff"(...) {callee = @f, activity = [...], diffgpu.target = ...,
  //        operandSegmentSizes = array<i32: ...>, resultSegmentSizes = array<i32: 0 or 1>}
  // Forward-mode derivative of `callee` (dg.fwddiff). Group `argK` holds the
  // primal, then the tangent for "dup"/"dupnoneed". The optional result is
  // the tangent of the callee's scalar result.
  irdl.operation @fwddiff {
    %sym = irdl.base "#builtin.symbol_ref"
    %arr = irdl.base "#builtin.array"
    %resty = irdl.any
    irdl.attributes {"callee" = %sym, "activity" = %arr}
    %a0 = irdl.any
    %a1 = irdl.any
    %a2 = irdl.any
    %a3 = irdl.any
    %a4 = irdl.any
    %a5 = irdl.any
    %a6 = irdl.any
    %a7 = irdl.any
    %a8 = irdl.any
    %a9 = irdl.any
    %a10 = irdl.any
    %a11 = irdl.any
    %a12 = irdl.any
    %a13 = irdl.any
    %a14 = irdl.any
    %a15 = irdl.any
    irdl.operands(arg0: variadic %a0, arg1: variadic %a1, arg2: variadic %a2, arg3: variadic %a3, arg4: variadic %a4, arg5: variadic %a5, arg6: variadic %a6, arg7: variadic %a7, arg8: variadic %a8, arg9: variadic %a9, arg10: variadic %a10, arg11: variadic %a11, arg12: variadic %a12, arg13: variadic %a13, arg14: variadic %a14, arg15: variadic %a15)
    irdl.results(tangent: optional %resty)
  }
}

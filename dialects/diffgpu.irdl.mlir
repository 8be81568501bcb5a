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
  // %y = "diffgpu.stop_gradient"(%x) : (f32) -> f32
  // x itself, held constant by differentiation (dg.stop_gradient): no
  // adjoint flows back through it, its tangent is zero. diffgpu-autodiff
  // replaces it by x once the derivatives are made.
  irdl.operation @stop_gradient {
    %f32 = irdl.is f32
    %f64 = irdl.is f64
    %float = irdl.any_of(%f32, %f64)
    irdl.operands(x: %float)
    irdl.results(result: %float)
  }
  // %g:k = "diffgpu.autodiff"(%seed?, operands of each argument...) {callee = @f,
  //        activity = ["dup", "active", ...], groups = array<i32: 2, 1, ...>,
  //        diffgpu.target = #nvvm.target<...>, operandSegmentSizes = array<i32: ...>,
  //        resultSegmentSizes = array<i32: ...>}
  // Reverse-mode derivative of `callee` (dg.autodiff). The operands are one
  // list: the adjoint seed of a scalar result (absent when the callee returns
  // nothing), then for each callee argument its operands, the primal alone
  // ("const", "active") or primal then shadow ("dup", "dupnoneed"); `groups`
  // holds how many operands each argument has, one entry per argument. The
  // results are the gradients of the "active" arguments, in order.
  // `operandSegmentSizes` / `resultSegmentSizes` cut the lists into runs of
  // equal types (at most 128): IRDL binds one type variable per variadic group,
  // so each run needs its own. Any number of arguments fits while their types
  // change fewer than 128 times (dialects/names.py diff_layout).
  irdl.operation @autodiff {
    %sym = irdl.base "#builtin.symbol_ref"
    %arr = irdl.base "#builtin.array"
    %dense = irdl.base "#builtin.dense_array"
    irdl.attributes {"callee" = %sym, "activity" = %arr, "groups" = %dense}
    %a0 = irdl.any  %a1 = irdl.any  %a2 = irdl.any  %a3 = irdl.any  %a4 = irdl.any  %a5 = irdl.any  %a6 = irdl.any  %a7 = irdl.any
    %a8 = irdl.any  %a9 = irdl.any  %a10 = irdl.any  %a11 = irdl.any  %a12 = irdl.any  %a13 = irdl.any  %a14 = irdl.any  %a15 = irdl.any
    %a16 = irdl.any  %a17 = irdl.any  %a18 = irdl.any  %a19 = irdl.any  %a20 = irdl.any  %a21 = irdl.any  %a22 = irdl.any  %a23 = irdl.any
    %a24 = irdl.any  %a25 = irdl.any  %a26 = irdl.any  %a27 = irdl.any  %a28 = irdl.any  %a29 = irdl.any  %a30 = irdl.any  %a31 = irdl.any
    %a32 = irdl.any  %a33 = irdl.any  %a34 = irdl.any  %a35 = irdl.any  %a36 = irdl.any  %a37 = irdl.any  %a38 = irdl.any  %a39 = irdl.any
    %a40 = irdl.any  %a41 = irdl.any  %a42 = irdl.any  %a43 = irdl.any  %a44 = irdl.any  %a45 = irdl.any  %a46 = irdl.any  %a47 = irdl.any
    %a48 = irdl.any  %a49 = irdl.any  %a50 = irdl.any  %a51 = irdl.any  %a52 = irdl.any  %a53 = irdl.any  %a54 = irdl.any  %a55 = irdl.any
    %a56 = irdl.any  %a57 = irdl.any  %a58 = irdl.any  %a59 = irdl.any  %a60 = irdl.any  %a61 = irdl.any  %a62 = irdl.any  %a63 = irdl.any
    %a64 = irdl.any  %a65 = irdl.any  %a66 = irdl.any  %a67 = irdl.any  %a68 = irdl.any  %a69 = irdl.any  %a70 = irdl.any  %a71 = irdl.any
    %a72 = irdl.any  %a73 = irdl.any  %a74 = irdl.any  %a75 = irdl.any  %a76 = irdl.any  %a77 = irdl.any  %a78 = irdl.any  %a79 = irdl.any
    %a80 = irdl.any  %a81 = irdl.any  %a82 = irdl.any  %a83 = irdl.any  %a84 = irdl.any  %a85 = irdl.any  %a86 = irdl.any  %a87 = irdl.any
    %a88 = irdl.any  %a89 = irdl.any  %a90 = irdl.any  %a91 = irdl.any  %a92 = irdl.any  %a93 = irdl.any  %a94 = irdl.any  %a95 = irdl.any
    %a96 = irdl.any  %a97 = irdl.any  %a98 = irdl.any  %a99 = irdl.any  %a100 = irdl.any  %a101 = irdl.any  %a102 = irdl.any  %a103 = irdl.any
    %a104 = irdl.any  %a105 = irdl.any  %a106 = irdl.any  %a107 = irdl.any  %a108 = irdl.any  %a109 = irdl.any  %a110 = irdl.any  %a111 = irdl.any
    %a112 = irdl.any  %a113 = irdl.any  %a114 = irdl.any  %a115 = irdl.any  %a116 = irdl.any  %a117 = irdl.any  %a118 = irdl.any  %a119 = irdl.any
    %a120 = irdl.any  %a121 = irdl.any  %a122 = irdl.any  %a123 = irdl.any  %a124 = irdl.any  %a125 = irdl.any  %a126 = irdl.any  %a127 = irdl.any
    irdl.operands(
        run0: variadic %a0, run1: variadic %a1, run2: variadic %a2, run3: variadic %a3, run4: variadic %a4, run5: variadic %a5,
        run6: variadic %a6, run7: variadic %a7, run8: variadic %a8, run9: variadic %a9, run10: variadic %a10, run11: variadic %a11,
        run12: variadic %a12, run13: variadic %a13, run14: variadic %a14, run15: variadic %a15, run16: variadic %a16, run17: variadic %a17,
        run18: variadic %a18, run19: variadic %a19, run20: variadic %a20, run21: variadic %a21, run22: variadic %a22, run23: variadic %a23,
        run24: variadic %a24, run25: variadic %a25, run26: variadic %a26, run27: variadic %a27, run28: variadic %a28, run29: variadic %a29,
        run30: variadic %a30, run31: variadic %a31, run32: variadic %a32, run33: variadic %a33, run34: variadic %a34, run35: variadic %a35,
        run36: variadic %a36, run37: variadic %a37, run38: variadic %a38, run39: variadic %a39, run40: variadic %a40, run41: variadic %a41,
        run42: variadic %a42, run43: variadic %a43, run44: variadic %a44, run45: variadic %a45, run46: variadic %a46, run47: variadic %a47,
        run48: variadic %a48, run49: variadic %a49, run50: variadic %a50, run51: variadic %a51, run52: variadic %a52, run53: variadic %a53,
        run54: variadic %a54, run55: variadic %a55, run56: variadic %a56, run57: variadic %a57, run58: variadic %a58, run59: variadic %a59,
        run60: variadic %a60, run61: variadic %a61, run62: variadic %a62, run63: variadic %a63, run64: variadic %a64, run65: variadic %a65,
        run66: variadic %a66, run67: variadic %a67, run68: variadic %a68, run69: variadic %a69, run70: variadic %a70, run71: variadic %a71,
        run72: variadic %a72, run73: variadic %a73, run74: variadic %a74, run75: variadic %a75, run76: variadic %a76, run77: variadic %a77,
        run78: variadic %a78, run79: variadic %a79, run80: variadic %a80, run81: variadic %a81, run82: variadic %a82, run83: variadic %a83,
        run84: variadic %a84, run85: variadic %a85, run86: variadic %a86, run87: variadic %a87, run88: variadic %a88, run89: variadic %a89,
        run90: variadic %a90, run91: variadic %a91, run92: variadic %a92, run93: variadic %a93, run94: variadic %a94, run95: variadic %a95,
        run96: variadic %a96, run97: variadic %a97, run98: variadic %a98, run99: variadic %a99, run100: variadic %a100, run101: variadic %a101,
        run102: variadic %a102, run103: variadic %a103, run104: variadic %a104, run105: variadic %a105, run106: variadic %a106, run107: variadic %a107,
        run108: variadic %a108, run109: variadic %a109, run110: variadic %a110, run111: variadic %a111, run112: variadic %a112, run113: variadic %a113,
        run114: variadic %a114, run115: variadic %a115, run116: variadic %a116, run117: variadic %a117, run118: variadic %a118, run119: variadic %a119,
        run120: variadic %a120, run121: variadic %a121, run122: variadic %a122, run123: variadic %a123, run124: variadic %a124, run125: variadic %a125,
        run126: variadic %a126, run127: variadic %a127)
    %g0 = irdl.any  %g1 = irdl.any  %g2 = irdl.any  %g3 = irdl.any  %g4 = irdl.any  %g5 = irdl.any  %g6 = irdl.any  %g7 = irdl.any
    %g8 = irdl.any  %g9 = irdl.any  %g10 = irdl.any  %g11 = irdl.any  %g12 = irdl.any  %g13 = irdl.any  %g14 = irdl.any  %g15 = irdl.any
    %g16 = irdl.any  %g17 = irdl.any  %g18 = irdl.any  %g19 = irdl.any  %g20 = irdl.any  %g21 = irdl.any  %g22 = irdl.any  %g23 = irdl.any
    %g24 = irdl.any  %g25 = irdl.any  %g26 = irdl.any  %g27 = irdl.any  %g28 = irdl.any  %g29 = irdl.any  %g30 = irdl.any  %g31 = irdl.any
    %g32 = irdl.any  %g33 = irdl.any  %g34 = irdl.any  %g35 = irdl.any  %g36 = irdl.any  %g37 = irdl.any  %g38 = irdl.any  %g39 = irdl.any
    %g40 = irdl.any  %g41 = irdl.any  %g42 = irdl.any  %g43 = irdl.any  %g44 = irdl.any  %g45 = irdl.any  %g46 = irdl.any  %g47 = irdl.any
    %g48 = irdl.any  %g49 = irdl.any  %g50 = irdl.any  %g51 = irdl.any  %g52 = irdl.any  %g53 = irdl.any  %g54 = irdl.any  %g55 = irdl.any
    %g56 = irdl.any  %g57 = irdl.any  %g58 = irdl.any  %g59 = irdl.any  %g60 = irdl.any  %g61 = irdl.any  %g62 = irdl.any  %g63 = irdl.any
    %g64 = irdl.any  %g65 = irdl.any  %g66 = irdl.any  %g67 = irdl.any  %g68 = irdl.any  %g69 = irdl.any  %g70 = irdl.any  %g71 = irdl.any
    %g72 = irdl.any  %g73 = irdl.any  %g74 = irdl.any  %g75 = irdl.any  %g76 = irdl.any  %g77 = irdl.any  %g78 = irdl.any  %g79 = irdl.any
    %g80 = irdl.any  %g81 = irdl.any  %g82 = irdl.any  %g83 = irdl.any  %g84 = irdl.any  %g85 = irdl.any  %g86 = irdl.any  %g87 = irdl.any
    %g88 = irdl.any  %g89 = irdl.any  %g90 = irdl.any  %g91 = irdl.any  %g92 = irdl.any  %g93 = irdl.any  %g94 = irdl.any  %g95 = irdl.any
    %g96 = irdl.any  %g97 = irdl.any  %g98 = irdl.any  %g99 = irdl.any  %g100 = irdl.any  %g101 = irdl.any  %g102 = irdl.any  %g103 = irdl.any
    %g104 = irdl.any  %g105 = irdl.any  %g106 = irdl.any  %g107 = irdl.any  %g108 = irdl.any  %g109 = irdl.any  %g110 = irdl.any  %g111 = irdl.any
    %g112 = irdl.any  %g113 = irdl.any  %g114 = irdl.any  %g115 = irdl.any  %g116 = irdl.any  %g117 = irdl.any  %g118 = irdl.any  %g119 = irdl.any
    %g120 = irdl.any  %g121 = irdl.any  %g122 = irdl.any  %g123 = irdl.any  %g124 = irdl.any  %g125 = irdl.any  %g126 = irdl.any  %g127 = irdl.any
    irdl.results(
        grads0: variadic %g0, grads1: variadic %g1, grads2: variadic %g2, grads3: variadic %g3, grads4: variadic %g4, grads5: variadic %g5,
        grads6: variadic %g6, grads7: variadic %g7, grads8: variadic %g8, grads9: variadic %g9, grads10: variadic %g10, grads11: variadic %g11,
        grads12: variadic %g12, grads13: variadic %g13, grads14: variadic %g14, grads15: variadic %g15, grads16: variadic %g16, grads17: variadic %g17,
        grads18: variadic %g18, grads19: variadic %g19, grads20: variadic %g20, grads21: variadic %g21, grads22: variadic %g22, grads23: variadic %g23,
        grads24: variadic %g24, grads25: variadic %g25, grads26: variadic %g26, grads27: variadic %g27, grads28: variadic %g28, grads29: variadic %g29,
        grads30: variadic %g30, grads31: variadic %g31, grads32: variadic %g32, grads33: variadic %g33, grads34: variadic %g34, grads35: variadic %g35,
        grads36: variadic %g36, grads37: variadic %g37, grads38: variadic %g38, grads39: variadic %g39, grads40: variadic %g40, grads41: variadic %g41,
        grads42: variadic %g42, grads43: variadic %g43, grads44: variadic %g44, grads45: variadic %g45, grads46: variadic %g46, grads47: variadic %g47,
        grads48: variadic %g48, grads49: variadic %g49, grads50: variadic %g50, grads51: variadic %g51, grads52: variadic %g52, grads53: variadic %g53,
        grads54: variadic %g54, grads55: variadic %g55, grads56: variadic %g56, grads57: variadic %g57, grads58: variadic %g58, grads59: variadic %g59,
        grads60: variadic %g60, grads61: variadic %g61, grads62: variadic %g62, grads63: variadic %g63, grads64: variadic %g64, grads65: variadic %g65,
        grads66: variadic %g66, grads67: variadic %g67, grads68: variadic %g68, grads69: variadic %g69, grads70: variadic %g70, grads71: variadic %g71,
        grads72: variadic %g72, grads73: variadic %g73, grads74: variadic %g74, grads75: variadic %g75, grads76: variadic %g76, grads77: variadic %g77,
        grads78: variadic %g78, grads79: variadic %g79, grads80: variadic %g80, grads81: variadic %g81, grads82: variadic %g82, grads83: variadic %g83,
        grads84: variadic %g84, grads85: variadic %g85, grads86: variadic %g86, grads87: variadic %g87, grads88: variadic %g88, grads89: variadic %g89,
        grads90: variadic %g90, grads91: variadic %g91, grads92: variadic %g92, grads93: variadic %g93, grads94: variadic %g94, grads95: variadic %g95,
        grads96: variadic %g96, grads97: variadic %g97, grads98: variadic %g98, grads99: variadic %g99, grads100: variadic %g100, grads101: variadic %g101,
        grads102: variadic %g102, grads103: variadic %g103, grads104: variadic %g104, grads105: variadic %g105, grads106: variadic %g106, grads107: variadic %g107,
        grads108: variadic %g108, grads109: variadic %g109, grads110: variadic %g110, grads111: variadic %g111, grads112: variadic %g112, grads113: variadic %g113,
        grads114: variadic %g114, grads115: variadic %g115, grads116: variadic %g116, grads117: variadic %g117, grads118: variadic %g118, grads119: variadic %g119,
        grads120: variadic %g120, grads121: variadic %g121, grads122: variadic %g122, grads123: variadic %g123, grads124: variadic %g124, grads125: variadic %g125,
        grads126: variadic %g126, grads127: variadic %g127)
  }
  // %t = "diffgpu.fwddiff"(operands of each argument...) {callee = @f, activity = [...],
  //        groups = array<i32: ...>, diffgpu.target = ..., operandSegmentSizes = ...}
  // Forward-mode derivative of `callee` (dg.fwddiff). The operands of each
  // argument, as for autodiff: the primal, then the tangent for "dup" /
  // "dupnoneed". The optional result is the tangent of the callee's scalar
  // result.
  irdl.operation @fwddiff {
    %sym = irdl.base "#builtin.symbol_ref"
    %arr = irdl.base "#builtin.array"
    %dense = irdl.base "#builtin.dense_array"
    %resty = irdl.any
    irdl.attributes {"callee" = %sym, "activity" = %arr, "groups" = %dense}
    %a0 = irdl.any  %a1 = irdl.any  %a2 = irdl.any  %a3 = irdl.any  %a4 = irdl.any  %a5 = irdl.any  %a6 = irdl.any  %a7 = irdl.any
    %a8 = irdl.any  %a9 = irdl.any  %a10 = irdl.any  %a11 = irdl.any  %a12 = irdl.any  %a13 = irdl.any  %a14 = irdl.any  %a15 = irdl.any
    %a16 = irdl.any  %a17 = irdl.any  %a18 = irdl.any  %a19 = irdl.any  %a20 = irdl.any  %a21 = irdl.any  %a22 = irdl.any  %a23 = irdl.any
    %a24 = irdl.any  %a25 = irdl.any  %a26 = irdl.any  %a27 = irdl.any  %a28 = irdl.any  %a29 = irdl.any  %a30 = irdl.any  %a31 = irdl.any
    %a32 = irdl.any  %a33 = irdl.any  %a34 = irdl.any  %a35 = irdl.any  %a36 = irdl.any  %a37 = irdl.any  %a38 = irdl.any  %a39 = irdl.any
    %a40 = irdl.any  %a41 = irdl.any  %a42 = irdl.any  %a43 = irdl.any  %a44 = irdl.any  %a45 = irdl.any  %a46 = irdl.any  %a47 = irdl.any
    %a48 = irdl.any  %a49 = irdl.any  %a50 = irdl.any  %a51 = irdl.any  %a52 = irdl.any  %a53 = irdl.any  %a54 = irdl.any  %a55 = irdl.any
    %a56 = irdl.any  %a57 = irdl.any  %a58 = irdl.any  %a59 = irdl.any  %a60 = irdl.any  %a61 = irdl.any  %a62 = irdl.any  %a63 = irdl.any
    %a64 = irdl.any  %a65 = irdl.any  %a66 = irdl.any  %a67 = irdl.any  %a68 = irdl.any  %a69 = irdl.any  %a70 = irdl.any  %a71 = irdl.any
    %a72 = irdl.any  %a73 = irdl.any  %a74 = irdl.any  %a75 = irdl.any  %a76 = irdl.any  %a77 = irdl.any  %a78 = irdl.any  %a79 = irdl.any
    %a80 = irdl.any  %a81 = irdl.any  %a82 = irdl.any  %a83 = irdl.any  %a84 = irdl.any  %a85 = irdl.any  %a86 = irdl.any  %a87 = irdl.any
    %a88 = irdl.any  %a89 = irdl.any  %a90 = irdl.any  %a91 = irdl.any  %a92 = irdl.any  %a93 = irdl.any  %a94 = irdl.any  %a95 = irdl.any
    %a96 = irdl.any  %a97 = irdl.any  %a98 = irdl.any  %a99 = irdl.any  %a100 = irdl.any  %a101 = irdl.any  %a102 = irdl.any  %a103 = irdl.any
    %a104 = irdl.any  %a105 = irdl.any  %a106 = irdl.any  %a107 = irdl.any  %a108 = irdl.any  %a109 = irdl.any  %a110 = irdl.any  %a111 = irdl.any
    %a112 = irdl.any  %a113 = irdl.any  %a114 = irdl.any  %a115 = irdl.any  %a116 = irdl.any  %a117 = irdl.any  %a118 = irdl.any  %a119 = irdl.any
    %a120 = irdl.any  %a121 = irdl.any  %a122 = irdl.any  %a123 = irdl.any  %a124 = irdl.any  %a125 = irdl.any  %a126 = irdl.any  %a127 = irdl.any
    irdl.operands(
        run0: variadic %a0, run1: variadic %a1, run2: variadic %a2, run3: variadic %a3, run4: variadic %a4, run5: variadic %a5,
        run6: variadic %a6, run7: variadic %a7, run8: variadic %a8, run9: variadic %a9, run10: variadic %a10, run11: variadic %a11,
        run12: variadic %a12, run13: variadic %a13, run14: variadic %a14, run15: variadic %a15, run16: variadic %a16, run17: variadic %a17,
        run18: variadic %a18, run19: variadic %a19, run20: variadic %a20, run21: variadic %a21, run22: variadic %a22, run23: variadic %a23,
        run24: variadic %a24, run25: variadic %a25, run26: variadic %a26, run27: variadic %a27, run28: variadic %a28, run29: variadic %a29,
        run30: variadic %a30, run31: variadic %a31, run32: variadic %a32, run33: variadic %a33, run34: variadic %a34, run35: variadic %a35,
        run36: variadic %a36, run37: variadic %a37, run38: variadic %a38, run39: variadic %a39, run40: variadic %a40, run41: variadic %a41,
        run42: variadic %a42, run43: variadic %a43, run44: variadic %a44, run45: variadic %a45, run46: variadic %a46, run47: variadic %a47,
        run48: variadic %a48, run49: variadic %a49, run50: variadic %a50, run51: variadic %a51, run52: variadic %a52, run53: variadic %a53,
        run54: variadic %a54, run55: variadic %a55, run56: variadic %a56, run57: variadic %a57, run58: variadic %a58, run59: variadic %a59,
        run60: variadic %a60, run61: variadic %a61, run62: variadic %a62, run63: variadic %a63, run64: variadic %a64, run65: variadic %a65,
        run66: variadic %a66, run67: variadic %a67, run68: variadic %a68, run69: variadic %a69, run70: variadic %a70, run71: variadic %a71,
        run72: variadic %a72, run73: variadic %a73, run74: variadic %a74, run75: variadic %a75, run76: variadic %a76, run77: variadic %a77,
        run78: variadic %a78, run79: variadic %a79, run80: variadic %a80, run81: variadic %a81, run82: variadic %a82, run83: variadic %a83,
        run84: variadic %a84, run85: variadic %a85, run86: variadic %a86, run87: variadic %a87, run88: variadic %a88, run89: variadic %a89,
        run90: variadic %a90, run91: variadic %a91, run92: variadic %a92, run93: variadic %a93, run94: variadic %a94, run95: variadic %a95,
        run96: variadic %a96, run97: variadic %a97, run98: variadic %a98, run99: variadic %a99, run100: variadic %a100, run101: variadic %a101,
        run102: variadic %a102, run103: variadic %a103, run104: variadic %a104, run105: variadic %a105, run106: variadic %a106, run107: variadic %a107,
        run108: variadic %a108, run109: variadic %a109, run110: variadic %a110, run111: variadic %a111, run112: variadic %a112, run113: variadic %a113,
        run114: variadic %a114, run115: variadic %a115, run116: variadic %a116, run117: variadic %a117, run118: variadic %a118, run119: variadic %a119,
        run120: variadic %a120, run121: variadic %a121, run122: variadic %a122, run123: variadic %a123, run124: variadic %a124, run125: variadic %a125,
        run126: variadic %a126, run127: variadic %a127)
    irdl.results(tangent: optional %resty)
  }
}

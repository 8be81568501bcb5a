// The cross-block finish of diffgpu-aggregate-atomics (lowering/reduce/grid_sum.py): in a
// kernel with launch facts (a launch of the runtime, which passes the scratch),
// the block sum of an f32 add to a launch-uniform element goes, widened to f64,
// into the accumulator of its group (block index % 64) in scratch slot k (two
// trailing kernel arguments), counts itself in its group after a fence; the
// block completing a group moves the group's total to the top accumulator and
// counts the group at the top counter, and the block completing the top adds
// the rounded total once; each leaves what it used zero. Cases
// that keep the per-block add come after.
// RUN: diffgpu-opt %s --split-input-file --diffgpu-aggregate-atomics | FileCheck %s

// Host target, out[0]: thread 0 of each block finishes; no fence (one block at
// a time on the host).
!A = memref<?xf32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @sumsq(%out: !A, %x: !A) attributes {diffgpu.kernel, diffgpu.target = #host,
    diffgpu.launch_facts = {noalias = true, contiguous = [], unit_dims = [], ranks = [1, 1]}} {
  %i = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %c0 = arith.constant 0 : index
  %len = memref.dim %x, %c0 : !A
  %in = arith.cmpi slt, %i, %len : index
  scf.if %in {
    %v = memref.load %x[%i] : !A
    %sq = arith.mulf %v, %v : f32
    %o = "diffgpu.atomic_add"(%out, %sq, %c0) : (!A, f32, index) -> f32
  }
  return
}
// CHECK: module attributes {diffgpu.grid_scratch = ["sumsq=1"]}
// CHECK-LABEL: func.func @sumsq
// CHECK-SAME: (%[[OUT:[a-z0-9]+]]: memref<?xf32, {{[^%]+}}, %[[X:[a-z0-9]+]]: memref<?xf32, {{[^%]+}}, %[[ACC:[a-z0-9]+]]: memref<?xf64, strided<[?], offset: ?>>, %[[CNT:[a-z0-9]+]]: memref<?xi64, strided<[?], offset: ?>>)
// CHECK-SAME: diffgpu.grid_sums = 1 : i64
// CHECK: "diffgpu.barrier"()
// CHECK: %[[S:.+]] = memref.load %{{.+}}[%[[C0:c0_[0-9]+]]] : memref<1024xf32
// The block's group: its linear block index modulo 64, one 128-byte line (16
// words) per group; the accumulators of slot 0 start at word 0.
// CHECK: %[[G:.+]] = arith.remui %{{.+}}, %[[C64:c64[_0-9]*]] : index
// CHECK: %[[GL:.+]] = arith.muli %[[G]], %[[C16:c16[_0-9]*]] : index
// CHECK: %[[AT:.+]] = arith.addi %{{.+}}, %[[GL]] : index
// CHECK-NEXT: %[[W:.+]] = arith.extf %[[S]] : f32 to f64
// CHECK-NEXT: "diffgpu.atomic_add"(%[[ACC]], %[[W]], %[[AT]]) {diffgpu.aggregated = "block", diffgpu.scratch}
// CHECK-NOT: llvm.fence
// CHECK: %[[CAT:.+]] = arith.addi %{{.+}}, %{{.+}} : index
// CHECK: %[[OLD:.+]] = "diffgpu.atomic_add"(%[[CNT]], %{{.+}}, %[[CAT]]) {diffgpu.aggregated = "block", diffgpu.scratch}
// Group g holds blocks / 64 blocks, one more where g < blocks % 64.
// CHECK: %[[REM:.+]] = arith.remui %[[NB:.+]], %{{.+}} : index
// CHECK-NEXT: %[[EXTRA:.+]] = arith.cmpi ult, %[[G]], %[[REM]] : index
// CHECK: %[[Q:.+]] = arith.divui %[[NB]], %{{.+}} : index
// CHECK: %[[ONE:.+]] = arith.select %[[EXTRA]]
// CHECK-NEXT: %[[SZ:.+]] = arith.addi %[[Q]], %[[ONE]] : index
// CHECK-NEXT: %[[SZ64:.+]] = arith.index_cast %[[SZ]] : index to i64
// CHECK: %[[LASTG:.+]] = arith.subi %[[SZ64]], %{{.+}} : i64
// CHECK-NEXT: %[[ISG:.+]] = arith.cmpi eq, %[[OLD]], %[[LASTG]] : i64
// CHECK-NEXT: scf.if %[[ISG]] {
// The block completing its group zeroes the group's counter, moves the
// group's accumulator (read, then minus what was read) into the top
// accumulator (word 64 * 16) and counts the group at the top counter (word
// 64 * 16 of the counters).
// CHECK: %[[MSZ:.+]] = arith.subi %{{.+}}, %[[SZ64]] : i64
// CHECK-NEXT: "diffgpu.atomic_add"(%[[CNT]], %[[MSZ]], %[[CAT]]) {diffgpu.aggregated = "block", diffgpu.scratch}
// CHECK: %[[GAT:.+]] = arith.addi %{{.+}}, %{{.+}} : index
// CHECK: %[[P:.+]] = "diffgpu.atomic_add"(%[[ACC]], %[[Z:[a-z0-9_]+]], %[[GAT]])
// CHECK-NEXT: %[[NP:.+]] = arith.negf %[[P]] : f64
// CHECK-NEXT: "diffgpu.atomic_add"(%[[ACC]], %[[NP]], %[[GAT]])
// CHECK-NEXT: "diffgpu.atomic_add"(%[[ACC]], %[[P]], %[[TA:c1024[_0-9]*]])
// CHECK: %[[TOP:.+]] = "diffgpu.atomic_add"(%[[CNT]], %{{.+}}, %[[TC:c1024[_0-9]*]])
// CHECK: %[[NG:.+]] = arith.minui %[[NB]], %{{.+}} : index
// CHECK-NEXT: %[[NG64:.+]] = arith.index_cast %[[NG]] : index to i64
// CHECK: %[[LASTT:.+]] = arith.subi %[[NG64]], %{{.+}} : i64
// CHECK-NEXT: %[[IST:.+]] = arith.cmpi eq, %[[TOP]], %[[LASTT]] : i64
// CHECK-NEXT: scf.if %[[IST]] {
// The last group's block takes the top accumulator, zeroes the top counter
// and adds the total, rounded once, to out[0].
// CHECK: %[[T:.+]] = "diffgpu.atomic_add"(%[[ACC]], %{{.+}}, %[[TA]])
// CHECK-NEXT: %[[NT:.+]] = arith.negf %[[T]] : f64
// CHECK-NEXT: "diffgpu.atomic_add"(%[[ACC]], %[[NT]], %[[TA]])
// CHECK: %[[MNG:.+]] = arith.subi %{{.+}}, %[[NG64]] : i64
// CHECK-NEXT: "diffgpu.atomic_add"(%[[CNT]], %[[MNG]], %[[TC]])
// CHECK-NEXT: %[[T32:.+]] = arith.truncf %[[T]] : f64 to f32
// CHECK-NEXT: "diffgpu.atomic_add"(%[[OUT]], %[[T32]], %{{.+}}) {diffgpu.aggregated = "block"} :
// CHECK-NOT: diffgpu.atomic_add
// CHECK: return

// -----

// GPU target, out[k] with k a kernel argument: fences before the count and in
// the last block; the per-thread fallback (blocks not a multiple of 32 threads)
// adds in f64, fences, meets at a barrier, and thread 0 counts the block.
!A = memref<?xf32, strided<[?], offset: ?>>
#gpu = #nvvm.target<O = 3, chip = "sm_90">
func.func @at_arg(%out: !A, %k: index, %x: !A) attributes {diffgpu.kernel,
    diffgpu.target = #gpu,
    diffgpu.launch_facts = {noalias = true, contiguous = [], unit_dims = [], ranks = [1, -1, 1]}} {
  %i = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %c0 = arith.constant 0 : index
  %len = memref.dim %x, %c0 : !A
  %in = arith.cmpi slt, %i, %len : index
  scf.if %in {
    %v = memref.load %x[%i] : !A
    %o = "diffgpu.atomic_add"(%out, %v, %k) : (!A, f32, index) -> f32
  }
  return
}
// CHECK: module attributes {diffgpu.grid_scratch = ["at_arg=1"]}
// CHECK-LABEL: func.func @at_arg
// CHECK-SAME: (%[[OUT:[a-z0-9]+]]: memref<{{[^%]+}}, %[[KA:[a-z0-9]+]]: index, %[[X:[a-z0-9]+]]: memref<{{[^%]+}}, %[[ACC:[a-z0-9]+]]: memref<?xf64, {{[^%]+}}, %[[CNT:[a-z0-9]+]]: memref<?xi64,
// CHECK: gpu.shuffle
// CHECK: "diffgpu.barrier"()
// CHECK: %[[W:.+]] = arith.extf %{{.+}} : f32 to f64
// CHECK-NEXT: "diffgpu.atomic_add"(%[[ACC]], %[[W]], %{{.+}}) {diffgpu.aggregated = "block", diffgpu.scratch}
// CHECK-NEXT: llvm.fence syncscope("device") acq_rel
// CHECK: "diffgpu.atomic_add"(%[[CNT]]
// CHECK: scf.if
// CHECK: "diffgpu.atomic_add"(%[[CNT]]
// CHECK-NEXT: llvm.fence syncscope("device") acq_rel
// CHECK: "diffgpu.atomic_add"(%[[ACC]]
// CHECK: "diffgpu.atomic_add"(%[[ACC]]
// CHECK: "diffgpu.atomic_add"(%[[ACC]]
// CHECK-NEXT: llvm.fence syncscope("device") acq_rel
// CHECK: "diffgpu.atomic_add"(%[[CNT]]
// CHECK: scf.if
// CHECK-NEXT: llvm.fence syncscope("device") acq_rel
// CHECK: %[[T:.+]] = "diffgpu.atomic_add"(%[[ACC]]
// CHECK: %[[T32:.+]] = arith.truncf %{{.+}} : f64 to f32
// CHECK-NEXT: "diffgpu.atomic_add"(%[[OUT]], %[[T32]], %[[KA]]) {diffgpu.aggregated = "block"}
// CHECK: } else {
// CHECK: %[[WT:.+]] = arith.extf %{{.+}} : f32 to f64
// CHECK-NEXT: "diffgpu.atomic_add"(%[[ACC]], %[[WT]], %{{.+}}) {diffgpu.aggregated = "thread", diffgpu.scratch}
// CHECK-NEXT: llvm.fence syncscope("device") acq_rel
// CHECK-NEXT: "diffgpu.barrier"()
// CHECK: scf.if
// CHECK: "diffgpu.atomic_add"(%[[CNT]]
// CHECK: "diffgpu.atomic_add"(%[[OUT]], %{{.+}}, %[[KA]]) {diffgpu.aggregated = "block"}
// CHECK: return

// -----

// out[block_id]: each block adds to its own element; no finish, no scratch.
!A = memref<?xf32, strided<[?], offset: ?>>
#gpu = #nvvm.target<O = 3, chip = "sm_90">
func.func @per_block(%out: !A, %x: !A) attributes {diffgpu.kernel, diffgpu.target = #gpu,
    diffgpu.launch_facts = {noalias = true, contiguous = [], unit_dims = [], ranks = [1, 1]}} {
  %b = "diffgpu.block_id"() {dim = 0 : i64} : () -> index
  %i = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %v = memref.load %x[%i] : !A
  %o = "diffgpu.atomic_add"(%out, %v, %b) : (!A, f32, index) -> f32
  return
}
// CHECK-NOT: diffgpu.grid_scratch
// CHECK-LABEL: func.func @per_block
// CHECK-SAME: (%[[OUT:[a-z0-9]+]]: memref<{{[^%]+}}, %[[X:[a-z0-9]+]]: memref<{{[^%]+}})
// CHECK-NOT: diffgpu.grid_sums
// CHECK: %[[B:.+]] = "diffgpu.block_id"()
// CHECK-NOT: arith.extf
// CHECK: "diffgpu.atomic_add"(%[[OUT]], %{{.+}}, %[[B]]) {diffgpu.aggregated = "block"}
// CHECK-NOT: diffgpu.scratch
// CHECK: return

// -----

// out[i] with i the global id: not uniform, not aggregated at all.
!A = memref<?xf32, strided<[?], offset: ?>>
#gpu = #nvvm.target<O = 3, chip = "sm_90">
func.func @per_thread(%out: !A, %x: !A) attributes {diffgpu.kernel, diffgpu.target = #gpu,
    diffgpu.launch_facts = {noalias = true, contiguous = [], unit_dims = [], ranks = [1, 1]}} {
  %b = "diffgpu.block_id"() {dim = 0 : i64} : () -> index
  %n = "diffgpu.block_dim"() {dim = 0 : i64} : () -> index
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %m = arith.muli %b, %n : index
  %i = arith.addi %m, %t : index
  %v = memref.load %x[%i] : !A
  %o = "diffgpu.atomic_add"(%out, %v, %i) : (!A, f32, index) -> f32
  return
}
// CHECK-NOT: diffgpu.grid_scratch
// CHECK-LABEL: func.func @per_thread
// CHECK-SAME: (%[[OUT:[a-z0-9]+]]: memref<{{[^%]+}}, %[[X:[a-z0-9]+]]: memref<{{[^%]+}})
// CHECK: %[[I:.+]] = arith.addi
// CHECK: "diffgpu.atomic_add"(%[[OUT]], %{{.+}}, %[[I]]) : (
// CHECK-NOT: diffgpu.atomic_add
// CHECK: return

// -----

// Integer and f64 adds keep the per-block add (integers are exact in any
// order; an f64 accumulator adds nothing to an f64 sum), and so does a kernel
// without launch facts (the generic program: its launcher passes no scratch).
!I = memref<?xi32, strided<[?], offset: ?>>
!D = memref<?xf64, strided<[?], offset: ?>>
!A = memref<?xf32, strided<[?], offset: ?>>
#gpu = #nvvm.target<O = 3, chip = "sm_90">
func.func @count(%cnt: !I, %s: !D) attributes {diffgpu.kernel, diffgpu.target = #gpu,
    diffgpu.launch_facts = {noalias = true, contiguous = [], unit_dims = [], ranks = [1, 1]}} {
  %c0 = arith.constant 0 : index
  %one = arith.constant 1 : i32
  %o = "diffgpu.atomic_add"(%cnt, %one, %c0) : (!I, i32, index) -> i32
  %h = arith.constant 0.5 : f64
  %p = "diffgpu.atomic_add"(%s, %h, %c0) : (!D, f64, index) -> f64
  return
}
func.func @generic(%out: !A, %x: !A) attributes {diffgpu.kernel, diffgpu.target = #gpu} {
  %c0 = arith.constant 0 : index
  %i = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %v = memref.load %x[%i] : !A
  %o = "diffgpu.atomic_add"(%out, %v, %c0) : (!A, f32, index) -> f32
  return
}
// CHECK-NOT: diffgpu.grid_scratch
// CHECK-LABEL: func.func @count
// CHECK-SAME: (%[[CNT:[a-z0-9]+]]: memref<?xi32, {{[^%]+}}, %[[S:[a-z0-9]+]]: memref<?xf64, {{[^%]+}})
// CHECK-NOT: diffgpu.scratch
// CHECK: "diffgpu.atomic_add"(%[[CNT]], %{{.+}}, %{{.+}}) {diffgpu.aggregated = "block"}
// CHECK-NOT: diffgpu.scratch
// CHECK: "diffgpu.atomic_add"(%[[S]], %{{.+}}, %{{.+}}) {diffgpu.aggregated = "block"}
// CHECK-LABEL: func.func @generic
// CHECK-SAME: (%[[OUT:[a-z0-9]+]]: memref<{{[^%]+}}, %[[X:[a-z0-9]+]]: memref<{{[^%]+}})
// CHECK-NOT: diffgpu.scratch
// CHECK: "diffgpu.atomic_add"(%[[OUT]], %{{.+}}, %{{.+}}) {diffgpu.aggregated = "block"}
// CHECK-NOT: diffgpu.scratch
// CHECK: return

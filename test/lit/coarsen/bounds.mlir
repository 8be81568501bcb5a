// diffgpu-coarsen (lowering/coarsen/coarsen.py, lowering/coarsen/bounds.py) on a
// kernel guarded by a conjunction of bounds on the global id: the 3-point
// stencil's `if i >= 1 and i < len(x) - 1` (Python's short-circuit `and`, an
// `scf.if` yielding i1). The group 4t .. 4t+3 is in range when the lower
// bound holds for its first element and the upper bound for its last; its
// four bodies then run unguarded, the rest go to the tail. Cases that must
// stay as they are come after.
// RUN: diffgpu-opt %s --split-input-file --diffgpu-coarsen | FileCheck %s

!A = memref<?xf32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @stencil(%y: !A, %x: !A) attributes {diffgpu.kernel, diffgpu.target = #host, diffgpu.coarsen = 4 : i64} {
  %b = "diffgpu.block_id"() {dim = 0 : i64} : () -> index
  %n = "diffgpu.block_dim"() {dim = 0 : i64} : () -> index
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %m = arith.muli %b, %n : index
  %i = arith.addi %m, %t : index
  %i64 = arith.index_cast %i : index to i64
  %c1 = arith.constant 1 : i64
  %lo = arith.cmpi sge, %i64, %c1 : i64
  %in = scf.if %lo -> (i1) {
    %c0 = arith.constant 0 : index
    %len = memref.dim %x, %c0 : !A
    %len64 = arith.index_cast %len : index to i64
    %c1b = arith.constant 1 : i64
    %last = arith.subi %len64, %c1b : i64
    %hi = arith.cmpi slt, %i64, %last : i64
    scf.yield %hi : i1
  } else {
    scf.yield %lo : i1
  }
  scf.if %in {
    %c1c = arith.constant 1 : i64
    %m1 = arith.subi %i64, %c1c : i64
    %im1 = arith.index_cast %m1 : i64 to index
    %p1 = arith.addi %i64, %c1c : i64
    %ip1 = arith.index_cast %p1 : i64 to index
    %a = memref.load %x[%im1] : !A
    %v = memref.load %x[%i] : !A
    %c = memref.load %x[%ip1] : !A
    %s1 = arith.addf %a, %v : f32
    %s = arith.addf %s1, %c : f32
    memref.store %s, %y[%i] : !A
  }
  return
}
// CHECK-LABEL: func.func private @stencil__dg_tail
// CHECK-COUNT-4: scf.if
// CHECK: return
// CHECK-LABEL: func.func @stencil
// CHECK-SAME: (%[[Y:[a-z0-9]+]]: memref<{{[^%]+}}, %[[X:[a-z0-9]+]]: memref
// CHECK-SAME: diffgpu.coarsen = 4
// CHECK: %[[C4:.+]] = arith.constant 4 : index
// CHECK: %[[BASE:.+]] = arith.muli %{{.+}}, %[[C4]] : index
// the lower bound at the group's first element
// CHECK: %[[FIRST:.+]] = arith.index_cast %[[BASE]] : index to i64
// CHECK: %[[LO:.+]] = arith.cmpi sge, %[[FIRST]], %{{.+}} : i64
// the upper bound at its last, against len(x) - 1 recomputed here
// CHECK: %[[C3:.+]] = arith.constant 3 : index
// CHECK: %[[LASTG:.+]] = arith.addi %[[BASE]], %[[C3]] : index
// CHECK: %[[LAST:.+]] = arith.index_cast %[[LASTG]] : index to i64
// CHECK: memref.dim %[[X]]
// CHECK: %[[HI:.+]] = arith.cmpi slt, %[[LAST]], %{{.+}} : i64
// CHECK: %[[ALL:.+]] = arith.andi %[[LO]], %[[HI]] : i1
// CHECK: scf.if %[[ALL]] {
// the four bodies, unguarded
// CHECK-NOT: scf.if %{{[a-z0-9_]+}} {
// CHECK-COUNT-4: memref.store %{{.+}}, %[[Y]]
// CHECK-NOT: memref.store
// CHECK: } else {
// CHECK-NEXT: func.call @stencil__dg_tail(%[[Y]], %[[X]], %[[BASE]])
// CHECK: return

// -----

// A guard that also depends on g otherwise (`i % 2 == 0`): not a bound, so
// the group cannot be decided at its ends. Left alone, the request dropped.
!A = memref<?xf32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @parity(%y: !A, %x: !A) attributes {diffgpu.kernel, diffgpu.target = #host, diffgpu.coarsen = 4 : i64} {
  %b = "diffgpu.block_id"() {dim = 0 : i64} : () -> index
  %n = "diffgpu.block_dim"() {dim = 0 : i64} : () -> index
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %m = arith.muli %b, %n : index
  %i = arith.addi %m, %t : index
  %c0 = arith.constant 0 : index
  %len = memref.dim %x, %c0 : !A
  %in = arith.cmpi slt, %i, %len : index
  %c2 = arith.constant 2 : index
  %r = arith.remui %i, %c2 : index
  %even = arith.cmpi eq, %r, %c0 : index
  %both = arith.andi %in, %even : i1
  scf.if %both {
    %v = memref.load %x[%i] : !A
    memref.store %v, %y[%i] : !A
  }
  return
}
// CHECK-LABEL: func.func @parity
// CHECK-NOT: diffgpu.coarsen
// CHECK-NOT: __dg_tail
// CHECK: arith.remui
// CHECK: scf.if
// CHECK-NEXT: memref.load
// CHECK-NEXT: memref.store
// CHECK-NOT: memref.store
// CHECK: return

// -----

// A bound whose limit is loaded (`i < x[0]`): it could differ between the
// group's check and the copies. Left alone.
!A = memref<?xf32, strided<[?], offset: ?>>
!I = memref<?xi64, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @loaded_limit(%y: !A, %x: !A, %lim: !I) attributes {diffgpu.kernel, diffgpu.target = #host, diffgpu.coarsen = 4 : i64} {
  %b = "diffgpu.block_id"() {dim = 0 : i64} : () -> index
  %n = "diffgpu.block_dim"() {dim = 0 : i64} : () -> index
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %m = arith.muli %b, %n : index
  %i = arith.addi %m, %t : index
  %i64 = arith.index_cast %i : index to i64
  %c1 = arith.constant 1 : i64
  %lo = arith.cmpi sge, %i64, %c1 : i64
  %in = scf.if %lo -> (i1) {
    %c0 = arith.constant 0 : index
    %l = memref.load %lim[%c0] : !I
    %hi = arith.cmpi slt, %i64, %l : i64
    scf.yield %hi : i1
  } else {
    scf.yield %lo : i1
  }
  scf.if %in {
    %v = memref.load %x[%i] : !A
    memref.store %v, %y[%i] : !A
  }
  return
}
// CHECK-LABEL: func.func @loaded_limit
// CHECK-NOT: diffgpu.coarsen
// CHECK-NOT: __dg_tail
// CHECK: memref.load
// CHECK: scf.if
// CHECK-NEXT: memref.load
// CHECK-NEXT: memref.store
// CHECK: return

// -----

// The gathered gradient's test "thread g + 1 exists" (`g + 1 < grid_dim(0) *
// block_dim(0)`, lowering/autodiff/functional/transpose.py): grid_dim(0) is the
// original launch's, the coarsened one's times 4; block_dim(0) is kept.
!A = memref<?xf32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @next_thread(%y: !A, %x: !A) attributes {diffgpu.kernel, diffgpu.target = #host, diffgpu.coarsen = 4 : i64} {
  %b = "diffgpu.block_id"() {dim = 0 : i64} : () -> index
  %n = "diffgpu.block_dim"() {dim = 0 : i64} : () -> index
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %m = arith.muli %b, %n : index
  %i = arith.addi %m, %t : index
  %c1 = arith.constant 1 : index
  %src = arith.addi %i, %c1 : index
  %gd = "diffgpu.grid_dim"() {dim = 0 : i64} : () -> index
  %bd = "diffgpu.block_dim"() {dim = 0 : i64} : () -> index
  %total = arith.muli %gd, %bd : index
  %ok = arith.cmpi slt, %src, %total : index
  scf.if %ok {
    %v = memref.load %x[%src] : !A
    memref.store %v, %y[%i] : !A
  }
  return
}
// CHECK-LABEL: func.func @next_thread
// CHECK-SAME: diffgpu.coarsen = 4
// CHECK: %[[GD:.+]] = "diffgpu.grid_dim"() {dim = 0 : i64}
// CHECK-NEXT: %[[F:.+]] = arith.constant 4 : index
// CHECK-NEXT: %[[ALL:.+]] = arith.muli %[[GD]], %[[F]] : index
// CHECK: %[[C4:.+]] = arith.constant 4 : index
// CHECK: %[[BASE:.+]] = arith.muli %{{.+}}, %[[C4]] : index
// CHECK: %[[LASTG:.+]] = arith.addi %[[BASE]], %{{.+}} : index
// CHECK: %[[LAST:.+]] = arith.addi %[[LASTG]], %{{.+}} : index
// the limit recomputed at the group's test, from the scaled extent
// CHECK: %[[GD2:.+]] = "diffgpu.grid_dim"() {dim = 0 : i64}
// CHECK-NEXT: %[[F2:.+]] = arith.constant 4 : index
// CHECK-NEXT: %[[ALL2:.+]] = arith.muli %[[GD2]], %[[F2]] : index
// CHECK: %[[TOTAL:.+]] = arith.muli %[[ALL2]], %{{.+}} : index
// CHECK: arith.cmpi slt, %[[LAST]], %[[TOTAL]] : index

// -----

// A bound guard nested in the kernel's guard: decided per group too, in its
// own test inside the in-range path (when it fails for the group, as for
// `i >= 2` in the first group, the copies keep their runtime tests rather
// than all going to the tail).
!A = memref<?xf32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @nested(%y: !A, %z: !A, %x: !A) attributes {diffgpu.kernel, diffgpu.target = #host, diffgpu.coarsen = 4 : i64} {
  %b = "diffgpu.block_id"() {dim = 0 : i64} : () -> index
  %n = "diffgpu.block_dim"() {dim = 0 : i64} : () -> index
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %m = arith.muli %b, %n : index
  %i = arith.addi %m, %t : index
  %c0 = arith.constant 0 : index
  %len = memref.dim %x, %c0 : !A
  %in = arith.cmpi slt, %i, %len : index
  scf.if %in {
    %v = memref.load %x[%i] : !A
    memref.store %v, %y[%i] : !A
    %c2 = arith.constant 2 : index
    %lo = arith.cmpi sge, %i, %c2 : index
    scf.if %lo {
      %im2 = arith.subi %i, %c2 : index
      %w = memref.load %x[%im2] : !A
      memref.store %w, %z[%i] : !A
    }
  }
  return
}
// CHECK-LABEL: func.func @nested
// CHECK-SAME: (%[[Y:[a-z0-9]+]]: memref<{{[^%]+}}, %[[Z:[a-z0-9]+]]: memref<{{[^%]+}}, %[[X:[a-z0-9]+]]: memref
// CHECK: %[[C4:.+]] = arith.constant 4 : index
// CHECK: %[[BASE:.+]] = arith.muli %{{.+}}, %[[C4]] : index
// CHECK: %[[ALL:.+]] = arith.cmpi slt, %{{.+}}, %{{.+}} : index
// the nested lower bound at the group's first element
// CHECK: %[[LO:.+]] = arith.cmpi sge, %[[BASE]], %{{.+}} : index
// CHECK: scf.if %[[ALL]] {
// CHECK-NEXT: scf.if %[[LO]] {
// CHECK-NOT: scf.if
// CHECK-COUNT-4: memref.store %{{.+}}, %[[Z]]
// CHECK-NOT: scf.if
// CHECK: } else {
// CHECK-COUNT-4: scf.if
// CHECK: } else {
// CHECK-NEXT: func.call @nested__dg_tail(%[[Y]], %[[Z]], %[[X]], %[[BASE]])

// -----

// grid_dim(0) itself as the limit: the group's test compares with the
// scaled extent too.
!A = memref<?xf32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @grid_limit(%y: !A, %x: !A) attributes {diffgpu.kernel, diffgpu.target = #host, diffgpu.coarsen = 4 : i64} {
  %b = "diffgpu.block_id"() {dim = 0 : i64} : () -> index
  %n = "diffgpu.block_dim"() {dim = 0 : i64} : () -> index
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %m = arith.muli %b, %n : index
  %i = arith.addi %m, %t : index
  %gd = "diffgpu.grid_dim"() {dim = 0 : i64} : () -> index
  %ok = arith.cmpi slt, %i, %gd : index
  scf.if %ok {
    %v = memref.load %x[%i] : !A
    memref.store %v, %y[%i] : !A
  }
  return
}
// CHECK-LABEL: func.func @grid_limit
// CHECK: %[[BASE:.+]] = arith.muli %{{.+}}, %{{.+}} : index
// CHECK: %[[LAST:.+]] = arith.addi %[[BASE]], %{{.+}} : index
// CHECK-NEXT: %[[GD:.+]] = "diffgpu.grid_dim"() {dim = 0 : i64}
// CHECK-NEXT: %[[F:.+]] = arith.constant 4 : index
// CHECK-NEXT: %[[ALL:.+]] = arith.muli %[[GD]], %[[F]] : index
// CHECK-NEXT: arith.cmpi slt, %[[LAST]], %[[ALL]] : index

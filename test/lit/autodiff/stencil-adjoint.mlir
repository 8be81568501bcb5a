// diffgpu-stencil-adjoint (lowering/reduce/stencil_adjoint.py): shadow adds at gid + k
// (k constant per dimension) are transposed per block: each thread stores its contributions and
// flags in shared memory, a barrier, each thread gathers the adds of its element;
// only contributions crossing a block edge stay atomic. Then cases that must be
// left alone.
// RUN: diffgpu-opt %s --split-input-file --diffgpu-stencil-adjoint | FileCheck %s

// The reverse of a 3-point stencil under the boundary guard 1 <= i < n - 1, as
// diffgpu-autodiff emits it: the index gid + 1 comes back through the tape.
!A = memref<?xf32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @rev(%dx: !A, %dy: !A) attributes {diffgpu.target = #host} {
  %tape = memref.alloca() : memref<index>
  %b = "diffgpu.block_id"() {dim = 0 : i64} : () -> index
  %n = "diffgpu.block_dim"() {dim = 0 : i64} : () -> index
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %m = arith.muli %b, %n : index
  %g = arith.addi %m, %t : index
  %g64 = arith.index_cast %g : index to i64
  %c1 = arith.constant 1 : i64
  %c0 = arith.constant 0 : index
  %len = memref.dim %dy, %c0 : !A
  %len64 = arith.index_cast %len : index to i64
  %hi = arith.subi %len64, %c1 : i64
  %lo_ok = arith.cmpi sge, %g64, %c1 : i64
  %hi_ok = arith.cmpi slt, %g64, %hi : i64
  %in = arith.andi %lo_ok, %hi_ok : i1
  scf.if %in {
    %p1 = arith.addi %g64, %c1 : i64
    %ip1 = arith.index_cast %p1 : i64 to index
    memref.store %ip1, %tape[] : memref<index>
  }
  scf.if %in {
    %d = memref.load %dy[%g] : !A
    %q = arith.constant 2.500000e-01 : f32
    %h = arith.constant 5.000000e-01 : f32
    %dq = arith.mulf %d, %q : f32
    %dh = arith.mulf %d, %h : f32
    %m1 = arith.subi %g64, %c1 : i64
    %im1 = arith.index_cast %m1 : i64 to index
    %ip1 = memref.load %tape[] : memref<index>
    %o1 = "diffgpu.atomic_add"(%dx, %dq, %im1) : (!A, f32, index) -> f32
    %o2 = "diffgpu.atomic_add"(%dx, %dh, %g) : (!A, f32, index) -> f32
    %o3 = "diffgpu.atomic_add"(%dx, %dq, %ip1) : (!A, f32, index) -> f32
  }
  return
}
func.func @reverse(%dx: !A, %dy: !A) attributes {diffgpu.kernel, diffgpu.target = #host} {
  func.call @rev(%dx, %dy) : (!A, !A) -> ()
  return
}
// CHECK-LABEL: func.func @rev
// CHECK-SAME: -> (f32, i1, f32, i1, f32, i1)
// CHECK-NOT: diffgpu.atomic_add
// CHECK: return
// CHECK-LABEL: func.func @reverse
// CHECK-SAME: (%[[DX:[a-z0-9]+]]: memref<{{[^%]+}}, %[[DY:[a-z0-9]+]]: memref
// CHECK: %[[R:.+]]:6 = call @rev(%[[DX]], %[[DY]])
// CHECK: %[[T:.+]] = "diffgpu.thread_id"() {dim = 0 : i64}
// CHECK: %[[GID:.+]] = arith.addi %{{.+}}, %[[T]] : index
// CHECK: %[[LIN:.+]] = arith.addi %[[T]], %{{.+}} : index
// CHECK: %[[SV0:.+]] = "diffgpu.shared_alloc"() : () -> memref<1024xf32, #gpu.address_space<workgroup>>
// CHECK-NEXT: %[[SF0:.+]] = "diffgpu.shared_alloc"() : () -> memref<1024xi8, #gpu.address_space<workgroup>>
// CHECK-NEXT: memref.store %[[R]]#0, %[[SV0]][%[[LIN]]]
// CHECK-COUNT-5: memref.store
// CHECK: "diffgpu.barrier"()
// The launch is one-dimensional: gather.
// CHECK: scf.if %{{.+}} {
// source t - 1 for the add at gid - 1 ... (each offset: load flag and value, select)
// CHECK-COUNT-3: memref.load %{{.+}}[%{{.+}}] : memref<1024xi8, #gpu.address_space<workgroup>>
// CHECK: scf.if %[[SEEN:.+]] {
// CHECK-NEXT: scf.if %[[EDGE:.+]] {
// CHECK-NEXT: "diffgpu.atomic_add"(%[[DX]], %[[SUM:.+]], %[[GID]]) {diffgpu.stencil}
// CHECK-NEXT: } else {
// CHECK-NEXT: %[[OLD:.+]] = memref.load %[[DX]][%[[GID]]]
// CHECK-NEXT: %[[NEW:.+]] = arith.addf %[[OLD]], %[[SUM]] : f32
// CHECK-NEXT: memref.store %[[NEW]], %[[DX]][%[[GID]]]
// Contributions to another block's elements: atomic, by the source.
// CHECK: "diffgpu.atomic_add"(%[[DX]], %[[R]]#0, %{{.+}}) {diffgpu.stencil}
// CHECK: "diffgpu.atomic_add"(%[[DX]], %[[R]]#4, %{{.+}}) {diffgpu.stencil}
// Other launch shapes: one atomic per contribution, as before.
// CHECK: } else {
// CHECK: scf.if %[[R]]#1 {
// CHECK: "diffgpu.atomic_add"(%[[DX]], %[[R]]#0, %{{.+}}) {diffgpu.stencil}
// CHECK: scf.if %[[R]]#3 {
// CHECK-NEXT: "diffgpu.atomic_add"(%[[DX]], %[[R]]#2, %[[GID]]) {diffgpu.stencil}
// CHECK: scf.if %[[R]]#5 {
// CHECK: "diffgpu.atomic_add"(%[[DX]], %[[R]]#4, %{{.+}}) {diffgpu.stencil}
// CHECK: return

// -----

// Kept: a non-unit stride (dx[2 * gid + 1]): the targets are not gid + k.
!A = memref<?xf32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @strided(%dx: !A, %v: f32) attributes {diffgpu.kernel, diffgpu.target = #host} {
  %b = "diffgpu.block_id"() {dim = 0 : i64} : () -> index
  %n = "diffgpu.block_dim"() {dim = 0 : i64} : () -> index
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %m = arith.muli %b, %n : index
  %g = arith.addi %m, %t : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %g2 = arith.muli %g, %c2 : index
  %i = arith.addi %g2, %c1 : index
  %o = "diffgpu.atomic_add"(%dx, %v, %i) : (!A, f32, index) -> f32
  %o2 = "diffgpu.atomic_add"(%dx, %v, %g) : (!A, f32, index) -> f32
  return
}
// CHECK-LABEL: func.func @strided
// CHECK-NOT: diffgpu.barrier
// CHECK-NOT: diffgpu.stencil
// CHECK: return

// -----

// Kept: dx is also read in the function (the moved adds could be observed), the
// offset comes from thread_id alone (not a global id), and an add sits in a loop.
!A = memref<?xf32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @read_back(%dx: !A, %v: f32) attributes {diffgpu.kernel, diffgpu.target = #host} {
  %b = "diffgpu.block_id"() {dim = 0 : i64} : () -> index
  %n = "diffgpu.block_dim"() {dim = 0 : i64} : () -> index
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %m = arith.muli %b, %n : index
  %g = arith.addi %m, %t : index
  %c1 = arith.constant 1 : index
  %i = arith.addi %g, %c1 : index
  %o = "diffgpu.atomic_add"(%dx, %v, %i) : (!A, f32, index) -> f32
  %r = memref.load %dx[%g] : !A
  return
}
func.func @thread_only(%dx: !A, %v: f32) attributes {diffgpu.kernel, diffgpu.target = #host} {
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %c1 = arith.constant 1 : index
  %i = arith.addi %t, %c1 : index
  %o = "diffgpu.atomic_add"(%dx, %v, %i) : (!A, f32, index) -> f32
  return
}
func.func @in_loop(%dx: !A, %v: f32, %k: index) attributes {diffgpu.kernel, diffgpu.target = #host} {
  %b = "diffgpu.block_id"() {dim = 0 : i64} : () -> index
  %n = "diffgpu.block_dim"() {dim = 0 : i64} : () -> index
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %m = arith.muli %b, %n : index
  %g = arith.addi %m, %t : index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %i = arith.addi %g, %c1 : index
  scf.for %j = %c0 to %k step %c1 {
    %o = "diffgpu.atomic_add"(%dx, %v, %i) : (!A, f32, index) -> f32
  }
  return
}
// CHECK-LABEL: func.func @read_back
// CHECK-NOT: diffgpu.barrier
// CHECK-NOT: diffgpu.stencil
// CHECK-LABEL: func.func @thread_only
// CHECK-NOT: diffgpu.barrier
// CHECK-NOT: diffgpu.stencil
// CHECK-LABEL: func.func @in_loop
// CHECK-NOT: diffgpu.barrier
// CHECK-NOT: diffgpu.stencil
// CHECK: return

// -----

// A 2-D stencil dx[gid_y + a, gid_x + b] in the kernel's body (no guard, no call):
// offsets (0, 1), (0, 0), (-1, 0); the launch check only asks z to be trivial,
// the source of offset (-1, 0) is the thread one row below (linear index + block_dim x).
!B = memref<?x?xf32, strided<[?, ?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @two_d(%dx: !B, %v: f32) attributes {diffgpu.kernel, diffgpu.target = #host} {
  %b0 = "diffgpu.block_id"() {dim = 0 : i64} : () -> index
  %n0 = "diffgpu.block_dim"() {dim = 0 : i64} : () -> index
  %t0 = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %m0 = arith.muli %b0, %n0 : index
  %g0 = arith.addi %m0, %t0 : index
  %b1 = "diffgpu.block_id"() {dim = 1 : i64} : () -> index
  %n1 = "diffgpu.block_dim"() {dim = 1 : i64} : () -> index
  %t1 = "diffgpu.thread_id"() {dim = 1 : i64} : () -> index
  %m1 = arith.muli %b1, %n1 : index
  %g1 = arith.addi %m1, %t1 : index
  %c1 = arith.constant 1 : index
  %right = arith.addi %g0, %c1 : index
  %up = arith.subi %g1, %c1 : index
  %o1 = "diffgpu.atomic_add"(%dx, %v, %g1, %right) : (!B, f32, index, index) -> f32
  %o2 = "diffgpu.atomic_add"(%dx, %v, %g1, %g0) : (!B, f32, index, index) -> f32
  %o3 = "diffgpu.atomic_add"(%dx, %v, %up, %g0) : (!B, f32, index, index) -> f32
  return
}
// CHECK-LABEL: func.func @two_d
// CHECK-SAME: (%[[DX:[a-z0-9]+]]: memref<{{[^%]+}}, %[[V:[a-z0-9]+]]: f32)
// CHECK-COUNT-3: arith.constant true
// CHECK: %[[T0:.+]] = "diffgpu.thread_id"() {dim = 0 : i64}
// CHECK-NEXT: %[[T1:.+]] = "diffgpu.thread_id"() {dim = 1 : i64}
// CHECK: %[[N0:.+]] = "diffgpu.block_dim"() {dim = 0 : i64}
// CHECK: %[[G1:.+]] = arith.addi %{{.+}}, %[[T1]] : index
// CHECK: %[[G0:.+]] = arith.addi %{{.+}}, %[[T0]] : index
// CHECK: %[[LIN:.+]] = arith.addi %[[T0]], %{{.+}} : index
// CHECK-COUNT-3: memref.store %[[V]], %{{.+}}[%[[LIN]]]
// CHECK: "diffgpu.barrier"()
// CHECK: "diffgpu.block_dim"() {dim = 2 : i64}
// CHECK-NOT: "diffgpu.block_dim"() {dim = 1 : i64}
// CHECK: scf.if
// the source of offset (-1, 0): one row further
// CHECK: %[[BELOW:.+]] = arith.addi %[[LIN]], %[[N0]] : index
// CHECK: memref.store %{{.+}}, %[[DX]][%[[G1]], %[[G0]]]
// CHECK: "diffgpu.atomic_add"(%[[DX]], %[[V]], %[[G1]], %{{.+}}) {diffgpu.stencil}
// CHECK: "diffgpu.atomic_add"(%[[DX]], %[[V]], %{{.+}}, %[[G0]]) {diffgpu.stencil}
// CHECK: } else {
// CHECK-COUNT-3: "diffgpu.atomic_add"
// CHECK-NOT: "diffgpu.atomic_add"(%[[DX]], %[[V]], %[[G1]], %[[G0]]) :
// CHECK: return

// -----

// Kept: both index positions from the same dimension (dx[gid_x, gid_x + 1]):
// threads of one row are not distinct elements of a 2-D tile.
!B = memref<?x?xf32, strided<[?, ?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @same_dim(%dx: !B, %v: f32) attributes {diffgpu.kernel, diffgpu.target = #host} {
  %b0 = "diffgpu.block_id"() {dim = 0 : i64} : () -> index
  %n0 = "diffgpu.block_dim"() {dim = 0 : i64} : () -> index
  %t0 = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %m0 = arith.muli %b0, %n0 : index
  %g0 = arith.addi %m0, %t0 : index
  %c1 = arith.constant 1 : index
  %right = arith.addi %g0, %c1 : index
  %o = "diffgpu.atomic_add"(%dx, %v, %g0, %right) : (!B, f32, index, index) -> f32
  return
}
// CHECK-LABEL: func.func @same_dim
// CHECK-NOT: diffgpu.barrier
// CHECK-NOT: diffgpu.stencil
// CHECK: return

// -----

// Kept: eight float64 adds need 8 x (8 KiB values + 1 KiB flags) of shared
// memory, more than a block's static shared memory allows.
!A = memref<?xf64, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @too_wide(%dx: !A, %v: f64) attributes {diffgpu.kernel, diffgpu.target = #host} {
  %b = "diffgpu.block_id"() {dim = 0 : i64} : () -> index
  %n = "diffgpu.block_dim"() {dim = 0 : i64} : () -> index
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %m = arith.muli %b, %n : index
  %g = arith.addi %m, %t : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %i1 = arith.addi %g, %c1 : index
  %i2 = arith.addi %g, %c2 : index
  %i3 = arith.addi %g, %c3 : index
  %i4 = arith.addi %g, %c4 : index
  %j1 = arith.subi %g, %c1 : index
  %j2 = arith.subi %g, %c2 : index
  %j3 = arith.subi %g, %c3 : index
  %o1 = "diffgpu.atomic_add"(%dx, %v, %i1) : (!A, f64, index) -> f64
  %o2 = "diffgpu.atomic_add"(%dx, %v, %i2) : (!A, f64, index) -> f64
  %o3 = "diffgpu.atomic_add"(%dx, %v, %i3) : (!A, f64, index) -> f64
  %o4 = "diffgpu.atomic_add"(%dx, %v, %i4) : (!A, f64, index) -> f64
  %o5 = "diffgpu.atomic_add"(%dx, %v, %g) : (!A, f64, index) -> f64
  %o6 = "diffgpu.atomic_add"(%dx, %v, %j1) : (!A, f64, index) -> f64
  %o7 = "diffgpu.atomic_add"(%dx, %v, %j2) : (!A, f64, index) -> f64
  %o8 = "diffgpu.atomic_add"(%dx, %v, %j3) : (!A, f64, index) -> f64
  return
}
// CHECK-LABEL: func.func @too_wide
// CHECK-NOT: diffgpu.barrier
// CHECK-NOT: diffgpu.stencil
// CHECK: return

// RUN: diffgpu-opt %s --split-input-file --diffgpu-lower-to-host | FileCheck %s

// Ctrl-C: a user scf.while gets an iteration counter and asks
// @__dg_host_live (a volatile load of the cancel flag) every 1024
// iterations; an scf.for of runtime trip count runs as chunks of 1024
// iterations (the same scf.for inside an scf.while that asks once per chunk);
// an scf.for of constant trip count stays as it is; the entry's block loops
// (z, y, x) are scf.while loops that start a block only while the flag is
// clear, so a cancelled launch leaves them at once; the thread loops stay.

// CHECK-LABEL: func.func private @k__thread
// CHECK: scf.while (%[[X:.+]] = %{{.+}}, %[[N:.+]] = %{{.+}}) : (i64, i64) -> (i64, i64) {
// CHECK: %[[C:.+]] = arith.cmpi slt, %[[X]], %{{.+}} : i64
// CHECK: %[[LOW:.+]] = arith.andi %[[N]], %{{.+}} : i64
// CHECK: %[[DUE:.+]] = arith.cmpi eq, %[[LOW]], %{{.+}} : i64
// CHECK: %[[ASK:.+]] = scf.if %[[DUE]] -> (i1) {
// CHECK-NEXT: %[[L:.+]] = func.call @__dg_host_live() : () -> i1
// CHECK-NEXT: scf.yield %[[L]] : i1
// CHECK: %[[B:.+]] = arith.andi %[[C]], %[[ASK]] : i1
// CHECK: %[[N1:.+]] = arith.addi %[[N]], %{{.+}} : i64
// CHECK-NEXT: scf.condition(%[[B]]) %[[X]], %[[N1]] : i64, i64
// CHECK: } do {
// CHECK: ^bb0(%{{.+}}: i64, %[[NA:.+]]: i64):
// CHECK: scf.yield %{{.+}}, %[[NA]] : i64, i64
// CHECK: %[[CH:.+]] = arith.muli %{{.+}}, %{{.+}} : index
// CHECK: scf.while (%[[I:.+]] = %{{.+}}) : (index) -> index {
// CHECK: %[[C2:.+]] = arith.cmpi slt, %[[I]], %[[UB:.+]] : index
// CHECK-NEXT: %[[L2:.+]] = func.call @__dg_host_live() : () -> i1
// CHECK-NEXT: %[[B2:.+]] = arith.andi %[[C2]], %[[L2]] : i1
// CHECK-NEXT: scf.condition(%[[B2]]) %[[I]] : index
// CHECK: } do {
// CHECK: ^bb0(%[[S:.+]]: index):
// CHECK: %[[REST:.+]] = arith.subi %[[UB]], %[[S]] : index
// CHECK-NEXT: %[[TAKE:.+]] = arith.minsi %[[REST]], %[[CH]] : index
// CHECK-NEXT: %[[END:.+]] = arith.addi %[[S]], %[[TAKE]] : index
// CHECK-NEXT: scf.for %[[IV:.+]] = %[[S]] to %[[END]] step %{{.+}} {
// CHECK: memref.store %{{.+}}, %{{.+}}[%[[IV]]]
// CHECK: scf.yield %[[END]] : index
// CHECK: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} {
// CHECK-NOT: __dg_host_live
// CHECK-LABEL: func.func @k(
// CHECK-SAME: %[[GX:[^:]+]]: index, %[[GY:[^:]+]]: index, %[[GZ:[^:]+]]: index, %{{[^:]+}}: index, %{{[^:]+}}: index, %{{[^:]+}}: index)
// CHECK-NOT: scf.for
// CHECK: scf.while (%[[Z:.+]] = %[[C0:.+]]) : (index) -> index {
// CHECK-NEXT: %[[MZ:.+]] = arith.cmpi slt, %[[Z]], %[[GZ]] : index
// CHECK-NEXT: %[[LZ:.+]] = func.call @__dg_host_live() : () -> i1
// CHECK-NEXT: %[[GOZ:.+]] = arith.andi %[[MZ]], %[[LZ]] : i1
// CHECK-NEXT: scf.condition(%[[GOZ]]) %[[Z]] : index
// CHECK: ^bb0(%[[ZA:.+]]: index):
// CHECK-NOT: scf.for
// CHECK: scf.while (%[[Y:.+]] = %[[C0]]) : (index) -> index {
// CHECK-NEXT: arith.cmpi slt, %[[Y]], %[[GY]] : index
// CHECK-NEXT: func.call @__dg_host_live()
// CHECK-NOT: scf.for
// CHECK: scf.while (%[[X:.+]] = %[[C0]]) : (index) -> index {
// CHECK-NEXT: arith.cmpi slt, %[[X]], %[[GX]] : index
// CHECK-NEXT: func.call @__dg_host_live()
// CHECK: ^bb0(%[[XA:.+]]: index):
// CHECK: scf.for
// CHECK: scf.for
// CHECK: scf.for
// CHECK-NOT: __dg_host_live
// CHECK: func.call @k__thread
// CHECK: %[[NX:.+]] = arith.addi %[[XA]], %{{.+}} : index
// CHECK-NEXT: scf.yield %[[NX]] : index
// CHECK: %[[NZ:.+]] = arith.addi %[[ZA]], %{{.+}} : index
// CHECK-NEXT: scf.yield %[[NZ]] : index
// CHECK: llvm.mlir.global internal @__dg_host_cancel(0 : i64)
// CHECK-LABEL: func.func private @__dg_host_live() -> i1
// CHECK: %[[P:.+]] = llvm.mlir.addressof @__dg_host_cancel : !llvm.ptr
// CHECK-NEXT: llvm.load volatile %[[P]]
// CHECK-LABEL: func.func @__dg_host_cancel_addr() -> i64 attributes {{{.*}}llvm.emit_c_interface}
func.func @k(%A: memref<?xf32, strided<[?], offset: ?>>, %n: index, %m: i64)
    attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %z = arith.constant 0 : i64
  %one = arith.constant 1 : i64
  %f = arith.constant 1.0 : f32
  %r = scf.while (%x = %z) : (i64) -> i64 {
    %c = arith.cmpi slt, %x, %m : i64
    scf.condition(%c) %x : i64
  } do {
  ^bb0(%x: i64):
    %y = arith.addi %x, %one : i64
    scf.yield %y : i64
  }
  scf.for %i = %c0 to %n step %c1 {
    memref.store %f, %A[%i] : memref<?xf32, strided<[?], offset: ?>>
  }
  scf.for %i = %c0 to %c4 step %c1 {
    memref.store %f, %A[%i] : memref<?xf32, strided<[?], offset: ?>>
  }
  return
}

// -----

// A barrier in a `for` of runtime trip count: the barrier lowering's
// block-level scf.while ends at the flag too (its bound may be huge).

// CHECK-LABEL: func.func @f(
// CHECK: scf.while : () -> () {
// CHECK: %[[ANY:.+]] = scf.for {{.+}} iter_args
// CHECK: %[[L:.+]] = func.call @__dg_host_live() : () -> i1
// CHECK-NEXT: %[[GO:.+]] = arith.andi %[[ANY]], %[[L]] : i1
// CHECK-NEXT: scf.condition(%[[GO]])
// CHECK: func.call @f__phase1
func.func @f(%A: memref<?xf32, strided<[?], offset: ?>>, %n: index)
    attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %k = %c0 to %n step %c1 {
    %v = memref.load %A[%k] : memref<?xf32, strided<[?], offset: ?>>
    "diffgpu.barrier"() : () -> ()
    memref.store %v, %A[%t] : memref<?xf32, strided<[?], offset: ?>>
  }
  return
}

// RUN: diffgpu-opt %s --split-input-file --diffgpu-lower-to-host | FileCheck %s

// A top-level barrier splits the body into phases; the entry runs each phase
// for every thread of the block before the next. A value used after the
// barrier (%i) is stored per thread in the block's spill buffer (a view of
// it, indexed by the linear thread id) right after its definition and loaded
// in the next phase; constants are re-created instead.

// CHECK-LABEL: func.func private @rev__phase0
// CHECK-SAME: (%[[A:.+]]: memref<?xf32, strided<[?], offset: ?>>, %[[S:.+]]: memref<64xf32>, %[[SP:.+]]: memref<?xi8>, %[[LIN:.+]]: index, %[[N:.+]]: index)
// CHECK: %[[I:.+]] = memref.load %{{.+}}[%{{.+}}] : memref<12xindex>
// CHECK: %[[V:.+]] = memref.view %[[SP]][%{{.+}}][%[[N]]] : memref<?xi8> to memref<?xindex>
// CHECK-NEXT: memref.store %[[I]], %[[V]][%[[LIN]]] : memref<?xindex>
// CHECK: memref.load %[[A]][%[[I]]]
// CHECK: memref.store %{{.+}}, %[[S]][%[[I]]] : memref<64xf32>
// CHECK: return
// CHECK-LABEL: func.func private @rev__phase1
// CHECK-SAME: (%[[A:.+]]: memref<?xf32, strided<[?], offset: ?>>, %[[S:.+]]: memref<64xf32>, %[[SP:.+]]: memref<?xi8>, %[[LIN:.+]]: index, %[[N:.+]]: index)
// CHECK-DAG: %[[C7:.+]] = arith.constant 7 : index
// CHECK-DAG: %[[V:.+]] = memref.view %[[SP]][%{{.+}}][%[[N]]] : memref<?xi8> to memref<?xindex>
// CHECK: %[[I:.+]] = memref.load %[[V]][%[[LIN]]] : memref<?xindex>
// CHECK-NEXT: %[[J:.+]] = arith.subi %[[C7]], %[[I]] : index
// CHECK: memref.load %[[S]][%[[J]]] : memref<64xf32>
// CHECK: memref.store %{{.+}}, %[[A]][%[[I]]]
// CHECK: return
// CHECK-NOT: diffgpu.barrier
// CHECK-LABEL: func.func @rev
// CHECK-SAME: %[[BX:[^:]+]]: index, %[[BY:[^:]+]]: index, %[[BZ:[^:]+]]: index)
// CHECK: %[[BUF:.+]] = memref.alloc() : memref<64xf32>
// CHECK: %[[N0:.+]] = arith.muli %[[BX]], %[[BY]] : index
// CHECK-NEXT: %[[N:.+]] = arith.muli %[[N0]], %[[BZ]] : index
// CHECK-NEXT: %[[PER:.+]] = arith.constant 8 : index
// CHECK-NEXT: %[[SIZE:.+]] = arith.muli %[[N]], %[[PER]] : index
// CHECK-NEXT: %[[SPILL:.+]] = memref.alloc(%[[SIZE]]) : memref<?xi8>
// CHECK: func.call @rev__phase0(%{{.+}}, %[[BUF]], %[[SPILL]], %{{.+}}, %[[N]])
// CHECK: func.call @rev__phase1(%{{.+}}, %[[BUF]], %[[SPILL]], %{{.+}}, %[[N]])
// CHECK: memref.dealloc %[[BUF]]
// CHECK: memref.dealloc %[[SPILL]]
func.func @rev(%A: memref<?xf32, strided<[?], offset: ?>>)
    attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %s = "diffgpu.shared_alloc"() : () -> memref<64xf32, #gpu.address_space<workgroup>>
  %i = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %c7 = arith.constant 7 : index
  %v = memref.load %A[%i] : memref<?xf32, strided<[?], offset: ?>>
  memref.store %v, %s[%i] : memref<64xf32, #gpu.address_space<workgroup>>
  "diffgpu.barrier"() : () -> ()
  %j = arith.subi %c7, %i : index
  %w = memref.load %s[%j] : memref<64xf32, #gpu.address_space<workgroup>>
  memref.store %w, %A[%i] : memref<?xf32, strided<[?], offset: ?>>
  return
}

// -----

// A barrier under scf.if: the branch becomes a block-level scf.if taken when
// any thread's condition holds (stored per thread, as i8, by the phase before
// it); the phases inside run only for the threads whose condition holds.

// CHECK-LABEL: func.func private @k__phase0
// CHECK: %[[IN:.+]] = arith.cmpi slt
// CHECK: %[[EXT:.+]] = arith.extui %[[IN]] : i1 to i8
// CHECK-NEXT: memref.store %[[EXT]]
// CHECK-LABEL: func.func private @k__phase1
// CHECK-LABEL: func.func private @k__phase2
// CHECK-LABEL: func.func @k
// CHECK: func.call @k__phase0
// CHECK: %[[ANY:.+]] = scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[ACC:.+]] = %false) -> (i1)
// CHECK: %[[M:.+]] = arith.trunci %{{.+}} : i8 to i1
// CHECK-NEXT: %[[OR:.+]] = arith.ori %[[ACC]], %[[M]] : i1
// CHECK-NEXT: scf.yield %[[OR]] : i1
// CHECK: scf.if %[[ANY]] {
// CHECK: %[[ACTIVE:.+]] = arith.trunci %{{.+}} : i8 to i1
// CHECK-NEXT: scf.if %[[ACTIVE]] {
// CHECK-NEXT: func.call @k__phase1
// CHECK: %[[ACTIVE2:.+]] = arith.trunci %{{.+}} : i8 to i1
// CHECK-NEXT: scf.if %[[ACTIVE2]] {
// CHECK-NEXT: func.call @k__phase2
func.func @k(%A: memref<?xf32, strided<[?], offset: ?>>, %n: index)
    attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %in = arith.cmpi slt, %t, %n : index
  scf.if %in {
    %v = memref.load %A[%t] : memref<?xf32, strided<[?], offset: ?>>
    "diffgpu.barrier"() : () -> ()
    memref.store %v, %A[%t] : memref<?xf32, strided<[?], offset: ?>>
  }
  return
}

// -----

// A barrier in scf.for: a block-level scf.while runs while any thread is
// still in its loop; each thread's counter, bound and step live in the spill
// buffer, and the body's phases run for the threads still looping.

// CHECK-LABEL: func.func private @f__phase0
// CHECK-LABEL: func.func private @f__phase1
// CHECK-LABEL: func.func private @f__phase2
// CHECK-LABEL: func.func @f
// CHECK: func.call @f__phase0
// CHECK: scf.while : () -> () {
// CHECK: %[[IV:[^ ]+]] = memref.load %{{[^ ]+}} : memref<?xindex>
// CHECK: %[[UB:[^ ]+]] = memref.load %{{[^ ]+}} : memref<?xindex>
// CHECK-NEXT: arith.cmpi slt, %[[IV]], %[[UB]] : index
// CHECK: scf.condition(%{{.+}})
// CHECK: } do {
// CHECK: func.call @f__phase1
// CHECK: func.call @f__phase2
// CHECK: %[[I:[^ ]+]] = memref.load %{{[^ ]+}} : memref<?xindex>
// CHECK: %[[STEP:[^ ]+]] = memref.load %{{[^ ]+}} : memref<?xindex>
// CHECK-NEXT: %[[NEXT:.+]] = arith.addi %[[I]], %[[STEP]] : index
// CHECK: memref.store %[[NEXT]]
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

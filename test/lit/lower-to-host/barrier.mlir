// RUN: diffgpu-opt %s --diffgpu-lower-to-host | FileCheck %s

// A top-level barrier splits the body into phases; the entry runs each phase
// for every thread of the block before the next. A value used after the
// barrier (%i) is stored per thread (indexed by the linear thread id) at the
// end of its phase and loaded in the next; constants are re-created instead.

// CHECK-LABEL: func.func private @rev__phase0
// CHECK-SAME: (%[[A:.+]]: memref<?xf32, strided<[?], offset: ?>>, %[[S:.+]]: memref<64xf32>, %[[SP:.+]]: memref<?xindex>, %[[LIN:.+]]: index)
// CHECK: %[[I:.+]] = memref.load %{{.+}}[%{{.+}}] : memref<12xindex>
// CHECK: %[[V:.+]] = memref.load %[[A]][%[[I]]]
// CHECK-NEXT: memref.store %[[V]], %[[S]][%[[I]]] : memref<64xf32>
// CHECK-NEXT: memref.store %[[I]], %[[SP]][%[[LIN]]] : memref<?xindex>
// CHECK-NEXT: return
// CHECK-LABEL: func.func private @rev__phase1
// CHECK-SAME: (%[[A:.+]]: memref<?xf32, strided<[?], offset: ?>>, %[[S:.+]]: memref<64xf32>, %[[SP:.+]]: memref<?xindex>, %[[LIN:.+]]: index)
// CHECK-DAG: %[[C7:.+]] = arith.constant 7 : index
// CHECK-DAG: %[[I:.+]] = memref.load %[[SP]][%[[LIN]]] : memref<?xindex>
// CHECK: %[[J:.+]] = arith.subi %[[C7]], %[[I]] : index
// CHECK-NEXT: %[[W:.+]] = memref.load %[[S]][%[[J]]] : memref<64xf32>
// CHECK-NEXT: memref.store %[[W]], %[[A]][%[[I]]]
// CHECK-NEXT: return
// CHECK-NOT: diffgpu.barrier
// CHECK-LABEL: func.func @rev
// CHECK-SAME: %[[BX:[^:]+]]: index, %[[BY:[^:]+]]: index, %[[BZ:[^:]+]]: index)
// CHECK: %[[BUF:.+]] = memref.alloc() : memref<64xf32>
// CHECK: %[[N0:.+]] = arith.muli %[[BX]], %[[BY]] : index
// CHECK-NEXT: %[[N:.+]] = arith.muli %[[N0]], %[[BZ]] : index
// CHECK-NEXT: %[[SPILL:.+]] = memref.alloc(%[[N]]) : memref<?xindex>
// CHECK: func.call @rev__phase0(%{{.+}}, %[[BUF]], %[[SPILL]], %{{.+}})
// CHECK: func.call @rev__phase1(%{{.+}}, %[[BUF]], %[[SPILL]], %{{.+}})
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

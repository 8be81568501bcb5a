// RUN: diffgpu-opt %s --split-input-file -p 'diffgpu-lower-to-host{racecheck=1}' | FileCheck %s
// RUN: diffgpu-opt %s --split-input-file -p 'diffgpu-lower-to-host' | FileCheck %s --check-prefix=PLAIN
// RUN: diffgpu-opt %s --split-input-file -p 'diffgpu-lower-to-host{cancel=0}' | FileCheck %s --check-prefix=NOCANCEL

// The race-checked variant: each user load/store calls @__dg_race_access
// with the element's address (aligned pointer + (offset + index * stride) *
// element size), its kind (0 read, 1 write, 2 atomic) and its site number;
// the sites' locations are the module attribute diffgpu.race_sites. An
// atomic (load/add/store by then) is one access of kind 2, at its load. The
// unchecked lowering has none of it.

// CHECK: module attributes {{{.*}}diffgpu.race_sites = ["{{[^"]+}}:{{[0-9]+}}:{{[0-9]+}}", "{{[^"]+}}:{{[0-9]+}}:{{[0-9]+}}", "{{[^"]+}}:{{[0-9]+}}:{{[0-9]+}}"]}
// CHECK-LABEL: func.func private @k__thread
// CHECK-SAME: (%[[A:[^:]+]]: memref<?xf32, strided<[?], offset: ?>>, %[[I:[^:]+]]: index)
// CHECK: %[[P:.+]] = memref.extract_aligned_pointer_as_index %[[A]]
// CHECK: %{{.+}}, %[[OFF:.+]], %{{.+}}, %[[ST:.+]] = memref.extract_strided_metadata %[[A]]
// CHECK: %[[E:.+]] = arith.muli %[[I]], %[[ST]] : index
// CHECK: %[[L:.+]] = arith.addi %[[OFF]], %[[E]] : index
// CHECK: %[[B:.+]] = arith.muli %[[L]], %[[C4:.+]] : index
// CHECK: %[[AD:.+]] = arith.addi %[[P]], %[[B]] : index
// CHECK: %[[AI:.+]] = arith.index_cast %[[AD]] : index to i64
// CHECK: %[[R:.+]] = arith.constant 0 : i64
// CHECK: func.call @__dg_race_access(%[[AI]], %[[R]], %{{.+}}) : (i64, i64, i64) -> ()
// CHECK-NEXT: memref.load %[[A]][%[[I]]]
// CHECK: %[[W:.+]] = arith.constant 1 : i64
// CHECK: func.call @__dg_race_access(%{{.+}}, %[[W]], %{{.+}}) : (i64, i64, i64) -> ()
// CHECK-NEXT: memref.store %{{.+}}, %[[A]][%[[I]]]
// CHECK: %[[AT:.+]] = arith.constant 2 : i64
// CHECK: func.call @__dg_race_access(%{{.+}}, %[[AT]], %{{.+}}) : (i64, i64, i64) -> ()
// CHECK-NEXT: memref.load %[[A]][%{{.+}}] {diffgpu.atomic}
// CHECK-NOT: __dg_race_access
// CHECK: memref.store %{{.+}}, %[[A]][%{{.+}}] {diffgpu.atomic}
// CHECK: return
// CHECK-LABEL: func.func @__dg_race_begin
// CHECK-SAME: llvm.emit_c_interface
// CHECK-LABEL: func.func private @__dg_race_access(%{{.+}}: i64, %{{.+}}: i64, %{{.+}}: i64)

// PLAIN-NOT: __dg_race
// PLAIN-NOT: diffgpu.atomic
// PLAIN: @__dg_host_live

// NOCANCEL-NOT: __dg_host_live
// NOCANCEL-NOT: __dg_host_cancel
func.func @k(%A: memref<?xf32, strided<[?], offset: ?>>, %i: index)
    attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %c0 = arith.constant 0 : index
  %one = arith.constant 1.0 : f32
  %v = memref.load %A[%i] : memref<?xf32, strided<[?], offset: ?>>
  %w = arith.addf %v, %one : f32
  memref.store %w, %A[%i] : memref<?xf32, strided<[?], offset: ?>>
  %old = "diffgpu.atomic_add"(%A, %one, %c0) : (memref<?xf32, strided<[?], offset: ?>>, f32, index) -> f32
  return
}

// -----

// Shared memory: static strides (no metadata op); each block pushes a region
// with a zeroed shadow of 28 words per element (id -1 - number) and pops it
// at its end; the barrier lowering advances the epoch at each barrier (a
// top-level barrier: every thread reaches it, arrivals 0 of 0).

// CHECK: diffgpu.race_shared = ["s|0|{{[^|]+}}:{{[0-9]+}}:{{[0-9]+}}|8"]
// CHECK-LABEL: func.func private @s__phase0
// CHECK-SAME: %[[SB:[^:]+]]: memref<8xf32>
// CHECK: memref.extract_aligned_pointer_as_index %[[SB]]
// CHECK-NOT: memref.extract_strided_metadata
// CHECK: func.call @__dg_race_access
// CHECK-NEXT: memref.store %{{.+}}, %[[SB]]
// CHECK-LABEL: func.func @s(
// CHECK: %[[BUF:.+]] = memref.alloc() : memref<8xf32>
// CHECK: %[[SH:.+]] = memref.alloc() : memref<224xi64>
// CHECK: scf.for
// CHECK: memref.store %{{.+}}, %[[SH]]
// CHECK: %[[BASE:.+]] = memref.extract_aligned_pointer_as_index %[[BUF]]
// CHECK: %[[SHP:.+]] = memref.extract_aligned_pointer_as_index %[[SH]]
// CHECK: func.call @__dg_race_push(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}) : (i64, i64, i64, i64, i64) -> ()
// CHECK: func.call @s__phase0
// CHECK: %[[Z:.+]] = arith.constant 0 : i64
// CHECK: func.call @__dg_race_barrier(%[[Z]], %[[Z]], %[[Z]], %{{.+}}) : (i64, i64, i64, i64) -> ()
// CHECK: func.call @s__phase1
// CHECK: func.call @__dg_race_pop
// CHECK: memref.dealloc %[[SH]]
func.func @s(%A: memref<?xf32, strided<[?], offset: ?>>)
    attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %s = "diffgpu.shared_alloc"() : () -> memref<8xf32, #gpu.address_space<workgroup>>
  %v = memref.load %A[%t] : memref<?xf32, strided<[?], offset: ?>>
  memref.store %v, %s[%t] : memref<8xf32, #gpu.address_space<workgroup>>
  "diffgpu.barrier"() : () -> ()
  %w = memref.load %s[%t] : memref<8xf32, #gpu.address_space<workgroup>>
  memref.store %w, %A[%t] : memref<?xf32, strided<[?], offset: ?>>
  return
}

// -----

// A barrier under an scf.if: the entry counts the threads whose mask is set
// and finds the first whose mask is not, and passes both with the block's
// thread count and the barrier's site (the last of diffgpu.race_sites).

// CHECK: diffgpu.race_sites = ["{{[^"]+}}", "{{[^"]+}}:[[BL:[0-9]+]]:{{[0-9]+}}"]
// CHECK-LABEL: func.func @g(
// CHECK: %[[N:.+]]:2 = scf.for %[[T:.+]] = %{{.+}} to %[[NT:.+]] step %{{.+}} iter_args(%[[C:.+]] = %{{.+}}, %[[F:.+]] = %[[NT]]) -> (index, index)
// CHECK: %[[ONE:.+]] = arith.select %[[M:.+]], %{{.+}}, %{{.+}} : index
// CHECK: %[[CAND:.+]] = arith.select %[[M]], %[[NT]], %[[T]] : index
// CHECK: arith.addi %[[C]], %[[ONE]] : index
// CHECK: arith.minui %[[F]], %[[CAND]] : index
// CHECK: %[[AR:.+]] = arith.index_cast %[[N]]#0 : index to i64
// CHECK: %[[MI:.+]] = arith.index_cast %[[N]]#1 : index to i64
// CHECK: %[[TH:.+]] = arith.index_cast %[[NT]] : index to i64
// CHECK: %[[S:.+]] = arith.constant 2 : i64
// CHECK: func.call @__dg_race_barrier(%[[AR]], %[[MI]], %[[TH]], %[[S]])
// CHECK-LABEL: func.func private @__dg_race_barrier
// CHECK: arith.cmpi ne, %{{.+}}, %{{.+}} : i64
func.func @g(%A: memref<?xf32, strided<[?], offset: ?>>)
    attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %z = arith.constant 0.0 : f32
  %v = memref.load %A[%t] : memref<?xf32, strided<[?], offset: ?>>
  %c = arith.cmpf ogt, %v, %z : f32
  scf.if %c {
    "diffgpu.barrier"() : () -> ()
  }
  return
}

// RUN: diffgpu-opt %s --split-input-file --diffgpu-lower-to-host | FileCheck %s

// A host kernel becomes a private per-thread function plus an entry of the
// same name taking grid then block sizes, which writes the geometry global
// and loops over blocks (z, y, x: scf.while loops that end at the cancel
// flag, see cancel.mlir) then threads (z, y, x), calling the body.
// Geometry ops read the global at slot base + dim.

// CHECK: memref.global "private" @__dg_host_geometry : memref<12xindex>
// CHECK-LABEL: func.func private @copy__thread
// CHECK-SAME: (%[[A:.+]]: memref<?xf32, strided<[?], offset: ?>>, %[[B:.+]]: memref<?xf32, strided<[?], offset: ?>>)
// CHECK-NOT: diffgpu.kernel
// CHECK: %[[G:.+]] = memref.get_global @__dg_host_geometry : memref<12xindex>
// CHECK-NEXT: %[[C1:.+]] = arith.constant 1 : index
// CHECK-NEXT: %[[TY:.+]] = memref.load %[[G]][%[[C1]]] : memref<12xindex>
// CHECK: %[[G2:.+]] = memref.get_global @__dg_host_geometry : memref<12xindex>
// CHECK-NEXT: %[[C5:.+]] = arith.constant 5 : index
// CHECK-NEXT: %[[BZ:.+]] = memref.load %[[G2]][%[[C5]]] : memref<12xindex>
// CHECK: %[[G3:.+]] = memref.get_global @__dg_host_geometry : memref<12xindex>
// CHECK-NEXT: %[[C6:.+]] = arith.constant 6 : index
// CHECK-NEXT: %[[BDX:.+]] = memref.load %[[G3]][%[[C6]]] : memref<12xindex>
// CHECK: %[[G4:.+]] = memref.get_global @__dg_host_geometry : memref<12xindex>
// CHECK-NEXT: %[[C11:.+]] = arith.constant 11 : index
// CHECK-NEXT: %[[GDZ:.+]] = memref.load %[[G4]][%[[C11]]] : memref<12xindex>
// CHECK: memref.load %[[A]][%[[TY]]]
// CHECK: memref.store %{{.+}}, %[[B]][%[[TY]]]
// CHECK: return

// CHECK-LABEL: func.func @copy
// CHECK-SAME: (%[[A:.+]]: memref<?xf32, strided<[?], offset: ?>>, %[[B:.+]]: memref<?xf32, strided<[?], offset: ?>>, %[[GX:.+]]: index, %[[GY:.+]]: index, %[[GZ:.+]]: index, %[[BX:.+]]: index, %[[BY:.+]]: index, %[[BZ:.+]]: index)
// CHECK-SAME: diffgpu.target = #llvm.target
// CHECK-SAME: llvm.emit_c_interface
// CHECK: %[[G:.+]] = memref.get_global @__dg_host_geometry
// CHECK: arith.cmpi slt, %{{.+}}, %[[GZ]] : index
// CHECK: ^bb0(%[[IZ:.+]]: index):
// CHECK: memref.store %[[IZ]], %[[G]]
// CHECK: arith.cmpi slt, %{{.+}}, %[[GY]] : index
// CHECK: ^bb0(%[[IY:.+]]: index):
// CHECK: memref.store %[[IY]], %[[G]]
// CHECK: arith.cmpi slt, %{{.+}}, %[[GX]] : index
// CHECK: ^bb0(%[[IX:.+]]: index):
// CHECK: memref.store %[[IX]], %[[G]]
// CHECK: scf.for %[[TZ:.+]] = %{{.+}} to %[[BZ]] step
// CHECK: memref.store %[[TZ]], %[[G]]
// CHECK: scf.for %[[TY:.+]] = %{{.+}} to %[[BY]] step
// CHECK: memref.store %[[TY]], %[[G]]
// CHECK: scf.for %[[TX:.+]] = %{{.+}} to %[[BX]] step
// CHECK: memref.store %[[TX]], %[[G]]
// CHECK-NEXT: func.call @copy__thread(%[[A]], %[[B]])
func.func @copy(%A: memref<?xf32, strided<[?], offset: ?>>, %B: memref<?xf32, strided<[?], offset: ?>>)
    attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %t = "diffgpu.thread_id"() {dim = 1 : i64} : () -> index
  %b = "diffgpu.block_id"() {dim = 2 : i64} : () -> index
  %bd = "diffgpu.block_dim"() {dim = 0 : i64} : () -> index
  %gd = "diffgpu.grid_dim"() {dim = 2 : i64} : () -> index
  %v = memref.load %A[%t] : memref<?xf32, strided<[?], offset: ?>>
  memref.store %v, %B[%t] : memref<?xf32, strided<[?], offset: ?>>
  return
}

// -----

// Geometry ops in device functions read the same global; device functions
// are renamed out of the C library's namespace (with their calls), and calls
// to a kernel from another kernel go to its per-thread function.

// CHECK-LABEL: func.func @__dg_dev_tid
// CHECK: %[[G:.+]] = memref.get_global @__dg_host_geometry
// CHECK-NEXT: %[[C0:.+]] = arith.constant 0 : index
// CHECK-NEXT: %[[T:.+]] = memref.load %[[G]][%[[C0]]]
// CHECK-NEXT: return %[[T]]
func.func @tid() -> index attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  return %t : index
}
// CHECK-LABEL: func.func private @inner__thread
// CHECK: call @__dg_dev_tid() : () -> index
// CHECK-LABEL: func.func @inner
// CHECK-SAME: %{{.+}}: index, %{{.+}}: index, %{{.+}}: index, %{{.+}}: index, %{{.+}}: index, %{{.+}}: index)
func.func @inner(%A: memref<?xf32, strided<[?], offset: ?>>)
    attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %t = func.call @tid() : () -> index
  %c = arith.constant 1.0 : f32
  memref.store %c, %A[%t] : memref<?xf32, strided<[?], offset: ?>>
  return
}
// CHECK-LABEL: func.func private @outer__thread
// CHECK-SAME: (%[[A:.+]]: memref
// CHECK: call @inner__thread(%[[A]])
func.func @outer(%A: memref<?xf32, strided<[?], offset: ?>>)
    attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  func.call @inner(%A) : (memref<?xf32, strided<[?], offset: ?>>) -> ()
  return
}

// -----

// diffgpu.atomic_add becomes load, add, store (each bounds-checked); its
// result is the old value.

// CHECK-LABEL: func.func private @hist__thread
// CHECK-SAME: (%[[H:.+]]: memref<?x?xi32, strided<[?, ?], offset: ?>>, %[[S:.+]]: memref<?xf64, strided<[?], offset: ?>>, %[[I:.+]]: index, %[[V:.+]]: i32, %[[X:.+]]: f64)
// CHECK: %[[OLD:.+]] = scf.if %{{.+}} -> (i32) {
// CHECK-NEXT: memref.load %[[H]][%[[I]], %[[I]]]
// CHECK: %[[NEW:.+]] = arith.addi %[[OLD]], %[[V]] : i32
// CHECK: memref.store %[[NEW]], %[[H]][%[[I]], %[[I]]]
// CHECK: %[[OLDF:.+]] = scf.if %{{.+}} -> (f64) {
// CHECK-NEXT: memref.load %[[S]][%[[I]]]
// CHECK: %[[NEWF:.+]] = arith.addf %[[OLDF]], %[[X]] : f64
// CHECK: memref.store %[[NEWF]], %[[S]][%[[I]]]
// CHECK: memref.store %[[OLDF]], %[[S]][%[[I]]]
func.func @hist(%H: memref<?x?xi32, strided<[?, ?], offset: ?>>, %S: memref<?xf64, strided<[?], offset: ?>>, %i: index, %v: i32, %x: f64)
    attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %o = "diffgpu.atomic_add"(%H, %v, %i, %i) : (memref<?x?xi32, strided<[?, ?], offset: ?>>, i32, index, index) -> i32
  %of = "diffgpu.atomic_add"(%S, %x, %i) : (memref<?xf64, strided<[?], offset: ?>>, f64, index) -> f64
  memref.store %of, %S[%i] : memref<?xf64, strided<[?], offset: ?>>
  return
}

// -----

// Shared memory: one buffer per block, allocated by the entry in the block
// loop (default memory space) and passed to the per-thread function.

// CHECK-LABEL: func.func private @sh__thread
// CHECK-SAME: (%[[A:.+]]: memref<?xf32, strided<[?], offset: ?>>, %[[S:.+]]: memref<4x8xf32>)
// CHECK: memref.store %{{.+}}, %[[S]][%{{.+}}, %{{.+}}] : memref<4x8xf32>
// CHECK-LABEL: func.func @sh
// CHECK: scf.while
// CHECK: scf.while
// CHECK: scf.while
// CHECK: %[[BUF:.+]] = memref.alloc() : memref<4x8xf32>
// CHECK: scf.for
// CHECK: scf.for
// CHECK: scf.for
// CHECK: func.call @sh__thread(%{{.+}}, %[[BUF]])
// CHECK: memref.dealloc %[[BUF]] : memref<4x8xf32>
func.func @sh(%A: memref<?xf32, strided<[?], offset: ?>>)
    attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %s = "diffgpu.shared_alloc"() : () -> memref<4x8xf32, #gpu.address_space<workgroup>>
  %c0 = arith.constant 0 : index
  %v = memref.load %A[%c0] : memref<?xf32, strided<[?], offset: ?>>
  memref.store %v, %s[%c0, %c0] : memref<4x8xf32, #gpu.address_space<workgroup>>
  return
}

// -----

// GPU-target kernels and functions are left untouched.

// CHECK-LABEL: module {
// CHECK-NEXT: func.func @gpu_kernel
// CHECK-SAME: diffgpu.kernel
// CHECK-NEXT: "diffgpu.thread_id"() {dim = 0 : i64}
// CHECK-NEXT: return
// CHECK-NEXT: }
// CHECK-NEXT: }
func.func @gpu_kernel(%A: memref<?xf32, strided<[?], offset: ?>>)
    attributes {diffgpu.kernel, diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  return
}

// -----

// A kernel named like a C library function the lowering may declare (here
// `exp`, for math.exp) gets the entry @__dg_entry_exp; the libm call stays
// a call to the real `exp`.

// CHECK-LABEL: func.func private @exp__thread
// CHECK: math.exp %{{.+}} : f64
// CHECK-LABEL: func.func @__dg_entry_exp
// CHECK-SAME: llvm.emit_c_interface
// CHECK: call @exp__thread(
func.func @exp(%A: memref<?xf64, strided<[?], offset: ?>>)
    attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %c0 = arith.constant 0 : index
  %v = memref.load %A[%c0] : memref<?xf64, strided<[?], offset: ?>>
  %e = math.exp %v : f64
  memref.store %e, %A[%c0] : memref<?xf64, strided<[?], offset: ?>>
  return
}

// -----

// Integer divisions get a divisor that cannot trap on the CPU: 1 where it is
// 0, or (signed) where the dividend is MIN and the divisor -1.

// CHECK-LABEL: func.func private @div__thread
// CHECK-SAME: (%[[A:.+]]: i32, %[[B:.+]]: i32, %[[OUT:.+]]: memref
// CHECK-NEXT: %[[C0:.+]] = arith.constant 0 : i32
// CHECK-NEXT: %[[Z:.+]] = arith.cmpi eq, %[[B]], %[[C0]] : i32
// CHECK-NEXT: %[[MIN:.+]] = arith.constant -2147483648 : i32
// CHECK-NEXT: %[[ISMIN:.+]] = arith.cmpi eq, %[[A]], %[[MIN]] : i32
// CHECK-NEXT: %[[M1:.+]] = arith.constant -1 : i32
// CHECK-NEXT: %[[ISM1:.+]] = arith.cmpi eq, %[[B]], %[[M1]] : i32
// CHECK-NEXT: %[[OV:.+]] = arith.andi %[[ISMIN]], %[[ISM1]] : i1
// CHECK-NEXT: %[[BAD:.+]] = arith.ori %[[Z]], %[[OV]] : i1
// CHECK-NEXT: %[[C1:.+]] = arith.constant 1 : i32
// CHECK-NEXT: %[[SAFE:.+]] = arith.select %[[BAD]], %[[C1]], %[[B]] : i32
// CHECK: %[[Q:.+]] = arith.floordivsi %[[A]], %[[SAFE]] : i32
// CHECK: %[[Z2:.+]] = arith.cmpi eq, %[[B]], %{{.+}} : i32
// CHECK: %[[SAFE2:.+]] = arith.select %[[Z2]], %{{.+}}, %[[B]] : i32
// CHECK: %[[U:.+]] = arith.remui %[[Q]], %[[SAFE2]] : i32
func.func @div(%a: i32, %b: i32, %out: memref<?xi32, strided<[?], offset: ?>>)
    attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %q = arith.floordivsi %a, %b : i32
  %u = arith.remui %q, %b : i32
  %c0 = arith.constant 0 : index
  memref.store %u, %out[%c0] : memref<?xi32, strided<[?], offset: ?>>
  return
}

// -----

// Loads and stores run only with every index inside its dimension (unsigned
// compare: negative indices too); otherwise the access is skipped (a load
// gives 0) and its number is recorded for the runtime, which reads it with
// @__dg_host_status() and names the location from diffgpu.host_accesses.

// CHECK: module attributes {diffgpu.host_accesses = ["{{.+}}:{{[0-9]+}}:8", "{{.+}}:{{[0-9]+}}:3"]}
// CHECK-LABEL: func.func private @bounds__thread
// CHECK-SAME: (%[[A:.+]]: memref<?x?xf32, strided<[?, ?], offset: ?>>, %[[I:.+]]: index, %[[J:.+]]: index, %[[S:.+]]: memref<8xf32>)
// CHECK: %[[C0:.+]] = arith.constant 0 : index
// CHECK-NEXT: %[[D0:.+]] = memref.dim %[[A]], %[[C0]]
// CHECK-NEXT: %[[OK0:.+]] = arith.cmpi ult, %[[I]], %[[D0]] : index
// CHECK-NEXT: %[[C1:.+]] = arith.constant 1 : index
// CHECK-NEXT: %[[D1:.+]] = memref.dim %[[A]], %[[C1]]
// CHECK-NEXT: %[[OK1:.+]] = arith.cmpi ult, %[[J]], %[[D1]] : index
// CHECK-NEXT: %[[OK:.+]] = arith.andi %[[OK0]], %[[OK1]] : i1
// CHECK-NEXT: %[[V:.+]] = scf.if %[[OK]] -> (f32) {
// CHECK-NEXT: %[[X:.+]] = memref.load %[[A]][%[[I]], %[[J]]]
// CHECK-NEXT: scf.yield %[[X]] : f32
// CHECK-NEXT: } else {
// CHECK-NEXT: %[[N1:.+]] = arith.constant 1 : i64
// CHECK-NEXT: func.call @__dg_host_oob(%[[N1]]) : (i64) -> ()
// CHECK-NEXT: %[[Z:.+]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: scf.yield %[[Z]] : f32
// CHECK: %[[C8:.+]] = arith.constant 8 : index
// CHECK-NEXT: %[[OKS:.+]] = arith.cmpi ult, %[[J]], %[[C8]] : index
// CHECK-NEXT: scf.if %[[OKS]] {
// CHECK-NEXT: memref.store %[[V]], %[[S]][%[[J]]] : memref<8xf32>
// CHECK-NEXT: } else {
// CHECK-NEXT: %[[N2:.+]] = arith.constant 2 : i64
// CHECK-NEXT: func.call @__dg_host_oob(%[[N2]]) : (i64) -> ()
// CHECK: memref.global "private" @__dg_host_status_flag : memref<1xi64> = dense<0>
// CHECK-LABEL: func.func private @__dg_host_oob
// CHECK-LABEL: func.func @__dg_host_status() -> i64
// CHECK-SAME: llvm.emit_c_interface
func.func @bounds(%A: memref<?x?xf32, strided<[?, ?], offset: ?>>, %i: index, %j: index)
    attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %s = "diffgpu.shared_alloc"() : () -> memref<8xf32, #gpu.address_space<workgroup>>
  %v = memref.load %A[%i, %j] : memref<?x?xf32, strided<[?, ?], offset: ?>>
  memref.store %v, %s[%j] : memref<8xf32, #gpu.address_space<workgroup>>
  return
}

// -----

// math.copysign (rejected by convert-math-to-libm) becomes a select of |a| or
// -|a| on the sign bit of b.

// CHECK-LABEL: func.func private @cs__thread
// CHECK-SAME: (%[[A:.+]]: f64, %[[B:.+]]: f64, %[[OUT:.+]]: memref
// CHECK-NEXT: %[[M:.+]] = math.absf %[[A]] : f64
// CHECK-NEXT: %[[N:.+]] = arith.negf %[[M]] : f64
// CHECK-NEXT: %[[BITS:.+]] = arith.bitcast %[[B]] : f64 to i64
// CHECK-NEXT: %[[Z:.+]] = arith.constant 0 : i64
// CHECK-NEXT: %[[NEG:.+]] = arith.cmpi slt, %[[BITS]], %[[Z]] : i64
// CHECK-NEXT: %[[R:.+]] = arith.select %[[NEG]], %[[N]], %[[M]] : f64
// CHECK-NOT: math.copysign
func.func @cs(%a: f64, %b: f64, %out: memref<?xf64, strided<[?], offset: ?>>)
    attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %r = math.copysign %a, %b : f64
  %c0 = arith.constant 0 : index
  memref.store %r, %out[%c0] : memref<?xf64, strided<[?], offset: ?>>
  return
}

// A derivative's heap tape that cannot grow (lowering/autodiff/tape.py):
// a push whose buffer is full asks for one twice as large; a null pointer
// (or a buffer over DIFFGPU_TAPE_CAP_WORDS) keeps the old buffer, records
// the words asked for in @__dg_tape_overflow and yields the buffer's last
// slot, as every later push of that thread does (its counter past the
// buffer: cnt > cap); a pop reads at most the buffer's last slot. The
// runtime reads the flag after the launch (runtime/cpu.py, runtime/gpu.py);
// a launcher that cannot (XLA) sets @__dg_tape_recover to 0: a trap.
// RUN: diffgpu-opt %s --diffgpu-autodiff | FileCheck %s
// RUN: env DIFFGPU_TAPE_CAP_WORDS=1024 diffgpu-opt %s --diffgpu-autodiff | FileCheck %s --check-prefix=CAPPED
// RUN: diffgpu-opt %s --diffgpu-autodiff --diffgpu-lower-to-host | FileCheck %s --check-prefix=HOST

// s = sin(s) in a while loop: the carried value goes on the tape
!A = memref<?xf64, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @f(%x: f64, %n: index) -> f64 attributes {diffgpu.target = #host} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r:2 = scf.while (%t = %c0, %s = %x) : (index, f64) -> (index, f64) {
    %go = arith.cmpi ult, %t, %n : index
    scf.condition(%go) %t, %s : index, f64
  } do {
  ^bb0(%t2: index, %s2: f64):
    %y = math.sin %s2 : f64
    %t3 = arith.addi %t2, %c1 : index
    scf.yield %t3, %y : index, f64
  }
  return %r#1 : f64
}
func.func @k(%x: f64, %n: index, %seed: f64, %g: !A) attributes {diffgpu.kernel, diffgpu.target = #host} {
  %d = "diffgpu.autodiff"(%seed, %x, %n) {callee = @f, activity = ["active", "const"], diffgpu.target = #host, groups = array<i32: 1, 1>, operandSegmentSizes = array<i32: 2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64, index) -> f64
  %c0 = arith.constant 0 : index
  memref.store %d, %g[%c0] : !A
  return
}
// CHECK-DAG: memref.global @__dg_tape_overflow : memref<1xindex> = dense<0>
// CHECK-DAG: memref.global @__dg_tape_recover : memref<1xindex> = dense<1>
// CHECK-LABEL: func.func @__dg_rev_f_
// CHECK: %[[H:.+]] = memref.alloca() : memref<1xmemref<?xi64>>
// CHECK: %[[N:.+]] = memref.alloca() : memref<1xindex>
// the push: full when the counter reaches the capacity
// CHECK: %[[CNT:.+]] = memref.load %[[N]][%{{.+}}] : memref<1xindex>
// CHECK: %[[BUF:.+]] = memref.load %[[H]][%{{.+}}] : memref<1xmemref<?xi64>>
// CHECK: %[[CAP:.+]] = memref.dim %[[BUF]], %{{.+}} : memref<?xi64>
// CHECK: %[[FULL:.+]] = arith.cmpi uge, %[[CNT]], %[[CAP]] : index
// CHECK: %[[AT:.+]] = scf.if %[[FULL]] -> (index) {
// CHECK:   %[[LAST:.+]] = arith.subi %[[CAP]], %{{.+}} : index
// a tape that overflowed before has cnt > cap: no new malloc
// CHECK:   %[[FRESH:.+]] = arith.cmpi eq, %[[CNT]], %[[CAP]] : index
// CHECK:   scf.if %[[FRESH]] -> (index) {
// CHECK:     %[[NEW:.+]] = arith.muli %[[CAP]], %{{.+}} : index
// CHECK:     %[[NB:.+]] = memref.alloc(%[[NEW]]) : memref<?xi64>
// CHECK:     %[[P:.+]] = memref.extract_aligned_pointer_as_index %[[NB]]
// CHECK:     %[[OK:.+]] = arith.cmpi ne, %[[P]], %{{.+}} : index
// CHECK:     scf.if %[[OK]] -> (index) {
// CHECK:       scf.for %{{.+}} = %{{.+}} to %[[CAP]] step
// CHECK:       memref.store %[[NB]], %[[H]]
// CHECK:       scf.yield %[[CNT]] : index
// CHECK:     } else {
// CHECK:       %[[FLAG:.+]] = memref.get_global @__dg_tape_overflow : memref<1xindex>
// CHECK:       memref.store %[[NEW]], %[[FLAG]][%{{.+}}] : memref<1xindex>
// a trap unless @__dg_tape_recover (1 as compiled) says go on
// CHECK:       %[[RG:.+]] = memref.get_global @__dg_tape_recover : memref<1xindex>
// CHECK:       %[[R:.+]] = memref.load %[[RG]]
// CHECK:       %[[STOP:.+]] = arith.cmpi eq, %[[R]], %{{.+}} : index
// CHECK:       scf.if %[[STOP]] {
// CHECK-NEXT:    llvm.intr.trap
// CHECK:       scf.yield %[[LAST]] : index
// CHECK:   } else {
// CHECK:     scf.yield %[[LAST]] : index
// CHECK: } else {
// CHECK:   scf.yield %[[CNT]] : index
// CHECK: %[[BUF2:.+]] = memref.load %[[H]]
// CHECK: memref.store %{{.+}}, %[[BUF2]][%[[AT]]] : memref<?xi64>
// the pop: clamped to the buffer's last slot
// CHECK: %[[TOP:.+]] = arith.subi %{{.+}}, %{{.+}} : index
// CHECK: memref.store %[[TOP]], %[[N]]
// CHECK: %[[RB:.+]] = memref.load %[[H]]
// CHECK: %[[RCAP:.+]] = memref.dim %[[RB]]
// CHECK: %[[RLAST:.+]] = arith.subi %[[RCAP]], %{{.+}} : index
// CHECK: %[[AT2:.+]] = arith.minui %[[TOP]], %[[RLAST]] : index
// CHECK: memref.load %[[RB]][%[[AT2]]] : memref<?xi64>

// with the test cap, a buffer over it counts as a failed malloc, and is freed
// CAPPED: %[[NB:.+]] = memref.alloc(%[[NEW:.+]]) : memref<?xi64>
// CAPPED: %[[P:.+]] = memref.extract_aligned_pointer_as_index %[[NB]]
// CAPPED: %[[NN:.+]] = arith.cmpi ne, %[[P]], %{{.+}} : index
// CAPPED: %[[C:.+]] = arith.constant 1024 : index
// CAPPED: %[[UNDER:.+]] = arith.cmpi ule, %[[NEW]], %[[C]] : index
// CAPPED: %[[OK:.+]] = arith.andi %[[NN]], %[[UNDER]] : i1
// CAPPED: scf.if %[[OK]] -> (index) {
// CAPPED: } else {
// CAPPED:   memref.dealloc %[[NB]]
// CAPPED:   memref.get_global @__dg_tape_overflow

// on the host, the runtime reads and clears the flag through a C function
// HOST: memref.global @__dg_tape_overflow : memref<1xindex> = dense<0>
// HOST: func.func @__dg_host_tape_status() -> i64 attributes {{{.*}}llvm.emit_c_interface}
// HOST-NEXT: %[[G:.+]] = memref.get_global @__dg_tape_overflow : memref<1xindex>
// HOST: %[[V:.+]] = memref.load %[[G]]
// HOST: memref.store %{{.+}}, %[[G]]
// HOST: %[[W:.+]] = arith.index_cast %[[V]] : index to i64
// HOST: return %[[W]] : i64

// diffgpu-specialize (lowering/facts/specialize.py, specialize_shapes.py) under the
// launch fact `extents`: `memref.dim` of an array reads the size of the first
// array with the same extent (here %o for %x and %y; %w is shorter), in the
// kernel and in the function only it calls. In `diffgpu.noalias` functions
// the guards on one extent then become one value (pure CSE) and one
// `scf.if`, even past the active scalar's slot ops between them.
// RUN: diffgpu-opt %s --split-input-file --diffgpu-specialize | FileCheck %s

!A = memref<?xf32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func private @rev(%o: !A, %x: !A, %y: !A, %w: !A) -> f32 attributes {diffgpu.noalias, diffgpu.target = #host} {
  %slot = memref.alloca() : memref<f32>
  %b = "diffgpu.block_id"() {dim = 0 : i64} : () -> index
  %n = "diffgpu.block_dim"() {dim = 0 : i64} : () -> index
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %m = arith.muli %b, %n : index
  %i = arith.addi %m, %t : index
  %c0 = arith.constant 0 : index
  %lx = memref.dim %x, %c0 : !A
  %in = arith.cmpi slt, %i, %lx : index
  scf.if %in {
    %v = memref.load %x[%i] : !A
    memref.store %v, %o[%i] : !A
    memref.store %v, %slot[] : memref<f32>
  }
  %s = memref.load %slot[] : memref<f32>
  %b2 = "diffgpu.block_id"() {dim = 0 : i64} : () -> index
  %n2 = "diffgpu.block_dim"() {dim = 0 : i64} : () -> index
  %t2 = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %m2 = arith.muli %b2, %n2 : index
  %i2 = arith.addi %m2, %t2 : index
  %c0b = arith.constant 0 : index
  %ly = memref.dim %y, %c0b : !A
  %in2 = arith.cmpi slt, %i2, %ly : index
  scf.if %in2 {
    %z = arith.constant 0.0 : f32
    memref.store %z, %y[%i2] : !A
  }
  %lw = memref.dim %w, %c0b : !A
  %in3 = arith.cmpi slt, %i2, %lw : index
  scf.if %in3 {
    %z = arith.constant 1.0 : f32
    memref.store %z, %w[%i2] : !A
  }
  return %s : f32
}
func.func @k(%o: !A, %x: !A, %y: !A, %w: !A) attributes {diffgpu.kernel, diffgpu.target = #host, diffgpu.noalias, diffgpu.launch_facts = {noalias = true, contiguous = [true, true, true, true], unit_dims = [1 : i64, 2 : i64], aligned = [true, true, true, true], grid_div = false, grid_div16 = false, extents = [[0 : i64], [0 : i64], [0 : i64], [3 : i64]], index32 = false, ranks = [1 : i64, 1 : i64, 1 : i64, 1 : i64]}} {
  %c0 = arith.constant 0 : index
  %ly = memref.dim %y, %c0 : !A
  %s = func.call @rev(%o, %x, %y, %w) : (!A, !A, !A, !A) -> f32
  return
}
// CHECK-LABEL: func.func private @rev
// CHECK-SAME: (%[[O:[a-z0-9]+]]: memref<{{[^%]+}}, %[[X:[a-z0-9]+]]: memref<{{[^%]+}}, %[[Y:[a-z0-9]+]]: memref<{{[^%]+}}, %[[W:[a-z0-9]+]]: memref
// CHECK: %[[SLOT:.+]] = memref.alloca()
// CHECK: %[[LEN:.+]] = memref.dim %[[O]], %{{.+}}
// CHECK: %[[IN:.+]] = arith.cmpi slt, %{{.+}}, %[[LEN]]
// CHECK: scf.if %[[IN]] {
// CHECK: memref.store %{{.+}}, %[[O]]
// CHECK: memref.store %{{.+}}, %[[SLOT]]
// CHECK: memref.store %{{.+}}, %[[Y]]
// CHECK-NEXT: }
// CHECK-NEXT: %{{.+}} = memref.load %[[SLOT]]
// CHECK: %[[LW:.+]] = memref.dim %[[W]], %{{.+}}
// CHECK: %[[IN3:.+]] = arith.cmpi slt, %{{.+}}, %[[LW]]
// CHECK: scf.if %[[IN3]] {
// CHECK-NOT: scf.if
// CHECK-LABEL: func.func @k
// CHECK-SAME: (%[[KO:[a-z0-9]+]]: memref
// CHECK: memref.dim %[[KO]], %{{.+}}

// -----

// Without the fact nothing changes: the guards stay apart.
!A = memref<?xf32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @k(%o: !A, %x: !A) attributes {diffgpu.kernel, diffgpu.target = #host} {
  %i = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %c0 = arith.constant 0 : index
  %lx = memref.dim %x, %c0 : !A
  %in = arith.cmpi slt, %i, %lx : index
  scf.if %in {
    %v = memref.load %x[%i] : !A
    memref.store %v, %o[%i] : !A
  }
  %lo = memref.dim %o, %c0 : !A
  %in2 = arith.cmpi slt, %i, %lo : index
  scf.if %in2 {
    %z = arith.constant 0.0 : f32
    memref.store %z, %x[%i] : !A
  }
  return
}
// CHECK-LABEL: func.func @k
// CHECK: memref.dim %{{.+}}, %{{.+}}
// CHECK: scf.if
// CHECK: memref.dim %{{.+}}, %{{.+}}
// CHECK: scf.if

// RUN: diffgpu-opt %s --pass-pipeline='builtin.module(diffgpu-chunk-blocks{ops=2})' | FileCheck %s
// RUN: diffgpu-opt %s --pass-pipeline='builtin.module(diffgpu-chunk-blocks{ops=2},convert-scf-to-cf)' | FileCheck %s --check-prefix=CF
// RUN: not diffgpu-opt %s --pass-pipeline='builtin.module(diffgpu-chunk-blocks{ops=0})' 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: diffgpu-chunk-blocks: ops must be at least 1, got 0

// Seven ops (the alloca apart) in chunks of two: the first two stay, each
// next two go into an execute_region nested in the one before; the static
// alloca stays in the block, first; the terminator's operands defined deeper
// come out as results.
// CHECK-LABEL: func.func @seven
// CHECK:      %[[S:.+]] = memref.alloca() : memref<f32>
// CHECK-NEXT: %[[A:.+]] = arith.addf %arg0, %arg0
// CHECK-NEXT: %[[B:.+]] = arith.mulf %[[A]], %arg0
// CHECK-NEXT: %[[R:.+]]:2 = scf.execute_region -> (f32, f32) {
// CHECK-NEXT:   %[[C:.+]] = scf.if %arg1 -> (f32) {
// CHECK:        memref.store %[[C]], %[[S]][]
// CHECK-NEXT:   %[[R2:.+]]:2 = scf.execute_region -> (f32, f32) {
// CHECK-NEXT:     %[[D:.+]] = arith.subf %[[C]], %[[B]]
// CHECK-NEXT:     %[[E:.+]] = arith.divf %[[D]], %[[A]]
// CHECK-NEXT:     %[[R3:.+]] = scf.execute_region -> f32 {
// CHECK-NEXT:       %[[F:.+]] = arith.addf %[[E]], %[[D]]
// CHECK-NEXT:       scf.yield %[[F]] : f32
// CHECK-NEXT:     }
// CHECK-NEXT:     scf.yield %[[E]], %[[R3]] : f32, f32
// CHECK-NEXT:   }
// CHECK-NEXT:   scf.yield %[[R2]]#0, %[[R2]]#1 : f32, f32
// CHECK-NEXT: }
// CHECK-NEXT: return %[[B]], %[[R]]#0, %[[R]]#1 : f32, f32, f32

// convert-scf-to-cf lowers the regions back into plain blocks.
// CF-LABEL: func.func @seven
// CF-NOT: scf.
// CF: return
func.func @seven(%x: f32, %c: i1) -> (f32, f32, f32) {
  %a = arith.addf %x, %x : f32
  %b = arith.mulf %a, %x : f32
  %s = memref.alloca() : memref<f32>
  %v = scf.if %c -> (f32) {
    scf.yield %a : f32
  } else {
    scf.yield %b : f32
  }
  memref.store %v, %s[] : memref<f32>
  %d = arith.subf %v, %b : f32
  %e = arith.divf %d, %a : f32
  %f = arith.addf %e, %d : f32
  return %b, %e, %f : f32, f32, f32
}

// A block of at most 2 * ops ops before its terminator stays as it is.
// CHECK-LABEL: func.func @short
// CHECK-NOT: scf.execute_region
// CHECK: return
func.func @short(%x: f32) -> f32 {
  %a = arith.addf %x, %x : f32
  %b = arith.mulf %a, %x : f32
  %c = arith.subf %b, %a : f32
  %d = arith.divf %c, %x : f32
  return %d : f32
}

// The module's body (five functions, more than 2 * ops) is no code: not cut.
// CHECK-LABEL: func.func @one
// CHECK-NEXT: return
// CHECK-LABEL: func.func @two
// CHECK-LABEL: func.func @three
func.func @one() {
  return
}
func.func @two() {
  return
}
func.func @three() {
  return
}

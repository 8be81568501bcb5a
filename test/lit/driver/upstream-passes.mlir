// Upstream MLIR passes run by name next to ours, as flags (in command-line
// order; passes anchored on func.func are nested implicitly, as in mlir-opt)
// and inside -p / --pass-pipeline.
// RUN: diffgpu-opt %s --canonicalize --diffgpu-verify-targets --cse | FileCheck %s
// RUN: diffgpu-opt %s -p 'builtin.module(canonicalize,diffgpu-verify-targets,cse)' | FileCheck %s
// RUN: diffgpu-opt %s --pass-pipeline='canonicalize,func.func(cse)' | FileCheck %s
// RUN: diffgpu-opt %s --affine-loop-invariant-code-motion --diffgpu-verify-targets | FileCheck %s --check-prefix=LICM
// RUN: diffgpu-opt %s --convert-scf-to-cf | FileCheck %s --check-prefix=CF

// canonicalize drops the dead constant and merges the equal ones, CSE then
// merges the two equal additions: both stores use one index.
// CHECK-LABEL: func.func @k
// CHECK-NEXT: %[[C:.+]] = arith.constant 3 : index
// CHECK-NEXT: %[[T:.+]] = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
// CHECK-NEXT: %[[S:.+]] = arith.addi %[[T]], %[[C]] : index
// CHECK-NEXT: memref.store %{{.+}}, %{{.+}}[%[[S]]]
// CHECK-NEXT: memref.store %{{.+}}, %{{.+}}[%[[S]]]
// CHECK-NEXT: scf.if
// LICM-LABEL: func.func @k
// LICM-COUNT-2: arith.addi
// CF-LABEL: func.func @k
// CF-NOT: scf.
// CF: cf.cond_br
func.func @k(%A: memref<?xf32>, %v: f32, %p: i1) attributes {diffgpu.kernel, diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  %dead = arith.constant 7 : index
  %c1 = arith.constant 3 : index
  %c2 = arith.constant 3 : index
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %s = arith.addi %t, %c1 : index
  %u = arith.addi %t, %c2 : index
  memref.store %v, %A[%s] : memref<?xf32>
  memref.store %v, %A[%u] : memref<?xf32>
  scf.if %p {
    memref.store %v, %A[%s] : memref<?xf32>
  }
  return
}

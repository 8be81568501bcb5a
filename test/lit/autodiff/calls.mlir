// Calls inside a differentiated function: the forward sweep calls the
// callee's augmented forward (its primal, pushing what its reverse needs on
// the caller's tape, passed as two arguments), the reverse sweep calls its
// reverse in the mirrored order; a callee that overwrites memory it reads
// (here twice in a row) is thus never re-run nor re-read.
// RUN: diffgpu-opt %s --diffgpu-autodiff --diffgpu-verify-targets | FileCheck %s

!A = memref<?xf64, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @sq(%A: !A, %i: index) -> f64 attributes {diffgpu.target = #host} {
  %a = memref.load %A[%i] : !A
  %p = arith.mulf %a, %a : f64
  memref.store %p, %A[%i] : !A
  return %a : f64
}
func.func @f(%A: !A) attributes {diffgpu.target = #host} {
  %c0 = arith.constant 0 : index
  %r = func.call @sq(%A, %c0) : (!A, index) -> f64
  %r2 = func.call @sq(%A, %c0) : (!A, index) -> f64
  return
}
func.func @k(%A: !A, %dA: !A) attributes {diffgpu.kernel, diffgpu.target = #host} {
  "diffgpu.autodiff"(%A, %dA) {callee = @f, activity = ["dup"], diffgpu.target = #host, groups = array<i32: 2>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (!A, !A) -> ()
  return
}
// CHECK-LABEL: func.func @__dg_rev_f_
// CHECK-SAME: (%[[A:[a-z0-9]+]]: memref<{{.+}}>, %[[DA:[a-z0-9]+]]: memref<{{.+}}>)
// CHECK:      %[[TAPE:.+]] = memref.alloca() : memref<1xmemref<?xi64>>
// CHECK:      %[[CNT:.+]] = memref.alloca() : memref<1xindex>
// CHECK:      call @[[AUG:__dg_aug_sq_[0-9a-f]+]](%[[A]], %[[I:[a-z0-9_]+]], %[[TAPE]], %[[CNT]])
// CHECK-NEXT: call @[[AUG]](%[[A]], %[[I]], %[[TAPE]], %[[CNT]])
// CHECK-NEXT: %[[Z1:.+]] = arith.constant 0.0
// CHECK-NEXT: call @[[REV:__dg_revt_sq_[0-9a-f]+]](%[[A]], %[[I]], %[[DA]], %[[Z1]], %[[TAPE]], %[[CNT]])
// CHECK-NEXT: %[[Z2:.+]] = arith.constant 0.0
// CHECK-NEXT: call @[[REV]](%[[A]], %[[I]], %[[DA]], %[[Z2]], %[[TAPE]], %[[CNT]])
// CHECK:      memref.dealloc
// CHECK-LABEL: func.func @__dg_aug_sq_
// CHECK-SAME: (%[[A:[a-z0-9]+]]: memref<{{.+}}>, %[[I:[a-z0-9]+]]: index, %[[T:[a-z0-9]+]]: memref<1xmemref<?xi64>>, %[[N:[a-z0-9]+]]: memref<1xindex>) -> f64
// CHECK-NEXT: %[[X:.+]] = memref.load %[[A]][%[[I]]]
// CHECK-NEXT: %[[P:.+]] = arith.mulf %[[X]], %[[X]]
// CHECK-NEXT: memref.store %[[P]], %[[A]][%[[I]]]
// CHECK-NEXT: %[[W:.+]] = arith.bitcast %[[X]] {diffgpu.tape_push = [[TAG:[0-9]+]] : i64} : f64 to i64
// CHECK:      memref.store %[[W]], %{{.+}}[%{{.+}}] : memref<?xi64>
// CHECK:      return %[[X]] : f64
// CHECK-LABEL: func.func @__dg_revt_sq_
// CHECK-SAME: (%[[A:[a-z0-9]+]]: memref<{{.+}}>, %[[I:[a-z0-9]+]]: index, %[[DA:[a-z0-9]+]]: memref<{{.+}}>, %[[DR:[a-z0-9]+]]: f64, %[[T:[a-z0-9]+]]: memref<1xmemref<?xi64>>, %[[N:[a-z0-9]+]]: memref<1xindex>)
// CHECK:      %[[W:.+]] = memref.load %{{.+}}[%{{.+}}] : memref<?xi64>
// CHECK-NEXT: %[[X:.+]] = arith.bitcast %[[W]] {diffgpu.tape_pop = [[TAG]] : i64} : i64 to f64
// CHECK-NEXT: %[[D:.+]] = memref.load %[[DA]][%[[I]]]
// CHECK-NEXT: %[[Z:.+]] = arith.constant 0.0
// CHECK-NEXT: memref.store %[[Z]], %[[DA]][%[[I]]]
// CHECK-NEXT: %[[T1:.+]] = arith.mulf %[[D]], %[[X]]
// CHECK-NEXT: %[[S1:.+]] = arith.addf %[[DR]], %[[T1]]
// CHECK-NEXT: %[[T2:.+]] = arith.mulf %[[D]], %[[X]]
// CHECK-NEXT: %[[S2:.+]] = arith.addf %[[S1]], %[[T2]]
// CHECK-NEXT: "diffgpu.atomic_add"(%[[DA]], %[[S2]], %[[I]])
// CHECK-NEXT: return

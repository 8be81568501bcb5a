// RUN: diffgpu-opt %s --diffgpu-drop-wrap-flags | FileCheck %s

// Index arithmetic of the memref lowering loses its wrap flags, so that an
// access through a negative stride is not poison.
// CHECK-LABEL: llvm.func @load_strided
// CHECK-SAME: (%[[P:.+]]: !llvm.ptr, %[[I:.+]]: i64, %[[S:.+]]: i64)
// CHECK-NEXT: %[[M:.+]] = llvm.mul %[[I]], %[[S]] : i64
// CHECK-NEXT: %[[A:.+]] = llvm.add %[[M]], %[[I]] : i64
// CHECK-NEXT: %[[G:.+]] = llvm.getelementptr %[[P]][%[[A]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NEXT: llvm.load %[[G]]
// CHECK-NOT: overflow
llvm.func @load_strided(%p: !llvm.ptr, %i: i64, %s: i64) -> f32 {
  %m = llvm.mul %i, %s overflow<nsw, nuw> : i64
  %a = llvm.add %m, %i overflow<nuw> : i64
  %g = llvm.getelementptr inbounds|nuw %p[%a] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %v = llvm.load %g : !llvm.ptr -> f32
  llvm.return %v : f32
}

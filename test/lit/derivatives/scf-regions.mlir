// scf.execute_region and scf.index_switch: one region runs once, so their
// reverse is the same op around the reversed region (the adjoint of the
// result seeds the yielded value), and their tangents go through a slot as
// for scf.if.
// RUN: diffgpu-opt %s --split-input-file --diffgpu-autodiff | FileCheck %s

#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">

// execute_region, reverse mode: d(x * x)/dx = 2x
func.func @f(%x: f64) -> f64 attributes {diffgpu.target = #host} {
  %r = scf.execute_region -> f64 {
    %s = arith.mulf %x, %x : f64
    scf.yield %s : f64
  }
  return %r : f64
}
func.func @k(%x: f64, %d: f64) attributes {diffgpu.kernel, diffgpu.target = #host} {
  %g = "diffgpu.autodiff"(%d, %x) {callee = @f, activity = ["active"], diffgpu.target = #host, groups = array<i32: 1>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64) -> f64
  return
}
// CHECK-LABEL: func.func @__dg_rev_f_
// CHECK-SAME: (%[[X:.+]]: f64, %[[D:.+]]: f64) -> f64
// CHECK: %[[SLOT:.+]] = memref.alloca() : memref<f64>
// CHECK: scf.execute_region -> f64 {
// CHECK-NEXT: %[[S:.+]] = arith.mulf %[[X]], %[[X]]
// CHECK-NEXT: scf.yield %[[S]]
// CHECK: scf.execute_region {
// CHECK-NEXT: %[[A:.+]] = arith.mulf %[[D]], %[[X]]
// CHECK: memref.store %{{.+}}, %[[SLOT]][]
// CHECK: %[[B:.+]] = arith.mulf %[[D]], %[[X]]
// CHECK: memref.store %{{.+}}, %[[SLOT]][]
// CHECK-NEXT: scf.yield
// CHECK: %[[G:.+]] = memref.load %[[SLOT]][]
// CHECK: return %[[G]]

// -----

#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">

// execute_region, forward mode
func.func @f(%x: f64) -> f64 attributes {diffgpu.target = #host} {
  %r = scf.execute_region -> f64 {
    %s = math.sin %x : f64
    scf.yield %s : f64
  }
  return %r : f64
}
func.func @k(%x: f64, %t: f64) attributes {diffgpu.kernel, diffgpu.target = #host} {
  %r = "diffgpu.fwddiff"(%x, %t) {callee = @f, activity = ["dup"], diffgpu.target = #host, groups = array<i32: 2>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64) -> f64
  return
}
// CHECK-LABEL: func.func @__dg_fwd_f_
// CHECK-SAME: (%[[X:.+]]: f64, %[[T:.+]]: f64) -> (f64, f64)
// CHECK: %[[SLOT:.+]] = memref.alloca() : memref<f64>
// CHECK: %[[R:.+]] = scf.execute_region -> f64 {
// CHECK-NEXT: %[[S:.+]] = math.sin %[[X]]
// CHECK-NEXT: %[[C:.+]] = math.cos %[[X]]
// CHECK-NEXT: %[[DS:.+]] = arith.mulf %[[T]], %[[C]]
// CHECK-NEXT: memref.store %[[DS]], %[[SLOT]][]
// CHECK-NEXT: scf.yield %[[S]]
// CHECK: %[[DR:.+]] = memref.load %[[SLOT]][]
// CHECK-NEXT: return %[[R]], %[[DR]]

// -----

#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">

// index_switch, reverse mode: case 1 yields x * x, the default sin(x)
func.func @f(%x: f64, %k: index) -> f64 attributes {diffgpu.target = #host} {
  %r = scf.index_switch %k -> f64
  case 1 {
    %s = arith.mulf %x, %x : f64
    scf.yield %s : f64
  }
  default {
    %s = math.sin %x : f64
    scf.yield %s : f64
  }
  return %r : f64
}
func.func @kk(%x: f64, %k: index, %d: f64) attributes {diffgpu.kernel, diffgpu.target = #host} {
  %g = "diffgpu.autodiff"(%d, %x, %k) {callee = @f, activity = ["active", "const"], diffgpu.target = #host, groups = array<i32: 1, 1>, operandSegmentSizes = array<i32: 2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64, index) -> f64
  return
}
// CHECK-LABEL: func.func @__dg_rev_f_
// CHECK-SAME: (%[[X:.+]]: f64, %[[K:.+]]: index, %[[D:.+]]: f64) -> f64
// CHECK: scf.index_switch %[[K]] -> f64
// CHECK: scf.index_switch %[[K]]{{ *$}}
// CHECK-NEXT: case 1 {
// CHECK-NEXT: arith.mulf %[[D]], %[[X]]
// CHECK: default {
// CHECK-NEXT: %[[C:.+]] = math.cos %[[X]]
// CHECK-NEXT: arith.mulf %[[D]], %[[C]]

// -----

#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">

// index_switch, forward mode
func.func @f(%x: f64, %k: index) -> f64 attributes {diffgpu.target = #host} {
  %r = scf.index_switch %k -> f64
  case 1 {
    %s = arith.mulf %x, %x : f64
    scf.yield %s : f64
  }
  default {
    scf.yield %x : f64
  }
  return %r : f64
}
func.func @kk(%x: f64, %t: f64, %k: index) attributes {diffgpu.kernel, diffgpu.target = #host} {
  %r = "diffgpu.fwddiff"(%x, %t, %k) {callee = @f, activity = ["dup", "const"], diffgpu.target = #host, groups = array<i32: 2, 1>, operandSegmentSizes = array<i32: 2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64, index) -> f64
  return
}
// CHECK-LABEL: func.func @__dg_fwd_f_
// CHECK-SAME: (%[[X:.+]]: f64, %[[K:.+]]: index, %[[T:.+]]: f64) -> (f64, f64)
// CHECK: %[[SLOT:.+]] = memref.alloca() : memref<f64>
// CHECK: %[[R:.+]] = scf.index_switch %[[K]] -> f64
// CHECK: case 1 {
// CHECK: memref.store %{{.+}}, %[[SLOT]][]
// CHECK: default {
// CHECK-NEXT: memref.store %[[T]], %[[SLOT]][]
// CHECK-NEXT: scf.yield %[[X]]
// CHECK: %[[DR:.+]] = memref.load %[[SLOT]][]
// CHECK-NEXT: return %[[R]], %[[DR]]

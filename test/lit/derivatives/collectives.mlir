// Derivative rules of the collectives (lowering/autodiff/rules/collectives.py),
// reverse and forward mode: each transposes into collectives again.
// RUN: diffgpu-opt %s --split-input-file --diffgpu-autodiff | FileCheck %s

!A = memref<?xf32, strided<[?], offset: ?>>
#sm90 = #nvvm.target<O = 3, chip = "sm_90">

// reverse: the adjoint of a warp sum is the warp sum of the adjoints
func.func @f(%X: !A) attributes {diffgpu.target = #sm90} {
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %x = memref.load %X[%t] : !A
  %r = "diffgpu.warp_reduce"(%x) {kind = "sum"} : (f32) -> f32
  memref.store %r, %X[%t] : !A
  return
}
func.func @k_warp_sum(%X: !A, %dX: !A) attributes {diffgpu.kernel, diffgpu.target = #sm90} {
  "diffgpu.autodiff"(%X, %dX) {callee = @f, activity = ["dup"], diffgpu.target = #sm90, groups = array<i32: 2>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (!A, !A) -> ()
  return
}
// CHECK-LABEL: func.func @__dg_rev_f_
// CHECK-SAME: (%[[X:[a-z0-9]+]]: memref<{{.+}}>, %[[DX:[a-z0-9]+]]: memref<{{.+}}>)
// CHECK: %[[T:.+]] = "diffgpu.thread_id"()
// CHECK: %[[D:.+]] = memref.load %[[DX]][%[[T]]]
// CHECK: %[[S:.+]] = "diffgpu.warp_reduce"(%[[D]]) {kind = "sum"}
// CHECK-NEXT: "diffgpu.atomic_add"(%[[DX]], %[[S]], %[[T]])

// -----

!A = memref<?xf32, strided<[?], offset: ?>>
#sm90 = #nvvm.target<O = 3, chip = "sm_90">

// reverse: a block max sends the block sum of the adjoints to the lowest thread holding the maximum
func.func @f(%X: !A) attributes {diffgpu.target = #sm90} {
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %x = memref.load %X[%t] : !A
  %r = "diffgpu.block_reduce"(%x) {kind = "max"} : (f32) -> f32
  memref.store %r, %X[%t] : !A
  return
}
func.func @k_block_max(%X: !A, %dX: !A) attributes {diffgpu.kernel, diffgpu.target = #sm90} {
  "diffgpu.autodiff"(%X, %dX) {callee = @f, activity = ["dup"], diffgpu.target = #sm90, groups = array<i32: 2>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (!A, !A) -> ()
  return
}
// CHECK-LABEL: func.func @__dg_rev_f_
// CHECK-SAME: (%[[X:[a-z0-9]+]]: memref<{{.+}}>, %[[DX:[a-z0-9]+]]: memref<{{.+}}>)
// CHECK: %[[V:.+]] = memref.load %[[X]]
// CHECK-NEXT: %[[M:.+]] = "diffgpu.block_reduce"(%[[V]]) {kind = "max"}
// CHECK: %[[D:.+]] = memref.load %[[DX]]
// CHECK: %[[S:.+]] = "diffgpu.block_reduce"(%[[D]]) {kind = "sum"}
// CHECK: %[[ME:.+]] = arith.index_cast %{{.+}} : index to i32
// CHECK-NEXT: %[[HOLD:.+]] = arith.cmpf oeq, %[[V]], %[[M]]
// CHECK-NEXT: %[[BIG:.+]] = arith.constant 2147483647 : i32
// CHECK-NEXT: %[[ID:.+]] = arith.select %[[HOLD]], %[[ME]], %[[BIG]]
// CHECK-NEXT: %[[WIN:.+]] = "diffgpu.block_reduce"(%[[ID]]) {kind = "min"} : (i32) -> i32
// CHECK-NEXT: %[[IS:.+]] = arith.cmpi eq, %[[ME]], %[[WIN]]
// CHECK-NEXT: %[[Z:.+]] = arith.constant 0.0
// CHECK-NEXT: %[[G:.+]] = arith.select %[[IS]], %[[S]], %[[Z]]
// CHECK-NEXT: "diffgpu.atomic_add"(%[[DX]], %[[G]],

// -----

!A = memref<?xf32, strided<[?], offset: ?>>
#sm90 = #nvvm.target<O = 3, chip = "sm_90">

// reverse: the adjoint of a prefix sum is the suffix sum of the adjoints
func.func @f(%X: !A) attributes {diffgpu.target = #sm90} {
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %x = memref.load %X[%t] : !A
  %r = "diffgpu.block_scan"(%x) {reverse = false} : (f32) -> f32
  memref.store %r, %X[%t] : !A
  return
}
func.func @k_block_scan(%X: !A, %dX: !A) attributes {diffgpu.kernel, diffgpu.target = #sm90} {
  "diffgpu.autodiff"(%X, %dX) {callee = @f, activity = ["dup"], diffgpu.target = #sm90, groups = array<i32: 2>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (!A, !A) -> ()
  return
}
// CHECK-LABEL: func.func @__dg_rev_f_
// CHECK-SAME: (%[[X:[a-z0-9]+]]: memref<{{.+}}>, %[[DX:[a-z0-9]+]]: memref<{{.+}}>)
// CHECK: "diffgpu.block_scan"(%{{.+}}) {reverse = false}
// CHECK: %[[D:.+]] = memref.load %[[DX]]
// CHECK: %[[S:.+]] = "diffgpu.block_scan"(%[[D]]) {reverse = true}
// CHECK-NEXT: "diffgpu.atomic_add"(%[[DX]], %[[S]],

// -----

!A = memref<?xf32, strided<[?], offset: ?>>
#sm90 = #nvvm.target<O = 3, chip = "sm_90">

// reverse: xor is its own inverse: the adjoint is shuffled back with the same mask
func.func @f(%X: !A) attributes {diffgpu.target = #sm90} {
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %x = memref.load %X[%t] : !A
  %k = arith.constant 5 : i32
  %r = "diffgpu.shuffle"(%x, %k) {mode = "xor"} : (f32, i32) -> f32
  memref.store %r, %X[%t] : !A
  return
}
func.func @k_shfl_xor(%X: !A, %dX: !A) attributes {diffgpu.kernel, diffgpu.target = #sm90} {
  "diffgpu.autodiff"(%X, %dX) {callee = @f, activity = ["dup"], diffgpu.target = #sm90, groups = array<i32: 2>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (!A, !A) -> ()
  return
}
// CHECK-LABEL: func.func @__dg_rev_f_
// CHECK-SAME: (%[[X:[a-z0-9]+]]: memref<{{.+}}>, %[[DX:[a-z0-9]+]]: memref<{{.+}}>)
// CHECK: %[[K:.+]] = arith.constant 5 : i32
// CHECK-NEXT: "diffgpu.shuffle"(%{{.+}}, %[[K]]) {mode = "xor"}
// CHECK: %[[D:.+]] = memref.load %[[DX]]
// CHECK: %[[S:.+]] = "diffgpu.shuffle"(%[[D]], %[[K]]) {mode = "xor"}
// CHECK-NEXT: "diffgpu.atomic_add"(%[[DX]], %[[S]],

// -----

!A = memref<?xf32, strided<[?], offset: ?>>
#sm90 = #nvvm.target<O = 3, chip = "sm_90">

// reverse: shfl_down's adjoint is shfl_up, lanes below the offset get 0, lanes that read themselves keep theirs
func.func @f(%X: !A) attributes {diffgpu.target = #sm90} {
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %x = memref.load %X[%t] : !A
  %k = arith.constant 3 : i32
  %r = "diffgpu.shuffle"(%x, %k) {mode = "down"} : (f32, i32) -> f32
  memref.store %r, %X[%t] : !A
  return
}
func.func @k_shfl_down(%X: !A, %dX: !A) attributes {diffgpu.kernel, diffgpu.target = #sm90} {
  "diffgpu.autodiff"(%X, %dX) {callee = @f, activity = ["dup"], diffgpu.target = #sm90, groups = array<i32: 2>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (!A, !A) -> ()
  return
}
// CHECK-LABEL: func.func @__dg_rev_f_
// CHECK-SAME: (%[[X:[a-z0-9]+]]: memref<{{.+}}>, %[[DX:[a-z0-9]+]]: memref<{{.+}}>)
// CHECK: "diffgpu.shuffle"(%{{.+}}) {mode = "down"}
// CHECK: %[[D:.+]] = memref.load %[[DX]]
// CHECK: %[[LANE:.+]] = arith.remui %{{.+}}, %{{.+}} : index
// CHECK: %[[OWN:.+]] = arith.ori
// CHECK-NEXT: %[[MOVED:.+]] = arith.cmpi uge, %[[LANE]], %{{.+}} : index
// CHECK-NEXT: %[[K:.+]] = arith.constant 3 : i32
// CHECK-NEXT: %[[UP:.+]] = "diffgpu.shuffle"(%[[D]], %[[K]]) {mode = "up"}
// CHECK-NEXT: %[[Z:.+]] = arith.constant 0.0
// CHECK-NEXT: %[[A:.+]] = arith.select %[[MOVED]], %[[UP]], %[[Z]]
// CHECK-NEXT: %[[Z2:.+]] = arith.constant 0.0
// CHECK-NEXT: %[[B:.+]] = arith.select %[[OWN]], %[[D]], %[[Z2]]
// CHECK-NEXT: %[[G:.+]] = arith.addf %[[A]], %[[B]]
// CHECK-NEXT: "diffgpu.atomic_add"(%[[DX]], %[[G]],

// -----

!A = memref<?xf32, strided<[?], offset: ?>>
#sm90 = #nvvm.target<O = 3, chip = "sm_90">

// reverse: a broadcast from a constant lane sends the warp's sum of the adjoints to that lane
func.func @f(%X: !A) attributes {diffgpu.target = #sm90} {
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %x = memref.load %X[%t] : !A
  %k = arith.constant 4 : i32
  %r = "diffgpu.shuffle"(%x, %k) {mode = "idx"} : (f32, i32) -> f32
  memref.store %r, %X[%t] : !A
  return
}
func.func @k_shfl_idx(%X: !A, %dX: !A) attributes {diffgpu.kernel, diffgpu.target = #sm90} {
  "diffgpu.autodiff"(%X, %dX) {callee = @f, activity = ["dup"], diffgpu.target = #sm90, groups = array<i32: 2>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (!A, !A) -> ()
  return
}
// CHECK-LABEL: func.func @__dg_rev_f_
// CHECK-SAME: (%[[X:[a-z0-9]+]]: memref<{{.+}}>, %[[DX:[a-z0-9]+]]: memref<{{.+}}>)
// CHECK: %[[D:.+]] = memref.load %[[DX]]
// CHECK: %[[LANE:.+]] = arith.remui
// CHECK: %[[PRESENT:.+]] = arith.cmpi ult
// CHECK-NEXT: %[[S:.+]] = "diffgpu.warp_reduce"(%[[D]]) {kind = "sum"}
// CHECK-NEXT: %[[C4:.+]] = arith.constant 4 : index
// CHECK-NEXT: %[[AT:.+]] = arith.cmpi eq, %[[LANE]], %[[C4]]
// CHECK-NEXT: %[[Z:.+]] = arith.constant 0.0
// CHECK-NEXT: %[[MINE:.+]] = arith.select %[[AT]], %[[S]], %[[Z]]
// CHECK-NEXT: %[[G:.+]] = arith.select %[[PRESENT]], %[[MINE]], %[[D]]
// CHECK-NEXT: "diffgpu.atomic_add"(%[[DX]], %[[G]],

// -----

!A = memref<?xf32, strided<[?], offset: ?>>
#sm90 = #nvvm.target<O = 3, chip = "sm_90">

// forward: the tangent of a warp sum is the warp sum of the tangents
func.func @f(%X: !A) attributes {diffgpu.target = #sm90} {
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %x = memref.load %X[%t] : !A
  %r = "diffgpu.warp_reduce"(%x) {kind = "sum"} : (f32) -> f32
  memref.store %r, %X[%t] : !A
  return
}
func.func @k_fwd_warp_sum(%X: !A, %dX: !A) attributes {diffgpu.kernel, diffgpu.target = #sm90} {
  "diffgpu.fwddiff"(%X, %dX) {callee = @f, activity = ["dup"], diffgpu.target = #sm90, groups = array<i32: 2>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (!A, !A) -> ()
  return
}
// CHECK-LABEL: func.func @__dg_fwd_f_
// CHECK-SAME: (%[[X:[a-z0-9]+]]: memref<{{.+}}>, %[[TX:[a-z0-9]+]]: memref<{{.+}}>)
// CHECK: %[[V:.+]] = memref.load %[[X]]
// CHECK-NEXT: %[[TV:.+]] = memref.load %[[TX]]
// CHECK-NEXT: %[[R:.+]] = "diffgpu.warp_reduce"(%[[V]]) {kind = "sum"}
// CHECK-NEXT: %[[TR:.+]] = "diffgpu.warp_reduce"(%[[TV]]) {kind = "sum"}
// CHECK-NEXT: memref.store %[[R]], %[[X]]
// CHECK-NEXT: memref.store %[[TR]], %[[TX]]

// -----

!A = memref<?xf32, strided<[?], offset: ?>>
#sm90 = #nvvm.target<O = 3, chip = "sm_90">

// forward: the tangent of a block min is the winner's tangent, broadcast by a block sum
func.func @f(%X: !A) attributes {diffgpu.target = #sm90} {
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %x = memref.load %X[%t] : !A
  %r = "diffgpu.block_reduce"(%x) {kind = "min"} : (f32) -> f32
  memref.store %r, %X[%t] : !A
  return
}
func.func @k_fwd_block_min(%X: !A, %dX: !A) attributes {diffgpu.kernel, diffgpu.target = #sm90} {
  "diffgpu.fwddiff"(%X, %dX) {callee = @f, activity = ["dup"], diffgpu.target = #sm90, groups = array<i32: 2>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (!A, !A) -> ()
  return
}
// CHECK-LABEL: func.func @__dg_fwd_f_
// CHECK-SAME: (%[[X:[a-z0-9]+]]: memref<{{.+}}>, %[[TX:[a-z0-9]+]]: memref<{{.+}}>)
// CHECK: %[[V:.+]] = memref.load %[[X]]
// CHECK-NEXT: %[[TV:.+]] = memref.load %[[TX]]
// CHECK-NEXT: %[[R:.+]] = "diffgpu.block_reduce"(%[[V]]) {kind = "min"}
// CHECK: %[[HOLD:.+]] = arith.cmpf oeq, %[[V]], %[[R]]
// CHECK: %[[WIN:.+]] = "diffgpu.block_reduce"(%{{.+}}) {kind = "min"} : (i32) -> i32
// CHECK-NEXT: %[[IS:.+]] = arith.cmpi eq, %{{.+}}, %[[WIN]]
// CHECK-NEXT: %[[Z:.+]] = arith.constant 0.0
// CHECK-NEXT: %[[T:.+]] = arith.select %[[IS]], %[[TV]], %[[Z]]
// CHECK-NEXT: %[[TR:.+]] = "diffgpu.block_reduce"(%[[T]]) {kind = "sum"}
// CHECK-NEXT: memref.store %[[R]], %[[X]]
// CHECK-NEXT: memref.store %[[TR]], %[[TX]]

// -----

!A = memref<?xf32, strided<[?], offset: ?>>
#sm90 = #nvvm.target<O = 3, chip = "sm_90">

// forward: the tangent of a scan is the scan of the tangents
func.func @f(%X: !A) attributes {diffgpu.target = #sm90} {
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %x = memref.load %X[%t] : !A
  %r = "diffgpu.block_scan"(%x) {reverse = false} : (f32) -> f32
  memref.store %r, %X[%t] : !A
  return
}
func.func @k_fwd_scan(%X: !A, %dX: !A) attributes {diffgpu.kernel, diffgpu.target = #sm90} {
  "diffgpu.fwddiff"(%X, %dX) {callee = @f, activity = ["dup"], diffgpu.target = #sm90, groups = array<i32: 2>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (!A, !A) -> ()
  return
}
// CHECK-LABEL: func.func @__dg_fwd_f_
// CHECK-SAME: (%[[X:[a-z0-9]+]]: memref<{{.+}}>, %[[TX:[a-z0-9]+]]: memref<{{.+}}>)
// CHECK: %[[TV:.+]] = memref.load %[[TX]]
// CHECK-NEXT: "diffgpu.block_scan"(%{{.+}}) {reverse = false}
// CHECK-NEXT: %[[TR:.+]] = "diffgpu.block_scan"(%[[TV]]) {reverse = false}
// CHECK: memref.store %[[TR]], %[[TX]]

// -----

!A = memref<?xf32, strided<[?], offset: ?>>
#sm90 = #nvvm.target<O = 3, chip = "sm_90">

// forward: a shuffle's tangent is the same shuffle of the tangent
func.func @f(%X: !A) attributes {diffgpu.target = #sm90} {
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %x = memref.load %X[%t] : !A
  %k = arith.constant 2 : i32
  %r = "diffgpu.shuffle"(%x, %k) {mode = "up"} : (f32, i32) -> f32
  memref.store %r, %X[%t] : !A
  return
}
func.func @k_fwd_shfl_up(%X: !A, %dX: !A) attributes {diffgpu.kernel, diffgpu.target = #sm90} {
  "diffgpu.fwddiff"(%X, %dX) {callee = @f, activity = ["dup"], diffgpu.target = #sm90, groups = array<i32: 2>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (!A, !A) -> ()
  return
}
// CHECK-LABEL: func.func @__dg_fwd_f_
// CHECK-SAME: (%[[X:[a-z0-9]+]]: memref<{{.+}}>, %[[TX:[a-z0-9]+]]: memref<{{.+}}>)
// CHECK: %[[TV:.+]] = memref.load %[[TX]]
// CHECK-NEXT: %[[K:.+]] = arith.constant 2 : i32
// CHECK-NEXT: "diffgpu.shuffle"(%{{.+}}, %[[K]]) {mode = "up"}
// CHECK-NEXT: %[[TR:.+]] = "diffgpu.shuffle"(%[[TV]], %[[K]]) {mode = "up"}
// CHECK: memref.store %[[TR]], %[[TX]]

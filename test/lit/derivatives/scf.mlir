// Reverse-mode rules of scf: reverse regions built by the same sweep.
// The scf.for cases show the tape (checkpoints of runtime-length recurrences,
// on by default: autodiff/checkpoint.mlir).
// RUN: env DIFFGPU_CHECKPOINTS=0 diffgpu-opt %s --split-input-file --diffgpu-autodiff | FileCheck %s

// scf.if with a result: the reverse is an scf.if on the same condition
// whose branches push the result's adjoint into the yielded values; the
// adjoint of %x (used inside both branches) accumulates in a slot.
!A = memref<?xf64, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @f(%x: f64, %c: i1) -> f64 attributes {diffgpu.target = #host} {
  %r = scf.if %c -> (f64) {
    %s = math.sin %x : f64
    scf.yield %s : f64
  } else {
    %t = arith.mulf %x, %x : f64
    scf.yield %t : f64
  }
  return %r : f64
}
func.func @k(%d: f64, %x: f64, %c: i1) attributes {diffgpu.kernel, diffgpu.target = #host} {
  %g = "diffgpu.autodiff"(%d, %x, %c) {callee = @f, activity = ["active", "const"], diffgpu.target = #host, groups = array<i32: 1, 1>, operandSegmentSizes = array<i32: 2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64, i1) -> f64
  return
}
// CHECK-LABEL: func.func @__dg_rev_f_
// CHECK-SAME: (%[[X:.+]]: f64, %[[C:.+]]: i1, %[[D:.+]]: f64) -> f64
// CHECK:      %[[SLOT:.+]] = memref.alloca() : memref<f64>
// CHECK:      scf.if %[[C]] -> (f64)
// CHECK:      scf.if %[[C]] {
// CHECK-NEXT:   %[[COS:.+]] = math.cos %[[X]]
// CHECK-NEXT:   %[[G1:.+]] = arith.mulf %[[D]], %[[COS]]
// CHECK-NEXT:   %[[OLD:.+]] = memref.load %[[SLOT]][]
// CHECK-NEXT:   %[[NEW:.+]] = arith.addf %[[OLD]], %[[G1]]
// CHECK-NEXT:   memref.store %[[NEW]], %[[SLOT]][]
// CHECK-NEXT: } else {
// CHECK-NEXT:   arith.mulf %[[D]], %[[X]]
// CHECK:      }
// CHECK-NEXT: %[[G:.+]] = memref.load %[[SLOT]][]
// CHECK:      return %[[G]] : f64

// -----

// scf.for with a runtime bound and a loop-carried value: the forward loop
// pushes each iteration's %a (needed by sin's rule) on the tape; the reverse
// loop runs tripcount iterations carrying the adjoint, popping %a.
!A = memref<?xf64, strided<[?], offset: ?>>
func.func @f(%X: !A, %n: index) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %x0 = memref.load %X[%c0] : !A
  %r = scf.for %j = %c0 to %n step %c1 iter_args(%a = %x0) -> (f64) {
    %s = math.sin %a : f64
    scf.yield %s : f64
  }
  memref.store %r, %X[%c0] : !A
  return
}
func.func @k(%X: !A, %dX: !A, %n: index) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  "diffgpu.autodiff"(%X, %dX, %n) {callee = @f, activity = ["dup", "const"], diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">, groups = array<i32: 2, 1>, operandSegmentSizes = array<i32: 2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (!A, !A, index) -> ()
  return
}
// CHECK-LABEL: func.func @__dg_rev_f_
// CHECK-SAME: (%[[X:.+]]: memref<?xf64, {{.+}}>, %[[N:.+]]: index, %[[DX:.+]]: memref<?xf64, {{.+}}>)
// CHECK:      %[[TAPE:.+]] = memref.alloca() : memref<1xmemref<?xi64>>
// CHECK-NEXT: %[[STACK:.+]] = memref.alloca() : memref<128xi64>
// CHECK-NEXT: %[[BUF:.+]] = memref.cast %[[STACK]] : memref<128xi64> to memref<?xi64>
// CHECK:      memref.store %[[BUF]], %[[TAPE]]
// CHECK:      %[[CNT:.+]] = memref.alloca() : memref<1xindex>
// CHECK:      %[[X0:.+]] = memref.load %[[X]]
// CHECK:      %[[R:.+]] = scf.for %{{.+}} = %[[LB:.+]] to %[[N]] step %[[ST:[a-z0-9_]+]] iter_args(%[[A:.+]] = %[[X0]]) -> (f64) {
// CHECK-NEXT:   %[[S:.+]] = math.sin %[[A]]
// CHECK-NEXT:   %[[W:.+]] = arith.bitcast %[[A]] {diffgpu.tape_push = [[TAG:[0-9]+]] : i64} : f64 to i64
// CHECK:        memref.store %[[W]], %{{.+}}[%{{.+}}] : memref<?xi64>
// CHECK:        scf.yield %[[S]] : f64
// CHECK:      memref.store %[[R]], %[[X]]
// CHECK-NEXT: %[[DR:.+]] = memref.load %[[DX]]
// CHECK:      %[[SPAN:.+]] = arith.subi %[[N]], %[[LB]]
// CHECK-NEXT: %[[Q:.+]] = arith.ceildivsi %[[SPAN]], %[[ST]]
// CHECK:      %[[TC:.+]] = arith.maxsi %[[Q]]
// CHECK:      %[[DA0:.+]] = scf.for %{{.+}} = %{{.+}} to %[[TC]] step %{{.+}} iter_args(%[[DA:.+]] = %[[DR]]) -> (f64) {
// CHECK:        %[[TOP:.+]] = arith.subi
// CHECK-NEXT:   memref.store %[[TOP]], %[[CNT]]
// CHECK-NEXT:   %[[B:.+]] = memref.load %[[TAPE]]
// CHECK-NEXT:   %[[BCAP:.+]] = memref.dim %[[B]]
// CHECK-NEXT:   %[[ONE:.+]] = arith.constant 1 : index
// CHECK-NEXT:   %[[LASTW:.+]] = arith.subi %[[BCAP]], %[[ONE]]
// CHECK-NEXT:   %[[AT:.+]] = arith.minui %[[TOP]], %[[LASTW]]
// CHECK-NEXT:   %[[WORD:.+]] = memref.load %[[B]][%[[AT]]]
// CHECK-NEXT:   %[[AV:.+]] = arith.bitcast %[[WORD]] {diffgpu.tape_pop = [[TAG]] : i64} : i64 to f64
// CHECK-NEXT:   %[[COS:.+]] = math.cos %[[AV]]
// CHECK-NEXT:   %[[DN:.+]] = arith.mulf %[[DA]], %[[COS]]
// CHECK-NEXT:   scf.yield %[[DN]] : f64
// CHECK:      "diffgpu.atomic_add"(%[[DX]], %[[DA0]], %{{.+}})
// CHECK:      %[[LAST:.+]] = memref.load %[[TAPE]]
// CHECK:      %[[CAP:.+]] = memref.dim %[[LAST]]
// CHECK:      %[[HEAP:.+]] = arith.cmpi ne, %[[CAP]]
// CHECK-NEXT: scf.if %[[HEAP]] {
// CHECK-NEXT:   memref.dealloc %[[LAST]]
// CHECK:      return



// -----

// scf.while: the forward sweep counts the `after` executions N in a slot;
// the reverse runs N + 1 steps: step 0 seeds the final `before` with the
// result's adjoint, later steps reverse `after` (popping %b) then `before`.
!A = memref<?xf64, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @w(%x: f64) -> f64 attributes {diffgpu.target = #host} {
  %four = arith.constant 4.0 : f64
  %r = scf.while (%a = %x) : (f64) -> f64 {
    %lt = arith.cmpf olt, %a, %four : f64
    scf.condition(%lt) %a : f64
  } do {
  ^bb0(%b: f64):
    %m = arith.mulf %b, %b : f64
    scf.yield %m : f64
  }
  return %r : f64
}
func.func @k(%d: f64, %x: f64) attributes {diffgpu.kernel, diffgpu.target = #host} {
  %g = "diffgpu.autodiff"(%d, %x) {callee = @w, activity = ["active"], diffgpu.target = #host, groups = array<i32: 1>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f64, f64) -> f64
  return
}
// CHECK-LABEL: func.func @__dg_rev_w_
// CHECK-SAME: (%[[X:.+]]: f64, %[[D:.+]]: f64) -> f64
// CHECK:      %[[N:.+]] = memref.alloca() : memref<index>
// CHECK:      memref.store %{{.+}}, %[[N]][]
// CHECK-NEXT: scf.while
// CHECK:      } do {
// CHECK:        %[[K:.+]] = memref.load %[[N]][]
// CHECK:        %[[K1:.+]] = arith.addi %[[K]]
// CHECK-NEXT:   memref.store %[[K1]], %[[N]][]
// CHECK:      %[[COUNT:.+]] = memref.load %[[N]][]
// CHECK:      %[[STEPS:.+]] = arith.addi %[[COUNT]]
// CHECK:      %[[G:.+]] = scf.for %[[J:.+]] = %{{.+}} to %[[STEPS]] step %{{.+}} iter_args(%[[DB:.+]] = %{{.+}}) -> (f64) {
// CHECK:        %[[FIRST:.+]] = arith.cmpi eq, %[[J]]
// CHECK-NEXT:   %[[DC:.+]] = scf.if %[[FIRST]] -> (f64) {
// CHECK-NEXT:     scf.yield %[[D]] : f64
// CHECK-NEXT:   } else {
// CHECK:          %[[BV:.+]] = arith.bitcast %{{.+}} {diffgpu.tape_pop = {{[0-9]+}} : i64} : i64 to f64
// CHECK-NEXT:     %[[T1:.+]] = arith.mulf %[[DB]], %[[BV]]
// CHECK-NEXT:     %[[T2:.+]] = arith.mulf %[[DB]], %[[BV]]
// CHECK-NEXT:     %[[T:.+]] = arith.addf %[[T1]], %[[T2]]
// CHECK-NEXT:     scf.yield %[[T]] : f64
// CHECK:        scf.yield %[[DC]] : f64
// CHECK:      return %[[G]] : f64

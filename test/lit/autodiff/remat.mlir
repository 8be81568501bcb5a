// Recomputation instead of the tape (lowering/autodiff/remat.py): in the
// reverse of a loop with a runtime trip count, index arithmetic, loads from
// arrays the function never writes and cheap float ops of those are rebuilt
// from the reverse loop's counter; only what is not cheap (math.sin) or not
// provably unchanged (a load of an array the loop writes) is pushed.
// RUN: diffgpu-opt %s --split-input-file --diffgpu-autodiff | FileCheck %s

// A function that writes no memory: %w is read-only, so the loop's index %j,
// the load w[j] and x * float(j) are recomputed; nothing goes on the tape.
!A = memref<?xf32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @f(%x: f32, %w: !A, %n: index) -> f32 attributes {diffgpu.target = #host} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %zero = arith.constant 0.0 : f32
  %r = scf.for %k = %c0 to %n step %c1 iter_args(%s = %zero) -> (f32) {
    %j = arith.muli %k, %c2 : index
    %v = memref.load %w[%j] : !A
    %ji = arith.index_cast %j : index to i64
    %jf = arith.sitofp %ji : i64 to f32
    %a = arith.mulf %x, %jf : f32
    %t = math.sin %a : f32
    %p = arith.mulf %v, %t : f32
    %s2 = arith.addf %s, %p : f32
    scf.yield %s2 : f32
  }
  return %r : f32
}
func.func @k(%x: f32, %w: !A, %n: index, %seed: f32, %g: !A) attributes {diffgpu.kernel, diffgpu.target = #host} {
  %d = "diffgpu.autodiff"(%seed, %x, %w, %n) {callee = @f, activity = ["active", "const", "const"], diffgpu.target = #host, groups = array<i32: 1, 1, 1>, operandSegmentSizes = array<i32: 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f32, f32, !A, index) -> f32
  %c0 = arith.constant 0 : index
  memref.store %d, %g[%c0] : !A
  return
}
// CHECK-LABEL: func.func @__dg_rev_f_
// CHECK-SAME: (%[[X:[a-z0-9]+]]: f32, %[[W:[a-z0-9]+]]: memref<{{[^%]+}}, %[[N:[a-z0-9]+]]: index
// CHECK-NOT: memref<1xmemref<?xi64>>
// CHECK-NOT: diffgpu.tape_push
// the forward loop
// CHECK: scf.for
// CHECK: math.sin
// CHECK: scf.yield
// the reverse loop rebuilds i = (tc - 1 - k) * 1 + 0, then j, w[j] and x * float(j)
// CHECK: scf.for %[[K:[a-z0-9]+]] =
// CHECK-NEXT: %[[T1:.+]] = arith.subi
// CHECK-NEXT: %[[T2:.+]] = arith.subi %[[T1]], %[[K]] : index
// CHECK-NEXT: %[[T3:.+]] = arith.muli %[[T2]]
// CHECK-NEXT: %[[I:.+]] = arith.addi %{{.+}}, %[[T3]] : index
// CHECK-NEXT: %[[J:.+]] = arith.muli %[[I]], %{{.+}} : index
// CHECK-NEXT: %[[V:.+]] = memref.load %[[W]][%[[J]]]
// CHECK-NEXT: %[[JI:.+]] = arith.index_cast %[[J]] : index to i64
// CHECK-NEXT: %[[JF:.+]] = arith.sitofp %[[JI]] : i64 to f32
// CHECK-NEXT: %[[A:.+]] = arith.mulf %[[X]], %[[JF]] : f32
// CHECK-NOT: diffgpu.tape_pop
// CHECK: arith.mulf %{{.+}}, %[[V]] : f32
// CHECK: math.cos %[[A]] : f32
// CHECK-NOT: diffgpu.tape_pop
// CHECK: return

// -----

// A whole launch whose arrays the launch proved disjoint (noalias): %w is
// never written (only %y is), so w[k] is reloaded in the reverse loop; in a
// loop body sin is recomputed too (remat.py LOOP_OPS), so nothing goes on
// the tape.
!A = memref<?xf32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @kw(%y: !A, %x: !A, %w: !A, %n: index) attributes {diffgpu.target = #host} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %t0 = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %zero = arith.constant 0.0 : f32
  %r = scf.for %k = %c0 to %n step %c1 iter_args(%s = %zero) -> (f32) {
    %v = memref.load %w[%k] : !A
    %xi = memref.load %x[%t0] : !A
    %ki = arith.index_cast %k : index to i64
    %kf = arith.sitofp %ki : i64 to f32
    %a = arith.mulf %xi, %kf : f32
    %t = math.sin %a : f32
    %p = arith.mulf %v, %t : f32
    %s2 = arith.addf %s, %p : f32
    scf.yield %s2 : f32
  }
  memref.store %r, %y[%t0] : !A
  return
}
func.func @kw_grad(%y: !A, %dy: !A, %x: !A, %dx: !A, %w: !A, %dw: !A, %n: index) attributes {diffgpu.kernel, diffgpu.launch_facts = {contiguous = [true, true, true, true, true, true, false], noalias = true, unit_dims = [1 : i64, 2 : i64], ranks = [1 : i64, 1 : i64, 1 : i64, 1 : i64, 1 : i64, 1 : i64, -1 : i64]}, diffgpu.target = #host} {
  "diffgpu.autodiff"(%y, %dy, %x, %dx, %w, %dw, %n) {callee = @kw, activity = ["dup", "dup", "dup", "const"], diffgpu.target = #host, groups = array<i32: 2, 2, 2, 1>, operandSegmentSizes = array<i32: 6, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (!A, !A, !A, !A, !A, !A, index) -> ()
  return
}
// CHECK-LABEL: func.func @__dg_rev_kw_
// CHECK-SAME: (%[[Y:[a-z0-9]+]]: memref<{{[^%]+}}, %[[X:[a-z0-9]+]]: memref<{{[^%]+}}, %[[W:[a-z0-9]+]]: memref<{{[^%]+}}, %[[N:[a-z0-9]+]]: index
// CHECK-SAME: diffgpu.noalias
// the forward loop pushes nothing
// CHECK: scf.for
// CHECK: math.sin
// CHECK-NOT: diffgpu.tape_push
// CHECK: scf.yield
// the reverse loop reloads x[i] and w[k], recomputes x[i] * k and its sine
// CHECK: scf.for
// CHECK: %[[XI:.+]] = memref.load %[[X]][%{{.+}}] :
// CHECK: %[[KI:.+]] = arith.index_cast %[[I:.+]] : index to i64
// CHECK-NEXT: %[[KF:.+]] = arith.sitofp %[[KI]] : i64 to f32
// CHECK-NEXT: %[[A:.+]] = arith.mulf %[[XI]], %[[KF]] : f32
// CHECK-NEXT: %[[SIN:.+]] = math.sin %[[A]] : f32
// CHECK-NEXT: %[[V:.+]] = memref.load %[[W]][%[[I]]] :
// CHECK-NOT: diffgpu.tape_pop
// CHECK: math.cos %[[A]] : f32
// CHECK: return

// -----

// The same loop without launch facts: %y (written) may overlap %w and %x, so
// their loads are not recomputed: w[k], x[i] * k and its sine are pushed, the
// index arithmetic (k as a float) is still recomputed: three words per
// iteration, none of them an index.
!A = memref<?xf32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @kw(%y: !A, %x: !A, %w: !A, %n: index) attributes {diffgpu.target = #host} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %t0 = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %zero = arith.constant 0.0 : f32
  %r = scf.for %k = %c0 to %n step %c1 iter_args(%s = %zero) -> (f32) {
    %v = memref.load %w[%k] : !A
    %xi = memref.load %x[%t0] : !A
    %ki = arith.index_cast %k : index to i64
    %kf = arith.sitofp %ki : i64 to f32
    %a = arith.mulf %xi, %kf : f32
    %t = math.sin %a : f32
    %p = arith.mulf %v, %t : f32
    %s2 = arith.addf %s, %p : f32
    scf.yield %s2 : f32
  }
  memref.store %r, %y[%t0] : !A
  return
}
func.func @kw_grad(%y: !A, %dy: !A, %x: !A, %dx: !A, %w: !A, %dw: !A, %n: index) attributes {diffgpu.kernel, diffgpu.target = #host} {
  "diffgpu.autodiff"(%y, %dy, %x, %dx, %w, %dw, %n) {callee = @kw, activity = ["dup", "dup", "dup", "const"], diffgpu.target = #host, groups = array<i32: 2, 2, 2, 1>, operandSegmentSizes = array<i32: 6, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (!A, !A, !A, !A, !A, !A, index) -> ()
  return
}
// CHECK-LABEL: func.func @__dg_rev_kw_
// CHECK: scf.for
// CHECK: %[[V:.+]] = memref.load
// CHECK: %[[XI:.+]] = memref.load
// CHECK: %[[A:.+]] = arith.mulf %[[XI]]
// CHECK: %[[S:.+]] = math.sin %[[A]]
// CHECK-NOT: : index to i64
// CHECK: arith.bitcast %[[S]] {diffgpu.tape_push =
// CHECK-NOT: : index to i64
// CHECK: arith.bitcast %[[V]] {diffgpu.tape_push =
// CHECK-NOT: : index to i64
// CHECK: arith.bitcast %[[A]] {diffgpu.tape_push =
// CHECK-NOT: diffgpu.tape_push
// CHECK: scf.yield
// the reverse rebuilds float(k) for the partial of x[i] * k
// CHECK: scf.for
// CHECK: arith.sitofp
// CHECK: return

// -----

// A loop that writes the array it reads keeps the tape for the load: a[k] is
// overwritten by a later iteration (a[k + 1] = a[k] * x), so the reverse
// sweep must not reload it; its index k + 1 is recomputed (no index word).
!A = memref<?xf32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @chain(%a: !A, %x: f32, %n: index) attributes {diffgpu.target = #host} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %k = %c0 to %n step %c1 {
    %v = memref.load %a[%k] : !A
    %p = arith.mulf %v, %x : f32
    %k1 = arith.addi %k, %c1 : index
    memref.store %p, %a[%k1] : !A
  }
  return
}
func.func @chain_grad(%a: !A, %da: !A, %x: f32, %n: index, %g: !A) attributes {diffgpu.kernel, diffgpu.target = #host} {
  %d = "diffgpu.autodiff"(%a, %da, %x, %n) {callee = @chain, activity = ["dup", "active", "const"], diffgpu.target = #host, groups = array<i32: 2, 1, 1>, operandSegmentSizes = array<i32: 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (!A, !A, f32, index) -> f32
  %c0 = arith.constant 0 : index
  memref.store %d, %g[%c0] : !A
  return
}
// CHECK-LABEL: func.func @__dg_rev_chain_
// CHECK: scf.for
// CHECK: %[[V:.+]] = memref.load
// CHECK-NOT: : index to i64
// CHECK: arith.bitcast %[[V]] {diffgpu.tape_push = [[TAG:[0-9]+]] : i64} : f32 to i32
// CHECK-NOT: : index to i64
// CHECK-NOT: diffgpu.tape_push
// the reverse: k + 1 recomputed from the counter, a[k] popped, not reloaded
// CHECK: arith.maxsi
// CHECK: scf.for
// CHECK: %[[I:.+]] = arith.addi %{{.+}}, %{{.+}} : index
// CHECK-NEXT: %[[K1:.+]] = arith.addi %[[I]], %{{.+}} : index
// CHECK: arith.bitcast %{{.+}} {diffgpu.tape_pop = [[TAG]] : i64} : i32 to f32
// CHECK: memref.load %{{.+}}[%[[K1]]]
// CHECK: return

// -----

// An scf.while whose counter %k starts at %k0 and grows by 2 per iteration:
// the reverse rebuilds it at step j as k0 + (N - j) * 2 (N: the forward's
// iteration count), so neither %k nor w[k] nor w[k]^2 is pushed; only the
// loop-carried %s (for cos(s), the partial of sin(s)) goes on the tape.
!A = memref<?xf32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
func.func @wh(%x: f32, %w: !A, %k0: i64, %n: i64) -> f32 attributes {diffgpu.target = #host} {
  %r:2 = scf.while (%s = %x, %k = %k0) : (f32, i64) -> (f32, i64) {
    %go = arith.cmpi slt, %k, %n : i64
    scf.condition(%go) %s, %k : f32, i64
  } do {
  ^bb0(%s2: f32, %k2: i64):
    %ki = arith.index_cast %k2 : i64 to index
    %v = memref.load %w[%ki] : !A
    %p = arith.mulf %v, %v : f32
    %t = math.sin %s2 : f32
    %q = arith.mulf %t, %p : f32
    %c2 = arith.constant 2 : i64
    %k3 = arith.addi %k2, %c2 : i64
    scf.yield %q, %k3 : f32, i64
  }
  return %r#0 : f32
}
func.func @kh(%x: f32, %w: !A, %k0: i64, %n: i64, %seed: f32, %g: !A) attributes {diffgpu.kernel, diffgpu.target = #host} {
  %d = "diffgpu.autodiff"(%seed, %x, %w, %k0, %n) {callee = @wh, activity = ["active", "const", "const", "const"], diffgpu.target = #host, groups = array<i32: 1, 1, 1, 1>, operandSegmentSizes = array<i32: 2, 1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f32, f32, !A, i64, i64) -> f32
  %c0 = arith.constant 0 : index
  memref.store %d, %g[%c0] : !A
  return
}
// CHECK-LABEL: func.func @__dg_rev_wh_
// CHECK-SAME: (%[[X:[a-z0-9]+]]: f32, %[[W:[a-z0-9]+]]: memref<{{[^%]+}}, %[[K0:[a-z0-9]+]]: i64
// the forward loop pushes %s only
// CHECK: scf.while
// CHECK: } do {
// CHECK: ^bb0(%[[S:[a-z0-9]+]]: f32, %{{[a-z0-9]+}}: i64):
// CHECK-NOT: : i64 to i64
// CHECK: arith.bitcast %[[S]] {diffgpu.tape_push = [[TAG:[0-9]+]] : i64} : f32 to i32
// CHECK-NOT: diffgpu.tape_push
// CHECK: scf.yield
// the reverse step j rebuilds k = k0 + (N - j) * 2 and reloads w[k]
// CHECK: scf.for %[[J:[a-z0-9]+]] =
// CHECK: } else {
// CHECK-NEXT: %[[BACK:.+]] = arith.subi %[[N:.+]], %[[J]] : index
// CHECK-NEXT: %[[B64:.+]] = arith.index_cast %[[BACK]] : index to i64
// CHECK-NEXT: %[[TWO:.+]] = arith.constant 2 : i64
// CHECK-NEXT: %[[OFF:.+]] = arith.muli %[[B64]], %[[TWO]] : i64
// CHECK-NEXT: %[[K:.+]] = arith.addi %[[K0]], %[[OFF]] : i64
// CHECK-NEXT: %[[KI:.+]] = arith.index_cast %[[K]] : i64 to index
// CHECK-NEXT: %[[V:.+]] = memref.load %[[W]][%[[KI]]]
// CHECK-NEXT: %[[P:.+]] = arith.mulf %[[V]], %[[V]] : f32
// CHECK: %[[SP:.+]] = arith.bitcast %{{.+}} {diffgpu.tape_pop = [[TAG]] : i64} : i32 to f32
// CHECK-NOT: diffgpu.tape_pop
// CHECK: arith.mulf %{{.+}}, %[[P]] : f32
// CHECK: math.cos %[[SP]] : f32
// CHECK: return

// -----

// On a GPU target, sin(x * k) is recomputed too: its result is active, so
// the reverse computes cos of the same recomputed operand in the same block,
// and diffgpu-fuse-sincos makes the pair one math.sincos. The loop needs no
// tape at all (x active, w with a shadow: sin(x * k) is the partial in w).
!A = memref<?xf32, strided<[?], offset: ?>>
#sm90 = #nvvm.target<O = 3, chip = "sm_90">
func.func @g(%x: f32, %w: !A, %n: index) -> f32 attributes {diffgpu.target = #sm90} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %r = scf.for %k = %c0 to %n step %c1 iter_args(%s = %zero) -> (f32) {
    %v = memref.load %w[%k] : !A
    %ki = arith.index_cast %k : index to i64
    %kf = arith.sitofp %ki : i64 to f32
    %a = arith.mulf %x, %kf : f32
    %t = math.sin %a : f32
    %p = arith.mulf %v, %t : f32
    %s2 = arith.addf %s, %p : f32
    scf.yield %s2 : f32
  }
  return %r : f32
}
func.func @kg(%x: f32, %w: !A, %dw: !A, %n: index, %seed: f32, %out: !A) attributes {diffgpu.kernel, diffgpu.target = #sm90} {
  %d = "diffgpu.autodiff"(%seed, %x, %w, %dw, %n) {callee = @g, activity = ["active", "dup", "const"], diffgpu.target = #sm90, groups = array<i32: 1, 2, 1>, operandSegmentSizes = array<i32: 2, 2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f32, f32, !A, !A, index) -> f32
  %c0 = arith.constant 0 : index
  memref.store %d, %out[%c0] : !A
  return
}
// CHECK-LABEL: func.func @__dg_rev_g_
// CHECK-NOT: memref<1xmemref<?xi64>>
// CHECK-NOT: diffgpu.tape_push
// CHECK: scf.for
// CHECK: math.sin
// CHECK: scf.yield
// the reverse body recomputes x * k and its sine, then takes the cosine
// CHECK: scf.for
// CHECK: %[[A:.+]] = arith.mulf %{{.+}}, %{{.+}} : f32
// CHECK-NEXT: %[[T:.+]] = math.sin %[[A]] : f32
// CHECK-NOT: diffgpu.tape_pop
// CHECK: arith.mulf %{{.+}}, %[[T]] : f32
// CHECK: math.cos %[[A]] : f32
// CHECK-NOT: diffgpu.tape_pop
// CHECK: return

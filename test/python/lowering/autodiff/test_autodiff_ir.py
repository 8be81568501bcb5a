"""Numeric tests of diffgpu-autodiff on hand-written IR (host target):
memory (in-place overwrites, atomics, gathers, 2-D arrays), control flow
(scf.for with runtime bounds, nesting, scf.if, scf.while, execute_region,
index_switch), calls, barriers, float32 and tape growth. The harness (Case,
dot_test, fwd_test) is autodiff_ir_harness.py; one test per op rule is in
test_autodiff_ir_rules.py.
"""
from __future__ import annotations

import numpy as np

from autodiff_ir_harness import (A32, A64, HOST, N, Case, arr, dot_test, fwd_test, gid,
                                 loop_body, uniform)

# ---------------------------------------------------------------------------
# Structure: memory, control flow, calls
# ---------------------------------------------------------------------------



def test_seed_case_exact():
    """f(A): A[0] *= A[0]; A=3, dA=1 -> A=9, dA=6 (A[0] cached before the store)."""
    body = (f"  %c0 = arith.constant 0 : index\n"
            f"  %a = memref.load %A[%c0] : {A32}\n"
            f"  %p = arith.mulf %a, %a : f32\n"
            f"  memref.store %p, %A[%c0] : {A32}\n")
    case = Case("f", [("A", A32)], body, ["dup"], [np.array([3.0], np.float32)],
                grid=(1, 1, 1), block=(1, 1, 1))
    after, shadows, _ = case.reverse(case.inputs, {"A": np.array([1.0], np.float32)})
    assert after[0][0] == 9.0 and shadows["A"][0] == 6.0


def test_active_scalar_and_overwrites():
    """Z[i] = s * X[i]^2; X[i] = sin(X[i] * s), X[i] = X[i] * Z[i]: in-place
    overwrites read back, gradient of an active scalar summed over threads."""
    body = gid() + (
        f"  %x = memref.load %X[%i] : {A64}\n"
        f"  %x2 = arith.mulf %x, %x : f64\n"
        f"  %z = arith.mulf %s, %x2 : f64\n"
        f"  memref.store %z, %Z[%i] : {A64}\n"
        f"  %xs = arith.mulf %x, %s : f64\n"
        f"  %sn = math.sin %xs : f64\n"
        f"  memref.store %sn, %X[%i] : {A64}\n"
        f"  %x3 = memref.load %X[%i] : {A64}\n"
        f"  %z3 = memref.load %Z[%i] : {A64}\n"
        f"  %p = arith.mulf %x3, %z3 : f64\n"
        f"  memref.store %p, %X[%i] : {A64}\n")
    case = Case("k_over", [("X", A64), ("Z", A64), ("s", "f64")], body,
                ["dup", "dup", "active"], [uniform(-1, 1), uniform(-1, 1), 0.7])
    dot_test(case)
    fwd_test(case)



def test_for_iter_args():
    """acc = X[i]; for j < n: acc = acc * Y[j] + sin(acc); Z[i] = acc."""
    body = loop_body(
        f"  %x = memref.load %X[%i] : {A64}\n"
        f"  %acc = scf.for %j = %c0 to %nn step %c1 iter_args(%a = %x) -> (f64) {{\n"
        f"    %y = memref.load %Y[%j] : {A64}\n"
        f"    %m = arith.mulf %a, %y : f64\n"
        f"    %sn = math.sin %a : f64\n"
        f"    %r = arith.addf %m, %sn : f64\n"
        f"    scf.yield %r : f64\n"
        f"  }}\n"
        f"  memref.store %acc, %Z[%i] : {A64}\n")
    case = Case("k_for", [("X", A64), ("Y", A64), ("Z", A64), ("n", "i64")], body,
                ["dup", "dup", "dup", "const"],
                [uniform(-1, 1), uniform(-1, 1, seed=5), uniform(-1, 1), 4])
    dot_test(case)
    fwd_test(case)


def test_for_overwrites_memory():
    """for j < n: X[i] = X[i] * Y[j] + W[j] (the array itself is the loop
    state: every loaded value goes on the tape)."""
    body = loop_body(
        f"  scf.for %j = %c0 to %nn step %c1 {{\n"
        f"    %x = memref.load %X[%i] : {A64}\n"
        f"    %y = memref.load %Y[%j] : {A64}\n"
        f"    %w = memref.load %W[%j] : {A64}\n"
        f"    %m = arith.mulf %x, %y : f64\n"
        f"    %t = math.tanh %m : f64\n"
        f"    %r = arith.addf %t, %w : f64\n"
        f"    memref.store %r, %X[%i] : {A64}\n"
        f"  }}\n")
    case = Case("k_forw", [("X", A64), ("Y", A64), ("W", A64), ("n", "i64")], body,
                ["dup", "dup", "dup", "const"],
                [uniform(-1, 1), uniform(-1.5, 1.5, seed=5), uniform(-1, 1, seed=6), 5])
    dot_test(case)
    fwd_test(case)


def test_nested_for_with_if():
    """Nested loops with runtime bounds and a branch inside (tape + slots),
    and a loop-invariant value used in the inner body."""
    body = loop_body(
        f"  %x = memref.load %X[%i] : {A64}\n"
        f"  %ex = math.exp %x : f64\n"
        f"  %zero = arith.constant 0.0 : f64\n"
        f"  %acc = scf.for %j = %c0 to %nn step %c1 iter_args(%a = %zero) -> (f64) {{\n"
        f"    %y = memref.load %Y[%j] : {A64}\n"
        f"    %jp = arith.addi %j, %c1 : index\n"
        f"    %b = scf.for %k = %c0 to %jp step %c1 iter_args(%bq = %a) -> (f64) {{\n"
        f"      %w = memref.load %W[%k] : {A64}\n"
        f"      %pos = arith.cmpf ogt, %w, %zero : f64\n"
        f"      %v = scf.if %pos -> (f64) {{\n"
        f"        %q = arith.mulf %w, %ex : f64\n"
        f"        %q2 = arith.mulf %q, %bq : f64\n"
        f"        scf.yield %q2 : f64\n"
        f"      }} else {{\n"
        f"        %q3 = math.cos %bq : f64\n"
        f"        scf.yield %q3 : f64\n"
        f"      }}\n"
        f"      %s = arith.addf %v, %y : f64\n"
        f"      scf.yield %s : f64\n"
        f"    }}\n"
        f"    scf.yield %b : f64\n"
        f"  }}\n"
        f"  memref.store %acc, %Z[%i] : {A64}\n")
    case = Case("k_nest", [("X", A64), ("Y", A64), ("W", A64), ("Z", A64), ("n", "i64")],
                body, ["dup", "dup", "dup", "dup", "const"],
                [uniform(-0.5, 0.5), uniform(-0.5, 0.5, seed=5), uniform(-1, 1, seed=6),
                 uniform(-1, 1, seed=7), 3])
    dot_test(case)
    fwd_test(case)


def test_if_guard_and_results():
    """A bounds guard (early return) around the body, scf.if with results."""
    body = gid() + (
        f"  %nz = memref.dim %Z, %c0 : {A64}\n"
        f"  %c2 = arith.constant 2 : index\n"
        f"  %lim = arith.subi %nz, %c2 : index\n"
        f"  %in = arith.cmpi slt, %i, %lim : index\n"
        f"  scf.if %in {{\n"
        f"    %x = memref.load %X[%i] : {A64}\n"
        f"    %zero = arith.constant 0.0 : f64\n"
        f"    %pos = arith.cmpf ogt, %x, %zero : f64\n"
        f"    %r = scf.if %pos -> (f64) {{\n"
        f"      %a = arith.mulf %x, %x : f64\n"
        f"      scf.yield %a : f64\n"
        f"    }} else {{\n"
        f"      %b = math.sin %x : f64\n"
        f"      %b2 = arith.mulf %b, %s : f64\n"
        f"      scf.yield %b2 : f64\n"
        f"    }}\n"
        f"    memref.store %r, %Z[%i] : {A64}\n"
        f"  }}\n")
    case = Case("k_if", [("X", A64), ("Z", A64), ("s", "f64")], body,
                ["dup", "dup", "active"], [uniform(-1, 1), uniform(-1, 1), 1.3])
    dot_test(case)
    fwd_test(case)


def test_execute_region_and_index_switch():
    """One region runs once: scf.execute_region around the body, and an
    scf.index_switch on i % 3 picking x * y, sin(x) * y or x (default)."""
    body = gid() + (
        f"  %c3 = arith.constant 3 : index\n"
        f"  %k = arith.remui %i, %c3 : index\n"
        f"  %r = scf.execute_region -> f64 {{\n"
        f"    %x = memref.load %X[%i] : {A64}\n"
        f"    %y = memref.load %Y[%i] : {A64}\n"
        f"    %s = scf.index_switch %k -> f64\n"
        f"    case 0 {{\n"
        f"      %p = arith.mulf %x, %y : f64\n"
        f"      scf.yield %p : f64\n"
        f"    }}\n"
        f"    case 1 {{\n"
        f"      %q = math.sin %x : f64\n"
        f"      %q2 = arith.mulf %q, %y : f64\n"
        f"      scf.yield %q2 : f64\n"
        f"    }}\n"
        f"    default {{\n"
        f"      scf.yield %x : f64\n"
        f"    }}\n"
        f"    %t = arith.mulf %s, %x : f64\n"
        f"    scf.yield %t : f64\n"
        f"  }}\n"
        f"  memref.store %r, %Z[%i] : {A64}\n")
    case = Case("k_regions", [("X", A64), ("Y", A64), ("Z", A64)], body,
                ["dup", "dup", "dup"], [uniform(-1, 1), uniform(-1, 1, seed=2),
                                        uniform(-1, 1, seed=3)])
    dot_test(case)
    fwd_test(case)


def test_while_loop():
    """while a < 4: a = a * x + 1 (trip count depends on data; counted in
    the forward sweep, replayed backwards)."""
    body = gid() + (
        f"  %x = memref.load %X[%i] : {A64}\n"
        f"  %four = arith.constant 4.0 : f64\n"
        f"  %one = arith.constant 1.0 : f64\n"
        f"  %r = scf.while (%a = %x) : (f64) -> f64 {{\n"
        f"    %lt = arith.cmpf olt, %a, %four : f64\n"
        f"    scf.condition(%lt) %a : f64\n"
        f"  }} do {{\n"
        f"  ^bb0(%b: f64):\n"
        f"    %m = arith.mulf %b, %x : f64\n"
        f"    %nb = arith.addf %m, %one : f64\n"
        f"    scf.yield %nb : f64\n"
        f"  }}\n"
        f"  %sq = math.sqrt %r : f64\n"
        f"  memref.store %sq, %Z[%i] : {A64}\n")
    case = Case("k_while", [("X", A64), ("Z", A64)], body, ["dup", "dup"],
                [uniform(1.1, 1.9), uniform(-1, 1)])
    dot_test(case)
    fwd_test(case)


DEVICE = f"func.func @g(%a: f64, %b: f64) -> f64 attributes {{diffgpu.target = {HOST}}} {{\n" \
         "  %s = math.sin %b : f64\n  %r = arith.mulf %a, %s : f64\n  return %r : f64\n}\n" \
         f"func.func @sq(%A: {A64}, %i: index) attributes {{diffgpu.target = {HOST}}} {{\n" \
         f"  %a = memref.load %A[%i] : {A64}\n  %p = arith.mulf %a, %a : f64\n" \
         f"  memref.store %p, %A[%i] : {A64}\n  return\n}}\n"


def test_calls():
    """Device functions: a scalar one (active args and result) and one that
    overwrites memory it reads, called twice (augmented forward + tape)."""
    body = gid() + (
        f"  %x = memref.load %X[%i] : {A64}\n"
        f"  %y = memref.load %Y[%i] : {A64}\n"
        f"  %r = func.call @g(%x, %y) : (f64, f64) -> f64\n"
        f"  memref.store %r, %Z[%i] : {A64}\n"
        f"  func.call @sq(%X, %i) : ({A64}, index) -> ()\n"
        f"  func.call @sq(%X, %i) : ({A64}, index) -> ()\n")
    case = Case("k_call", [("X", A64), ("Y", A64), ("Z", A64)], body, ["dup"] * 3,
                [uniform(-1, 1), uniform(-1, 1), uniform(-1, 1)], extra=DEVICE)
    dot_test(case)
    fwd_test(case)


def test_call_in_loop():
    """A call inside a loop: its tape entries interleave with the loop's."""
    body = loop_body(
        f"  %x = memref.load %X[%i] : {A64}\n"
        f"  %acc = scf.for %j = %c0 to %nn step %c1 iter_args(%a = %x) -> (f64) {{\n"
        f"    %y = memref.load %Y[%j] : {A64}\n"
        f"    %r = func.call @g(%a, %y) : (f64, f64) -> f64\n"
        f"    %r2 = arith.addf %r, %a : f64\n"
        f"    scf.yield %r2 : f64\n"
        f"  }}\n"
        f"  memref.store %acc, %Z[%i] : {A64}\n")
    case = Case("k_callloop", [("X", A64), ("Y", A64), ("Z", A64), ("n", "i64")], body,
                ["dup", "dup", "dup", "const"],
                [uniform(-1, 1), uniform(-1, 1), uniform(-1, 1), 3], extra=DEVICE)
    dot_test(case)
    fwd_test(case)


def test_atomic_add_and_gather():
    """Z[0] += X[idx[i]]^2 atomically from every thread, gather via an
    integer index array (const)."""
    body = gid() + (
        f"  %k = memref.load %I[%i] : {arr('i64')}\n"
        f"  %ki = arith.index_cast %k : i64 to index\n"
        f"  %x = memref.load %X[%ki] : {A64}\n"
        f"  %p = arith.mulf %x, %x : f64\n"
        f"  %old = \"diffgpu.atomic_add\"(%Z, %p, %c0) : ({A64}, f64, index) -> f64\n")
    idx = np.array([5, 0, 0, 3, 2, 5], np.int64)
    case = Case("k_atomic", [("X", A64), ("I", arr("i64")), ("Z", A64)], body,
                ["dup", "const", "dup"], [uniform(-1, 1), idx, uniform(-1, 1)])
    dot_test(case)
    fwd_test(case)


def test_2d_arrays():
    """Row sums of a 2-D array with a runtime column count, times a scalar."""
    A2 = arr("f64", 2)
    body = gid() + (
        f"  %c1 = arith.constant 1 : index\n"
        f"  %m = memref.dim %M, %c1 : {A2}\n"
        f"  %zero = arith.constant 0.0 : f64\n"
        f"  %acc = scf.for %j = %c0 to %m step %c1 iter_args(%a = %zero) -> (f64) {{\n"
        f"    %v = memref.load %M[%i, %j] : {A2}\n"
        f"    %e = math.exp %v : f64\n"
        f"    %r = arith.addf %a, %e : f64\n"
        f"    scf.yield %r : f64\n"
        f"  }}\n"
        f"  %l = math.log %acc : f64\n"
        f"  %ls = arith.mulf %l, %s : f64\n"
        f"  memref.store %ls, %Z[%i] : {A64}\n"
        f"  memref.store %ls, %M[%i, %c0] : {A2}\n")
    M = np.random.default_rng(3).uniform(-1, 1, (N, 4))
    case = Case("k_2d", [("M", A2), ("Z", A64), ("s", "f64")], body,
                ["dup", "dup", "active"], [M, uniform(-1, 1), 0.9])
    dot_test(case)


def test_float32():
    """float32 kernel: checked against float64 finite differences of the
    same kernel at float32 precision (loose tolerance)."""
    body = gid() + (
        f"  %x = memref.load %X[%i] : {A32}\n"
        f"  %e = math.exp %x : f32\n"
        f"  %p = arith.mulf %e, %x : f32\n"
        f"  memref.store %p, %X[%i] : {A32}\n")
    case = Case("k_f32", [("X", A32)], body, ["dup"], [uniform(-1, 1, np.float32)])
    dot_test(case, eps=1e-2, rtol=1e-3, atol=1e-4)


def test_barrier():
    """Threads exchange values through a const array around a barrier; the
    reverse sweep mirrors the barrier."""
    body = gid() + (
        f"  %x = memref.load %X[%i] : {A64}\n"
        f"  %c = memref.load %C[%i] : {A64}\n"
        f'  "diffgpu.barrier"() : () -> ()\n'
        f"  %p = arith.mulf %x, %c : f64\n"
        f"  %q = arith.mulf %p, %x : f64\n"
        f"  memref.store %q, %X[%i] : {A64}\n")
    case = Case("k_bar", [("X", A64), ("C", A64)], body, ["dup", "const"],
                [uniform(-1, 1), uniform(-1, 1, seed=3)])
    dot_test(case)
    fwd_test(case)


def test_tape_growth():
    """A long loop (600 taped words per thread) outgrows the stack part of
    the tape: the buffer moves to the heap, doubling, and is freed."""
    body = loop_body(
        f"  %x = memref.load %X[%i] : {A64}\n"
        f"  %acc = scf.for %j = %c0 to %nn step %c1 iter_args(%a = %x) -> (f64) {{\n"
        f"    %s = math.sin %a : f64\n"
        f"    %m = arith.mulf %s, %x : f64\n"
        f"    %r = arith.addf %m, %a : f64\n"
        f"    scf.yield %r : f64\n"
        f"  }}\n"
        f"  memref.store %acc, %Z[%i] : {A64}\n")
    case = Case("k_grow", [("X", A64), ("Z", A64), ("n", "i64")], body,
                ["dup", "dup", "const"], [uniform(-0.3, 0.3), uniform(-1, 1), 600])
    dot_test(case, rtol=1e-5)

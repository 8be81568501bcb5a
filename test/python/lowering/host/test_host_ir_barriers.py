"""Shared memory and barriers in hand-written diffgpu IR run on the CPU.

Kernels in our dialect (docs/IR.md) are compiled with `compile_host` and
launched on numpy arrays: shared buffers per block, barriers in scf.while,
scf.for and divergent branches, per-thread memrefs live across barriers, and
barriers in (inlined) device functions. Geometry, strided arrays, control
flow, device functions and atomics: test_host_ir.py.
"""
from __future__ import annotations

import numpy as np
import pytest

from diffgpu.errors import CompileError
from diffgpu.types import ArrayType, ScalarType
from host_ir_helpers import array_types, compile_host, kernel, mem


# ---------------------------------------------------------------------------
# Kernels: shared memory and barriers
# ---------------------------------------------------------------------------

BLOCK_SUM = kernel("blocksum", [("A", mem("f32")), ("out", mem("f32")), ("rev", mem("f32"))], """
  %s = "diffgpu.shared_alloc"() : () -> memref<64xf32, #gpu.address_space<workgroup>>
  %tid = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %bid = "diffgpu.block_id"() {dim = 0 : i64} : () -> index
  %bdim = "diffgpu.block_dim"() {dim = 0 : i64} : () -> index
  %g0 = arith.muli %bid, %bdim : index
  %i = arith.addi %g0, %tid : index
  %v = memref.load %A[%i] : """ + mem("f32") + """
  %twice = arith.addf %v, %v : f32
  memref.store %v, %s[%tid] : memref<64xf32, #gpu.address_space<workgroup>>
  "diffgpu.barrier"() : () -> ()
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %last = arith.subi %bdim, %c1 : index
  %j = arith.subi %last, %tid : index
  %w = memref.load %s[%j] : memref<64xf32, #gpu.address_space<workgroup>>
  %wv = arith.addf %w, %twice : f32
  memref.store %wv, %rev[%i] : """ + mem("f32") + """
  %first = arith.cmpi eq, %tid, %c0 : index
  scf.if %first {
    %zero = arith.constant 0.0 : f32
    %sum = scf.for %k = %c0 to %bdim step %c1 iter_args(%acc = %zero) -> (f32) {
      %e = memref.load %s[%k] : memref<64xf32, #gpu.address_space<workgroup>>
      %a2 = arith.addf %acc, %e : f32
      scf.yield %a2 : f32
    }
    memref.store %sum, %out[%bid] : """ + mem("f32") + """
  }
  "diffgpu.barrier"() : () -> ()
  %c5 = arith.constant 5.0 : f32
  memref.store %c5, %s[%tid] : memref<64xf32, #gpu.address_space<workgroup>>
  return""")


def test_shared_memory_and_barriers():
    """Every thread's store to shared memory is seen by every thread after
    the barrier (reversal, block sum); each block has its own buffer."""
    prog = compile_host(BLOCK_SUM)
    A = np.arange(96, dtype=np.float32)
    out = np.zeros(3, np.float32)
    rev = np.zeros(96, np.float32)
    prog.launch("blocksum", (A, out, rev), array_types(A, out, rev), (3, 1, 1), (32, 1, 1))
    blocks = A.reshape(3, 32)
    np.testing.assert_array_equal(out, blocks.sum(axis=1))
    np.testing.assert_array_equal(rev, (blocks[:, ::-1] + 2 * blocks).ravel())


SHARED_F32 = "memref<64xf32, #gpu.address_space<workgroup>>"
TREE_REDUCE = kernel("reduce", [("A", mem("f32")), ("out", mem("f32"))], f"""
  %s = "diffgpu.shared_alloc"() : () -> {SHARED_F32}
  %t = "diffgpu.thread_id"() {{dim = 0 : i64}} : () -> index
  %b = "diffgpu.block_id"() {{dim = 0 : i64}} : () -> index
  %bd = "diffgpu.block_dim"() {{dim = 0 : i64}} : () -> index
  %g0 = arith.muli %b, %bd : index
  %i = arith.addi %g0, %t : index
  %v = memref.load %A[%i] : {mem("f32")}
  memref.store %v, %s[%t] : {SHARED_F32}
  "diffgpu.barrier"() : () -> ()
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %half = arith.divui %bd, %c2 : index
  %r = scf.while (%st = %half) : (index) -> index {{
    %go = arith.cmpi sgt, %st, %c0 : index
    scf.condition(%go) %st : index
  }} do {{
  ^bb0(%st: index):
    %act = arith.cmpi slt, %t, %st : index
    scf.if %act {{
      %j = arith.addi %t, %st : index
      %x = memref.load %s[%t] : {SHARED_F32}
      %y = memref.load %s[%j] : {SHARED_F32}
      %z = arith.addf %x, %y : f32
      memref.store %z, %s[%t] : {SHARED_F32}
    }}
    "diffgpu.barrier"() : () -> ()
    %nst = arith.divui %st, %c2 : index
    scf.yield %nst : index
  }}
  %first = arith.cmpi eq, %t, %c0 : index
  scf.if %first {{
    %tot = memref.load %s[%c0] : {SHARED_F32}
    memref.store %tot, %out[%b] : {mem("f32")}
  }}
  return""")


def test_barrier_in_while_loop_tree_reduction():
    """The classic shared-memory tree reduction: barriers in scf.while."""
    prog = compile_host(TREE_REDUCE)
    A = np.random.default_rng(8).standard_normal(4 * 64).astype(np.float32)
    out = np.zeros(4, np.float32)
    prog.launch("reduce", (A, out), array_types(A, out), (4, 1, 1), (64, 1, 1))
    np.testing.assert_allclose(out, A.reshape(4, 64).sum(axis=1), rtol=1e-5, atol=1e-5)


SHARED_F64 = "memref<32xf64, #gpu.address_space<workgroup>>"
SCAN_FOR = kernel("scan", [("A", mem("f64")), ("n", "index")], f"""
  %s = "diffgpu.shared_alloc"() : () -> {SHARED_F64}
  %t = "diffgpu.thread_id"() {{dim = 0 : i64}} : () -> index
  %v0 = memref.load %A[%t] : {mem("f64")}
  memref.store %v0, %s[%t] : {SHARED_F64}
  "diffgpu.barrier"() : () -> ()
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %res = scf.for %k = %c0 to %n step %c1 iter_args(%acc = %v0) -> (f64) {{
    %has = arith.cmpi sge, %t, %c1 : index
    %prev = scf.if %has -> (f64) {{
      %tm = arith.subi %t, %c1 : index
      %p = memref.load %s[%tm] : {SHARED_F64}
      scf.yield %p : f64
    }} else {{
      %z = arith.constant 0.0 : f64
      scf.yield %z : f64
    }}
    %nv = arith.addf %acc, %prev : f64
    "diffgpu.barrier"() : () -> ()
    memref.store %nv, %s[%t] : {SHARED_F64}
    "diffgpu.barrier"() : () -> ()
    scf.yield %nv : f64
  }}
  memref.store %res, %A[%t] : {mem("f64")}
  return""")


def test_barrier_in_for_loop_with_carried_value():
    """Barriers in scf.for whose iter_arg (per thread) lives across them."""
    prog = compile_host(SCAN_FOR)
    A = np.random.default_rng(9).standard_normal(32)
    expect = A.copy()
    for _ in range(3):
        expect = expect + np.concatenate([[0.0], expect[:-1]])
    prog.launch("scan", (A, 3), (ArrayType("float64", 1), ScalarType("int64")),
                (1, 1, 1), (32, 1, 1))
    np.testing.assert_allclose(A, expect, rtol=1e-12)


def guarded(loaded: bool) -> str:
    """A barrier under `i < n` and in a loop of `t - 1` iterations: with
    `loaded`, the condition and the loop bound are loaded per thread (arrays
    `inv`: i < n, `tv`: t), which no compile-time proof sees as
    thread-dependent."""
    params = [("A", mem("f32")), ("n", "index"), ("count", mem("i64"))]
    cond, ub, loads = "%in = arith.cmpi slt, %i, %n : index", "%t", ""
    if loaded:
        params += [("inv", mem("index")), ("tv", mem("index"))]
        cond, ub = "%in = arith.cmpi ne, %inl, %n0 : index", "%ub"
        loads = f"""
  %n0 = arith.constant 0 : index
  %inl = memref.load %inv[%i] : {mem("index")}
  %ub = memref.load %tv[%i] : {mem("index")}"""
    return kernel("guarded", params, f"""
  %s = "diffgpu.shared_alloc"() : () -> {SHARED_F32}
  %t = "diffgpu.thread_id"() {{dim = 0 : i64}} : () -> index
  %b = "diffgpu.block_id"() {{dim = 0 : i64}} : () -> index
  %bd = "diffgpu.block_dim"() {{dim = 0 : i64}} : () -> index
  %g0 = arith.muli %b, %bd : index
  %i = arith.addi %g0, %t : index{loads}
  {cond}
  scf.if %in {{
    %v = memref.load %A[%i] : {mem("f32")}
    memref.store %v, %s[%t] : {SHARED_F32}
    "diffgpu.barrier"() : () -> ()
    %c0 = arith.constant 0 : index
    %f = memref.load %s[%c0] : {SHARED_F32}
    %r = arith.addf %v, %f : f32
    memref.store %r, %A[%i] : {mem("f32")}
  }}
  %c0i = arith.constant 0 : i64
  %c1i = arith.constant 1 : i64
  %c1 = arith.constant 1 : index
  %cnt = scf.for %k = %c1 to {ub} step %c1 iter_args(%a = %c0i) -> (i64) {{
    "diffgpu.barrier"() : () -> ()
    %a1 = arith.addi %a, %c1i : i64
    scf.yield %a1 : i64
  }}
  memref.store %cnt, %count[%i] : {mem("i64")}
  return""")


def test_barrier_in_divergent_branch_and_loop():
    """Threads outside the branch, or done with their loop, leave the
    barrier to the others (as exited threads on a GPU). The condition and
    trip count are loaded, so only the race check (test_racecheck_barriers.py)
    reports the barriers; computed from the thread id, they are rejected."""
    prog = compile_host(guarded(loaded=True))
    A = np.arange(64, dtype=np.float32)
    count = np.full(64, -1, np.int64)
    inv, tv = (np.arange(64) < 40).astype(np.int64), np.arange(64, dtype=np.int64) % 32
    prog.launch("guarded", (A, 40, count, inv, tv),
                (ArrayType("float32", 1), ScalarType("int64"), ArrayType("int64", 1),
                 ArrayType("int64", 1), ArrayType("int64", 1)), (2, 1, 1), (32, 1, 1))
    expect = np.arange(64, dtype=np.float32)
    expect[:32] += 0
    expect[32:40] += 32
    np.testing.assert_array_equal(A, expect)
    np.testing.assert_array_equal(count, np.maximum(np.arange(64) % 32 - 1, 0))


def test_barrier_under_thread_dependent_control_is_rejected():
    with pytest.raises(CompileError) as info:
        compile_host(guarded(loaded=False))
    msg = str(info.value)
    assert "dg.syncthreads() under a condition that depends on the thread id" in msg
    assert "dg.syncthreads() in a loop whose trip count depends on the thread id" in msg


SHARED_32 = "memref<32xf32, #gpu.address_space<workgroup>>"
BARRIER_IN_CALLS = kernel("rotate", [("A", mem("f32")), ("s", SHARED_32)], f"""
  %t = "diffgpu.thread_id"() {{dim = 0 : i64}} : () -> index
  %bd = "diffgpu.block_dim"() {{dim = 0 : i64}} : () -> index
  %v = memref.load %A[%t] : {mem("f32")}
  memref.store %v, %s[%t] : {SHARED_32}
  "diffgpu.barrier"() : () -> ()
  %c1 = arith.constant 1 : index
  %t1 = arith.addi %t, %c1 : index
  %j = arith.remui %t1, %bd : index
  %w = memref.load %s[%j] : {SHARED_32}
  "diffgpu.barrier"() : () -> ()
  return %w : f32""", is_kernel=False, results="f32") + kernel(
    "twice", [("A", mem("f32")), ("s", SHARED_32)], f"""
  %a = func.call @rotate(%A, %s) : ({mem("f32")}, {SHARED_32}) -> f32
  %t = "diffgpu.thread_id"() {{dim = 0 : i64}} : () -> index
  memref.store %a, %A[%t] : {mem("f32")}
  "diffgpu.barrier"() : () -> ()
  %b = func.call @rotate(%A, %s) : ({mem("f32")}, {SHARED_32}) -> f32
  memref.store %b, %A[%t] : {mem("f32")}
  return""", is_kernel=False) + kernel("k", [("A", mem("f32"))], f"""
  %s = "diffgpu.shared_alloc"() : () -> {SHARED_32}
  func.call @twice(%A, %s) : ({mem("f32")}, {SHARED_32}) -> ()
  return""")


TAPE_ACROSS_BARRIER = kernel("tapes", [("A", mem("f32"))], f"""
  %tape = memref.alloca() : memref<4xf32>
  %box = memref.alloca() : memref<1xmemref<4xf32>>
  %t = "diffgpu.thread_id"() {{dim = 0 : i64}} : () -> index
  %c0 = arith.constant 0 : index
  %v = memref.load %A[%t] : {mem("f32")}
  memref.store %v, %tape[%c0] : memref<4xf32>
  memref.store %tape, %box[%c0] : memref<1xmemref<4xf32>>
  "diffgpu.barrier"() : () -> ()
  %tp = memref.load %box[%c0] : memref<1xmemref<4xf32>>
  %w = memref.load %tp[%c0] : memref<4xf32>
  %x = memref.load %tape[%c0] : memref<4xf32>
  %r = arith.addf %w, %x : f32
  memref.store %r, %A[%t] : {mem("f32")}
  return""")


def test_memrefs_live_across_barriers():
    """Per-thread allocas (autodiff's tapes) and memrefs stored in memrefs
    survive a barrier: each thread's allocation lives until the block ends."""
    prog = compile_host(TAPE_ACROSS_BARRIER)
    A = np.arange(24, dtype=np.float32)
    prog.launch("tapes", (A,), array_types(A), (1, 1, 1), (24, 1, 1))
    np.testing.assert_array_equal(A, 2 * np.arange(24, dtype=np.float32))


def test_barriers_in_device_functions_are_inlined():
    """Device functions (nested) with barriers run correctly once inlined."""
    prog = compile_host(BARRIER_IN_CALLS)
    assert prog.kernel_names() == ["k"]
    A = np.arange(16, dtype=np.float32)
    prog.launch("k", (A,), array_types(A), (1, 1, 1), (16, 1, 1))
    np.testing.assert_array_equal(A, np.roll(np.arange(16, dtype=np.float32), -2))

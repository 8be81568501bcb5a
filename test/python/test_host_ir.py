"""Hand-written diffgpu IR run on the CPU (diffgpu-to-host + runtime.cpu).

Kernels in our dialect (docs/IR.md) are compiled with `compile_host` and
launched on numpy arrays; every result is compared with numpy: geometry in
three dims, strided/negative/broadcast arrays, scf.for/if/while, device
functions, atomics, shared memory and barriers, and every math/arith op the
frontend may emit in f32 and f64.
"""
from __future__ import annotations

import functools
import math

import numpy as np
import pytest

from diffgpu.errors import CompileError, LaunchError
from diffgpu.lowering.targets import HOST_TARGET
from diffgpu.runtime.cpu import HostProgram, OutOfBoundsError
from diffgpu.runtime.cpu import compile_host as _compile_host
from diffgpu.types import ArrayType, ScalarType

@functools.lru_cache(maxsize=None)
def compile_host(text):
    """Each test module text compiles once per session."""
    return _compile_host(text)


NP = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "i64": np.int64}
DTYPE = {"f32": "float32", "f64": "float64", "i32": "int32", "i64": "int64"}


def mem(t: str, ndim: int = 1) -> str:
    dims = "?x" * ndim
    strides = ", ".join(["?"] * ndim)
    return f"memref<{dims}{t}, strided<[{strides}], offset: ?>>"


def kernel(name: str, params, body: str, is_kernel: bool = True, results: str = "") -> str:
    """A func.func with the host target; params: [(name, type text)]."""
    args = ", ".join(f"%{n}: {t}" for n, t in params)
    attrs = ("diffgpu.kernel, " if is_kernel else "") + f"diffgpu.target = {HOST_TARGET}"
    res = f" -> {results}" if results else ""
    return f"func.func @{name}({args}){res} attributes {{{attrs}}} {{\n{body}\n}}\n"


def global_id_1d(out: str, out_type: str) -> str:
    """Body prologue: %i = global thread id along x; %in = %i < dim(out, 0)."""
    return f"""  %tid = "diffgpu.thread_id"() {{dim = 0 : i64}} : () -> index
  %bid = "diffgpu.block_id"() {{dim = 0 : i64}} : () -> index
  %bdim = "diffgpu.block_dim"() {{dim = 0 : i64}} : () -> index
  %gi0 = arith.muli %bid, %bdim : index
  %i = arith.addi %gi0, %tid : index
  %c0 = arith.constant 0 : index
  %n = memref.dim %{out}, %c0 : {out_type}
  %in = arith.cmpi slt, %i, %n : index
"""


def elementwise(name: str, in_types, out_type: str, body: str) -> str:
    """`out[i] = body(x0[i], x1[i], ...)`; body defines %r from %x0, %x1, ..."""
    params = [("out", mem(out_type))] + [(f"a{k}", mem(t)) for k, t in enumerate(in_types)]
    loads = "\n".join(f"    %x{k} = memref.load %a{k}[%i] : {mem(t)}"
                      for k, t in enumerate(in_types))
    text = global_id_1d("out", mem(out_type)) + f"""  scf.if %in {{
{loads}
    {body.strip()}
    memref.store %r, %out[%i] : {mem(out_type)}
  }}
  return"""
    return kernel(name, params, text)


def array_types(*arrays):
    return tuple(ArrayType(a.dtype.name, a.ndim) for a in arrays)


def launch_1d(prog, name, arrays, n, block=32):
    """Launch `name` on arrays with enough 1-d blocks for n elements."""
    grid = max(1, -(-n // block))
    prog.launch(name, arrays, array_types(*arrays), (grid, 1, 1), (block, 1, 1))


# ---------------------------------------------------------------------------
# Kernels: geometry, control flow, calls, atomics, shared memory, barriers
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("t", ["f32", "f64"])
def test_saxpy_1d_partial_last_block(t):
    """Bounds guard, scalar argument, grid not a multiple of the data."""
    body = global_id_1d("y", mem(t)) + f"""  scf.if %in {{
    %xv = memref.load %x[%i] : {mem(t)}
    %yv = memref.load %y[%i] : {mem(t)}
    %ax = arith.mulf %a, %xv : {t}
    %r = arith.addf %ax, %yv : {t}
    memref.store %r, %y[%i] : {mem(t)}
  }}
  return"""
    prog = compile_host(kernel("saxpy", [("a", t), ("x", mem(t)), ("y", mem(t))], body))
    rng = np.random.default_rng(0)
    x = rng.standard_normal(1000).astype(NP[t])
    y = rng.standard_normal(1000).astype(NP[t])
    expect = NP[t](1.5) * x + y
    prog.launch("saxpy", (1.5, x, y), (ScalarType(DTYPE[t]),) + array_types(x, y),
                (8, 1, 1), (128, 1, 1))
    np.testing.assert_array_equal(y, expect)


GEOMETRY_3D = kernel("geom", [("out", mem("i64", 3))], """
  %tx = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %ty = "diffgpu.thread_id"() {dim = 1 : i64} : () -> index
  %tz = "diffgpu.thread_id"() {dim = 2 : i64} : () -> index
  %bx = "diffgpu.block_id"() {dim = 0 : i64} : () -> index
  %by = "diffgpu.block_id"() {dim = 1 : i64} : () -> index
  %bz = "diffgpu.block_id"() {dim = 2 : i64} : () -> index
  %dx = "diffgpu.block_dim"() {dim = 0 : i64} : () -> index
  %dy = "diffgpu.block_dim"() {dim = 1 : i64} : () -> index
  %dz = "diffgpu.block_dim"() {dim = 2 : i64} : () -> index
  %gx = "diffgpu.grid_dim"() {dim = 0 : i64} : () -> index
  %gy = "diffgpu.grid_dim"() {dim = 1 : i64} : () -> index
  %gz = "diffgpu.grid_dim"() {dim = 2 : i64} : () -> index
  %x0 = arith.muli %bx, %dx : index
  %x = arith.addi %x0, %tx : index
  %y0 = arith.muli %by, %dy : index
  %y = arith.addi %y0, %ty : index
  %z0 = arith.muli %bz, %dz : index
  %z = arith.addi %z0, %tz : index
  %c10 = arith.constant 10 : index
  %c100 = arith.constant 100 : index
  %g1 = arith.muli %gx, %c10 : index
  %g2 = arith.addi %g1, %gy : index
  %g3 = arith.muli %g2, %c10 : index
  %g = arith.addi %g3, %gz : index
  %gg = arith.muli %g, %c100 : index
  %v = arith.addi %gg, %tz : index
  %vi = arith.index_cast %v : index to i64
  memref.store %vi, %out[%z, %y, %x] : """ + mem("i64", 3) + """
  return""")


def test_geometry_3d_grid_and_block():
    """Every geometry op in all three dims: each thread writes its position."""
    prog = compile_host(GEOMETRY_3D)
    grid, block = (3, 2, 2), (4, 3, 2)
    out = np.full((4, 6, 12), -1, np.int64)  # z, y, x
    prog.launch("geom", (out,), array_types(out), grid, block)
    z = np.arange(4)[:, None, None] % 2
    expect = np.broadcast_to((3 * 100 + 2 * 10 + 2) * 100 + z, out.shape)
    np.testing.assert_array_equal(out, expect)


TRANSPOSE_SCALE = kernel("tscale", [("A", mem("f64", 2)), ("B", mem("f64", 2)), ("s", "f64")], """
  %tx = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %ty = "diffgpu.thread_id"() {dim = 1 : i64} : () -> index
  %bx = "diffgpu.block_id"() {dim = 0 : i64} : () -> index
  %by = "diffgpu.block_id"() {dim = 1 : i64} : () -> index
  %dx = "diffgpu.block_dim"() {dim = 0 : i64} : () -> index
  %dy = "diffgpu.block_dim"() {dim = 1 : i64} : () -> index
  %j0 = arith.muli %bx, %dx : index
  %j = arith.addi %j0, %tx : index
  %i0 = arith.muli %by, %dy : index
  %i = arith.addi %i0, %ty : index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %A, %c0 : """ + mem("f64", 2) + """
  %m = memref.dim %A, %c1 : """ + mem("f64", 2) + """
  %in0 = arith.cmpi slt, %i, %n : index
  %in1 = arith.cmpi slt, %j, %m : index
  %in = arith.andi %in0, %in1 : i1
  scf.if %in {
    %v = memref.load %A[%i, %j] : """ + mem("f64", 2) + """
    %r = arith.mulf %v, %s : f64
    memref.store %r, %B[%j, %i] : """ + mem("f64", 2) + """
  }
  return""")


@pytest.mark.parametrize("view", ["contiguous", "fortran", "sliced", "negative", "broadcast_in"])
def test_2d_strided_arrays(view):
    """B = s * A.T on any strides: non-contiguous, Fortran order, negative, 0.
    Elements of B's parent array outside the view stay untouched."""
    prog = compile_host(TRANSPOSE_SCALE)
    base = np.random.default_rng(1).standard_normal((30, 40))
    parent = np.zeros((40, 30))
    if view == "contiguous":
        A, B = base[:13, :17].copy(), parent[:17, :13]
    elif view == "fortran":
        A, B = np.asfortranarray(base[:13, :17]), np.asfortranarray(parent[:17, :13])
        parent = B
    elif view == "sliced":
        A, B = base[1::2, 3::2], parent[::2, ::2][:19, :15]
    elif view == "negative":
        A, B = base[::-2, ::-3], parent[::-1, ::-2][:14, :15]
    else:
        A, B = np.broadcast_to(base[0], (9, 40)), parent[:, :9]
    assert A.shape[0] <= 16 and A.shape[1] <= 40 and B.shape == A.shape[::-1]
    prog.launch("tscale", (A, B, 0.5), array_types(A, B) + (ScalarType("float64"),),
                (5, 4, 1), (8, 4, 1))  # covers 16 rows x 40 columns of A
    np.testing.assert_array_equal(B, 0.5 * A.T)
    B[...] = 0
    assert not parent.any(), "the kernel wrote outside the view"


ROW_SUMS = kernel("rowsum", [("A", mem("f32", 2)), ("out", mem("f32"))],
                  global_id_1d("out", mem("f32")) + """  scf.if %in {
    %c1 = arith.constant 1 : index
    %m = memref.dim %A, %c1 : """ + mem("f32", 2) + """
    %zero = arith.constant 0.0 : f32
    %s = scf.for %j = %c0 to %m step %c1 iter_args(%acc = %zero) -> (f32) {
      %v = memref.load %A[%i, %j] : """ + mem("f32", 2) + """
      %pos = arith.cmpf ogt, %v, %zero : f32
      %w = scf.if %pos -> (f32) {
        scf.yield %v : f32
      } else {
        %two = arith.constant 2.0 : f32
        %h = arith.divf %v, %two : f32
        scf.yield %h : f32
      }
      %acc2 = arith.addf %acc, %w : f32
      scf.yield %acc2 : f32
    }
    memref.store %s, %out[%i] : """ + mem("f32") + """
  }
  return""")


def test_scf_for_and_if_with_results():
    """scf.for with iter_args and scf.if yielding values, per thread."""
    prog = compile_host(ROW_SUMS)
    A = np.random.default_rng(2).standard_normal((37, 11)).astype(np.float32)
    out = np.zeros(37, np.float32)
    launch_1d(prog, "rowsum", (A, out), 37, block=8)
    expect = np.where(A > 0, A, A / np.float32(2)).sum(axis=1, dtype=np.float32)
    np.testing.assert_allclose(out, expect, rtol=1e-6, atol=1e-6)


COLLATZ = kernel("collatz", [("out", mem("i64")), ("start", mem("i64"))],
                 global_id_1d("out", mem("i64")) + """  scf.if %in {
    %x0 = memref.load %start[%i] : """ + mem("i64") + """
    %one = arith.constant 1 : i64
    %two = arith.constant 2 : i64
    %three = arith.constant 3 : i64
    %zero = arith.constant 0 : i64
    %r:2 = scf.while (%x = %x0, %k = %zero) : (i64, i64) -> (i64, i64) {
      %go = arith.cmpi sgt, %x, %one : i64
      scf.condition(%go) %x, %k : i64, i64
    } do {
    ^bb0(%x: i64, %k: i64):
      %odd = arith.remsi %x, %two : i64
      %isodd = arith.cmpi ne, %odd, %zero : i64
      %a = arith.muli %x, %three : i64
      %a1 = arith.addi %a, %one : i64
      %h = arith.divsi %x, %two : i64
      %nx = arith.select %isodd, %a1, %h : i64
      %nk = arith.addi %k, %one : i64
      scf.yield %nx, %nk : i64, i64
    }
    memref.store %r#1, %out[%i] : """ + mem("i64") + """
  }
  return""")


def test_scf_while():
    prog = compile_host(COLLATZ)
    start = np.arange(1, 51, dtype=np.int64)
    out = np.full(50, -1, np.int64)
    launch_1d(prog, "collatz", (out, start), 50, block=16)

    def steps(x):
        k = 0
        while x > 1:
            x, k = (3 * x + 1 if x % 2 else x // 2), k + 1
        return k
    np.testing.assert_array_equal(out, [steps(int(s)) for s in start])


DEVICE_CALLS = (
    kernel("gid", [], """
  %tid = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %bid = "diffgpu.block_id"() {dim = 0 : i64} : () -> index
  %bdim = "diffgpu.block_dim"() {dim = 0 : i64} : () -> index
  %g0 = arith.muli %bid, %bdim : index
  %g = arith.addi %g0, %tid : index
  return %g : index""", is_kernel=False, results="index")
    + kernel("sq", [("x", "f64")], """
  %y = arith.mulf %x, %x : f64
  return %y : f64""", is_kernel=False, results="f64")
    + kernel("store_sq", [("A", mem("f64")), ("B", mem("f64"))], """
  %i = func.call @gid() : () -> index
  %c0 = arith.constant 0 : index
  %n = memref.dim %A, %c0 : """ + mem("f64") + """
  %in = arith.cmpi slt, %i, %n : index
  scf.if %in {
    %v = memref.load %A[%i] : """ + mem("f64") + """
    %s = func.call @sq(%v) : (f64) -> f64
    memref.store %s, %B[%i] : """ + mem("f64") + """
  }
  return""")
    + kernel("caller", [("A", mem("f64")), ("B", mem("f64"))], """
  func.call @store_sq(%A, %B) : (""" + mem("f64") + ", " + mem("f64") + """) -> ()
  return"""))


@pytest.mark.parametrize("entry", ["store_sq", "caller"])
def test_device_functions_read_geometry(entry):
    """A device function reads the thread id; a kernel called from a kernel."""
    prog = compile_host(DEVICE_CALLS)
    assert sorted(prog.kernel_names()) == ["caller", "store_sq"]
    A = np.linspace(-2, 2, 70)
    B = np.zeros(70)
    launch_1d(prog, entry, (A, B), 70, block=16)
    np.testing.assert_array_equal(B, A * A)


ATOMICS = kernel("atomics", [("H", mem("i32")), ("S", mem("f64", 2)), ("old", mem("i32")),
                             ("x", mem("f64"))],
                 global_id_1d("x", mem("f64")) + """  scf.if %in {
    %one = arith.constant 1 : i32
    %c0i = arith.constant 0 : index
    %o = "diffgpu.atomic_add"(%H, %one, %c0i) : (""" + mem("i32") + """, i32, index) -> i32
    memref.store %o, %old[%i] : """ + mem("i32") + """
    %v = memref.load %x[%i] : """ + mem("f64") + """
    %c3 = arith.constant 3 : index
    %r = arith.remui %i, %c3 : index
    %f = "diffgpu.atomic_add"(%S, %v, %r, %c0i) : (""" + mem("f64", 2) + """, f64, index, index) -> f64
  }
  return""")


def test_atomic_add_returns_old_value():
    prog = compile_host(ATOMICS)
    n = 45
    H = np.array([5], np.int32)
    S = np.zeros((3, 2))[:, ::-1]
    old = np.full(n, -1, np.int32)
    x = np.arange(n, dtype=np.float64)
    launch_1d(prog, "atomics", (H, S, old, x), n, block=8)
    assert H[0] == 5 + n
    assert sorted(old.tolist()) == list(range(5, 5 + n))
    np.testing.assert_array_equal(S[:, 0], [x[0::3].sum(), x[1::3].sum(), x[2::3].sum()])
    assert not S[:, 1].any()


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


GUARDED = kernel("guarded", [("A", mem("f32")), ("n", "index"), ("count", mem("i64"))], f"""
  %s = "diffgpu.shared_alloc"() : () -> {SHARED_F32}
  %t = "diffgpu.thread_id"() {{dim = 0 : i64}} : () -> index
  %b = "diffgpu.block_id"() {{dim = 0 : i64}} : () -> index
  %bd = "diffgpu.block_dim"() {{dim = 0 : i64}} : () -> index
  %g0 = arith.muli %b, %bd : index
  %i = arith.addi %g0, %t : index
  %in = arith.cmpi slt, %i, %n : index
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
  %cnt = scf.for %k = %c1 to %t step %c1 iter_args(%a = %c0i) -> (i64) {{
    "diffgpu.barrier"() : () -> ()
    %a1 = arith.addi %a, %c1i : i64
    scf.yield %a1 : i64
  }}
  memref.store %cnt, %count[%i] : {mem("i64")}
  return""")


def test_barrier_in_divergent_branch_and_loop():
    """Threads outside the branch, or done with their loop, leave the
    barrier to the others (as exited threads on a GPU)."""
    prog = compile_host(GUARDED)
    A = np.arange(64, dtype=np.float32)
    count = np.full(64, -1, np.int64)
    prog.launch("guarded", (A, 40, count), (ArrayType("float32", 1), ScalarType("int64"),
                                            ArrayType("int64", 1)), (2, 1, 1), (32, 1, 1))
    expect = np.arange(64, dtype=np.float32)
    expect[:32] += 0
    expect[32:40] += 32
    np.testing.assert_array_equal(A, expect)
    np.testing.assert_array_equal(count, np.maximum(np.arange(64) % 32 - 1, 0))


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


# ---------------------------------------------------------------------------
# Every math / arith op the frontend may emit, f32 and f64, against numpy
# ---------------------------------------------------------------------------

def _erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x)


#: name -> (op, domain, reference on float64); body `%r = op %x0 : T`
MATH_UNARY = {
    "exp": ("math.exp", (-10, 10), np.exp),
    "log": ("math.log", (1e-3, 1e3), np.log),
    "log1p": ("math.log1p", (-0.9, 5), np.log1p),
    "expm1": ("math.expm1", (-3, 3), np.expm1),
    "sin": ("math.sin", (-7, 7), np.sin),
    "cos": ("math.cos", (-7, 7), np.cos),
    "tan": ("math.tan", (-1.5, 1.5), np.tan),
    "tanh": ("math.tanh", (-6, 6), np.tanh),
    "sinh": ("math.sinh", (-5, 5), np.sinh),
    "cosh": ("math.cosh", (-5, 5), np.cosh),
    "sqrt": ("math.sqrt", (0, 100), np.sqrt),
    "rsqrt": ("math.rsqrt", (1e-2, 100), lambda x: 1 / np.sqrt(x)),
    "absf": ("math.absf", (-9, 9), np.abs),
    "erf": ("math.erf", (-4, 4), _erf),
    "floor": ("math.floor", (-9, 9), np.floor),
    "ceil": ("math.ceil", (-9, 9), np.ceil),
    "trunc": ("math.trunc", (-9, 9), np.trunc),
    "atan": ("math.atan", (-9, 9), np.arctan),
    "exp2": ("math.exp2", (-9, 9), np.exp2),
    "log2": ("math.log2", (1e-3, 1e3), np.log2),
    "log10": ("math.log10", (1e-3, 1e3), np.log10),
    "cbrt": ("math.cbrt", (-9, 9), np.cbrt),
    "negf": ("arith.negf", (-9, 9), np.negative),
    "asin": ("math.asin", (-1, 1), np.arcsin),
    "acos": ("math.acos", (-1, 1), np.arccos),
    "asinh": ("math.asinh", (-9, 9), np.arcsinh),
    "acosh": ("math.acosh", (1, 9), np.arccosh),
    "atanh": ("math.atanh", (-0.99, 0.99), np.arctanh),
    "erfc": ("math.erfc", (-4, 4), lambda x: 1 - _erf(x)),
    "round": ("math.round", (-9, 9), lambda x: np.sign(x) * np.floor(np.abs(x) + 0.5)),
    "roundeven": ("math.roundeven", (-9, 9), np.rint),
}
#: name -> (op, domain of x, domain of y, reference); body `%r = op %x0, %x1 : T`
FLOAT_BINARY = {
    "powf": ("math.powf", (0.01, 5), (-4, 4), np.power),
    "atan2": ("math.atan2", (-3, 3), (-3, 3), np.arctan2),
    "addf": ("arith.addf", (-9, 9), (-9, 9), np.add),
    "subf": ("arith.subf", (-9, 9), (-9, 9), np.subtract),
    "mulf": ("arith.mulf", (-9, 9), (-9, 9), np.multiply),
    "divf": ("arith.divf", (-9, 9), (0.5, 9), np.divide),
    "remf": ("arith.remf", (-9, 9), (0.5, 3), np.fmod),
    "minimumf": ("arith.minimumf", (-9, 9), (-9, 9), np.minimum),
    "maximumf": ("arith.maximumf", (-9, 9), (-9, 9), np.maximum),
    "minnumf": ("arith.minnumf", (-9, 9), (-9, 9), np.fmin),
    "maxnumf": ("arith.maxnumf", (-9, 9), (-9, 9), np.fmax),
    "copysign": ("math.copysign", (-9, 9), (-9, 9), np.copysign),
}
CMPF = ("oeq", "one", "olt", "ole", "ogt", "oge", "ueq", "une", "ult", "ule", "ugt", "uge",
        "ord", "uno")
N = 257


def _sample(rng, lo, hi, dtype):
    x = rng.uniform(lo, hi, N)
    x[:5] = np.clip([0.0, 1e-7, -1e-7, 0.5, -0.5], lo, hi)  # edge values in range
    return x.astype(dtype)


def _float_module(t):
    parts = []
    for name, (op, _, _) in MATH_UNARY.items():
        parts.append(elementwise(name, [t], t, f"%r = {op} %x0 : {t}"))
    for name, (op, _, _, _) in FLOAT_BINARY.items():
        parts.append(elementwise(name, [t, t], t, f"%r = {op} %x0, %x1 : {t}"))
    parts.append(elementwise("fma", [t, t, t], t, f"%r = math.fma %x0, %x1, %x2 : {t}"))
    parts.append(elementwise("fpowi", [t, "i32"], t, f"%r = math.fpowi %x0, %x1 : {t}, i32"))
    for p in CMPF:
        parts.append(elementwise("cmpf_" + p, [t, t], "i32",
                                 f"%c = arith.cmpf {p}, %x0, %x1 : {t}\n"
                                 "    %r = arith.extui %c : i1 to i32"))
    parts.append(elementwise("select", [t, t], t, f"%c = arith.cmpf olt, %x0, %x1 : {t}\n"
                             f"    %r = arith.select %c, %x1, %x0 : {t}"))
    return "".join(parts)


@functools.lru_cache(maxsize=None)
def _program(family, t):
    return compile_host({"float": _float_module, "int": _int_module,
                         "cast": lambda _: _cast_module()}[family](t))


def _tol(t):
    # numpy's float32 functions and libm may differ by a few ulp
    return dict(rtol=4e-6, atol=2e-7) if t == "f32" else dict(rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("t", ["f32", "f64"])
@pytest.mark.parametrize("name", list(MATH_UNARY))
def test_float_unary(name, t):
    _, domain, ref = MATH_UNARY[name]
    x = _sample(np.random.default_rng(3), *domain, NP[t])
    out = np.zeros(N, NP[t])
    launch_1d(_program("float", t), name, (out, x), N)
    expect = ref(x.astype(np.float64)).astype(NP[t])
    np.testing.assert_allclose(out, expect, **_tol(t))


@pytest.mark.parametrize("t", ["f32", "f64"])
@pytest.mark.parametrize("name", list(FLOAT_BINARY))
def test_float_binary(name, t):
    _, dx, dy, ref = FLOAT_BINARY[name]
    rng = np.random.default_rng(4)
    x, y = _sample(rng, *dx, NP[t]), _sample(rng, *dy, NP[t])
    out = np.zeros(N, NP[t])
    launch_1d(_program("float", t), name, (out, x, y), N)
    with np.errstate(all="ignore"):
        expect = ref(x, y)  # in the array's own precision (exact ops must be equal)
    np.testing.assert_allclose(out, expect, **_tol(t))


@pytest.mark.parametrize("t", ["f32", "f64"])
def test_min_max_propagate_nan(t):
    """minimumf/maximumf propagate NaN (np.minimum); minnumf/maxnumf drop it (np.fmin)."""
    x = np.array([np.nan, 1.0, np.nan, -0.0], NP[t])
    y = np.array([2.0, np.nan, np.nan, 0.0], NP[t])
    for name, ref in (("minimumf", np.minimum), ("maximumf", np.maximum),
                      ("minnumf", np.fmin), ("maxnumf", np.fmax)):
        out = np.zeros(4, NP[t])
        launch_1d(_program("float", t), name, (out, x, y), 4)
        np.testing.assert_array_equal(out[:3], ref(x, y)[:3], err_msg=name)


@pytest.mark.parametrize("t", ["f32", "f64"])
def test_fma(t):
    rng = np.random.default_rng(5)
    x, y, z = (_sample(rng, -9, 9, NP[t]) for _ in range(3))
    out = np.zeros(N, NP[t])
    launch_1d(_program("float", t), "fma", (out, x, y, z), N)
    expect = (x.astype(np.float64) * y + z).astype(NP[t])
    np.testing.assert_allclose(out, expect, **_tol(t))


@pytest.mark.parametrize("t", ["f32", "f64"])
def test_fpowi(t):
    x = np.linspace(-3, 3, 25).astype(NP[t])
    n = np.arange(-12, 13, dtype=np.int32)
    out = np.zeros(25, NP[t])
    launch_1d(_program("float", t), "fpowi", (out, x, n), 25)
    with np.errstate(all="ignore"):
        expect = (x.astype(np.float64) ** n).astype(NP[t])
    np.testing.assert_allclose(out, expect, **_tol(t))


@pytest.mark.parametrize("t", ["f32", "f64"])
def test_cmpf_all_predicates_and_select(t):
    vals = np.array([-1.0, 0.0, 1.0, np.nan], NP[t])
    x, y = (a.ravel().copy() for a in np.meshgrid(vals, vals))
    nan = np.isnan(x) | np.isnan(y)
    base = {"eq": x == y, "ne": x != y, "lt": x < y, "le": x <= y, "gt": x > y, "ge": x >= y}
    with np.errstate(invalid="ignore"):
        for p in CMPF:
            if p == "ord":
                expect = ~nan
            elif p == "uno":
                expect = nan
            elif p == "one":
                expect = (x != y) & ~nan
            elif p[0] == "o":
                expect = base[p[1:]] & ~nan
            else:
                expect = base[p[1:]] | nan
            out = np.full(x.size, 7, np.int32)
            launch_1d(_program("float", t), "cmpf_" + p, (out, x, y), x.size)
            np.testing.assert_array_equal(out, expect.astype(np.int32), err_msg=p)
    out = np.zeros(x.size, NP[t])
    launch_1d(_program("float", t), "select", (out, x, y), x.size)
    np.testing.assert_array_equal(out, np.where(x < y, y, x))


INT_BINARY = ("addi", "subi", "muli", "divsi", "remsi", "floordivsi", "ceildivsi",
              "minsi", "maxsi", "andi", "ori", "xori", "shli", "shrsi")
CMPI = ("eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge")


def _int_module(t):
    parts = [elementwise(op, [t, t], t, f"%r = arith.{op} %x0, %x1 : {t}") for op in INT_BINARY]
    for p in CMPI:
        parts.append(elementwise("cmpi_" + p, [t, t], "i32",
                                 f"%c = arith.cmpi {p}, %x0, %x1 : {t}\n"
                                 "    %r = arith.extui %c : i1 to i32"))
    # Python's `%` (sign of the divisor) from floordivsi: a - (a // b) * b
    parts.append(elementwise("pymod", [t, t], t, f"%q = arith.floordivsi %x0, %x1 : {t}\n"
                             f"    %m = arith.muli %q, %x1 : {t}\n"
                             f"    %r = arith.subi %x0, %m : {t}"))
    return "".join(parts)


def _int_ref(op, a, b):
    a64, b64 = a.astype(np.int64), b.astype(np.int64)
    trunc_div = np.sign(a64) * np.sign(b64) * (np.abs(a64) // np.abs(b64))
    return {"addi": a + b, "subi": a - b, "muli": a * b,
            "divsi": trunc_div,                       # C: rounds toward zero
            "remsi": np.fmod(a64, b64),               # C: sign of the dividend
            "floordivsi": np.floor_divide(a64, b64),  # Python //
            "ceildivsi": -np.floor_divide(-a64, b64),
            "minsi": np.minimum(a, b), "maxsi": np.maximum(a, b),
            "andi": a & b, "ori": a | b, "xori": a ^ b,
            "shli": a << b, "shrsi": a >> b,  # b in [0, 9] for these
            "pymod": np.remainder(a64, b64)}[op]      # Python %


@pytest.mark.parametrize("t", ["i32", "i64"])
@pytest.mark.parametrize("op", INT_BINARY + ("pymod",))
def test_int_binary(op, t):
    rng = np.random.default_rng(6)
    big = np.iinfo(NP[t]).max
    a = rng.integers(-1000, 1000, N).astype(NP[t])
    b = rng.integers(-9, 10, N).astype(NP[t])
    b[b == 0] = 3
    if op in ("shli", "shrsi"):
        b = np.abs(b)
    if op in ("addi", "subi", "muli", "andi", "ori", "xori", "minsi", "maxsi"):
        a[:4] = [big, -big - 1, big, 12345]  # wrap-around like numpy
        b[:4] = [1, -1, 2, -7]
    out = np.zeros(N, NP[t])
    launch_1d(_program("int", t), op, (out, a, b), N)
    with np.errstate(over="ignore"):
        expect = _int_ref(op, a, b).astype(NP[t])
    np.testing.assert_array_equal(out, expect)


@pytest.mark.parametrize("t", ["i32", "i64"])
def test_int_division_never_traps(t):
    """x / 0 and MIN / -1 would kill the process with SIGFPE on x86; on the
    host they give x (divisor taken as 1), MIN (wrap-around) and 0 (rem)."""
    lo = np.iinfo(NP[t]).min
    a = np.array([7, -7, lo, lo, 9], NP[t])
    b = np.array([0, 0, -1, 0, 2], NP[t])
    expect = {"divsi": [7, -7, lo, lo, 4], "remsi": [0, 0, 0, 0, 1],
              "floordivsi": [7, -7, lo, lo, 4], "ceildivsi": [7, -7, lo, lo, 5]}
    for op, exp in expect.items():
        out = np.full(5, 99, NP[t])
        launch_1d(_program("int", t), op, (out, a, b), 5)
        np.testing.assert_array_equal(out, np.array(exp, NP[t]), err_msg=op)


@pytest.mark.parametrize("t", ["i32", "i64"])
def test_cmpi_all_predicates(t):
    vals = np.array([-2, -1, 0, 1, 5], NP[t])
    x, y = (a.ravel().copy() for a in np.meshgrid(vals, vals))
    ux, uy = x.astype(np.uint64 if t == "i64" else np.uint32), y.astype(
        np.uint64 if t == "i64" else np.uint32)
    refs = {"eq": x == y, "ne": x != y, "slt": x < y, "sle": x <= y, "sgt": x > y,
            "sge": x >= y, "ult": ux < uy, "ule": ux <= uy, "ugt": ux > uy, "uge": ux >= uy}
    for p in CMPI:
        out = np.full(x.size, 7, np.int32)
        launch_1d(_program("int", t), "cmpi_" + p, (out, x, y), x.size)
        np.testing.assert_array_equal(out, refs[p].astype(np.int32), err_msg=p)


#: name -> (in type, out type, body)
CASTS = {
    "sitofp_i32_f32": ("i32", "f32", "%r = arith.sitofp %x0 : i32 to f32"),
    "sitofp_i64_f64": ("i64", "f64", "%r = arith.sitofp %x0 : i64 to f64"),
    "sitofp_i32_f64": ("i32", "f64", "%r = arith.sitofp %x0 : i32 to f64"),
    "sitofp_i64_f32": ("i64", "f32", "%r = arith.sitofp %x0 : i64 to f32"),
    "uitofp_i32_f64": ("i32", "f64", "%r = arith.uitofp %x0 : i32 to f64"),
    "fptosi_f32_i32": ("f32", "i32", "%r = arith.fptosi %x0 : f32 to i32"),
    "fptosi_f64_i64": ("f64", "i64", "%r = arith.fptosi %x0 : f64 to i64"),
    "fptosi_f64_i32": ("f64", "i32", "%r = arith.fptosi %x0 : f64 to i32"),
    "extf": ("f32", "f64", "%r = arith.extf %x0 : f32 to f64"),
    "truncf": ("f64", "f32", "%r = arith.truncf %x0 : f64 to f32"),
    "extsi": ("i32", "i64", "%r = arith.extsi %x0 : i32 to i64"),
    "extui": ("i32", "i64", "%r = arith.extui %x0 : i32 to i64"),
    "trunci": ("i64", "i32", "%r = arith.trunci %x0 : i64 to i32"),
    "index_cast_i32": ("i32", "i64", "%x = arith.index_cast %x0 : i32 to index\n"
                       "    %r = arith.index_cast %x : index to i64"),
    "index_cast_i64": ("i64", "i32", "%x = arith.index_cast %x0 : i64 to index\n"
                       "    %r = arith.index_cast %x : index to i32"),
}


def _cast_module():
    return "".join(elementwise(name, [i], o, body) for name, (i, o, body) in CASTS.items())


@pytest.mark.parametrize("name", list(CASTS))
def test_casts(name):
    src_t, dst_t, _ = CASTS[name]
    rng = np.random.default_rng(7)
    if src_t.startswith("f"):
        x = rng.uniform(-1e4, 1e4, N).astype(NP[src_t])
        x[:4] = [0.5, -0.5, 1.9999, -2.7]  # truncation toward zero
    elif src_t == "i64":
        x = rng.integers(-2**62, 2**62, N, dtype=np.int64)
        x[:3] = [-1, 2**40 + 5, -(2**33) - 7]
    else:
        x = rng.integers(-2**31, 2**31 - 1, N, dtype=np.int64).astype(np.int32)
        x[:2] = [-1, -(2**31)]
    out = np.zeros(N, NP[dst_t])
    launch_1d(_program("cast", ""), name, (out, x), N)
    if name == "extui":
        expect = x.astype(np.int64) & 0xFFFFFFFF
    elif name == "uitofp_i32_f64":
        expect = x.view(np.uint32).astype(np.float64)
    else:
        expect = x.astype(NP[dst_t])  # numpy: truncation, wrap-around, rounding
    np.testing.assert_array_equal(out, expect)


# ---------------------------------------------------------------------------
# Program API and errors
# ---------------------------------------------------------------------------

def test_llvm_text_round_trip_without_recompiling():
    prog = compile_host(ROW_SUMS)
    assert "llvm.func @_mlir_ciface_rowsum" in prog.llvm_text
    assert '"diffgpu.' not in prog.llvm_text  # no diffgpu op left
    again = HostProgram.from_llvm_text(prog.llvm_text)
    A = np.ones((5, 3), np.float32)
    out = np.zeros(5, np.float32)
    launch_1d(again, "rowsum", (A, out), 5)
    np.testing.assert_array_equal(out, 3)


def test_launch_errors_leave_inputs_untouched():
    prog = compile_host(ROW_SUMS)
    A = np.ones((5, 3), np.float32)
    out = np.zeros(5, np.float32)
    types = array_types(A, out)
    bad = [
        ((A,), types[:1], (1, 1, 1), (8, 1, 1), "takes 1 arguments"),  # name check below
        ((A, out), types, (0, 1, 1), (8, 1, 1), "grid sizes"),
        ((A, out), types, (1, 1), (8, 1, 1), "grid must be a tuple of 3"),
        ((A, out.astype(np.float64)), types, (1, 1, 1), (8, 1, 1), "float64"),
        ((A, 3.0), types, (1, 1, 1), (8, 1, 1), "expected a numpy array"),
    ]
    for args, tys, grid, block, msg in bad[1:]:
        with pytest.raises(LaunchError, match=msg):
            prog.launch("rowsum", args, tys, grid, block)
    with pytest.raises(LaunchError, match="takes 2 arguments, got 1"):
        prog.launch("rowsum", (A,), types, (1, 1, 1), (8, 1, 1))
    with pytest.raises(LaunchError, match="no host kernel named 'nope'"):
        prog.launch("nope", (A, out), types, (1, 1, 1), (8, 1, 1))
    assert not out.any()


def test_scalar_arguments_are_checked():
    prog = compile_host(kernel("put", [("A", mem("i32")), ("v", "i32")], """
  %c0 = arith.constant 0 : index
  memref.store %v, %A[%c0] : """ + mem("i32") + """
  return"""))
    A = np.zeros(1, np.int32)
    types = (ArrayType("int32", 1), ScalarType("int32"))
    with pytest.raises(LaunchError, match="does not fit in int32"):
        prog.launch("put", (A, 2**31), types, (1, 1, 1), (1, 1, 1))
    with pytest.raises(LaunchError, match="expected an integer"):
        prog.launch("put", (A, 1.5), types, (1, 1, 1), (1, 1, 1))
    prog.launch("put", (A, np.int64(-7)), types, (1, 1, 1), (1, 1, 1))
    assert A[0] == -7


def test_recursion_through_barriers_is_a_compile_error():
    text = kernel("f", [], """
  "diffgpu.barrier"() : () -> ()
  func.call @f() : () -> ()
  return""", is_kernel=False) + kernel("k", [], """
  func.call @f() : () -> ()
  return""")
    with pytest.raises(CompileError, match="nest too deeply"):
        compile_host(text)


OOB = kernel("oob", [("A", mem("f32", 2)), ("B", mem("i64")), ("i", "index"), ("j", "index")], f"""
  %s = "diffgpu.shared_alloc"() : () -> memref<4xi64, #gpu.address_space<workgroup>>
  %c0 = arith.constant 0 : index
  %v = memref.load %A[%i, %j] : {mem("f32", 2)}
  memref.store %v, %A[%c0, %c0] : {mem("f32", 2)}
  %one = arith.constant 1 : i64
  memref.store %one, %s[%j] : memref<4xi64, #gpu.address_space<workgroup>>
  %old = "diffgpu.atomic_add"(%B, %one, %i) : ({mem("i64")}, i64, index) -> i64
  return""")


@pytest.mark.parametrize("i, j, where", [
    (0, 0, None), (1, 3, None), (4, 0, ":5:8"), (0, 5, ":5:8"), (-1, 0, ":5:8"),
    (2, 4, ":8:3"), (3, 1, ":9:10")])
def test_out_of_bounds_is_an_error_not_a_crash(i, j, where):
    """Out-of-range (also negative) indices of loads, stores, shared memory
    and atomics raise OutOfBoundsError naming the first access; they never
    touch memory outside the arrays."""
    prog = compile_host(OOB)
    parent = np.zeros((6, 7), np.float32)
    A = parent[1:5, 1:6]  # 4 x 5 view: out-of-bounds reads would see the parent
    A[...] = 1
    parent[0] = parent[5] = 9
    B = np.zeros(3, np.int64)
    types = (ArrayType("float32", 2), ArrayType("int64", 1), ScalarType("int64"),
             ScalarType("int64"))
    if where is None:
        prog.launch("oob", (A, B, i, j), types, (1, 1, 1), (1, 1, 1))
        assert B[i] == 1
        return
    with pytest.raises(OutOfBoundsError, match=f"kernel 'oob': array index out of bounds at .*{where}"):
        prog.launch("oob", (A, B, i, j), types, (1, 1, 1), (1, 1, 1))
    assert (parent[0] == 9).all() and (parent[5] == 9).all() and not parent[1:5, 6].any()
    assert B.sum() <= 1
    prog.launch("oob", (A, B, 0, 0), types, (1, 1, 1), (1, 1, 1))  # status was cleared


TAPE = kernel("tape", [("A", mem("i64"))], f"""
  %box = memref.alloca() : memref<1xmemref<?xi64>>
  %buf = memref.alloca() : memref<4xi64>
  %cast = memref.cast %buf : memref<4xi64> to memref<?xi64>
  %c0 = arith.constant 0 : index
  %c3 = arith.constant 3 : index
  memref.store %cast, %box[%c0] : memref<1xmemref<?xi64>>
  %seven = arith.constant 7 : i64
  %t = memref.load %box[%c0] : memref<1xmemref<?xi64>>
  memref.store %seven, %t[%c3] : memref<?xi64>
  %v = memref.load %buf[%c3] : memref<4xi64>
  memref.store %v, %A[%c0] : {mem("i64")}
  return""")


def test_memref_of_memref_tapes_compile():
    """Loads/stores of memref values (autodiff's tapes) are not bounds-checked
    (no zero value to give): they used to abort MLIR."""
    prog = compile_host(TAPE)
    A = np.zeros(1, np.int64)
    prog.launch("tape", (A,), array_types(A), (1, 1, 1), (1, 1, 1))
    assert A[0] == 7


def test_gpu_target_functions_are_refused():
    text = ROW_SUMS + kernel("g", [], "  return").replace(
        HOST_TARGET, '#nvvm.target<O = 3, chip = "sm_90">')
    with pytest.raises(CompileError, match="'@g' targets sm_90"):
        compile_host(text)


def test_invalid_ir_is_a_compile_error():
    with pytest.raises(CompileError, match="invalid diffgpu IR"):
        compile_host("func.func @k(")

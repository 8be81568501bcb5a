"""Hand-written diffgpu IR run on the CPU (diffgpu-to-host + runtime.cpu).

Kernels in our dialect (docs/IR.md) are compiled with `compile_host` and
launched on numpy arrays; every result is compared with numpy: geometry in
three dims, strided/negative/broadcast arrays, scf.for/if/while, device
functions and atomics. Shared memory and barriers: test_host_ir_barriers.py;
every math/arith op: test_host_ops.py; the program API and its errors:
test_host_api.py.
"""
from __future__ import annotations

import numpy as np
import pytest

from diffgpu.types import ScalarType
from host_ir_helpers import (DTYPE, NP, ROW_SUMS, array_types, compile_host, global_id_1d,
                             kernel, launch_1d, mem)

# ---------------------------------------------------------------------------
# Kernels: geometry, strided arrays, control flow, calls, atomics
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

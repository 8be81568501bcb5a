"""sm_90 vector reductions (lowering/reduce/vector_red.py), seen from Python:
the PTX of row-gather gradients and of a row scatter-add, the switch that
turns them off and its cache key, and the CPU values of the same kernels
(GPU values: bench/vector_red.py --run, against numpy, aligned and not).
The rewrite's own cases: test/lit/vector-red/."""
import re

import numpy as np
import pytest

import diffgpu as dg
from diffgpu.runtime.store.cache_key import cache_key
from kernels_rows import gather_rows2, gather_rows4, gather_rows4_2d, gather_rows8, scatter_rows4

N_ROWS, N_IDX, BLOCK = 64, 256, 128


@dg.kernel
def rows_grad2(T, dT, idx, out, dout):
    dg.autodiff(gather_rows2, dg.Duplicated(T, dT), idx, dg.Duplicated(out, dout))


@dg.kernel
def rows_grad4(T, dT, idx, out, dout):
    dg.autodiff(gather_rows4, dg.Duplicated(T, dT), idx, dg.Duplicated(out, dout))


@dg.kernel
def rows_grad8(T, dT, idx, out, dout):
    dg.autodiff(gather_rows8, dg.Duplicated(T, dT), idx, dg.Duplicated(out, dout))


@dg.kernel
def rows_grad4_2d(T, dT, idx, out, dout):
    dg.autodiff(gather_rows4_2d, dg.Duplicated(T, dT), idx, dg.Duplicated(out, dout))


GRADS = {2: rows_grad2, 4: rows_grad4, 8: rows_grad8}


def _grad_args(width, two_d=False):
    rng = np.random.default_rng(width)
    shape_t = (N_ROWS, width) if two_d else (N_ROWS * width,)
    shape_o = (N_IDX, width) if two_d else (N_IDX * width,)
    T = rng.standard_normal(shape_t).astype(np.float32)
    idx = rng.integers(0, N_ROWS, N_IDX).astype(np.int32)
    idx[:8] = 3  # repeated rows: the adds collide
    out = np.zeros(shape_o, np.float32)
    dout = rng.standard_normal(shape_o).astype(np.float32)
    return T, np.zeros_like(T), idx, out, dout


def _ptx(kernel, args, chip="sm_90"):
    from diffgpu.driver.compiler import has_nvptx
    if not has_nvptx():
        pytest.skip("these MLIR bindings have no NVPTX backend")
    return kernel.ir(*args, stage="ptx", target=chip, grid=N_IDX // BLOCK, block=BLOCK)


def _count(ptx, width):
    return len(re.findall(rf"\bred\.global\.add\.v{width}\.f32\b", ptx))


@pytest.mark.parametrize("width", [2, 4, 8])
def test_row_gather_gradient_uses_vector_red(width):
    ptx = _ptx(GRADS[width], _grad_args(width))
    vec = 4 if width >= 4 else 2
    assert _count(ptx, vec) == width // vec, ptx
    assert re.search(r"^\.version 8\.1$", ptx, re.M)
    # aligned rows of a 16-byte aligned array (launch fact `aligned`): no scalar fallback
    assert "atom.global.add.f32" not in ptx


def test_2d_rows_keep_a_scalar_fallback():
    """T[r, d]: the row stride is a runtime size, so whether a row starts
    16-byte aligned is tested at run time; both forms are in the PTX."""
    ptx = _ptx(rows_grad4_2d, _grad_args(4, two_d=True))
    assert _count(ptx, 4) == 1
    assert len(re.findall(r"\batom\.global\.add\.f32\b", ptx)) == 4


def test_primal_scatter_rows():
    out, idx, x = np.zeros(N_ROWS * 4, np.float32), np.zeros(N_IDX, np.int32), \
        np.zeros(N_IDX * 4, np.float32)
    ptx = _ptx(scatter_rows4, (out, idx, x))
    assert _count(ptx, 4) == 1 and "atom.global" not in ptx


def test_before_sm90_scalar_atomics_and_ptx_version_kept():
    ptx = _ptx(rows_grad4, _grad_args(4), chip="sm_80")
    assert _count(ptx, 4) == 0 and _count(ptx, 2) == 0
    assert len(re.findall(r"\batom\.global\.add\.f32\b", ptx)) == 4
    assert not re.search(r"^\.version 8\.", ptx, re.M)


def test_switch_off_and_its_cache_key(monkeypatch):
    args = _grad_args(4)
    key_on = cache_key(rows_grad4, ("x",), "sm_90")
    monkeypatch.setenv("DIFFGPU_VECTOR_RED", "0")
    ptx = _ptx(rows_grad4, args)
    assert _count(ptx, 4) == 0 and len(re.findall(r"\batom\.global\.add\.f32\b", ptx)) == 4
    assert cache_key(rows_grad4, ("x",), "sm_90") != key_on


@pytest.mark.parametrize("width", [2, 4, 8])
def test_row_gather_gradient_values_on_the_cpu(width):
    T, dT, idx, out, dout = _grad_args(width)
    want = np.zeros((N_ROWS, width))
    np.add.at(want, idx, dout.reshape(N_IDX, width).astype(np.float64))
    dout0 = dout.copy()
    GRADS[width][N_IDX // BLOCK, BLOCK](T, dT, idx, out, dout)
    np.testing.assert_allclose(dT.reshape(N_ROWS, width), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(out.reshape(N_IDX, width), T.reshape(N_ROWS, width)[idx])
    assert not dout.any() and dout0.any()  # the cotangent is consumed


def test_scatter_rows_values_on_the_cpu():
    rng = np.random.default_rng(7)
    idx = rng.integers(0, N_ROWS, N_IDX).astype(np.int32)
    x = rng.standard_normal(N_IDX * 4).astype(np.float32)
    out = np.zeros(N_ROWS * 4, np.float32)
    scatter_rows4[N_IDX // BLOCK, BLOCK](out, idx, x)
    want = np.zeros((N_ROWS, 4))
    np.add.at(want, idx, x.reshape(N_IDX, 4).astype(np.float64))
    np.testing.assert_allclose(out.reshape(N_ROWS, 4), want, rtol=1e-5, atol=1e-6)


def gpu_cases():
    """Cases for scripts/gpu_check.py (name, kernel, grid, block, mode,
    make(rng), reference or None for the CPU's result): the row gathers'
    reverse mode, whose adds into T's shadow are vector reductions on sm_90
    (rows of 40: a loop not unrolled, scalar adds; 2-D rows: the alignment
    tested at run time), and the row scatter-add."""
    from kernels_rows import gather_rows40

    def rows(width):
        def make(r):
            T = r.standard_normal(N_ROWS * width).astype(np.float32)
            idx = r.integers(0, N_ROWS, N_IDX).astype(np.int32)
            idx[:8] = 3
            out = np.zeros(N_IDX * width, np.float32)
            return [dg.Duplicated(T, np.zeros_like(T)), idx,
                    dg.Duplicated(out, r.standard_normal(out.size).astype(np.float32))]
        return make

    def scatter(r):
        return [np.zeros(N_ROWS * 4, np.float32), r.integers(0, N_ROWS, N_IDX).astype(np.int32),
                r.standard_normal(N_IDX * 4).astype(np.float32)]

    def rows_2d(r):
        T = r.standard_normal((N_ROWS, 4)).astype(np.float32)
        out = np.zeros((N_IDX, 4), np.float32)
        return [dg.Duplicated(T, np.zeros_like(T)),
                r.integers(0, N_ROWS, N_IDX).astype(np.int32),
                dg.Duplicated(out, r.standard_normal(out.shape).astype(np.float32))]

    grid = N_IDX // BLOCK
    return [(f"vector red rows{w} reverse", k, grid, BLOCK, "reverse", rows(w), None)
            for w, k in ((2, gather_rows2), (4, gather_rows4), (8, gather_rows8),
                         (40, gather_rows40))] + [
        ("vector red rows4 2-D reverse (run-time alignment test)", gather_rows4_2d, grid,
         BLOCK, "reverse", rows_2d, None),
        ("vector red scatter rows4 launch", scatter_rows4, grid, BLOCK, "launch", scatter, None)]

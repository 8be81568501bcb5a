"""The row-program variants of test/python/kernels_rows_variants.py: forward
against numpy, dg.vjp against the analytic gradients (float32, float64,
gradient buffers NaN-filled: every element written) and finite differences,
and the sm_90 PTX of their derivatives: dX written once (plain stores), no
atomics but dg's and db's, no local memory, no device malloc. layernorm_r16's
derivative does not compile (the row loop is too big to unroll)."""
import numpy as np
import pytest

import diffgpu as dg
import kernels_rows_fast as K
import kernels_rows_variants as V
from test_rows_fast import TOL, _count, _data, _vjp_ptx, assert_layernorm_vjp

SOFTMAX = [(V.softmax_v8, V.v8_launch), (V.softmax_r2, V.r2_launch)]
LAYERNORM = [(V.layernorm_r8, 8), (V.layernorm_r16, 16)]


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("kernel,launch", SOFTMAX)
def test_softmax_forward_and_vjp(dt, kernel, launch, kinds):
    X, _, _, dY = _data(dt, seed=1, r=4)
    Y = np.zeros_like(X)
    kernel[launch(4)](Y, X)
    S = K.softmax_ref(X.astype(np.float64))
    np.testing.assert_allclose(Y, S, atol=TOL[dt])
    G = dg.vjp(kernel[launch(4)], np.zeros_like(X), X, cotangents={"Y": dY})
    np.testing.assert_allclose(G["X"], S * (dY - (S * dY).sum(1, keepdims=True)), atol=TOL[dt])
    assert kinds == [["cot", "grad"]]  # dX written once per element, dY read in place


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("kernel,rows", LAYERNORM)
def test_layernorm_forward(dt, kernel, rows):
    X, g, b, _ = _data(dt, seed=2, r=2 * rows)
    Y = np.zeros_like(X)
    kernel[V.ln_launch(len(X), rows)](Y, X, g, b)
    np.testing.assert_allclose(Y, K.layernorm_ref(X.astype(np.float64), g, b),
                               atol=TOL[dt] * 10)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_layernorm_r8_vjp(dt, kinds):
    X, g, b, dY = _data(dt, seed=3, r=2 * V.R8_ROWS)
    G = dg.vjp(V.layernorm_r8[V.ln_launch(len(X), V.R8_ROWS)], np.zeros_like(X), X, g, b,
               cotangents={"Y": dY})
    assert_layernorm_vjp(G, X, g, b, dY, dt)
    assert kinds == [["cot", "grad", "dup", "dup"]]


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_layernorm_v8_forward_and_vjp(dt, kinds):
    """128 threads x 8 columns, one row per block: the forward against numpy,
    dg.vjp against the analytic gradients with dX written once (the NaN-filled
    buffers stay NaN otherwise), on a row count the coarsened reverse does not
    divide."""
    X, g, b, dY = _data(dt, seed=6, r=5)
    Y = np.zeros_like(X)
    V.layernorm_v8[V.v8_launch(len(X))](Y, X, g, b)
    np.testing.assert_allclose(Y, K.layernorm_ref(X.astype(np.float64), g, b), atol=TOL[dt] * 10)
    G = dg.vjp(V.layernorm_v8[V.v8_launch(len(X))], np.zeros_like(X), X, g, b,
               cotangents={"Y": dY})
    assert_layernorm_vjp(G, X, g, b, dY, dt)
    assert kinds == [["cot", "grad", "dup", "dup"]]


def test_gradcheck_finite_differences():
    X, g, b, _ = _data(np.float64, seed=4, r=V.R8_ROWS)
    Y = np.zeros_like(X)
    for kernel, launch in SOFTMAX:
        assert dg.gradcheck(kernel[launch(2)], dg.Duplicated(Y[:2].copy(), np.zeros_like(Y[:2])),
                            dg.Duplicated(X[:2].copy(), np.zeros_like(X[:2])))
    assert dg.gradcheck(V.layernorm_r8[V.ln_launch(len(X), V.R8_ROWS)],
                        dg.Duplicated(Y, np.zeros_like(Y)), dg.Duplicated(X, np.zeros_like(X)),
                        dg.Duplicated(g, np.zeros_like(g)), dg.Duplicated(b, np.zeros_like(b)))


def test_layernorm_r16_vjp_is_refused():
    """16 rows: the derivative keeps the row loop (over unroll.MAX_OPS) and
    refuses X's gradient instead of writing it wrongly."""
    X, g, b, dY = _data(np.float64, seed=5, r=16)
    with pytest.raises(dg.CompileError, match="updated at an index other than its loads"):
        dg.vjp(V.layernorm_r16[V.ln_launch(16, 16)], np.zeros_like(X), X, g, b,
               cotangents={"Y": dY})


def _ptx_of(kernel, launch, args, monkeypatch, tmp_path):
    X = args[1]
    return _vjp_ptx(kernel, launch, args, {"Y": X.copy()}, monkeypatch, tmp_path)


def test_sm90_softmax_variants(monkeypatch, tmp_path):
    """softmax_v8: X and dY read once (8 + 8 loads), dX stored once (8);
    softmax_r2: the derivative unrolls its 2 rows (16 loads, 8 stores, twice
    softmax_fast's barriers); neither has atomics, local memory or malloc."""
    X = np.zeros((64, K.COLS), np.float32)
    v8 = _ptx_of(V.softmax_v8, V.v8_launch(64), (X.copy(), X), monkeypatch, tmp_path)
    r2 = _ptx_of(V.softmax_r2, V.r2_launch(64), (X.copy(), X), monkeypatch, tmp_path)
    for ptx in (v8, r2):
        assert _count(ptx, r"\batom\.|\bred\.") == 0
        assert _count(ptx, r"\.local\b") == 0 and _count(ptx, "malloc") == 0
        assert _count(ptx, r"\bld\.global") == 16 and _count(ptx, r"\bst\.global") == 8
    assert _count(v8, r"bar\.sync") == 3
    assert _count(r2, r"bar\.sync") == 2 * 3


def test_sm90_layernorm_r8_adds_parameters_once_per_block(monkeypatch, tmp_path):
    """8 rows' adjoints of g and b summed in registers: the same 16 atom
    instructions (4 columns of dg and db, plain and atomic forms) as
    layernorm_fast_rows' 4 rows, none on dX: its 32 elements per thread are
    plain stores; X, dY read once (64 loads) and g once (4); the 2 others of
    each kind are the plain read-modify-write of dg and db for a one-block
    launch; all global (LLVM infers the address space through the
    derivative's function now that the collectives hold no shared-memory
    path: generic `ld`/`st` before); no local memory, no malloc."""
    X = np.zeros((64, K.COLS), np.float32)
    v = np.ones(K.COLS, np.float32)
    ptx = _ptx_of(V.layernorm_r8, V.ln_launch(64, V.R8_ROWS), (X.copy(), X, v, v.copy()),
                  monkeypatch, tmp_path)
    assert _count(ptx, r"\batom\.global\.add\.f32") == 16
    assert _count(ptx, r"\batom\.|\bred\.") == 16
    assert _count(ptx, r"\.local\b") == 0 and _count(ptx, "malloc") == 0
    assert _count(ptx, r"\bld\.global(\.nc)?\.b32") == 8 * 8 + 4 + 2
    assert _count(ptx, r"\bst\.global\.b32") == 8 * 4 + 2
    assert _count(ptx, r"\bld\.b32") == 0 and _count(ptx, r"\bst\.b32") == 0

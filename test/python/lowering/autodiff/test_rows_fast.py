"""Row programs with several columns per thread (test/python/kernels_rows_fast.py):
forward against numpy, dg.vjp against the analytic gradients and finite
differences (float32, float64), the functional kinds dg.vjp picks for
accesses at constant offsets of global ids (lowering/autodiff/functional/owned.py)
and when the launch lets two threads share an element, and the sm_90 PTX of
the programs: dX written once with plain stores, dY read once, no atomics
but layernorm's dg/db, one barrier per block collective."""
import re

import numpy as np
import pytest

import diffgpu as dg
import kernels_rows_fast as K
import kernels_rows_params as P
from diffgpu.lowering.autodiff.functional import owned

R = 3
TOL = {np.float64: 1e-10, np.float32: 3e-5}


def _data(dt, seed=0, r=R):
    rs = np.random.RandomState(seed)
    c = K.COLS
    return (rs.randn(r, c).astype(dt), (rs.rand(c) + 0.5).astype(dt), rs.rand(c).astype(dt),
            rs.randn(r, c).astype(dt))


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_forward_matches_numpy(dt):
    X, g, b, _ = _data(dt)
    Y = np.zeros_like(X)
    K.layernorm_fast[K.fast_launch(R)](Y, X, g, b)
    np.testing.assert_allclose(Y, K.layernorm_ref(X.astype(np.float64), g, b), atol=TOL[dt] * 10)
    S = np.zeros_like(X)
    K.softmax_fast[K.fast_launch(R)](S, X)
    np.testing.assert_allclose(S, K.softmax_ref(X.astype(np.float64)), atol=TOL[dt])


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_vjp_matches_the_analytic_gradients(dt, kinds):
    X, g, b, dY = _data(dt, seed=1)
    G = dg.vjp(K.layernorm_fast[K.fast_launch(R)], np.zeros_like(X), X, g, b,
               cotangents={"Y": dY})
    assert_layernorm_vjp(G, X, g, b, dY, dt)
    H = dg.vjp(K.softmax_fast[K.fast_launch(R)], np.zeros_like(X), X, cotangents={"Y": dY})
    S = K.softmax_ref(X.astype(np.float64))
    np.testing.assert_allclose(H["X"], S * (dY - (S * dY).sum(1, keepdims=True)), atol=TOL[dt])
    # X read at (gid(1), gid(0) + 256 k): 'grad' (written once, the buffer
    # NaN-filled: every element written); Y stored so: 'cot'; g, b: every row adds
    assert kinds == [["cot", "grad", "dup", "dup"], ["cot", "grad"]]


def test_gradcheck_finite_differences():
    X, g, b, _ = _data(np.float64, seed=2, r=2)
    Y = np.zeros_like(X)
    assert dg.gradcheck(K.softmax_fast[K.fast_launch(2)],
                        dg.Duplicated(Y, np.zeros_like(Y)), dg.Duplicated(X, np.zeros_like(X)))
    assert dg.gradcheck(K.layernorm_fast[K.fast_launch(2)],
                        dg.Duplicated(Y, np.zeros_like(Y)), dg.Duplicated(X, np.zeros_like(X)),
                        dg.Duplicated(g, np.zeros_like(g)), dg.Duplicated(b, np.zeros_like(b)))


@dg.kernel
def _pairs(X, Y):
    """Each thread reads columns j and j + 32 of its row, writes column j."""
    r = dg.global_id(1)
    j = dg.global_id(0)
    u = X[r, j]
    v = X[r, j + 32]
    s = dg.block_sum(u * v)
    Y[r, j] = u * s + v


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("threads,cols,want", [
    (32, 64, ["grad", "cot"]),  # columns 0..31 and 32..63: every element one thread's
    (32, 70, ["grad", "cot"]),  # columns 64..69 never read: the gradient zero-filled
    (64, 96, ["dup", "cot"]),   # threads j and j + 32 both read columns 32..63: accumulated
])
def test_offsets_shared_by_two_threads_keep_the_dup_kinds(dt, threads, cols, want, kinds):
    """The launch decides: with an x extent above the offsets' distance two
    threads touch one element and dg.vjp keeps the accumulating kinds; the
    gradients agree with finite differences (float64) either way."""
    rs = np.random.RandomState(3)
    X = rs.randn(2, cols).astype(dt)
    dY = rs.randn(2, cols).astype(dt)
    launch = _pairs[(1, 2), (threads, 1)]
    G = dg.vjp(launch, X, np.zeros_like(X), cotangents={"Y": dY})
    assert kinds == [want]
    assert not np.isnan(G["X"]).any()
    eps = 1e-6 if dt == np.float64 else 1e-2
    num = np.zeros_like(X, dtype=np.float64)
    for i in np.ndindex(X.shape):
        outs = []
        for sign in (1, -1):
            Xp = X.astype(np.float64)
            Xp[i] += sign * eps
            Y = np.zeros_like(X)
            launch(Xp.astype(dt), Y)
            outs.append((Y.astype(np.float64) * dY).sum())
        num[i] = (outs[0] - outs[1]) / (2 * eps)
    np.testing.assert_allclose(G["X"], num, atol=1e-6 if dt == np.float64 else 2e-2,
                               rtol=1e-6 if dt == np.float64 else 2e-2)


def test_owned_unique_and_covered():
    p = {"dims": [1, 0], "offsets": [[0, 0], [0, 256], [0, 512], [0, 768]]}
    assert owned.unique(p, (1, 64, 1), (256, 1, 1))
    assert not owned.unique(p, (1, 64, 1), (512, 1, 1))   # j and j + 256 meet
    assert not owned.unique(p, (1, 64, 1), (256, 1, 2))   # z not named, two threads
    assert owned.covered(p, (64, 1024), (1, 64, 1), (256, 1, 1))
    assert not owned.covered(p, (64, 1025), (1, 64, 1), (256, 1, 1))
    assert not owned.covered(p, (65, 1024), (1, 64, 1), (256, 1, 1))
    q = {"dims": [0], "offsets": [[0], [3]]}  # gap 3 < 4: not 0, E, 2E
    assert not owned.covered(q, (8,), (1, 1, 1), (4, 1, 1))


def _vjp_ptx(kernel, launch, args, cots, monkeypatch, tmp_path):
    """The sm_90 PTX of dg.vjp's derivative program (compiled, not run)."""
    from diffgpu.interop import compile_only
    monkeypatch.setenv("DIFFGPU_CACHE_DIR", str(tmp_path))
    with compile_only("sm_90"):
        dg.vjp(kernel[launch], *args, cotangents=cots)
    (ptx,) = [p.payload["ptx"] for k, p in kernel._programs.items()
              if k[1] == "sm_90" and k[2] and k[2][0] == "reverse"]
    return ptx


def _count(ptx, pattern):
    return len(re.findall(pattern, ptx))


def test_sm90_vjp_writes_dx_once_without_atomics(monkeypatch, tmp_path):
    """softmax: X and dY read once (4 + 4 loads per thread), dX stored once
    (4 stores), no atomics, no local memory; layernorm: g read too, the only
    atomics are dg's and db's (4 + 4). Barriers: one per block collective (3
    for softmax: max, sum, the sum's transpose; 4 for layernorm), no other
    path (blocks that are not whole warps are refused at launch)."""
    X = np.zeros((64, K.COLS), np.float32)
    v = np.ones(K.COLS, np.float32)
    sm = _vjp_ptx(K.softmax_fast, K.fast_launch(64), (X.copy(), X), {"Y": X.copy()},
                  monkeypatch, tmp_path)
    assert _count(sm, r"\batom\.|\bred\.") == 0
    assert _count(sm, r"\bld\.global") == 8 and _count(sm, r"\bst\.global") == 4
    assert _count(sm, r"\.local\b") == 0
    assert _count(sm, r"bar\.sync") == 3
    ln = _vjp_ptx(K.layernorm_fast, K.fast_launch(64), (X.copy(), X, v, v.copy()),
                  {"Y": X.copy()}, monkeypatch, tmp_path)
    assert _count(ln, r"\batom\.global\.add\.f32") == 8
    assert _count(ln, r"\bld\.global") == 12 and _count(ln, r"\bst\.global") == 4
    assert _count(ln, r"\.local\b") == 0
    assert _count(ln, r"bar\.sync") == 4


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_rows_per_block_vjp(dt, kinds):
    """layernorm_fast_rows: X at (4 * gid(1) + k, gid(0) + 256 m) inside the
    row loop is still 'grad' (16 offsets), Y 'cot'; dg and db summed over the
    block's rows before their adds."""
    X, g, b, dY = _data(dt, seed=4, r=2 * K.ROWS)
    Y = np.zeros_like(X)
    K.layernorm_fast_rows[K.rows_launch(len(X))](Y, X, g, b)
    np.testing.assert_allclose(Y, K.layernorm_ref(X.astype(np.float64), g, b), atol=TOL[dt] * 10)
    G = dg.vjp(K.layernorm_fast_rows[K.rows_launch(len(X))], np.zeros_like(X), X, g, b,
               cotangents={"Y": dY})
    assert_layernorm_vjp(G, X, g, b, dY, dt)
    assert kinds == [["cot", "grad", "dup", "dup"]]


def assert_layernorm_vjp(G, X, g, b, dY, dt):
    """dg.vjp's layer-norm gradients G against the analytic ones."""
    dX, dg_, db = P.layernorm_vjp(X, g, b, dY)
    tol = TOL[dt] * 20
    np.testing.assert_allclose(G["X"], dX, atol=tol, rtol=tol)
    np.testing.assert_allclose(G["g"], dg_, atol=tol * 10, rtol=tol)
    np.testing.assert_allclose(G["b"], db, atol=tol * 10, rtol=tol)


def test_rows_per_block_gradcheck():
    X, g, b, _ = _data(np.float64, seed=5, r=K.ROWS)
    Y = np.zeros_like(X)
    assert dg.gradcheck(K.layernorm_fast_rows[K.rows_launch(K.ROWS)],
                        dg.Duplicated(Y, np.zeros_like(Y)), dg.Duplicated(X, np.zeros_like(X)),
                        dg.Duplicated(g, np.zeros_like(g)), dg.Duplicated(b, np.zeros_like(b)))


def test_sm90_rows_per_block_adds_parameters_once_per_block(monkeypatch, tmp_path):
    """The 4 rows' adjoints of g and b summed in registers: 8 adds per thread
    and block (4 columns of dg and of db; the PTX holds each in its plain
    form for a one-block launch and its atomic form: 16 atom instructions,
    against 8 per row for layernorm_fast), no
    local memory; one barrier per block collective (16, and 2 more kept
    where a collective is followed by a call that runs others)."""
    X = np.zeros((64, K.COLS), np.float32)
    v = np.ones(K.COLS, np.float32)
    ptx = _vjp_ptx(K.layernorm_fast_rows, K.rows_launch(64), (X.copy(), X, v, v.copy()),
                   {"Y": X.copy()}, monkeypatch, tmp_path)
    assert _count(ptx, r"\batom\.global\.add\.f32") == 16
    assert _count(ptx, r"\.local\b") == 0
    assert _count(ptx, r"bar\.sync") == 16 + 2

"""Row programs in one launch (test/python/kernels_rows_collective.py):
layernorm and row softmax with the statistics from block collectives,
forward against numpy, dg.vjp against the analytic gradients and finite
differences (float32, float64), one launch each way, and the reverse's
updates of dX without atomics (sm_90 PTX)."""
import re

import numpy as np
import pytest

import diffgpu as dg
import kernels_rows_collective as K
from diffgpu.runtime.cpu import HostProgram

R, C = 6, 96
TOL = {np.float64: 1e-10, np.float32: 2e-5}


def _data(dt, seed=0, r=R, c=C):
    rs = np.random.RandomState(seed)
    return (rs.randn(r, c).astype(dt), (rs.rand(c) + 0.5).astype(dt), rs.rand(c).astype(dt),
            rs.randn(r, c).astype(dt))


def _ln_grads(X, g, dY):
    X = X.astype(np.float64)
    mean = X.mean(1, keepdims=True)
    inv = 1 / np.sqrt(((X - mean) ** 2).mean(1, keepdims=True) + K.EPS)
    xh = (X - mean) * inv
    dxh = dY * g
    dX = inv * (dxh - dxh.mean(1, keepdims=True) - xh * (dxh * xh).mean(1, keepdims=True))
    return dX, (xh * dY).sum(0), dY.sum(0)


class _Launches:
    """Counts the CPU launches (HostProgram.run_packed) inside the block."""

    def __enter__(self):
        self.n, self._orig = 0, HostProgram.run_packed

        def counted(prog, *a, **k):
            self.n += 1
            return self._orig(prog, *a, **k)
        HostProgram.run_packed = counted
        return self

    def __exit__(self, *exc):
        HostProgram.run_packed = self._orig


@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_layernorm_forward_and_vjp(dt):
    X, g, b, dY = _data(dt)
    grid, block = K.row_launch(R, C)
    Y = np.zeros_like(X)
    with _Launches() as n:
        K.layernorm[grid, block](X, g, b, Y)
    assert n.n == 1
    np.testing.assert_allclose(Y, K.layernorm_ref(X, g, b), rtol=TOL[dt], atol=TOL[dt] * 10)
    with _Launches() as n:
        G = dg.vjp(K.layernorm[grid, block], X, g, b, np.zeros_like(X), cotangents={"Y": dY})
    assert n.n == 1
    for got, want in zip((G["X"], G["g"], G["b"]), _ln_grads(X, g, dY)):
        np.testing.assert_allclose(got, want, rtol=TOL[dt] * 10, atol=TOL[dt] * 10)


@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_softmax_forward_and_vjp(dt):
    X, _, _, dY = _data(dt, seed=1)
    grid, block = K.row_launch(R, C)
    Y = np.zeros_like(X)
    K.softmax[grid, block](X, Y)
    np.testing.assert_allclose(Y, K.softmax_ref(X), rtol=TOL[dt], atol=TOL[dt])
    with _Launches() as n:
        G = dg.vjp(K.softmax[grid, block], X, np.zeros_like(X), cotangents={"Y": dY})
    assert n.n == 1
    S = K.softmax_ref(X.astype(np.float64))
    np.testing.assert_allclose(G["X"], S * (dY - (S * dY).sum(1, keepdims=True)),
                               rtol=TOL[dt] * 10, atol=TOL[dt])


@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_layernorm_vjp_against_finite_differences(dt):
    X, g, b, dY = _data(dt, seed=2, r=2, c=40)  # 40: a partial last warp, refused
    grid, block = K.row_launch(2, 40)
    with pytest.raises(dg.LaunchError, match=r"kernel 'layernorm' uses dg.block_sum, .*"
                       r"block \(40, 1, 1\) has 40 threads, not a multiple of the warp"):
        dg.vjp(K.layernorm[grid, block], X, g, b, np.zeros_like(X), cotangents={"Y": dY})
    X, g, b, dY = _data(dt, seed=2, r=2, c=64)
    grid, block = K.row_launch(2, 64)
    G = dg.vjp(K.layernorm[grid, block], X, g, b, np.zeros_like(X), cotangents={"Y": dY})

    def loss(X, g, b):
        Y = np.zeros_like(X)
        K.layernorm[grid, block](X, g, b, Y)
        return float((Y.astype(np.float64) * dY).sum())
    eps = 1e-6 if dt == np.float64 else 1e-2
    tol = 1e-6 if dt == np.float64 else 2e-2
    rs = np.random.RandomState(3)
    for name, arg in (("X", 0), ("g", 1), ("b", 2)):
        args = [X, g, b]
        d = rs.randn(*args[arg].shape).astype(dt)
        plus = list(args)
        minus = list(args)
        plus[arg], minus[arg] = args[arg] + eps * d, args[arg] - eps * d
        fd = (loss(*plus) - loss(*minus)) / (2 * eps)
        an = float((G[name].astype(np.float64) * d).sum())
        assert abs(an - fd) <= tol * max(1.0, abs(fd)), (name, an, fd)


@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_layernorm_rows4(dt):
    """4 rows per block, 10 rows (a partial last block): the same values and
    gradients as layernorm."""
    X, g, b, dY = _data(dt, seed=6, r=10, c=64)
    Y = np.zeros_like(X)
    K.layernorm_rows4[(1, 3), (64, 1)](X, g, b, Y)
    np.testing.assert_allclose(Y, K.layernorm_ref(X, g, b), rtol=TOL[dt], atol=TOL[dt] * 10)
    with _Launches() as n:
        G = dg.vjp(K.layernorm_rows4[(1, 3), (64, 1)], X, g, b, np.zeros_like(X),
                   cotangents={"Y": dY})
    assert n.n == 1
    for got, want in zip((G["X"], G["g"], G["b"]), _ln_grads(X, g, dY)):
        np.testing.assert_allclose(got, want, rtol=TOL[dt] * 10, atol=TOL[dt] * 10)


def test_vjp_through_a_called_kernel():
    """A kernel calling the row kernel: its gradient calls layernorm's split
    derivative (augmented forward and reverse functions), whose collectives
    the CPU inlines into the kernel."""
    X, g, b, dY = _data(np.float64, seed=5)
    grid, block = K.row_launch(R, C)
    G = dg.vjp(K.layernorm_out_first[grid, block], np.zeros_like(X), X, g, b,
               cotangents={"Y": dY})
    for got, want in zip((G["X"], G["g"], G["b"]), _ln_grads(X, g, dY)):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)
    S = K.softmax_ref(X)
    G = dg.vjp(K.softmax_out_first[grid, block], np.zeros_like(X), X, cotangents={"Y": dY})
    np.testing.assert_allclose(G["X"], S * (dY - (S * dY).sum(1, keepdims=True)), atol=1e-12)


@pytest.mark.parametrize("kernel", ["layernorm_strided", "softmax_strided"])
def test_strided_rows_any_width(kernel):
    """Wider rows than threads: each thread strides over its columns."""
    X, g, b, dY = _data(np.float64, seed=4, r=3, c=200)
    k = getattr(K, kernel)
    args = (X, g, b, np.zeros_like(X)) if kernel.startswith("layernorm") else (X, np.zeros_like(X))
    k[3, 64](*args)
    ref = K.layernorm_ref(X, g, b) if kernel.startswith("layernorm") else K.softmax_ref(X)
    np.testing.assert_allclose(args[-1], ref, rtol=1e-12, atol=1e-12)
    G = dg.vjp(k[3, 64], *args[:-1], np.zeros_like(X), cotangents={"Y": dY})
    if kernel.startswith("layernorm"):
        np.testing.assert_allclose(G["X"], _ln_grads(X, g, dY)[0], rtol=1e-9, atol=1e-9)
    else:
        S = K.softmax_ref(X)
        np.testing.assert_allclose(G["X"], S * (dY - (S * dY).sum(1, keepdims=True)), atol=1e-12)


@dg.kernel
def _ln_grad(X, dX, g, dg_, b, db, Y, dY):
    dg.autodiff(K.layernorm, dg.Duplicated(X, dX), dg.Duplicated(g, dg_),
                dg.Duplicated(b, db), dg.Duplicated(Y, dY))


@dg.kernel
def _ln4_grad(X, dX, g, dg_, b, db, Y, dY):
    dg.autodiff(K.layernorm_rows4, dg.Duplicated(X, dX), dg.Duplicated(g, dg_),
                dg.Duplicated(b, db), dg.Duplicated(Y, dY))


@dg.kernel
def _sm_grad(X, dX, Y, dY):
    dg.autodiff(K.softmax, dg.Duplicated(X, dX), dg.Duplicated(Y, dY))


def test_one_kernel_and_no_atomics_on_dx_in_ptx():
    """sm_90: forward and gradient are one .entry each; the layernorm
    gradient's only atomics are dg's and db's (one per element a thread
    owns), softmax's gradient has none; the statistics are shuffles."""
    rc, cc = 4, 1024
    grid, block = K.row_launch(rc, cc)
    m = np.zeros((rc, cc), np.float32)
    v = np.zeros(cc, np.float32)
    ln = _ln_grad.ir(m, m.copy(), v, v.copy(), v.copy(), v.copy(), m.copy(), m.copy(),
                     stage="ptx", target="sm_90", grid=grid, block=block)
    sm = _sm_grad.ir(m, m.copy(), m.copy(), m.copy(), stage="ptx", target="sm_90",
                     grid=grid, block=block)
    fwd = K.layernorm.ir(m, v, v.copy(), m.copy(), stage="ptx", target="sm_90",
                         grid=grid, block=block)

    def count(ptx, pat):
        return len(re.findall(pat, ptx))
    for ptx in (ln, sm, fwd):
        assert count(ptx, r"\.entry ") == 1
    assert count(ln, r"\batom\.|\bred\.global") == 2
    assert count(sm, r"\batom\.|\bred\.global") == 0
    assert count(fwd, r"shfl\.sync") == 20  # two block sums, 10 shuffles each
    m4 = np.zeros((64, cc), np.float32)  # 16 blocks: dg and db take atomics
    r4 = _ln4_grad.ir(m4, m4.copy(), v, v.copy(), v.copy(), v.copy(), m4.copy(), m4.copy(),
                      stage="ptx", target="sm_90", grid=(1, 64 // K.ROWS4), block=block)
    # 4 rows: dX one atomic per row, dg and db one each (summed over the rows)
    assert count(r4, r"\batom\.|\bred\.global") == K.ROWS4 + 2

"""The collectives on the CPU: their values (numpy references, block sizes
that are multiples of 32, 3-D blocks), a block that is not a multiple of 32
refused (launches and derivatives), the GPU's summation
order reproduced bit for bit, and both derivative modes of every collective
against central finite differences, float32 and float64 (dg.vjp / dg.jvp
of the kernels of test/python/kernels_collectives.py)."""
import numpy as np
import pytest

import diffgpu as dg
import kernels_collectives as K

NAMES = sorted(K.OPS)
#: block shapes: two warps, three warps, a 3-D block (lin order)
BLOCKS = [(64, 1, 1), (96, 1, 1), (8, 4, 2)]
#: blocks with a partial warp: every launch of a collective on them is refused
PARTIAL = [(50, 1, 1), (1, 1, 1), (16, 3, 1), (5, 4, 3)]
TOL = {np.float64: 1e-6, np.float32: 2e-2}


def _x(dt, nb, n, seed=0):
    # distinct values far from ties, so max/min and FD are smooth
    rs = np.random.RandomState(seed)
    return (rs.permutation(nb * n).reshape(nb, n) / (nb * n) + 0.25).astype(dt)


def _run(name, X, block):
    Y = np.zeros_like(X)
    K.OPS[name][X.shape[0], block](X, Y)
    return Y


@pytest.mark.parametrize("block", BLOCKS)
@pytest.mark.parametrize("name", NAMES)
def test_values(name, block):
    n = int(np.prod(block))
    X = _x(np.float64, 2, n)
    np.testing.assert_allclose(_run(name, X, block), K.reference(name, X), rtol=1e-12, atol=1e-12)


def _refused(e, name, block):
    n = int(np.prod(block))
    msg = str(e.value)
    assert f"kernel '{K.OPS[name].name}'" in msg, msg
    assert f"dg.{name.replace('_const', '')}" in msg, msg
    assert f"block {block} has {n} threads, not a multiple of the warp (32)" in msg, msg


@pytest.mark.parametrize("block", PARTIAL)
@pytest.mark.parametrize("name", NAMES)
def test_partial_warp_is_refused(name, block):
    """A block whose thread count is not a multiple of 32: the launch, the
    dg.vjp and the dg.jvp are a LaunchError naming the kernel, the
    collective and the block, and change nothing; the same kernel then runs
    on whole warps (the fast path's second launch, with the error first)."""
    n = int(np.prod(block))
    X = _x(np.float64, 2, n)
    Y = np.full_like(X, 7.0)
    for _ in range(2):  # the full path, then the fast path of a known token
        with pytest.raises(dg.LaunchError) as e:
            K.OPS[name][2, block](X, Y)
        _refused(e, name, block)
        assert (Y == 7.0).all()
    with pytest.raises(dg.LaunchError) as e:
        dg.vjp(K.OPS[name][2, block], X, Y, cotangents={"Y": np.ones_like(X)})
    _refused(e, name, block)
    with pytest.raises(dg.LaunchError) as e:
        dg.jvp(K.OPS[name][2, block], X, Y, tangents={"X": np.ones_like(X)})
    _refused(e, name, block)
    assert (Y == 7.0).all()
    X = _x(np.float64, 2, 64)
    np.testing.assert_allclose(_run(name, X, (64, 1, 1)), K.reference(name, X),
                               rtol=1e-12, atol=1e-12)


def test_sums_and_scan_in_gpu_order():
    """float32: the CPU's warp sum is the GPU's xor butterfly bit for bit, the
    block sum the butterfly over the warps' sums, the scan Kogge-Stone per
    warp plus the scan of the warp totals."""
    rs = np.random.RandomState(3)
    x = (rs.randn(128) * 1e3).astype(np.float32)
    Y = np.zeros((3, 128), np.float32)
    K.sums_raw_k[1, 128](x[None, :].copy(), Y)
    warps = [x[w * 32:(w + 1) * 32] for w in range(4)]
    sums = [K.butterfly_sum(u) for u in warps]
    assert (Y[0] == np.repeat(np.array(sums, np.float32), 32)).all()
    assert (Y[1] == K.butterfly_sum(sums + [np.float32(-0.0)] * 28)).all()
    scans = [K.kogge_stone(u) for u in warps]
    totals = K.kogge_stone([s[31] for s in scans] + [np.float32(-0.0)] * 28)
    expect = [v if w == 0 else totals[w - 1] + v for w, s in enumerate(scans) for v in s]
    assert (Y[2] == np.array(expect, np.float32)).all()
    assert np.abs(Y[2] - np.cumsum(x.astype(np.float64))).max() < 1e-2 * np.abs(x).sum()


def _loss(name, X, dY, block):
    return float((_run(name, X, block).astype(np.float64) * dY).sum())


@pytest.mark.parametrize("dt", [np.float64, np.float32])
@pytest.mark.parametrize("block", [(64, 1, 1), (96, 1, 1)])
@pytest.mark.parametrize("name", NAMES)
def test_reverse_against_finite_differences(name, block, dt):
    n = int(np.prod(block))
    X = _x(dt, 1, n, seed=1)
    dY = np.random.RandomState(2).randn(1, n).astype(dt)
    g = dg.vjp(K.OPS[name][1, block], X, np.zeros_like(X), cotangents={"Y": dY})["X"]
    eps = 1e-6 if dt == np.float64 else 1e-3
    rs = np.random.RandomState(4)
    for _ in range(3):  # directional derivatives along random directions
        d = rs.randn(1, n).astype(dt)
        fd = (_loss(name, X + eps * d, dY, block) - _loss(name, X - eps * d, dY, block)) / (2 * eps)
        an = float((g.astype(np.float64) * d).sum())
        assert abs(an - fd) <= TOL[dt] * max(1.0, abs(fd)), (an, fd)


@pytest.mark.parametrize("dt", [np.float64, np.float32])
@pytest.mark.parametrize("name", NAMES)
def test_forward_against_finite_differences_and_reverse(name, dt):
    n = 96
    X = _x(dt, 1, n, seed=5)
    tX = np.random.RandomState(6).randn(1, n).astype(dt)
    t = dg.jvp(K.OPS[name][1, n], X, np.zeros_like(X), tangents={"X": tX})["Y"]
    eps = 1e-6 if dt == np.float64 else 1e-3
    fd = (_run(name, X + eps * tX, n).astype(np.float64)
          - _run(name, X - eps * tX, n).astype(np.float64)) / (2 * eps)
    np.testing.assert_allclose(t, fd, rtol=TOL[dt], atol=TOL[dt])
    dY = np.random.RandomState(7).randn(1, n).astype(dt)
    g = dg.vjp(K.OPS[name][1, n], X, np.zeros_like(X), cotangents={"Y": dY})["X"]
    lhs, rhs = float((t * dY).sum()), float((g * tX).sum())  # <J t, y> == <t, J^T y>
    assert abs(lhs - rhs) <= (1e-9 if dt == np.float64 else 1e-3) * max(1.0, abs(lhs))


def test_max_tie_goes_to_the_lowest_thread():
    """block_max and warp_max with ties: the whole adjoint goes to the lowest
    linear thread index (warp: lane) holding the maximum."""
    X = np.full((1, 64), 0.5)
    X[0, [9, 20, 41, 60]] = 2.0
    dY = np.ones((1, 64))
    g = dg.vjp(K.OPS["block_max"][1, 64], X, np.zeros_like(X), cotangents={"Y": dY})["X"]
    # r = m * (1 + v/2) with m = max(v*v): dr/dv_9 = 2 v_9 * sum(1 + v/2) (all of it)
    expect = np.zeros(64)
    expect[9] = 2 * 2.0 * (1 + 0.5 * X[0]).sum()
    expect += 0.5 * 4.0  # the direct term m * 0.5 in every thread
    np.testing.assert_allclose(g[0], expect)
    g = dg.vjp(K.OPS["warp_max"][1, 64], X, np.zeros_like(X), cotangents={"Y": dY})["X"]
    assert g[0, 9] > 10 and g[0, 41] > 10 and g[0, 20] == g[0, 60] == 0.5 * 4.0


def test_two_collectives_in_a_loop():
    """Staging arrays shared by several collectives and loop iterations."""
    X = _x(np.float64, 1, 64)
    Y = np.zeros_like(X)
    K.two_in_loop_k[1, 64](X, Y)
    v = X[0]
    down = np.array([v[i + 1] if (i % 32) < 31 else v[i] for i in range(64)])
    np.testing.assert_allclose(Y[0], sum(v.sum() * i + down for i in range(3)))


@pytest.mark.parametrize("dt", [np.int32, np.int64])
def test_integer_values(dt):
    n = 96
    x = (np.arange(n) * 7919 % 101 - 50).astype(dt)
    Y = np.zeros((6, n), dt)
    K.ints_k[1, n](x[None, :].copy(), Y)
    w = np.arange(n) // 32
    assert (Y[0] == [x[w == w[i]].sum() for i in range(n)]).all()
    assert (Y[1] == x.max()).all() and (Y[2] == x.min()).all() and (Y[5] == x.sum()).all()
    assert (Y[3] == np.cumsum(x)).all()
    lane = np.arange(n) % 32
    src = w * 32 + (lane ^ 3)
    assert (Y[4] == np.where(src < n, x[np.minimum(src, n - 1)], x)).all()


def test_gradient_of_collectives_in_a_loop():
    """The reverse of collectives in a loop (values taped per iteration)."""
    X = _x(np.float64, 1, 64, seed=8)
    dY = np.random.RandomState(9).randn(1, 64)
    g = dg.vjp(K.two_in_loop_k[1, 64], X, np.zeros_like(X), cotangents={"Y": dY})["X"]
    # Y = sum_i (i * sum(v) + down1(v)): dX = 3 * sum(dY) + up1-transpose of 3 * dY
    d = 3 * dY[0]
    own = np.array([(i % 32) == 31 for i in range(64)])
    moved = np.array([d[i - 1] if (i % 32) >= 1 else 0.0 for i in range(64)])
    expect = (0 + 1 + 2) * dY.sum() + moved + np.where(own, d, 0.0)
    np.testing.assert_allclose(g[0], expect, rtol=1e-12)


@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_second_order_hessian_vector_product(dt):
    """dg.jvp of a kernel running the reverse of collectives: the derivative
    of the transposed collectives, against differences of the gradient."""
    n = 64
    rs = np.random.RandomState(10)
    X = _x(dt, 1, n, seed=11)[0]  # values 1/64 apart: no max/min changes hands below
    W, V = rs.randn(n).astype(dt), rs.randn(n).astype(dt)

    def gradient(x):
        dX = np.zeros(n, dt)
        K.mix_grad_k[1, n](x.copy(), dX, np.zeros(n, dt), W.copy())
        return dX.astype(np.float64)
    def z():
        return np.zeros(n, dt)
    hv = dg.jvp(K.mix_grad_k[1, n], X, z(), z(), W, tangents={"X": V, "dX": z(), "dY": z()})["dX"]
    eps = 1e-6 if dt == np.float64 else 1e-3
    fd = (gradient(X + eps * V) - gradient(X - eps * V)) / (2 * eps)
    np.testing.assert_allclose(hv, fd, rtol=TOL[dt], atol=TOL[dt] * np.abs(fd).max())


@pytest.mark.parametrize("n", [64, 96])
def test_shuffle_offsets_that_are_values(n):
    """shfl_xor/up/down by a loop variable (negative offsets too): the values
    and the gradient (the transpose of shfl_idx) against finite differences."""
    X = _x(np.float64, 1, n, seed=12)
    Y = np.zeros_like(X)
    K.shfl_var_k[1, n](X, Y)
    np.testing.assert_allclose(Y[0], K.shfl_var_reference(X[0]), rtol=1e-13)
    dY = np.random.RandomState(13).randn(1, n)
    g = dg.vjp(K.shfl_var_k[1, n], X, np.zeros_like(X), cotangents={"Y": dY})["X"]
    d = np.random.RandomState(14).randn(1, n)
    eps = 1e-6
    fd = (float((K.shfl_var_reference((X + eps * d)[0]) * dY).sum())
          - float((K.shfl_var_reference((X - eps * d)[0]) * dY).sum())) / (2 * eps)
    assert abs(float((g * d).sum()) - fd) <= 1e-6 * max(1.0, abs(fd))

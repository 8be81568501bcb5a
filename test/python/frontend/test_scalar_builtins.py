"""Values of the scalar builtins (dg.sign ... dg.erfcinv, np.sign/clip/rint/
fmod) on the CPU against numpy, in float32 and float64, edge cases included
(signed zeros, ties, NaN, infinities, the ends of erfinv's domain)."""
from __future__ import annotations

import math

import numpy as np
import pytest

import diffgpu as dg

import kernels_scalar_builtins as K

EDGES = [0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5, 1e-30, -7.25, 3.75, np.inf, -np.inf, np.nan]


def _run(kernel, *xs, dtype):
    xs = [np.ascontiguousarray(x, dtype=dtype) for x in xs]
    y = np.full(len(xs[0]), 123.0, dtype)
    kernel[1, len(y)](*xs, y)
    return y


def _same(got, want):
    """Equal as floats, NaN where NaN, signed zeros alike."""
    want = np.asarray(want, got.dtype)
    np.testing.assert_array_equal(got, want)
    assert np.array_equal(np.signbit(got), np.signbit(want)) or np.isnan(want).any()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_unary_piecewise(dtype):
    x = np.array(EDGES, dtype)
    with np.errstate(invalid="ignore"):
        _same(_run(K.k_sign, x, dtype=dtype), np.where(x < 0, -1.0, 1.0))  # Warp: NaN -> 1
        _same(_run(K.k_step, x, dtype=dtype), np.where(x < 0, 1.0, 0.0))
        _same(_run(K.k_frac, x, dtype=dtype), x - np.trunc(x))
        _same(_run(K.k_rint, x, dtype=dtype), np.rint(x))
        _same(_run(K.k_np_rint, x, dtype=dtype), np.rint(x))
        np.testing.assert_array_equal(_run(K.k_np_sign, x, dtype=dtype), np.sign(x))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_mod_is_fmod(dtype):
    a = np.array([7.5, -7.5, 7.5, -7.5, 0.0, -0.0, 5.0, 1e10, np.inf, 3.0, np.nan], dtype)
    b = np.array([2.0, 2.0, -2.0, -2.0, 3.0, 3.0, np.inf, 3.0, 2.0, 0.0, 1.0], dtype)
    with np.errstate(invalid="ignore"):
        want = np.fmod(a, b)
    got = _run(K.k_mod, a, b, dtype=dtype)
    np.testing.assert_array_equal(got, want)
    assert np.array_equal(np.signbit(got[:6]), np.signbit(want[:6]))  # sign of the dividend
    np.testing.assert_array_equal(_run(K.k_np_fmod, a, b, dtype=dtype), want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_clamp_lerp_smoothstep(dtype):
    rng = np.random.default_rng(1)
    x = rng.uniform(-3, 3, 64).astype(dtype)
    lo = rng.uniform(-2, 0, 64).astype(dtype)
    hi = rng.uniform(0, 2, 64).astype(dtype)
    x[:3] = [np.nan, lo[1], hi[2]]
    _same(_run(K.k_clamp, x, lo, hi, dtype=dtype), np.fmin(np.fmax(lo, x), hi))
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(_run(K.k_np_clip, x, lo, hi, dtype=dtype),
                                      np.clip(x, lo, hi))
    t = rng.uniform(-0.5, 1.5, 64).astype(dtype)
    np.testing.assert_allclose(_run(K.k_lerp, lo, hi, t, dtype=dtype),
                               lo * (1 - t) + hi * t, rtol=4 * np.finfo(dtype).eps, atol=0)
    u = np.clip((x - lo) / (hi - lo), 0, 1)
    np.testing.assert_allclose(_run(K.k_smoothstep, lo, hi, x, dtype=dtype)[3:],
                               (u * u * (3 - 2 * u))[3:], rtol=8 * np.finfo(dtype).eps,
                               atol=8 * np.finfo(dtype).eps)


def test_integer_arguments_keep_their_type():
    a = np.array([-7, -1, 0, 1, 9, 5], np.int64)
    b = np.array([2, 2, 3, -2, 4, -3], np.int64)
    y = np.zeros((6, 6), np.int64)
    K.k_int_builtins[1, 6](a, b, y)
    np.testing.assert_array_equal(y[:, 0], np.where(a < 0, -1, 1))
    np.testing.assert_array_equal(y[:, 1], np.where(a < 0, 1, 0))
    np.testing.assert_array_equal(y[:, 2], np.clip(a, -3, 4))
    np.testing.assert_array_equal(y[:, 3], np.fmod(a, b))  # C's %: sign of a
    np.testing.assert_array_equal(y[:, 4], np.sign(a))
    np.testing.assert_array_equal(y[:, 5], np.clip(a, -3, 4))


def test_np_clip_with_one_bound():
    x = np.array([-1.0, 0.0, 1.0])
    y = np.zeros((3, 2))
    K.k_clip_one_bound[1, 3](x, y)
    np.testing.assert_array_equal(y[:, 0], np.clip(x, None, 0.25))
    np.testing.assert_array_equal(y[:, 1], np.clip(x, -0.25, None))


def _erfinv_ref(x: float) -> float:
    """erfinv by bisection on math.erf / math.erfc (float64, to its last bit)."""
    if x in (1.0, -1.0, 0.0):
        return math.copysign(math.inf, x) if x else x
    a, c = abs(x), 1.0 - abs(x)
    lo, hi = 0.0, 30.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if (math.erf(mid) < a) if a < 0.5 else (math.erfc(mid) > c):
            lo = mid
        else:
            hi = mid
    return math.copysign(0.5 * (lo + hi), x)


def _erfcinv_ref(y: float) -> float:
    if y > 1:
        return -_erfcinv_ref(2.0 - y)
    if y == 0:
        return math.inf
    if y >= 0.5:  # 1 - y is exact: erfinv's bisection on erf keeps the small result precise
        return _erfinv_ref(1.0 - y)
    lo, hi = 0.0, 30.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if math.erfc(mid) > y:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def _ulps(got, want, dtype):
    want = np.asarray(want, np.float64)
    return np.abs(got.astype(np.float64) - want) / np.maximum(
        np.abs(want) * np.finfo(dtype).eps, np.finfo(dtype).tiny)


#: accuracy, ulps of the result, measured (lowering/common/special_math.py)
ULPS = {np.float32: 1.0, np.float64: 6.0}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_erfinv_accuracy(dtype):
    eps = np.finfo(dtype).eps
    x = np.concatenate([np.linspace(-0.999, 0.999, 301), 1 - np.logspace(np.log10(eps), -1, 40),
                        -(1 - np.logspace(np.log10(eps), -2, 10))]).astype(dtype)
    ref = [_erfinv_ref(float(v)) for v in x]
    assert _ulps(_run(K.k_erfinv, x, dtype=dtype), ref, dtype).max() <= ULPS[dtype]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_erfcinv_accuracy(dtype):
    tiny = np.finfo(dtype).tiny
    y = np.concatenate([np.linspace(0.001, 1.999, 301),
                        np.logspace(np.log10(tiny) + 1, -1, 60)]).astype(dtype)
    ref = [_erfcinv_ref(float(v)) for v in y]
    assert _ulps(_run(K.k_erfcinv, y, dtype=dtype), ref, dtype).max() <= ULPS[dtype]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_erfinv_domain_ends(dtype):
    x = np.array([1.0, -1.0, 0.0, -0.0, 1.5, -2.0, np.nan], dtype)
    got = _run(K.k_erfinv, x, dtype=dtype)
    _same(got, [np.inf, -np.inf, 0.0, -0.0, np.nan, np.nan, np.nan])
    y = np.array([0.0, 2.0, 1.0, -0.5, 2.5, np.nan], dtype)
    got = _run(K.k_erfcinv, y, dtype=dtype)
    np.testing.assert_array_equal(got, [np.inf, -np.inf, 0.0, np.nan, np.nan, np.nan])


def test_builtins_raise_outside_kernels():
    with pytest.raises(RuntimeError, match="only be used inside"):
        dg.erfinv(0.5)
    assert "sign of a" in dg.mod.__doc__

"""Derivatives of the scalar builtins (dg.clamp, dg.lerp, dg.smoothstep,
dg.frac, dg.mod, dg.erfinv, dg.erfcinv, np.clip, np.fmod, and the piecewise
constant dg.sign / dg.step / dg.rint / np.sign / np.rint), reverse and forward
mode, against finite differences: float64 through dg.gradcheck, float32
through dg.autodiff / dg.fwddiff against central differences of the float64
kernel."""
from __future__ import annotations

import numpy as np
import pytest

import diffgpu as dg

import kernels_scalar_builtins as K

N = 8

#: kernel -> sample range of each argument, away from kinks and jumps
SMOOTH = {
    "clamp": [(-1, 1), (-3, -2), (2, 3)],  # inside: d/dx = 1
    "lerp": [(-2, 2), (-2, 2), (-0.5, 1.5)],
    "smoothstep": [(-2, -1), (1, 2), (-0.9, 0.9)],
    "frac": [(0.1, 0.9)],
    "mod": [(2.1, 2.9), (1.0, 1.05)],
    "erfinv": [(-0.95, 0.95)],
    "erfcinv": [(0.05, 1.95)],
    "np_clip": [(-1, 1), (-3, -2), (2, 3)],
    "np_fmod": [(-2.9, -2.1), (1.0, 1.05)],
    "sign": [(-2, 2)], "step": [(-2, 2)], "rint": [(0.1, 0.4)],
    "np_sign": [(-2, 2)], "np_rint": [(0.1, 0.4)],
}


def _inputs(name, dtype, seed=0):
    rng = np.random.default_rng(seed + len(name))
    return [rng.uniform(lo, hi, N).astype(dtype) for lo, hi in SMOOTH[name]]


@pytest.mark.parametrize("name", sorted(SMOOTH))
def test_gradcheck_float64(name):
    xs = _inputs(name, np.float64)
    k = getattr(K, f"k_{name}")
    acts = [dg.Duplicated(x, np.zeros(N)) for x in xs]
    acts.append(dg.Duplicated(np.zeros(N), np.zeros(N)))
    assert dg.gradcheck(k[1, N], *acts, eps=1e-6, atol=1e-6, rtol=1e-5)


def _forward64(k, xs):
    y = np.zeros(N)
    k[1, N](*[x.astype(np.float64) for x in xs], y)
    return y


@pytest.mark.parametrize("name", sorted(SMOOTH))
def test_float32_both_modes_against_finite_differences(name):
    """Elementwise kernels: the Jacobian is diagonal per argument, so one
    reverse pass with dY = 1 and one forward pass per argument give it."""
    k = getattr(K, f"k_{name}")
    xs = _inputs(name, np.float32)
    h = 1e-4
    fd = []
    for j, x in enumerate(xs):
        up = [v.astype(np.float64) for v in xs]
        dn = [v.astype(np.float64) for v in xs]
        up[j] = up[j] + h
        dn[j] = dn[j] - h
        fd.append((_forward64(k, up) - _forward64(k, dn)) / (2 * h))
    shadows = [np.zeros(N, np.float32) for _ in xs]
    y, dy = np.zeros(N, np.float32), np.ones(N, np.float32)
    dg.autodiff(k[1, N], *[dg.Duplicated(x, s) for x, s in zip(xs, shadows)],
                dg.Duplicated(y, dy))
    for j in range(len(xs)):
        np.testing.assert_allclose(shadows[j], fd[j], rtol=1e-3, atol=1e-3)
        tangents = [np.zeros(N, np.float32) for _ in xs]
        tangents[j][:] = 1
        y, ty = np.zeros(N, np.float32), np.zeros(N, np.float32)
        dg.fwddiff(k[1, N], *[dg.Duplicated(x, t) for x, t in zip(xs, tangents)],
                   dg.Duplicated(y, ty))
        np.testing.assert_allclose(ty, fd[j], rtol=1e-3, atol=1e-3)


def _grads(k, *xs):
    shadows = [np.zeros_like(x) for x in xs]
    y = np.zeros_like(xs[0])
    dg.autodiff(k[1, len(y)], *[dg.Duplicated(x, s) for x, s in zip(xs, shadows)],
                dg.Duplicated(y, np.ones_like(y)))
    return shadows


def test_exact_derivatives():
    """The values the rules give where finite differences cannot look: the
    jumps of the piecewise constant functions and the clamp's ties."""
    x = np.array([-1.0, -0.0, 0.0, 0.5, 1.5, 2.5])
    for k in (K.k_sign, K.k_step, K.k_rint, K.k_np_sign, K.k_np_rint):
        (g,) = _grads(k, x.copy())
        np.testing.assert_array_equal(g, 0.0)
    (g,) = _grads(K.k_frac, np.array([-2.5, -0.25, 0.0, 0.75, 3.0]))
    np.testing.assert_array_equal(g, 1.0)
    ga, gb = _grads(K.k_mod, np.array([7.5, -7.5, 7.5]), np.array([2.0, 2.0, -2.0]))
    np.testing.assert_array_equal(ga, 1.0)
    np.testing.assert_array_equal(gb, [-3.0, 3.0, 3.0])  # -trunc(a / b)
    # clamp: the gradient goes to the operand returned, x on its ties
    x = np.array([-5.0, -1.0, 0.0, 1.0, 5.0])
    lo, hi = np.full(5, -1.0), np.full(5, 1.0)
    gx, glo, ghi = _grads(K.k_clamp, x, lo, hi)
    np.testing.assert_array_equal(gx, [0, 1, 1, 1, 0])
    np.testing.assert_array_equal(glo, [1, 0, 0, 0, 0])
    np.testing.assert_array_equal(ghi, [0, 0, 0, 0, 1])
    gx, glo, ghi = _grads(K.k_np_clip, x.copy(), lo.copy(), hi.copy())
    np.testing.assert_array_equal(gx, [0, 1, 1, 1, 0])
    np.testing.assert_array_equal(glo + ghi, [1, 0, 0, 0, 1])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_erfinv_derivative_formula(dtype):
    """d/dx erfinv(x) = sqrt(pi)/2 exp(erfinv(x)^2), also near the ends of
    the domain where finite differences lose their accuracy."""
    x = np.array([-0.999, -0.5, 0.0, 0.3, 0.9, 0.9999], dtype)
    y = np.zeros_like(x)
    K.k_erfinv[1, len(x)](x, y)
    (g,) = _grads(K.k_erfinv, x.copy())
    want = np.sqrt(np.pi) / 2 * np.exp(y.astype(np.float64) ** 2)
    np.testing.assert_allclose(g, want, rtol=8 * np.finfo(dtype).eps)
    c = (1 - x).astype(dtype)
    K.k_erfcinv[1, len(c)](c, y)
    (g,) = _grads(K.k_erfcinv, c)
    np.testing.assert_allclose(g, -np.sqrt(np.pi) / 2 * np.exp(y.astype(np.float64) ** 2),
                               rtol=8 * np.finfo(dtype).eps)


def test_special_functions_in_an_expression():
    x = np.linspace(-0.8, 0.8, N)
    assert dg.gradcheck(K.k_special_grad[1, N], dg.Duplicated(x, np.zeros(N)),
                        dg.Duplicated(np.zeros(N), np.zeros(N)), eps=1e-6, atol=1e-6,
                        rtol=1e-5)

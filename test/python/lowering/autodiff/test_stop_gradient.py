"""`dg.stop_gradient(v)`: v for the primal, a constant for derivatives
(frontend/stop_gradient.py, lowering/autodiff/stop_gradient.py).

- y = x * stop_gradient(x) has dy/dx = x, not 2x: dg.vjp, in-kernel
  dg.autodiff, dg.jvp and dg.fwddiff (float32 and float64); the primal is
  x * x (CPU and PTX compile);
- a softmax-style shift by a maximum held constant: the gradient is
  exp(x - m) (m constant), against numpy, and the reverse has no derivative
  work for the maximum (no select of the max's rule in the reverse);
- second order through it; integers pass through unchanged; no
  `diffgpu.stop_gradient` op is left after diffgpu-autodiff;
- misuse (two arguments) is a CompileError at the user's line.
"""
from __future__ import annotations

import numpy as np
import pytest

import diffgpu as dg


@dg.kernel
def half_square(y, x):
    i = dg.global_id(0)
    if i < len(x):
        y[i] = x[i] * dg.stop_gradient(x[i])


@dg.kernel
def half_square_grad(y, dy, x, dx):
    dg.autodiff(half_square, dg.Duplicated(y, dy), dg.Duplicated(x, dx))


@dg.kernel
def half_square_tan(y, dy, x, dx):
    dg.fwddiff(half_square, dg.Duplicated(y, dy), dg.Duplicated(x, dx))


@dg.kernel
def shifted_exp(y, x, n):
    i = dg.global_id(0)
    if i < len(x):
        m = x[0]
        for j in range(n):
            m = max(m, x[j])
        y[i] = dg.exp(x[i] - dg.stop_gradient(m))


@dg.kernel
def shifted_exp_plain(y, x, n):
    i = dg.global_id(0)
    if i < len(x):
        m = x[0]
        for j in range(n):
            m = max(m, x[j])
        y[i] = dg.exp(x[i] - m)


@dg.func
def cubed_half(x):
    return x * x * dg.stop_gradient(x)


@dg.kernel
def second(X, G):
    i = dg.global_id(0)
    if i < len(X):
        (g,) = dg.autodiff(cubed_half, dg.Active(X[i]))
        G[i] = g


@dg.kernel
def int_passes(y, x, k):
    i = dg.global_id(0)
    if i < len(x):
        y[i] = x[i] * dg.stop_gradient(k)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_half_square(dtype):
    x = np.linspace(-2, 2, 8).astype(dtype)
    y = np.zeros_like(x)
    half_square[1, 8](y, x)
    np.testing.assert_array_equal(y, x * x)
    g = np.arange(1, 9).astype(dtype)
    r = dg.vjp(half_square[1, 8], np.zeros_like(x), x, cotangents={"y": g})
    np.testing.assert_allclose(r["x"], x * g, rtol=1e-6)
    dx = np.zeros_like(x)
    half_square_grad[1, 8](np.zeros_like(x), g.copy(), x, dx)
    np.testing.assert_allclose(dx, x * g, rtol=1e-6)
    t = dg.jvp(half_square[1, 8], np.zeros_like(x), x, tangents={"x": g})
    np.testing.assert_allclose(t["y"], x * g, rtol=1e-6)
    dy = np.zeros_like(x)
    half_square_tan[1, 8](np.zeros_like(x), dy, x, g.copy())
    np.testing.assert_allclose(dy, x * g, rtol=1e-6)


def test_primal_compiles_for_the_gpu():
    x = np.ones(8, np.float32)
    ptx = half_square.ir(np.zeros_like(x), x, stage="ptx", target="sm_90")
    assert "mul.f32" in ptx or "mul.rn.f32" in ptx


def test_no_op_is_left_after_autodiff():
    x = np.ones(8, np.float32)
    for k, args in ((half_square, (x, x)), (half_square_grad, (x, x, x, x))):
        assert "stop_gradient" in k.ir(*args, stage="dialect", target="host")
        assert "stop_gradient" not in k.ir(*args, stage="autodiff", target="host")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_shift_by_a_constant_max(dtype):
    x = np.random.default_rng(0).uniform(-1, 1, 16).astype(dtype)
    g = np.random.default_rng(1).uniform(-1, 1, 16).astype(dtype)
    r = dg.vjp(shifted_exp[1, 16], np.zeros_like(x), x, 16, cotangents={"y": g})
    want = np.exp(x.astype(np.float64) - x.max()) * g
    np.testing.assert_allclose(r["x"], want, rtol=1e-5 if dtype == np.float32 else 1e-12)


def test_the_max_costs_no_reverse_work():
    """The derivative of the max (a compare and select per step, accumulated
    through the loop) is not generated: the plain kernel's reverse has its
    loop reversed, the stopped one's reverse runs no loop of its own."""
    x = np.ones(16, np.float32)

    @dg.kernel
    def g_stop(y, dy, x, dx, n):
        dg.autodiff(shifted_exp, dg.Duplicated(y, dy), dg.Duplicated(x, dx), n)

    @dg.kernel
    def g_plain(y, dy, x, dx, n):
        dg.autodiff(shifted_exp_plain, dg.Duplicated(y, dy), dg.Duplicated(x, dx), n)

    def rev(k):
        t = k.ir(x, x, x, x, 16, stage="autodiff", target="host", grid=1, block=16)
        start = t.index("func.func @__dg_rev_")
        return t[start:t.index("\n  }\n", start)]

    stop, plain = rev(g_stop), rev(g_plain)
    assert plain.count("scf.for") >= 2  # the forward loop, its reverse (and replays)
    assert stop.count("scf.for") == 1   # the forward loop only


def test_second_order():
    x = np.linspace(0.5, 2, 8)
    G = np.zeros_like(x)
    second[1, 8](x, G)
    np.testing.assert_allclose(G, 2 * x * x)  # d/dx (x^2 * c) = 2 x c, c = x
    r = dg.vjp(second[1, 8], x, np.zeros_like(x), cotangents={"G": np.ones_like(x)})
    np.testing.assert_allclose(r["X"], 2 * x)  # d/dx (2 x c) = 2 c, c = x held


def test_integers_pass_through():
    x = np.ones(4, np.float32)
    y = np.zeros_like(x)
    int_passes[1, 4](y, x, 3)
    np.testing.assert_array_equal(y, 3.0)


def test_two_arguments_is_an_error_at_the_line():
    @dg.kernel
    def bad(y, x):
        y[0] = dg.stop_gradient(x[0], x[1])

    with pytest.raises(dg.CompileError, match=r"test_stop_gradient.py:\d+:\d+.*stop_gradient"):
        bad[1, 1](np.zeros(2, np.float32), np.zeros(2, np.float32))

"""Second-order derivatives through control flow, against finite differences.

Each kernel below computes a first-order derivative inside itself
(`dg.autodiff` or `dg.fwddiff` of a function with loops, branches, early
returns, calls or shared memory). dg.gradcheck then differentiates that
kernel again in both modes and compares with central finite differences of
the first-order derivative it computes, in float64:

- reverse over reverse: dg.autodiff of a kernel holding dg.autodiff,
- forward over reverse (Hessian-vector products): dg.fwddiff of the same,
- reverse over forward and forward over forward: kernels holding dg.fwddiff.

The first derivative travels through tape words and local slots of the
generated inner function (rules/tape.py, locals.py); before they carried
their derivatives, these second derivatives came out as silent zeros.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import diffgpu as dg

N = 4


# -- functions differentiated inside the kernels ---------------------------
@dg.kernel
def sq_rows(A):
    for j in range(len(A)):
        A[j] = A[j] * A[j]


@dg.func
def f_for_const(x):
    s = x
    for j in range(3):
        s = s * x + math.sin(s)
    return s


@dg.func
def f_for_runtime(x, n):
    s = 1.0
    for j in range(n):
        s = s * x + 0.5 * math.cos(s * x)
    return s


@dg.func
def f_while(x):
    s = x
    k = 0
    while k < 3:
        s = s * s * 0.5 + math.sin(x * s)
        k += 1
    return s


@dg.func
def f_while_data(x):
    s = x
    while s < 3.0:  # the trip count depends on x
        s = s * (1.0 + x) + 0.2
    return s * math.sin(s)


@dg.func
def f_if(x):
    if x > 0.0:
        return x * x * x + math.exp(x)
    return math.sin(x) * x


@dg.func
def f_early_return(x, n):
    s = x
    for j in range(n):
        s = s * 0.9 + x * x
        if s > 50.0:
            return s * s
    return s * x


@dg.func
def helper(x, n):
    s = x
    for j in range(n):
        s = s * x + 0.1
    return s


@dg.func
def f_calls(x, y):
    return helper(x, 2) * y + helper(y * x, 3)


@dg.func
def f_nested(x):
    s = 0.0
    for i in range(3):
        t = x
        for j in range(i + 1):
            if t > 0.3:
                t = t * x
            else:
                t = t + x * x
        s = s + math.tanh(t)
    return s


@dg.kernel
def k_overwrite(A, n):
    for j in range(n):
        for i in range(len(A)):
            A[i] = math.sin(A[i]) * A[(i + 1) % len(A)] + A[i]


@dg.kernel
def k_shared(X, Y):
    tile = dg.shared_array(4, np.float64)
    t = dg.thread_id(0)
    tile[t] = X[t] * X[t]
    dg.syncthreads()
    Y[t] = tile[3 - t] * X[t] + math.sin(tile[(t + 1) % 4])


# -- kernels computing first derivatives -----------------------------------
@dg.kernel
def g_sq(A, dA):
    dg.autodiff(sq_rows, dg.Duplicated(A, dA))


@dg.kernel
def g_overwrite(A, dA, n):
    dg.autodiff(k_overwrite, dg.Duplicated(A, dA), dg.Const(n))


@dg.kernel
def g_shared(X, dX, Y, dY):
    dg.autodiff(k_shared, dg.Duplicated(X, dX), dg.Duplicated(Y, dY))


@dg.kernel
def g_for_const(X, G):
    i = dg.global_id(0)
    if i < len(X):
        (G[i],) = dg.autodiff(f_for_const, dg.Active(X[i]))


@dg.kernel
def g_for_runtime(X, G, n):
    i = dg.global_id(0)
    if i < len(X):
        (g,) = dg.autodiff(f_for_runtime, dg.Active(X[i]), dg.Const(n))
        G[i] = g


@dg.kernel
def g_while(X, G):
    i = dg.global_id(0)
    if i < len(X):
        (G[i],) = dg.autodiff(f_while, dg.Active(X[i]))


@dg.kernel
def g_while_data(X, G):
    i = dg.global_id(0)
    if i < len(X):
        (G[i],) = dg.autodiff(f_while_data, dg.Active(X[i]))


@dg.kernel
def g_twice(X, G):
    # one generated derivative inlined twice: its tape tags appear twice
    i = dg.global_id(0)
    if i < len(X):
        (a,) = dg.autodiff(f_while, dg.Active(X[i]))
        (b,) = dg.autodiff(f_while, dg.Active(a * 0.5))
        G[i] = a * b


@dg.kernel
def g_if(X, G):
    i = dg.global_id(0)
    if i < len(X):
        (G[i],) = dg.autodiff(f_if, dg.Active(X[i]))


@dg.kernel
def g_early_return(X, G, n):
    i = dg.global_id(0)
    if i < len(X):
        (G[i],) = dg.autodiff(f_early_return, dg.Active(X[i]), dg.Const(n))


@dg.kernel
def g_calls(X, Y, G):
    i = dg.global_id(0)
    if i < len(X):
        gx, gy = dg.autodiff(f_calls, dg.Active(X[i]), dg.Active(Y[i]))
        G[i] = gx * gy + gx


@dg.kernel
def g_nested(X, G):
    i = dg.global_id(0)
    if i < len(X):
        (G[i],) = dg.autodiff(f_nested, dg.Active(X[i]))


@dg.kernel
def g_fwd_for(X, G, n):
    i = dg.global_id(0)
    if i < len(X):
        G[i] = dg.fwddiff(f_for_runtime, dg.Duplicated(X[i], 1.0), dg.Const(n))


@dg.kernel
def g_fwd_while(X, G):
    i = dg.global_id(0)
    if i < len(X):
        G[i] = dg.fwddiff(f_while, dg.Duplicated(X[i], 1.0))


@dg.kernel
def g_fwd_if_calls(X, Y, G):
    i = dg.global_id(0)
    if i < len(X):
        G[i] = dg.fwddiff(f_if, dg.Duplicated(X[i], 1.0)) \
            + dg.fwddiff(f_calls, dg.Duplicated(X[i], Y[i]), dg.Duplicated(Y[i], 0.5))


@dg.kernel
def g_fwd_array(A, dA, n):
    dg.fwddiff(k_overwrite, dg.Duplicated(A, dA), dg.Const(n))


@dg.kernel
def h_third(A, dA, DA, DdA):
    dg.autodiff(g_sq, dg.Duplicated(A, DA), dg.Duplicated(dA, DdA))


@dg.kernel
def h_third_scalar(X, G, DX, DG):
    dg.autodiff(g_while, dg.Duplicated(X, DX), dg.Duplicated(G, DG))


@dg.func
def grad_f(x, n):
    (g,) = dg.autodiff(f_for_runtime, dg.Active(x), dg.Const(n))
    return g


@dg.kernel
def hess_fwd_over_rev(X, H, n):
    i = dg.global_id(0)
    if i < len(X):
        H[i] = dg.fwddiff(grad_f, dg.Duplicated(X[i], 1.0), dg.Const(n))


@dg.kernel
def hess_rev_over_rev(X, H, n):
    i = dg.global_id(0)
    if i < len(X):
        (H[i],) = dg.autodiff(grad_f, dg.Active(X[i]), dg.Const(n))


@dg.kernel
def grad_kernel(X, G, n):
    i = dg.global_id(0)
    if i < len(X):
        G[i] = grad_f(X[i], n)


@dg.kernel
def g_fwd_shared(X, dX, Y, dY):
    dg.fwddiff(k_shared, dg.Duplicated(X, dX), dg.Duplicated(Y, dY))


@dg.kernel
def g_fwd_early_return(X, G, n):
    i = dg.global_id(0)
    if i < len(X):
        G[i] = dg.fwddiff(f_early_return, dg.Duplicated(X[i], 1.0), dg.Const(n))


def _x(lo=0.2, hi=0.9, n=N, seed=0):
    return np.random.default_rng(seed).uniform(lo, hi, n)


def _z(n=N):
    return np.zeros(n)


def _dup(a):
    return dg.Duplicated(a, np.zeros_like(a))


# name -> (launch, activities): the kernel maps its Duplicated arrays in
# place (inputs and first derivatives), as dg.gradcheck expects
CASES = {
    "reverse_for_runtime_array": lambda: (g_sq[1, 1], [_dup(_x()), _dup(_x(seed=1))]),
    "reverse_overwrite_loop": lambda: (g_overwrite[1, 1],
                                       [_dup(_x()), _dup(_x(seed=2)), dg.Const(2)]),
    "reverse_shared_memory": lambda: (g_shared[1, 4],
                                      [_dup(_x()), _dup(_x(seed=3)), _dup(_z()),
                                       _dup(_x(seed=4))]),
    "reverse_for_const": lambda: (g_for_const[1, N], [_dup(_x()), _dup(_z())]),
    "reverse_for_runtime": lambda: (g_for_runtime[1, N], [_dup(_x()), _dup(_z()),
                                                          dg.Const(3)]),
    # 150 iterations: the inner tape (128 words on the stack) and the tape of
    # adjoints (16) both grow onto the heap
    "reverse_for_runtime_long": lambda: (g_for_runtime[1, 2], [_dup(_x(0.2, 0.4, n=2)),
                                                               _dup(_z(2)), dg.Const(150)]),
    "reverse_while": lambda: (g_while[1, N], [_dup(_x()), _dup(_z())]),
    # x in (0.56, 0.7): 3 iterations for every x, away from the jumps
    "reverse_while_data": lambda: (g_while_data[1, N], [_dup(_x(0.56, 0.7)), _dup(_z())]),
    "reverse_same_derivative_twice": lambda: (g_twice[1, N], [_dup(_x()), _dup(_z())]),
    "reverse_if": lambda: (g_if[1, N], [_dup(_x(-0.9, 0.9)), _dup(_z())]),
    "reverse_early_return": lambda: (g_early_return[1, N],
                                     [_dup(_x(0.5, 4.0)), _dup(_z()), dg.Const(4)]),
    "reverse_calls": lambda: (g_calls[1, N], [_dup(_x()), _dup(_x(seed=5)), _dup(_z())]),
    "reverse_nested_if": lambda: (g_nested[1, N], [_dup(_x(0.1, 0.8)), _dup(_z())]),
    "forward_for_runtime": lambda: (g_fwd_for[1, N], [_dup(_x()), _dup(_z()),
                                                      dg.Const(3)]),
    "forward_while": lambda: (g_fwd_while[1, N], [_dup(_x()), _dup(_z())]),
    "forward_if_calls": lambda: (g_fwd_if_calls[1, N],
                                 [_dup(_x(-0.9, 0.9)), _dup(_x(seed=6)), _dup(_z())]),
    # third order: the function differentiated holds a tape and a tape of
    # adjoints whose events interleave (one tape of derivatives per tag)
    "third_order_array": lambda: (h_third[1, 1], [_dup(_x(seed=s)) for s in range(4)]),
    "third_order_while": lambda: (h_third_scalar[1, 1],
                                  [_dup(_x(seed=s)) for s in range(4)]),
    # a Hessian computed inside the kernel, differentiated again (third order)
    "third_order_in_kernel_hessian": lambda: (hess_fwd_over_rev[1, N],
                                              [_dup(_x()), _dup(_z()), dg.Const(3)]),
    "forward_shared_memory": lambda: (g_fwd_shared[1, 4],
                                      [_dup(_x()), _dup(_x(seed=3)), _dup(_z()),
                                       _dup(_x(seed=4))]),
    "forward_early_return": lambda: (g_fwd_early_return[1, N],
                                     [_dup(_x(0.5, 4.0)), _dup(_z()), dg.Const(4)]),
    "forward_array_loop": lambda: (g_fwd_array[1, 1],
                                   [_dup(_x()), _dup(_x(seed=7)), dg.Const(2)]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_second_order(name):
    """Both modes over the first derivative, against finite differences of it."""
    launch, acts = CASES[name]()
    assert dg.gradcheck(launch, *acts, eps=1e-6, atol=1e-6, rtol=1e-5)


def test_issue_reproducer():
    """d(2 a d)/da = 2 d: the reverse sweep's tape word carries the derivative."""
    A, dA = np.array([0.7]), np.array([0.4])
    DA, DdA = np.zeros(1), np.ones(1)
    dg.autodiff(g_sq[1, 1], dg.Duplicated(A, DA), dg.Duplicated(dA, DdA))
    assert DA[0] == pytest.approx(0.8, rel=1e-12)
    assert DdA[0] == pytest.approx(1.4, rel=1e-12)
    # forward over reverse: the tangent of dA_out = 2 a dA along (da, ddA) = (1, 0)
    A, dA = np.array([0.7]), np.array([0.4])
    tA, tdA = np.ones(1), np.zeros(1)
    dg.fwddiff(g_sq[1, 1], dg.Duplicated(A, tA), dg.Duplicated(dA, tdA))
    assert tdA[0] == pytest.approx(0.8, rel=1e-12)


def test_float32_tape_words():
    """f32 words are tagged too (bitcast to i32 inside the i64 word)."""
    A, dA = np.array([0.7], np.float32), np.array([0.4], np.float32)
    DA, DdA = np.zeros(1, np.float32), np.ones(1, np.float32)
    dg.autodiff(g_sq[1, 1], dg.Duplicated(A, DA), dg.Duplicated(dA, DdA))
    assert DA[0] == pytest.approx(0.8, rel=1e-6)
    assert DdA[0] == pytest.approx(1.4, rel=1e-6)


def test_hessian_inside_a_kernel():
    """dg.fwddiff and dg.autodiff of a @dg.func that itself calls dg.autodiff:
    both give f'' where differences of the kernel computing f' do."""
    x, n, h = _x(), 3, 1e-6
    fwd, rev, gp, gm = _z(), _z(), _z(), _z()
    hess_fwd_over_rev[1, N](x.copy(), fwd, n)
    hess_rev_over_rev[1, N](x.copy(), rev, n)
    grad_kernel[1, N](x + h, gp, n)
    grad_kernel[1, N](x - h, gm, n)
    want = (gp - gm) / (2 * h)
    np.testing.assert_allclose(fwd, want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(rev, fwd, rtol=1e-12)
    assert np.abs(want).min() > 1e-2


def test_hessian_vector_product():
    """fwddiff of a gradient kernel is H v: f = sum_j f_for_const(x_j) has a
    diagonal Hessian, checked against differences of the gradient."""
    x = _x()
    v = np.random.default_rng(9).standard_normal(N)

    def grad(x):
        G = np.zeros(N)
        g_for_const[1, N](x.copy(), G)
        return G

    tG = np.zeros(N)
    dg.fwddiff(g_for_const[1, N], dg.Duplicated(x.copy(), v.copy()), dg.Duplicated(_z(), tG))
    h = 1e-6
    want = (grad(x + h * v) - grad(x - h * v)) / (2 * h)
    np.testing.assert_allclose(tG, want, rtol=1e-6, atol=1e-8)
    assert np.abs(tG).min() > 1e-3


def gpu_cases():
    """(name, kernel, grid, block, mode, make(rng), None) for
    scripts/gpu_check.py: every case above in reverse and forward mode with
    random shadows/tangents, float64; expected: the CPU's results."""
    out = []
    for name, build in sorted(CASES.items()):
        launch, _ = build()
        for mode in ("reverse", "forward"):
            def make(r, build=build):
                _, acts = build()
                return [dg.Duplicated(a.value, r.standard_normal(a.value.shape))
                        if isinstance(a, dg.Duplicated) else a for a in acts]
            out.append((f"higher {name} {mode}", launch.kernel, launch.grid, launch.block,
                        mode, make, None))
    return out


def test_gpu_cases_cover_every_case():
    names = [c[0] for c in gpu_cases()]
    assert len(names) == 2 * len(CASES) == len(set(names))

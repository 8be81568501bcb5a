"""Integer shared arrays in differentiated kernels (lowering/autodiff/shared.py).

An int32 `dg.shared_array` of indices gets no shadow: the generated
function takes it as one argument (a float shared array: the array and its
shadow), and the indices its loads gave reach the reverse sweep as values.
The kernel below gathers through a neighbour's index and then overwrites
the shared indices, so a reverse that reloaded them would read the wrong
ones. Checked: the IR (the int array is allocated once, no shadow), the
gradient against a float64 reference and finite differences
(float32 and float64), in-kernel `dg.autodiff` and host-level `dg.vjp`.
"""
from __future__ import annotations

import numpy as np
import pytest

import diffgpu as dg

B = 32


@dg.kernel
def permuted(y, x, perm):
    idx = dg.shared_array(32, np.int32)
    t = dg.thread_id(0)
    i = dg.global_id(0)
    idx[t] = perm[i]
    dg.syncthreads()
    j = idx[(t + 1) % 32]           # a neighbour's index into x
    y[i] = x[j] * x[j] + x[i] * 2.0
    dg.syncthreads()
    idx[t] = 0                      # overwritten after its last read


@dg.kernel
def permuted_grad(y, dy, x, dx, perm):
    dg.autodiff(permuted, dg.Duplicated(y, dy), dg.Duplicated(x, dx), dg.Const(perm))


def _args(dtype, blocks=2, seed=0):
    n = blocks * B
    r = np.random.default_rng(seed)
    perm = r.permutation(n).astype(np.int32)
    x = r.uniform(-1, 1, n).astype(dtype)
    return np.zeros(n, dtype), x, perm


def _reference(x, perm, g):
    """d/dx of sum(g * y) in float64."""
    n = len(x)
    dx = np.zeros(n)
    for i in range(n):
        b, t = divmod(i, B)
        j = perm[b * B + (t + 1) % B]
        dx[j] += 2 * x[j] * g[i]
        dx[i] += 2 * g[i]
    return dx


def test_int_shared_array_has_no_shadow():
    y, x, perm = _args(np.float32)
    text = permuted_grad.ir(y, np.ones_like(y), x, np.zeros_like(x), perm, stage="autodiff",
                            target="host", grid=2, block=B)
    kernel = text[text.index("func.func @permuted_grad"):]
    kernel = kernel[:kernel.index("\n  }\n")]
    assert kernel.count('"diffgpu.shared_alloc"() : () -> memref<32xi32') == 1  # no shadow
    assert kernel.count('"diffgpu.shared_alloc"') == 1


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gradient_through_int_shared_indices(dtype):
    y, x, perm = _args(dtype)
    g = np.random.default_rng(1).uniform(-1, 1, len(x)).astype(dtype)
    dy, dx = g.copy(), np.zeros_like(x)
    permuted_grad[2, B](y, dy, x, dx, perm)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(dx, _reference(x.astype(np.float64), perm, g), rtol=tol,
                               atol=tol)
    vjp = dg.vjp(permuted[2, B], np.zeros_like(x), x, perm, cotangents={"y": g})
    np.testing.assert_allclose(vjp["x"], dx, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_int_shared_finite_differences(dtype):
    y, x, perm = _args(dtype, seed=2)
    eps, tol = (1e-3, 2e-2) if dtype == np.float32 else (1e-6, 1e-6)
    assert dg.gradcheck(permuted[2, B], dg.Duplicated(y, np.zeros_like(y)),
                        dg.Duplicated(x, np.zeros_like(x)), dg.Const(perm),
                        eps=eps, atol=tol, rtol=tol)

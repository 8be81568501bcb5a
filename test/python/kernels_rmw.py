"""Kernels using dg.atomic_max / dg.atomic_min whose derivatives dg.vjp /
dg.jvp take (docs/collectives.md, atomic max and min), and numpy references
of which contribution wins. Shared by test/python/hostdiff/test_atomic_max_min.py
and the GPU check (scripts/gpu_cases/rmw.py)."""
import numpy as np

import diffgpu as dg


@dg.kernel
def max_k(A, X):
    t = dg.global_id(0)
    if t < len(X):
        dg.atomic_max(A, t % len(A), X[t] * X[t])


@dg.kernel
def min_k(A, X):
    t = dg.global_id(0)
    if t < len(X):
        dg.atomic_min(A, t % len(A), X[t] * X[t] * X[t])


@dg.kernel
def max2d_k(A, X):
    """A 2-D index: A[t % rows, (t // rows) % cols]."""
    t = dg.global_id(0)
    if t < len(X):
        r = t % A.shape[0]
        c = (t // A.shape[0]) % A.shape[1]
        dg.atomic_max(A, (r, c), X[t] * 3.0)


@dg.kernel
def max_and_store_k(A, Y, X):
    """Another output beside the atomic max: Y[t] += X[t] (run once per call)."""
    t = dg.global_id(0)
    if t < len(X):
        Y[t] += X[t] * 2.0
        dg.atomic_max(A, t % len(A), X[t])


@dg.func
def _max_into(A, x):
    dg.atomic_max(A, 0, x)


@dg.kernel
def inkernel_k(A, dA, X):
    t = dg.global_id(0)
    dg.autodiff(_max_into, dg.Duplicated(A, dA), X[t])


def winners(kind, A0, idx, vals):
    """(final values, per element the index of the winning contribution or
    -1 where the original value won). Ties between contributions: the
    lowest index (the CPU's reverse mode)."""
    final = A0.copy().ravel()
    win = np.full(final.shape, -1)
    better = np.greater if kind == "max" else np.less
    for t, (i, v) in enumerate(zip(idx, vals)):
        if better(v, final[i]):
            final[i], win[i] = v, t
    return final.reshape(A0.shape), win.reshape(A0.shape)


@dg.kernel
def loop_two_k(Mx, Mn, X):
    """Four contributions per thread from a loop, into two arrays: one only
    atomic_max'ed, one only atomic_min'ed."""
    t = dg.global_id(0)
    for k in range(4):
        v = X[t * 4 + k]
        dg.atomic_max(Mx, k % 2, v * v)
        dg.atomic_min(Mn, 0, v * 3.0)


@dg.kernel
def recurrence_k(A, X, n: int):
    """A loop of run-time length (its values taped) whose every step
    contributes: acc = acc / 2 + X[t n + k] into A[k % 2]."""
    t = dg.global_id(0)
    acc = 0.0
    for k in range(n):
        acc = acc * 0.5 + X[t * n + k]
        dg.atomic_max(A, k % 2, acc * acc)

"""The kernels of the CPU gradient tests (test_gradients.py, whose `CASES`
gives each one's launch, inputs and activities; scripts/gpu_check.py runs
the same cases on a GPU): arithmetic and math, in-place updates, loops with
runtime bounds, while loops, branches, calls of device functions and
kernels, gathers and atomic scatters, 2-D and 3-D arrays, shared memory and
dg.autodiff / dg.fwddiff inside kernels.
"""
from __future__ import annotations

import math

import numpy as np

import diffgpu as dg


@dg.func
def poly(x, y):
    return x * x * y + math.sin(y)


@dg.func
def clipped(x):
    if x > 1.0:
        return 1.0 + 0.1 * (x - 1.0)
    return x


@dg.kernel
def k_elementwise(X, Y):
    i = dg.global_id(0)
    if i < len(X):
        Y[i] = math.exp(X[i]) * math.sin(X[i]) + math.log(1.0 + X[i] * X[i])


@dg.kernel
def k_unary_mix(X, Y):
    i = dg.global_id(0)
    if i >= len(X):
        return
    x = X[i]
    Y[i] = math.tanh(x) + math.sqrt(x * x + 1.0) + math.atan(x) + math.erf(x) + math.cosh(x) * 0.1


@dg.kernel
def k_binary_mix(X, Y, Z):
    i = dg.global_id(0)
    if i < len(X):
        x = X[i]
        y = Y[i]
        Z[i] = math.atan2(x, y) + (x / y) + x ** 2.0 + math.pow(abs(y), 1.5) + min(x, y) - max(x, 2.0 * y)


@dg.kernel
def k_scalar_active(X, Y, a, b):
    i = dg.global_id(0)
    if i < len(X):
        Y[i] = a * X[i] * X[i] + b * math.sin(a * X[i])


@dg.kernel
def k_inplace(X):
    i = dg.global_id(0)
    if i < len(X):
        X[i] = X[i] * X[i]
        X[i] = math.sin(X[i]) + X[i]
        X[i] *= 2.0


@dg.kernel
def k_loop_runtime(X, W, Y, n):
    i = dg.global_id(0)
    if i < len(X):
        acc = X[i]
        for j in range(n):
            acc = acc * W[j] + math.sin(acc)
        Y[i] = acc


@dg.kernel
def k_loop_overwrite(X, W, n):
    i = dg.global_id(0)
    if i < len(X):
        for j in range(n):
            X[i] = math.tanh(X[i] * W[j]) + W[j]


@dg.kernel
def k_loop_step(X, Y, n):
    i = dg.global_id(0)
    if i < len(X):
        s = 0.0
        for j in range(1, n, 2):
            s += X[j] * X[i] * j
        Y[i] = s


@dg.kernel
def k_nested_loops(X, Y, n):
    i = dg.global_id(0)
    if i < len(X):
        s = 0.0
        for j in range(n):
            for k in range(j + 1):
                s = s + X[k] * X[j] * math.cos(s)
        Y[i] = s * X[i]


@dg.kernel
def k_while(X, Y):
    i = dg.global_id(0)
    if i < len(X):
        a = X[i]
        k = 0
        while a < 10.0:
            a = a * X[i] + 1.0
            k += 1
        Y[i] = a + k


@dg.kernel
def k_while_memory(X, Y):
    i = dg.global_id(0)
    if i < len(X):
        while Y[i] < 5.0:
            Y[i] = Y[i] * 1.5 + X[i]


@dg.kernel
def k_branches(X, Y):
    i = dg.global_id(0)
    if i < len(X):
        x = X[i]
        if x > 0.5:
            Y[i] = x * x
        elif x > -0.5:
            Y[i] = math.sin(x) * Y[i]
        else:
            Y[i] = -x * Y[i]


@dg.kernel
def k_ternary(X, Y):
    i = dg.global_id(0)
    if i < len(X):
        x = X[i]
        Y[i] = x * x if x > 0.0 else math.exp(x)


@dg.kernel
def k_branch_in_loop(X, Y, n):
    i = dg.global_id(0)
    if i < len(X):
        acc = X[i]
        for j in range(n):
            if acc > 0.0:
                acc = acc * 0.5 - X[j]
            else:
                acc = acc * acc + X[j]
        Y[i] = acc


@dg.kernel
def k_call_func(X, Y, Z):
    i = dg.global_id(0)
    if i < len(X):
        Z[i] = poly(X[i], Y[i]) + clipped(X[i] * 2.0)


@dg.kernel
def k_square_first(A):
    A[0] *= A[0]


@dg.kernel
def k_call_kernel(A, B):
    k_square_first(A)
    k_square_first(A)
    B[0] = A[0] + B[0]


@dg.kernel
def k_gather(X, idx, Y):
    i = dg.global_id(0)
    if i < len(Y):
        Y[i] = X[idx[i]] * X[idx[i]] + X[i]


@dg.kernel
def k_scatter_atomic(X, idx, Y):
    i = dg.global_id(0)
    if i < len(X):
        dg.atomic_add(Y, idx[i], X[i] * X[i])


@dg.kernel
def k_matvec(M, x, y):
    i = dg.global_id(0)
    if i < M.shape[0]:
        s = 0.0
        for j in range(M.shape[1]):
            s += M[i, j] * x[j]
        y[i] = math.tanh(s)


@dg.kernel
def k_softmax_rows(M, P):
    i = dg.global_id(0)
    if i < M.shape[0]:
        m = M[i, 0]
        for j in range(1, M.shape[1]):
            m = max(m, M[i, j])
        s = 0.0
        for j in range(M.shape[1]):
            s += math.exp(M[i, j] - m)
        for j in range(M.shape[1]):
            P[i, j] = math.exp(M[i, j] - m) / s


@dg.kernel
def k_2d_inplace(M):
    i = dg.global_id(0)
    if i < M.shape[0]:
        for j in range(1, M.shape[1]):
            M[i, j] = M[i, j] * M[i, j - 1] + 0.5


@dg.kernel
def k_3d(T, Y):
    i = dg.global_id(0)
    if i < T.shape[0]:
        s = 0.0
        for j in range(T.shape[1]):
            for k in range(T.shape[2]):
                s += T[i, j, k] * T[i, j, k] * (j + 1)
        Y[i] = math.sqrt(s)


@dg.kernel
def k_reverse_range(X, Y):
    i = dg.global_id(0)
    if i < len(X):
        s = 0.0
        for j in range(len(X) - 1, -1, -1):
            s = s * 0.5 + X[j] * X[i]
        Y[i] = s


@dg.kernel
def k_int_mix(X, Y, n):
    i = dg.global_id(0)
    if i < len(X):
        k = i % 3
        f = float(k) + n // 2
        Y[i] = X[i] * f + math.floor(X[i]) + X[(i + 1) % len(X)]


@dg.kernel
def k_early_return(X, Y, lim):
    i = dg.global_id(0)
    if i >= lim:
        return
    Y[i] = X[i] * X[i] * X[i]


@dg.kernel
def k_2d_grid(M, Y):
    i = dg.block_id(0)
    j = dg.thread_id(0)
    if i < M.shape[0] and j < M.shape[1]:
        dg.atomic_add(Y, i, M[i, j] * math.exp(-M[i, j]))


@dg.kernel
def k_expm_log1p(X, Y):
    i = dg.global_id(0)
    if i < len(X):
        Y[i] = math.expm1(X[i]) * math.log1p(X[i] * X[i]) + math.log2(2.0 + X[i]) + math.log10(3.0 + X[i])


@dg.kernel
def k_trig(X, Y):
    i = dg.global_id(0)
    if i < len(X):
        Y[i] = math.tan(X[i] * 0.5) + math.cos(X[i]) * math.sinh(X[i])


@dg.func
def energy(x, y):
    return x * x * y + math.exp(x - y)


@dg.kernel
def k_inner_autodiff(X, Y, G):
    i = dg.global_id(0)
    if i < len(X):
        gx, gy = dg.autodiff(energy, dg.Active(X[i]), dg.Active(Y[i]))
        G[i] = gx * gx + gy


@dg.kernel
def k_inner_fwddiff(X, G):
    i = dg.global_id(0)
    if i < len(X):
        G[i] = dg.fwddiff(energy, dg.Duplicated(X[i], 1.0), dg.Const(0.5))


@dg.kernel
def k_inner_dup_array(A, dA, B):
    i = dg.global_id(0)
    if i == 0:
        dg.autodiff(k_square_first, dg.Duplicated(A, dA))
        B[0] = dA[0] * A[0]


@dg.kernel
def k_break_continue(X, Y, n):
    i = dg.global_id(0)
    if i < len(X):
        acc = X[i]
        for j in range(n):
            if j == 1:
                continue
            acc = acc * 0.9 + X[j] * X[j]
            if acc > 3.0:
                break
        Y[i] = acc


@dg.kernel
def k_while_break(X, Y):
    i = dg.global_id(0)
    if i < len(X):
        a = X[i]
        k = 0
        while True:
            a = math.sin(a) + a * X[i]
            k += 1
            if k >= 4:
                break
        Y[i] = a


@dg.func
def inner_loop(x, n):
    s = x
    for j in range(n):
        s = s * x + 0.1 * j
    return s


@dg.func
def outer_call(x, y, n):
    return inner_loop(x, n) * y + inner_loop(y, 2)


@dg.kernel
def k_nested_calls(X, Y, Z, n):
    i = dg.global_id(0)
    if i < len(X):
        Z[i] = outer_call(X[i], Y[i], n)


@dg.func
def write_twice(A, i, x):
    A[i] = A[i] * x
    A[i] = A[i] + x * x


@dg.kernel
def k_call_writes(A, X):
    i = dg.global_id(0)
    if i < len(A):
        write_twice(A, i, X[i])
        write_twice(A, i, A[i])


@dg.kernel
def k_int_output(X, C, Y):
    i = dg.global_id(0)
    if i < len(X):
        C[i] = int(X[i] * 10.0)
        Y[i] = X[i] * C[i]


@dg.kernel
def k_shared_tile(X, Y):
    tile = dg.shared_array(4, np.float64)
    t = dg.thread_id(0)
    i = dg.global_id(0)
    tile[t] = X[i] * X[i]
    dg.syncthreads()
    Y[i] = tile[3 - t] * X[i] + math.sin(tile[(t + 1) % 4])


@dg.kernel
def k_shared_accumulate(X, Y):
    acc = dg.shared_array((2, 4), np.float64)
    t = dg.thread_id(0)
    i = dg.global_id(0)
    acc[0, t] = X[i]
    acc[1, t] = 0.0
    dg.syncthreads()
    dg.atomic_add(acc, (1, 0), acc[0, t] * acc[0, t])
    dg.syncthreads()
    Y[i] = acc[1, 0] * X[i]

"""Corpus kernels (registered in kernels_corpus.CASES): conditions (chained
comparisons, and/or, short-circuit guards, if/elif/else, conditional
expressions, branch type promotion) and loops (2-D row sums, range with
start/stop/step, negative and runtime steps, while, break/continue, the loop
variable after the loop, matmul, augmented assignment, 3-D arrays)."""
from __future__ import annotations

import numpy as np

import diffgpu as dg
from corpus_base import GRID, ITERS, N, case, rand, x_y, zeros


# --- conditions -------------------------------------------------------------
@case(x_y(0.0, 1.0), lambda x, y: y.__setitem__(slice(None), ((0.2 < x) & (x < 0.7)) * 1.0))
@dg.kernel
def chained_compare(x, y):
    i = dg.global_id(0)
    if i < len(x):
        y[i] = 1.0 if 0.2 < x[i] < 0.7 else 0.0


def _boolops_ref(x, y):
    c = ((x > 0.5) & (x < 0.9)) | ~(x > -0.8)
    y[:] = np.where(c, 1.0, 2.0)


@case(x_y(), _boolops_ref)
@dg.kernel
def bool_ops(x, y):
    i = dg.global_id(0)
    if i < len(x):
        if x[i] > 0.5 and x[i] < 0.9 or not x[i] > -0.8:
            y[i] = 1.0
        else:
            y[i] = 2.0


def _short_ref(x, y, n):
    y[:n] = np.where(x[:n] > 0, x[:n], 0)


@case(lambda dt, xp: [rand(dt, xp, N), zeros(dt, xp, N), N], _short_ref, grid=GRID + 2)
@dg.kernel
def short_circuit_guard(x, y, n):
    i = dg.global_id(0)
    if i < n and x[i] > 0:  # x[i] is never read out of bounds
        y[i] = x[i]


def _piecewise_ref(x, y):
    y[:] = np.where(x < -0.5, -1.0, np.where(x < 0, x * 2, np.where(x < 0.5, x, 0.5)))


@case(x_y(), _piecewise_ref)
@dg.kernel
def if_elif_else(x, y):
    i = dg.global_id(0)
    if i < len(x):
        v = x[i]
        if v < -0.5:
            r = -1.0
        elif v < 0:
            r = v * 2
        elif v < 0.5:
            r = v
        else:
            r = 0.5
        y[i] = r


@case(x_y(), lambda x, y: y.__setitem__(slice(None), np.where(x > 0.1, x, -x * 3)))
@dg.kernel
def conditional_expression(x, y):
    i = dg.global_id(0)
    if i < len(x):
        y[i] = x[i] if x[i] > 0.1 else -x[i] * 3


@case(x_y(), lambda x, y: y.__setitem__(slice(None), np.where(x > 0, x + 1.0, 0.0)))
@dg.kernel
def branch_type_promotion(x, y):
    i = dg.global_id(0)
    if i < len(x):
        s = 0  # an int, promoted to float by the branch
        if x[i] > 0:
            s = x[i] + 1.0
        y[i] = s


# --- loops -------------------------------------------------------------------
@case(lambda dt, xp: [rand(dt, xp, N, 5), zeros(dt, xp, N)],
      lambda a, y: y.__setitem__(slice(None), a.sum(axis=1)))
@dg.kernel
def row_sums(A, y):
    i = dg.global_id(0)
    if i < A.shape[0]:
        acc = 0  # weak int: becomes the array's float type
        for j in range(A.shape[1]):
            acc += A[i, j]
        y[i] = acc


def _stepped_ref(x, y):
    y[:] = x[1::2].sum() + 0 * x


@case(x_y(), _stepped_ref)
@dg.kernel
def range_start_stop_step(x, y):
    i = dg.global_id(0)
    if i < len(x):
        s = 0.0
        for k in range(1, len(x), 2):
            s += x[k]
        y[i] = s


def _rev_ref(x, y):
    acc = np.zeros((), dtype=np.float64)
    for k in range(N - 1, -1, -1):
        acc = acc * 0.5 + x[k]
    y[:] = acc


@case(x_y(), _rev_ref)
@dg.kernel
def negative_step(x, y):
    i = dg.global_id(0)
    if i < len(x):
        acc = 0.0
        for k in range(len(x) - 1, -1, -1):
            acc = acc * 0.5 + x[k]
        y[i] = acc


def _runtime_step_ref(x, y, step):
    y[:] = x[N - 1:0:step].sum() + x[2:N:-step].sum()


@case(lambda dt, xp: [rand(dt, xp, N), zeros(dt, xp, N), -3], _runtime_step_ref)
@dg.kernel
def runtime_step(x, y, step):
    i = dg.global_id(0)
    if i < len(x):
        s = 0.0
        for k in range(len(x) - 1, 0, step):
            s += x[k]
        for k in range(2, len(x), -step):
            s += x[k]
        y[i] = s


def _while_ref(x, y):
    out = []
    for v in x.astype(np.float64):
        v, c = abs(v) * 100, 0
        while v > 1:
            v = v / 2
            c += 1
        out.append(c)
    y[:] = out


@case(x_y(), _while_ref)
@dg.kernel
def while_loop(x, y):
    i = dg.global_id(0)
    if i < len(x):
        v = abs(x[i]) * 100
        c = 0
        while v > 1:
            v = v / 2
            c += 1
        y[i] = c


@case(x_y(), lambda x, y: y.__setitem__(slice(None), (ITERS - 1) * 10.0 + x))
@dg.kernel
def loop_var_survives(x, y):
    i = dg.global_id(0)
    if i < len(x):
        for k in range(ITERS):
            pass
        y[i] = k * 10.0 + x[i]


@case(lambda dt, xp: [rand(dt, xp, 9, 7), rand(dt, xp, 7, 5, seed=3), zeros(dt, xp, 9, 5)],
      lambda a, b, c: c.__setitem__(slice(None), a @ b), grid=(2, 2), block=(8, 4))
@dg.kernel
def matmul(A, B, C):
    i = dg.global_id(0)
    j = dg.global_id(1)
    if i < C.shape[0] and j < C.shape[1]:
        acc = 0.0
        for k in range(A.shape[1]):
            acc += A[i, k] * B[k, j]
        C[i, j] = acc


@case(lambda dt, xp: [rand(dt, xp, 6, 10), rand(dt, xp, 6, 10, seed=5)],
      lambda a, b: a.__iadd__(b * 2), grid=(1, 2), block=(8, 8))
@dg.kernel
def augassign_2d(A, B):
    i, j = dg.global_id(0), dg.global_id(1)
    if i < A.shape[0] and j < A.shape[1]:
        A[i, j] += B[i, j] * 2


def _aug_ops_ref(x, y):
    v = x.copy()
    v -= 1
    v *= 3
    v /= 2
    y[:] = v
    y += 0.5


@case(x_y(), _aug_ops_ref)
@dg.kernel
def augmented_ops(x, y):
    i = dg.global_id(0)
    if i < len(x):
        v = x[i]
        v -= 1
        v *= 3
        v /= 2
        y[i] = v
        y[i] += 0.5


@case(lambda dt, xp: [rand(dt, xp, 4, 3, 5), zeros(dt, xp, 4, 3, 5)],
      lambda a, b: b.__setitem__(slice(None), a * 2 + np.arange(5)), grid=(1, 1, 1),
      block=(4, 3, 5))
@dg.kernel
def three_d(A, B):
    i, j, k = dg.thread_id(0), dg.thread_id(1), dg.thread_id(2)
    B[i, j, k] = A[i, j, k] * 2 + k


def _break_continue_ref(x, y):
    for i in range(N):
        total, count = 0.0, 0
        for k in range(N):
            if x[k] < 0:
                continue
            if count == 3:
                break
            total += x[k] * (i + 1)
            count += 1
        y[i] = total


@case(x_y(), _break_continue_ref)
@dg.kernel
def for_break_continue(x, y):
    i = dg.global_id(0)
    if i < len(x):
        total = 0.0
        count = 0
        for k in range(len(x)):
            if x[k] < 0:
                continue
            if count == 3:
                break
            total += x[k] * (i + 1)
            count += 1
        y[i] = total


def _while_break_ref(x, y):
    for i in range(N):
        j = i
        while True:
            if x[j] > 0.5 or j == 0:
                break
            j -= 1
        y[i] = j + x[j]


@case(x_y(), _while_break_ref)
@dg.kernel
def while_true_break(x, y):
    i = dg.global_id(0)
    if i < len(x):
        j = i
        while True:
            if x[j] > 0.5 or j == 0:
                break
            j -= 1
        y[i] = j + x[j]

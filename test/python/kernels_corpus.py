"""A corpus of kernels covering the frontend's Python, with numpy references.

`CASES` is a list of `Case`: kernel, `make(dtype, xp)` building the launch
arguments (numpy or CuPy via `xp`), grid, block, and `ref(*args)` which
updates numpy copies of the arguments in place to the expected result. Used
by test_corpus.py on the CPU and importable by a GPU check script:

    for case in CASES:
        args = case.make(np.float32, cupy)
        case.kernel[case.grid, case.block](*args)
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

import diffgpu as dg

N = 37
BLOCK = 16
GRID = (N + BLOCK - 1) // BLOCK
SCALE = 3.0
ITERS = 4
TILE = 16


@dataclass
class Case:
    name: str
    kernel: object
    make: Callable  # (dtype, xp) -> list of launch arguments
    ref: Callable  # (*numpy args) -> None, updates the arrays in place
    grid: object = GRID
    block: object = BLOCK
    needs_autodiff: bool = False


CASES: list[Case] = []


def case(make, ref, grid=GRID, block=BLOCK, needs_autodiff=False):
    def deco(kernel):
        CASES.append(Case(kernel.name, kernel, make, ref, grid, block, needs_autodiff))
        return kernel
    return deco


def rand(dtype, xp, *shape, lo=-1.0, hi=1.0, seed=0):
    rng = np.random.default_rng(seed * 100 + len(shape) * 7 + int(lo * 10) + 50)
    return xp.asarray(rng.uniform(lo, hi, shape).astype(dtype))


def grid_vals(dtype, xp, n=N, lo=-2.0):
    """Values away from integer/threshold boundaries: lo + k/4 + 0.03."""
    return xp.asarray((lo + np.arange(n) / 4 + 0.03).astype(dtype))


def zeros(dtype, xp, *shape):
    return xp.zeros(shape, dtype)


def x_y(lo=-1.0, hi=1.0):
    return lambda dt, xp: [rand(dt, xp, N, lo=lo, hi=hi), zeros(dt, xp, N)]


@dg.func
def square(x):
    return x * x


@dg.func
def cube(x):
    return x * square(x)


@dg.func
def clamp01(x):
    if x < 0:
        return 0.0
    if x > 1:
        return 1.0
    return x


@dg.func
def split(x):
    """Tuple result: (integer part, fractional part) as floats."""
    k = math.floor(x)
    return float(k), x - k


# --- arithmetic and typing --------------------------------------------------
@case(lambda dt, xp: [2.5, rand(dt, xp, N), rand(dt, xp, N, seed=1)],
      lambda a, x, y: y.__setitem__(slice(None), a * x + y))
@dg.kernel
def saxpy(a, x, y):
    i = dg.global_id(0)
    if i >= len(x):
        return
    y[i] = a * x[i] + y[i]


@case(x_y(), lambda x, y: y.__setitem__(slice(None), 2.0 * x + 1))
@dg.kernel
def weak_literals(x, y):
    i = dg.global_id(0)
    if i < x.shape[0]:
        y[i] = 2.0 * x[i] + 1


@case(x_y(), lambda x, y: y.__setitem__(slice(None), abs(-x) - (+x)))
@dg.kernel
def unary_abs(x, y):
    i = dg.global_id(0)
    if i < len(x):
        y[i] = abs(-x[i]) - (+x[i])


@case(lambda dt, xp: [grid_vals(dt, xp), zeros(dt, xp, N)],
      lambda x, y: y.__setitem__(slice(None), x // 0.7 + x % 0.7 - x / 4))
@dg.kernel
def float_floordiv_mod(x, y):
    i = dg.global_id(0)
    if i < len(x):
        y[i] = x[i] // 0.7 + x[i] % 0.7 - x[i] / 4


def _int_div_ref(y):
    i = np.arange(N)
    y[:] = (i - 5) // 3 + (i - 5) % 3 * 10 + (7 - i) // -2 + i / 4 + (i - 9) % -4 * 100


@case(lambda dt, xp: [zeros(dt, xp, N)], _int_div_ref)
@dg.kernel
def int_floordiv_mod(y):
    i = dg.global_id(0)
    if i < len(y):
        y[i] = (i - 5) // 3 + (i - 5) % 3 * 10 + (7 - i) // -2 + i / 4 + (i - 9) % -4 * 100


@case(x_y(0.1, 2.0), lambda x, y: y.__setitem__(slice(None), x ** 2 + x ** 3 - x ** 0.5 + x ** 0))
@dg.kernel
def powers(x, y):
    i = dg.global_id(0)
    if i < len(x):
        y[i] = x[i] ** 2 + x[i] ** 3 - x[i] ** 0.5 + x[i] ** 0


def _bits_ref(a, b):
    i = np.arange(N, dtype=np.int64)
    b[:] = ((i & 5) | (i << 2)) ^ (i >> 1) + (~i) * 0


@case(lambda dt, xp: [zeros(dt, xp, N), xp.zeros(N, np.int64)], _bits_ref)
@dg.kernel
def bitwise(a, b):
    i = dg.global_id(0)
    if i < len(b):
        b[i] = ((i & 5) | (i << 2)) ^ (i >> 1) + (~i) * 0


def _int32_ref(x, a, b):
    b[:] = a * 3 + (a // 2) - 1
    x[:] = a.astype(x.dtype) * 0.5


@case(lambda dt, xp: [zeros(dt, xp, N), xp.asarray(np.arange(N, dtype=np.int32) - 10),
                      xp.zeros(N, np.int32)], _int32_ref)
@dg.kernel
def int32_data(x, a, b):
    i = dg.global_id(0)
    if i < len(a):
        b[i] = a[i] * 3 + (a[i] // 2) - 1
        x[i] = a[i] * 0.5


def _casts_ref(x, y):
    y[:] = np.trunc(x * 10).astype(np.int64) + np.arange(N) * 0.25


@case(x_y(-3.0, 3.0), _casts_ref)
@dg.kernel
def int_float_casts(x, y):
    i = dg.global_id(0)
    if i < len(x):
        y[i] = int(x[i] * 10) + float(i) * 0.25


def _int_arrays_div_ref(y, a, b, q, r):
    q[:] = a // b
    r[:] = a % b
    y[:] = q + r * 0.5


@case(lambda dt, xp: [zeros(dt, xp, 6), xp.asarray(np.array([7, -7, 7, -7, 5, 9], np.int64)),
                      xp.asarray(np.array([2, 2, -2, -2, -1, -1], np.int64)),
                      xp.zeros(6, np.int64), xp.zeros(6, np.int64)], _int_arrays_div_ref)
@dg.kernel
def int_runtime_division(y, a, b, q, r):
    i = dg.global_id(0)
    if i < len(a):
        q[i] = a[i] // b[i]
        r[i] = a[i] % b[i]
        y[i] = q[i] + r[i] * 0.5


# --- math ---------------------------------------------------------------------
def _exp_log_ref(x, y):
    y[:] = np.exp(x) + np.log(x + 2) + np.log1p(x) + np.expm1(x) + np.sqrt(x + 1)


@case(x_y(0.0, 1.0), _exp_log_ref)
@dg.kernel
def math_exp_log(x, y):
    i = dg.global_id(0)
    if i < len(x):
        v = x[i]
        y[i] = dg.exp(v) + math.log(v + 2) + dg.log1p(v) + math.expm1(v) + math.sqrt(v + 1)


def _trig_ref(x, y):
    y[:] = np.sin(x) + np.cos(x) * np.tan(x) - np.tanh(x) + np.sinh(x) * np.cosh(x)


@case(x_y(), _trig_ref)
@dg.kernel
def math_trig(x, y):
    i = dg.global_id(0)
    if i < len(x):
        v = x[i]
        y[i] = math.sin(v) + dg.cos(v) * dg.tan(v) - math.tanh(v) + dg.sinh(v) * math.cosh(v)


def _misc_ref(x, y):
    from math import erf
    e = np.vectorize(erf)(x.astype(np.float64))
    y[:] = (1 / np.sqrt(x + 2) + e + np.arctan2(x, 0.5) + np.power(x + 2, 1.5)
            + np.fabs(x) + np.floor(x * 3) + np.ceil(x * 3) + (x * 2 + 1))


@case(x_y(), _misc_ref)
@dg.kernel
def math_misc(x, y):
    i = dg.global_id(0)
    if i < len(x):
        v = x[i]
        y[i] = (dg.rsqrt(v + 2) + dg.erf(v) + math.atan2(v, 0.5) + dg.pow(v + 2, 1.5)
                + math.fabs(v) + dg.floor(v * 3) + dg.ceil(v * 3) + dg.fma(v, 2.0, 1.0))


def _pyfloor_ref(x, y):
    y[:] = np.floor(x * 3).astype(np.int64) % 4 + np.ceil(x).astype(np.int64)


@case(lambda dt, xp: [grid_vals(dt, xp), zeros(dt, xp, N)], _pyfloor_ref)
@dg.kernel
def python_math_int_results(x, y):
    i = dg.global_id(0)
    if i < len(x):
        k = math.floor(x[i] * 3)  # an int, as in Python
        y[i] = k % 4 + math.ceil(x[i])


def _minmax_ref(x, y):
    y[:] = np.maximum(np.maximum(x, 0.25), -x) + np.minimum(np.minimum(x, 0.5), x * x)


@case(x_y(), _minmax_ref)
@dg.kernel
def min_max(x, y):
    i = dg.global_id(0)
    if i < len(x):
        y[i] = max(x[i], 0.25, -x[i]) + min(x[i], 0.5, x[i] * x[i])


def _builtins_extra_ref(x, m, y):
    y[:] = m[:, 1] + np.round(x * 3) + x ** 2 + np.isnan(x) + np.isinf(x) * 10 + np.isfinite(x) * 100


@case(lambda dt, xp: [grid_vals(dt, xp), rand(dt, xp, N, 2), zeros(dt, xp, N)],
      _builtins_extra_ref)
@dg.kernel
def builtins_extra(x, m, y):
    i = dg.global_id(0)
    if i < len(x):
        idx = (i, 1)  # a tuple variable as an index
        v = x[i]
        y[i] = m[idx] + round(v * 3) + pow(v, 2) + math.isnan(v) + math.isinf(v) * 10 \
            + math.isfinite(v) * 100


def _numpy_fns_ref(x, y, n):
    y[:] = (np.exp(x) + np.sqrt(np.abs(x)) + np.maximum(x, 0.1) + np.floor(x * 2)
            + np.float32(1.5) * x + np.trunc(x * 3) + n ** -1.0 + np.arctan2(x, 2.0))


@case(lambda dt, xp: [grid_vals(dt, xp, lo=-1.0), zeros(dt, xp, N), 4], _numpy_fns_ref)
@dg.kernel
def numpy_functions(x, y, n):
    i = dg.global_id(0)
    if i < len(x):
        v = x[i]
        y[i] = (np.exp(v) + np.sqrt(np.abs(v)) + np.maximum(v, 0.1) + np.floor(v * 2)
                + np.float32(1.5) * v + np.int64(v * 3) + n ** -1 + np.arctan2(v, 2.0))


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


# --- functions -----------------------------------------------------------------
@case(x_y(-0.5, 1.5), lambda x, y: y.__setitem__(slice(None), np.clip(x, 0, 1) + x ** 3))
@dg.kernel
def func_early_returns(x, y):
    i = dg.global_id(0)
    if i < len(x):
        y[i] = clamp01(x[i]) + cube(x[i])


def _split_ref(x, y):
    k = np.floor(x)
    y[:] = k * 10 + (x - k)


@case(lambda dt, xp: [grid_vals(dt, xp), zeros(dt, xp, N)], _split_ref)
@dg.kernel
def tuple_return(x, y):
    i = dg.global_id(0)
    if i < len(x):
        whole, frac = split(x[i])
        parts = split(x[i])
        y[i] = whole * 10 + parts[1] + 0 * frac


@dg.kernel
def scale_one(y, i, a):
    y[i] = y[i] * a


@case(x_y(), lambda x, y: y.__setitem__(slice(None), x * SCALE))
@dg.kernel
def kernel_calls_kernel(x, y):
    i = dg.global_id(0)
    if i < len(x):
        y[i] = x[i]
        scale_one(y, i, SCALE)


def _swap_ref(x, y):
    y[:] = x * 2 - 1


@case(x_y(), _swap_ref)
@dg.kernel
def tuple_swap(x, y):
    i = dg.global_id(0)
    if i < len(x):
        a, b = 1, x[i] * 2
        a, b = b, a
        y[i] = a - b


# --- arrays, geometry, GPU features --------------------------------------------
@case(lambda dt, xp: [rand(dt, xp, N), zeros(dt, xp, 3)],
      lambda x, y: y.__setitem__(slice(None), [x[-1], x[len(x) - 2], x.ndim]))
@dg.kernel
def negative_index_and_ndim(x, y):
    if dg.global_id(0) == 0:
        y[0] = x[-1]
        y[1] = x[len(x) - 2]
        y[2] = x.ndim


def _geometry_ref(y):
    i = np.arange(GRID * BLOCK)
    y[:] = i % BLOCK + (i // BLOCK) * 100 + BLOCK * 1000 + GRID * 100000


@case(lambda dt, xp: [zeros(dt, xp, GRID * BLOCK)], _geometry_ref)
@dg.kernel
def geometry(y):
    i = dg.global_id(0)
    y[i] = dg.thread_id(0) + dg.block_id(0) * 100 + dg.block_dim(0) * 1000 \
        + dg.grid_dim(0) * 100000


@case(lambda dt, xp: [rand(dt, xp, 5, 12), zeros(dt, xp, 5, 12)],
      lambda a, b: b.__setitem__(slice(None), a + 1),
      grid=(2, 3), block=(4, 4))
@dg.kernel
def grid_2d(A, B):
    i, j = dg.global_id(0), dg.global_id(1)
    if i < A.shape[0]:
        if j < A.shape[1]:
            B[i, j] = A[i, j] + 1


def _shared_ref(x, y):
    for b in range(0, N + 15, TILE):
        blk = x[b:b + TILE]
        y[b:b + len(blk)] = blk[::-1] if len(blk) == TILE else y[b:b + len(blk)]


@case(lambda dt, xp: [rand(dt, xp, N), zeros(dt, xp, N)], _shared_ref, block=TILE)
@dg.kernel
def shared_reverse(x, y):
    tile = dg.shared_array(TILE, np.float64)
    t = dg.thread_id(0)
    i = dg.global_id(0)
    full = (dg.block_id(0) + 1) * TILE <= len(x)
    if full:
        tile[t] = x[i]
    dg.syncthreads()
    if full:
        y[i] = tile[TILE - 1 - t]


@case(lambda dt, xp: [rand(dt, xp, N), zeros(dt, xp, 1)],
      lambda x, out: out.__setitem__(0, x.sum()))
@dg.kernel
def atomic_sum(x, out):
    i = dg.global_id(0)
    if i < len(x):
        dg.atomic_add(out, 0, x[i])


def _hist_ref(x, h):
    for v in x.astype(np.float64):
        h[0, min(int((v + 1) * 2), 3)] += 1


@case(lambda dt, xp: [rand(dt, xp, N), zeros(dt, xp, 1, 4)], _hist_ref)
@dg.kernel
def atomic_histogram(x, h):
    i = dg.global_id(0)
    if i < len(x):
        b = min(int((x[i] + 1) * 2), 3)
        old = dg.atomic_add(h, (0, b), 1)


@case(lambda dt, xp: [rand(dt, xp, 2 * N)[::2], zeros(dt, xp, N)],
      lambda x, y: y.__setitem__(slice(None), x * 3))
@dg.kernel
def strided_view(x, y):
    i = dg.global_id(0)
    if i < len(x):
        y[i] = x[i] * 3


@case(lambda dt, xp: [rand(dt, xp, N), zeros(dt, xp, N)],
      lambda x, y: y.__setitem__(slice(None), x * SCALE * ITERS))
@dg.kernel
def module_constants(x, y):
    i = dg.global_id(0)
    if i < len(x):
        acc = 0.0
        for _ in range(ITERS):
            acc += x[i] * SCALE
        y[i] = acc


# --- differentiation inside kernels ------------------------------------------------
@case(x_y(), lambda x, y: y.__setitem__(slice(None), 2 * x + 2 * 2 * x), needs_autodiff=True)
@dg.kernel
def autodiff_active(x, y):
    i = dg.global_id(0)
    if i < len(x):
        (g,) = dg.autodiff(square, dg.Active(x[i]))
        gs = dg.autodiff(square, dg.Active(x[i]), seed=2.0)
        y[i] = g + gs[0]


@case(x_y(), lambda x, y: y.__setitem__(slice(None), 3 * x * x), needs_autodiff=True)
@dg.kernel
def fwddiff_tangent(x, y):
    i = dg.global_id(0)
    if i < len(x):
        y[i] = dg.fwddiff(cube, dg.Duplicated(x[i], 1.0))


@dg.kernel
def self_square(A):
    A[0] *= A[0]


def _seed_ref(A, dA):
    dA[:] = 2 * A * dA  # d(a*a)/da with a cached before the overwrite
    A[:] = A * A  # the primal runs too


@case(lambda dt, xp: [xp.asarray(np.array([3.0], dt)), xp.asarray(np.array([1.0], dt))],
      _seed_ref, grid=1, block=1, needs_autodiff=True)
@dg.kernel
def seed_case(A, dA):
    dg.autodiff(self_square, dg.Duplicated(A, dA))

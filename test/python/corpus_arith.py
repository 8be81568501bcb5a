"""Corpus kernels (registered in kernels_corpus.CASES): arithmetic and
typing (weak literals, floor division and modulo of floats and integers,
powers, bit operations, int32 data, casts) and math (exp/log, trig, min/max,
Python builtins and numpy functions)."""
from __future__ import annotations

import math

import numpy as np

import diffgpu as dg
from corpus_base import N, case, grid_vals, rand, x_y, zeros


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

"""Corpus kernels (registered in kernels_corpus.CASES): device functions
(early returns, tuple results, a kernel calling a kernel, tuple swaps),
arrays and GPU features (negative indices, geometry, 2-D grids, shared
memory with a barrier, atomics, strided views, module constants) and
differentiation inside kernels (dg.autodiff / dg.fwddiff of a device
function, the seed case)."""
from __future__ import annotations

import math

import numpy as np

import diffgpu as dg
from corpus_base import BLOCK, GRID, ITERS, N, SCALE, TILE, case, grid_vals, rand, x_y, zeros


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

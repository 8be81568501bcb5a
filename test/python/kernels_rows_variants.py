"""Variants of kernels_rows_fast.py's row programs (rows of COLS = 1024),
benchmarked against them in bench/peer_rows.py and tested in
test/python/lowering/autodiff/test_rows_variants.py:

    softmax_v8[v8_launch(R)](Y, X)          128 threads per row, 8 columns each
    softmax_r2[r2_launch(R)](Y, X)          256 threads, 2 rows per block (a loop)
    layernorm_r8[ln_launch(R, 8)](Y, X, g, b)     8 rows per block
    layernorm_r16[ln_launch(R, 16)](Y, X, g, b)  16 rows per block (forward only)

Every access is at (rows * gid(1) + k, gid(0) + THREADS * m): one thread's
element, so dg.vjp writes dX once with plain stores from registers. The
layer norms read g and b once per thread and block; the reverse sums their
adjoints over the block's rows in registers, so dg and db take R / 8 or
R / 16 adds per address instead of R / 4 (layernorm_fast_rows). The
derivative unrolls the row loops (softmax_r2's and layernorm_r8's; not
layernorm_r16's, see there).
"""
import diffgpu as dg

from kernels_rows_fast import COLS, EPS, THREADS

#: softmax_v8's threads per row (8 columns each)
V8_THREADS = 128
#: softmax_r2's rows per block
R2_ROWS = 2
#: layernorm_r8's rows per block
R8_ROWS = 8


def v8_launch(R):
    return (1, R), (V8_THREADS, 1)


def r2_launch(R):
    """R a multiple of R2_ROWS."""
    return (1, R // R2_ROWS), (THREADS, 1)


def ln_launch(R, rows):
    """(grid, block) of layernorm_r8 (rows 8) / layernorm_r16 (rows 16); R a
    multiple of rows."""
    return (1, R // rows), (THREADS, 1)


@dg.kernel
def softmax_v8(Y, X):
    r = dg.global_id(1)
    j = dg.global_id(0)
    x0 = X[r, j]
    x1 = X[r, j + V8_THREADS]
    x2 = X[r, j + 2 * V8_THREADS]
    x3 = X[r, j + 3 * V8_THREADS]
    x4 = X[r, j + 4 * V8_THREADS]
    x5 = X[r, j + 5 * V8_THREADS]
    x6 = X[r, j + 6 * V8_THREADS]
    x7 = X[r, j + 7 * V8_THREADS]
    m = dg.stop_gradient(dg.block_max(max(max(max(x0, x1), max(x2, x3)),
                                          max(max(x4, x5), max(x6, x7)))))
    e0 = dg.exp(x0 - m)
    e1 = dg.exp(x1 - m)
    e2 = dg.exp(x2 - m)
    e3 = dg.exp(x3 - m)
    e4 = dg.exp(x4 - m)
    e5 = dg.exp(x5 - m)
    e6 = dg.exp(x6 - m)
    e7 = dg.exp(x7 - m)
    inv = 1.0 / dg.block_sum(((e0 + e1) + (e2 + e3)) + ((e4 + e5) + (e6 + e7)))
    Y[r, j] = e0 * inv
    Y[r, j + V8_THREADS] = e1 * inv
    Y[r, j + 2 * V8_THREADS] = e2 * inv
    Y[r, j + 3 * V8_THREADS] = e3 * inv
    Y[r, j + 4 * V8_THREADS] = e4 * inv
    Y[r, j + 5 * V8_THREADS] = e5 * inv
    Y[r, j + 6 * V8_THREADS] = e6 * inv
    Y[r, j + 7 * V8_THREADS] = e7 * inv


@dg.kernel
def layernorm_v8(Y, X, g, b):
    """kernels_rows_fast.layernorm_fast with 128 threads per row, 8 columns per
    thread (softmax_v8's shape): one row per block; dg.vjp's reverse runs R
    rows per block (lowering/coarsen/rows.py)."""
    r = dg.global_id(1)
    j = dg.global_id(0)
    x0 = X[r, j]
    x1 = X[r, j + V8_THREADS]
    x2 = X[r, j + 2 * V8_THREADS]
    x3 = X[r, j + 3 * V8_THREADS]
    x4 = X[r, j + 4 * V8_THREADS]
    x5 = X[r, j + 5 * V8_THREADS]
    x6 = X[r, j + 6 * V8_THREADS]
    x7 = X[r, j + 7 * V8_THREADS]
    mean = dg.block_sum(((x0 + x1) + (x2 + x3)) + ((x4 + x5) + (x6 + x7))) / COLS
    d0 = x0 - mean
    d1 = x1 - mean
    d2 = x2 - mean
    d3 = x3 - mean
    d4 = x4 - mean
    d5 = x5 - mean
    d6 = x6 - mean
    d7 = x7 - mean
    inv = dg.rsqrt(dg.block_sum(((d0 * d0 + d1 * d1) + (d2 * d2 + d3 * d3))
                                + ((d4 * d4 + d5 * d5) + (d6 * d6 + d7 * d7))) / COLS + EPS)
    Y[r, j] = d0 * inv * g[j] + b[j]
    Y[r, j + V8_THREADS] = d1 * inv * g[j + V8_THREADS] + b[j + V8_THREADS]
    Y[r, j + 2 * V8_THREADS] = d2 * inv * g[j + 2 * V8_THREADS] + b[j + 2 * V8_THREADS]
    Y[r, j + 3 * V8_THREADS] = d3 * inv * g[j + 3 * V8_THREADS] + b[j + 3 * V8_THREADS]
    Y[r, j + 4 * V8_THREADS] = d4 * inv * g[j + 4 * V8_THREADS] + b[j + 4 * V8_THREADS]
    Y[r, j + 5 * V8_THREADS] = d5 * inv * g[j + 5 * V8_THREADS] + b[j + 5 * V8_THREADS]
    Y[r, j + 6 * V8_THREADS] = d6 * inv * g[j + 6 * V8_THREADS] + b[j + 6 * V8_THREADS]
    Y[r, j + 7 * V8_THREADS] = d7 * inv * g[j + 7 * V8_THREADS] + b[j + 7 * V8_THREADS]


@dg.kernel
def softmax_r2(Y, X):
    j = dg.global_id(0)
    for k in range(R2_ROWS):
        r = dg.global_id(1) * R2_ROWS + k
        x0 = X[r, j]
        x1 = X[r, j + THREADS]
        x2 = X[r, j + 2 * THREADS]
        x3 = X[r, j + 3 * THREADS]
        m = dg.stop_gradient(dg.block_max(max(max(x0, x1), max(x2, x3))))
        e0 = dg.exp(x0 - m)
        e1 = dg.exp(x1 - m)
        e2 = dg.exp(x2 - m)
        e3 = dg.exp(x3 - m)
        inv = 1.0 / dg.block_sum((e0 + e1) + (e2 + e3))
        Y[r, j] = e0 * inv
        Y[r, j + THREADS] = e1 * inv
        Y[r, j + 2 * THREADS] = e2 * inv
        Y[r, j + 3 * THREADS] = e3 * inv


def _layernorm_rows(rows):
    """kernels_rows_fast.layernorm_fast_rows with `rows` rows per block."""
    def body(Y, X, g, b):
        j = dg.global_id(0)
        g0 = g[j]
        g1 = g[j + THREADS]
        g2 = g[j + 2 * THREADS]
        g3 = g[j + 3 * THREADS]
        b0 = b[j]
        b1 = b[j + THREADS]
        b2 = b[j + 2 * THREADS]
        b3 = b[j + 3 * THREADS]
        for k in range(rows):
            r = dg.global_id(1) * rows + k
            x0 = X[r, j]
            x1 = X[r, j + THREADS]
            x2 = X[r, j + 2 * THREADS]
            x3 = X[r, j + 3 * THREADS]
            mean = dg.block_sum((x0 + x1) + (x2 + x3)) / COLS
            d0 = x0 - mean
            d1 = x1 - mean
            d2 = x2 - mean
            d3 = x3 - mean
            inv = dg.rsqrt(dg.block_sum((d0 * d0 + d1 * d1) + (d2 * d2 + d3 * d3)) / COLS
                           + EPS)
            Y[r, j] = d0 * inv * g0 + b0
            Y[r, j + THREADS] = d1 * inv * g1 + b1
            Y[r, j + 2 * THREADS] = d2 * inv * g2 + b2
            Y[r, j + 3 * THREADS] = d3 * inv * g3 + b3
    body.__name__ = body.__qualname__ = f"layernorm_r{rows}"
    return dg.kernel(body)


layernorm_r8 = _layernorm_rows(R8_ROWS)
#: runs forward, but dg.vjp does not compile it: 16 iterations of the row
#: loop exceed lowering/autodiff/unroll.py's MAX_OPS, the derivative keeps
#: the loop, and X's gradient is no longer at its loads' constant offsets
#: ("argument 1 is 'grad' but its shadow is updated at an index other than
#: its loads'"); not benchmarked
layernorm_r16 = _layernorm_rows(16)

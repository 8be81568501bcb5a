"""Row programs written for speed: a block of THREADS threads per row, each
thread holding PER_THREAD values of its row in registers (columns j,
j + THREADS, j + 2 THREADS, ...), each loaded once; the row's statistics by
block collectives (docs/collectives.md). Defined once: the tests
(test/python/lowering/autodiff/test_rows_fast.py), scripts/gpu_cases/rows_fast.py
and the benchmarks (bench/peer_rows.py) import them.

    grid, block = fast_launch(R)            # (1, R), (THREADS, 1): a block per row
    layernorm_fast[grid, block](Y, X, g, b)   the output first (the form of
    softmax_fast[grid, block](Y, X)           scripts/gpu_check.py's vjp cases)
    layernorm_fast_rows[rows_launch(R)](Y, X, g, b)   ROWS (4) rows per block

X is (R, COLS) float32 or float64, g and b (COLS,). Every access is at
(gid(1), gid(0) + k * THREADS): global ids plus constant offsets that no
two threads of this launch share (the x extent is THREADS), so `dg.vjp`
reads dY once without consuming it and writes dX once per element with a
plain store from a register (lowering/autodiff/functional/owned.py). The
softmax's maximum is held constant (`dg.stop_gradient`, as JAX's softmax
does): the result does not depend on the shift, so its exact derivative
through the maximum is 0, and the reverse skips two block collectives.
Four registers per array and thread, 256 threads: eight blocks (8 rows,
32 KiB of loads) in flight per SM instead of two of a 1024-thread block.
"""
import diffgpu as dg

EPS = 1e-5
COLS = 1024
THREADS = 256
PER_THREAD = COLS // THREADS  # 4: written out below


def fast_launch(R):
    """(grid, block) of the kernels for R rows."""
    return (1, R), (THREADS, 1)


@dg.kernel
def layernorm_fast(Y, X, g, b):
    r = dg.global_id(1)
    j = dg.global_id(0)
    x0 = X[r, j]
    x1 = X[r, j + THREADS]
    x2 = X[r, j + 2 * THREADS]
    x3 = X[r, j + 3 * THREADS]
    mean = dg.block_sum((x0 + x1) + (x2 + x3)) / COLS
    d0 = x0 - mean
    d1 = x1 - mean
    d2 = x2 - mean
    d3 = x3 - mean
    inv = dg.rsqrt(dg.block_sum((d0 * d0 + d1 * d1) + (d2 * d2 + d3 * d3)) / COLS + EPS)
    Y[r, j] = d0 * inv * g[j] + b[j]
    Y[r, j + THREADS] = d1 * inv * g[j + THREADS] + b[j + THREADS]
    Y[r, j + 2 * THREADS] = d2 * inv * g[j + 2 * THREADS] + b[j + 2 * THREADS]
    Y[r, j + 3 * THREADS] = d3 * inv * g[j + 3 * THREADS] + b[j + 3 * THREADS]


@dg.kernel
def softmax_fast(Y, X):
    r = dg.global_id(1)
    j = dg.global_id(0)
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


#: rows per block of layernorm_fast_rows
ROWS = 4


def rows_launch(R):
    """(grid, block) of layernorm_fast_rows for R rows (a multiple of ROWS)."""
    return (1, R // ROWS), (THREADS, 1)


@dg.kernel
def layernorm_fast_rows(Y, X, g, b):
    """layernorm_fast over ROWS rows per block (R a multiple of ROWS): g and
    b read once per thread, so the reverse sums their adjoints over the
    block's rows in registers (lowering/reduce/combine_adds.py) and adds
    into dg, db once per block and column instead of once per row. X and Y
    at (ROWS * gid(1) + k, gid(0) + 256 m): still one thread's elements."""
    j = dg.global_id(0)
    g0 = g[j]
    g1 = g[j + THREADS]
    g2 = g[j + 2 * THREADS]
    g3 = g[j + 3 * THREADS]
    b0 = b[j]
    b1 = b[j + THREADS]
    b2 = b[j + 2 * THREADS]
    b3 = b[j + 3 * THREADS]
    for k in range(ROWS):
        r = dg.global_id(1) * ROWS + k
        x0 = X[r, j]
        x1 = X[r, j + THREADS]
        x2 = X[r, j + 2 * THREADS]
        x3 = X[r, j + 3 * THREADS]
        mean = dg.block_sum((x0 + x1) + (x2 + x3)) / COLS
        d0 = x0 - mean
        d1 = x1 - mean
        d2 = x2 - mean
        d3 = x3 - mean
        inv = dg.rsqrt(dg.block_sum((d0 * d0 + d1 * d1) + (d2 * d2 + d3 * d3)) / COLS + EPS)
        Y[r, j] = d0 * inv * g0 + b0
        Y[r, j + THREADS] = d1 * inv * g1 + b1
        Y[r, j + 2 * THREADS] = d2 * inv * g2 + b2
        Y[r, j + 3 * THREADS] = d3 * inv * g3 + b3


def layernorm_ref(X, g, b):
    """numpy reference (same EPS)."""
    import numpy as np
    mean = X.mean(axis=1, keepdims=True)
    var = ((X - mean) ** 2).mean(axis=1, keepdims=True)
    return (X - mean) / np.sqrt(var + EPS) * g + b


def softmax_ref(X):
    import numpy as np
    e = np.exp(X - X.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)

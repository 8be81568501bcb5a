"""Row programs in one launch: a block per row, the row's statistics by
block collectives (docs/collectives.md), read back in the same launch.
Defined once: the tests (test/python/lowering/autodiff/test_collectives_rows.py),
scripts/gpu_cases/collectives.py and the benchmarks import them.

    grid, block = row_launch(R, C)          # (1, R), (C, 1): a thread per column
    layernorm[grid, block](X, g, b, Y)      Y[r] = (X[r] - mean) / sqrt(var + EPS) * g + b
    softmax[grid, block](X, Y)              Y[r] = exp(X[r] - max) / sum(exp(X[r] - max))
    layernorm_rows4[(1, ceil(R / 4)), block]  4 rows per block (a quarter of the dg/db atomics)
    layernorm_strided[R, T](X, g, b, Y)     the same for any C: T threads per row, each
    softmax_strided[R, T](X, Y)             taking the columns t, t + T, t + 2T, ...

X is (R, C) float32 or float64, g and b (C,); C at most 1024 for the first
two (a multiple of 32 takes the shuffle path on the GPU). Each thread of
`layernorm`/`softmax` reads one element once, at the index
(global_id(1), global_id(0)), so the reverse updates dX with one plain
read-modify-write per element (atomic elision, lowering/autodiff/elision.py);
dg and db take atomics (every row adds to them). The strided forms read
X[r, j] at a loop variable: their dX updates stay atomic. The forward is
one launch; so is `dg.vjp` of it (the derivative kernel runs the forward,
then the reverse, with the collectives' transposes in between):

    g = dg.vjp(layernorm[grid, block], X, g, b, Y, cotangents={"Y": dY})
    g["X"], g["g"], g["b"]
"""
import diffgpu as dg

EPS = 1e-5


def row_launch(R, C):
    """(grid, block) of `layernorm` / `softmax` for R rows of C columns."""
    return (1, R), (C, 1)


@dg.kernel
def layernorm(X, g, b, Y):
    r = dg.global_id(1)
    j = dg.global_id(0)
    C = X.shape[1]
    x = X[r, j]
    mean = dg.block_sum(x) / C
    d = x - mean
    inv = 1.0 / dg.sqrt(dg.block_sum(d * d) / C + EPS)
    Y[r, j] = d * inv * g[j] + b[j]


@dg.kernel
def softmax(X, Y):
    r = dg.global_id(1)
    j = dg.global_id(0)
    x = X[r, j]
    e = dg.exp(x - dg.block_max(x))
    Y[r, j] = e / dg.block_sum(e)


#: rows per block of layernorm_rows4
ROWS4 = 4


@dg.kernel
def layernorm_rows4(X, g, b, Y):
    """layernorm with ROWS4 rows per block: grid (1, ceil(R / ROWS4)), block
    (C, 1). g[j] and b[j] are read once per thread, so the reverse sums
    their adjoints over the block's rows in registers: one atomic per block
    and column into dg and db (a quarter of layernorm's); dX takes one
    uncontended atomic per element (its row index is not a global id). The
    guard `r < R` is uniform (block and loop counter only)."""
    j = dg.global_id(0)
    C = X.shape[1]
    gj = g[j]
    bj = b[j]
    for k in range(ROWS4):
        r = dg.block_id(1) * ROWS4 + k
        if r < X.shape[0]:
            x = X[r, j]
            mean = dg.block_sum(x) / C
            d = x - mean
            inv = 1.0 / dg.sqrt(dg.block_sum(d * d) / C + EPS)
            Y[r, j] = d * inv * gj + bj


@dg.kernel
def layernorm_strided(X, g, b, Y):
    r = dg.block_id(0)
    t = dg.thread_id(0)
    T = dg.block_dim(0)
    C = X.shape[1]
    s = X[r, 0] * 0.0
    for j in range(t, C, T):
        s += X[r, j]
    mean = dg.block_sum(s) / C
    q = s * 0.0
    for j in range(t, C, T):
        d = X[r, j] - mean
        q += d * d
    inv = 1.0 / dg.sqrt(dg.block_sum(q) / C + EPS)
    for j in range(t, C, T):
        Y[r, j] = (X[r, j] - mean) * inv * g[j] + b[j]


@dg.kernel
def softmax_strided(X, Y):
    r = dg.block_id(0)
    t = dg.thread_id(0)
    T = dg.block_dim(0)
    C = X.shape[1]
    m = X[r, 0]
    for j in range(t, C, T):
        m = max(m, X[r, j])
    mx = dg.block_max(m)
    s = m * 0.0
    for j in range(t, C, T):
        s += dg.exp(X[r, j] - mx)
    inv = 1.0 / dg.block_sum(s)
    for j in range(t, C, T):
        Y[r, j] = dg.exp(X[r, j] - mx) * inv


@dg.kernel
def layernorm_out_first(Y, X, g, b):
    """layernorm with the output first (the form scripts/gpu_check.py's vjp
    cases take); its derivative calls layernorm's split derivative."""
    layernorm(X, g, b, Y)


@dg.kernel
def softmax_out_first(Y, X):
    softmax(X, Y)


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

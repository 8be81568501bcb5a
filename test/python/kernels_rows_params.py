"""Row kernels with parameters shared by every row (a layer's weights),
defined once: test_combine_adds.py, scripts/gpu_cases/row_params.py and
bench/peer_cases.py import them.

The reverse of `y[r, c] = g[c] * xhat[r, c] + b[c]` adds into `dg[c]` and
`db[c]` once per row. A block that handles several rows (a loop over rows,
unrolled when its trip count is a constant) lets the compiler sum those
adds in registers first (lowering/reduce/combine_adds.py): one add per
block and column.
"""
import numpy as np

import diffgpu as dg

#: columns of the layer-norm kernels, threads per block, columns per thread
COLS = 1024
THREADS = 256
PER_THREAD = COLS // THREADS
#: rows per block of the unrolled kernels
ROWS = 2
EPS = 1e-5


@dg.kernel
def affine_rows(y, x, g, b):
    """A grid-stride loop over rows (runtime trip count); thread = column."""
    c = dg.thread_id(0)
    if c < y.shape[1]:
        for r in range(dg.block_id(0), y.shape[0], dg.grid_dim(0)):
            y[r, c] = g[c] * x[r, c] + b[c]


@dg.kernel
def affine_rows4(y, x, g, b):
    """ROWS rows per block (a constant loop: unrolled in the derivative)."""
    c = dg.thread_id(0)
    for j in range(ROWS):
        r = dg.block_id(0) * ROWS + j
        if r < y.shape[0] and c < y.shape[1]:
            y[r, c] = g[c] * x[r, c] + b[c]


@dg.kernel
def affine_one_row(y, x, g, b):
    """One row per block: one add per element; nothing to combine."""
    c = dg.thread_id(0)
    r = dg.block_id(0)
    if r < y.shape[0] and c < y.shape[1]:
        y[r, c] = g[c] * x[r, c] + b[c]


@dg.kernel
def two_adds(out, x):
    """Two adds into out[0] per thread: combined into one, then one block sum."""
    i = dg.global_id(0)
    if i < len(x):
        dg.atomic_add(out, 0, x[i])
        dg.atomic_add(out, 0, x[i] * x[i])


@dg.kernel
def layernorm_rows(y, x, g, b):
    """Layer norm of ROWS rows per block (COLS columns, THREADS threads):
    each thread sums PER_THREAD columns of a row, then a shared-memory tree.
    Written out in the kernel: in a device function the reverse would add
    into dx through the function's argument, which the compiler does not
    match with the kernel's own adds (dx would stay atomic)."""
    s = dg.shared_array(THREADS, np.float32)
    q = dg.shared_array(THREADS, np.float32)
    t = dg.thread_id(0)
    for j in range(ROWS):
        r = dg.block_id(0) * ROWS + j
        a = np.float32(0.0)  # float32 sums for float32 rows (float64 ones promote it)
        a2 = np.float32(0.0)
        for k in range(PER_THREAD):
            v = x[r, t + k * THREADS]
            a += v
            a2 += v * v
        s[t] = a
        q[t] = a2
        dg.syncthreads()
        for lvl in range(8):  # THREADS = 2^8: a constant trip count, unrolled
            h = (THREADS // 2) >> lvl
            if t < h:
                s[t] += s[t + h]
                q[t] += q[t + h]
            dg.syncthreads()
        mean = s[0] / COLS
        rs = dg.rsqrt(q[0] / COLS - mean * mean + EPS)
        dg.syncthreads()  # s[0], q[0] read before the next row overwrites them
        for k in range(PER_THREAD):
            c = t + k * THREADS
            y[r, c] = (x[r, c] - mean) * rs * g[c] + b[c]


def layernorm_ref(x, g, b):
    x = np.asarray(x, np.float64)
    m = x.mean(1, keepdims=True)
    v = x.var(1, keepdims=True)
    return (x - m) / np.sqrt(v + EPS) * g + b


def layernorm_vjp(x, g, b, dy):
    """(dx, dg, db) of layernorm_ref, float64."""
    x, g, dy = (np.asarray(a, np.float64) for a in (x, g, dy))
    m = x.mean(1, keepdims=True)
    rs = 1.0 / np.sqrt(x.var(1, keepdims=True) + EPS)
    xhat = (x - m) * rs
    dxhat = dy * g
    dx = rs * (dxhat - dxhat.mean(1, keepdims=True) - xhat * (dxhat * xhat).mean(1, keepdims=True))
    return dx, (dy * xhat).sum(0), dy.sum(0)

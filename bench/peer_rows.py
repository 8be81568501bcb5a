"""The row and image cases of bench/peers.py: layer norm with learnable
weights, row softmax (rows of 1024 float32) and a 5x5 valid convolution of
an image with gradients of the image and the filter.

For n float32 elements: layernorm and softmax take n / 1024 rows of 1024;
conv2d an image of side sqrt(n / 4) (4096 for n = 2^26: 2^24 pixels), so
its floors count a quarter of n per array. The diffgpu kernels:
test/python/kernels_rows_fast.py's layernorm_fast and softmax_fast for
`layernorm` and `softmax` (256 threads per block, one row per block, 4
columns per thread in registers, block collectives; dg.vjp writes dX once
and reads dY once, and its reverse of the layer norm runs R rows per block,
chosen by the compiler (lowering/coarsen/rows.py, R = 16 at n = 2^26), so
that dg and db take one add per R rows and column; `DIFFGPU_ROWS=1` at
--prepare and --run keeps a block per row, `DIFFGPU_ROWS=R` forces R),
layernorm_fast_rows (4 rows per block written in the kernel) for `layernorm_r4`,
kernels_rows_collective.py's layernorm and softmax for
`layernorm_1t` / `softmax_1t` (a thread per column), kernels_rows_params.py's
layernorm_rows for `layernorm_r2` (ROWS rows per block, whose g and b
gradients the compiler sums per block: lowering/reduce/combine_adds.py),
kernels_rows_variants.py's softmax_v8 (128 threads per row, 8 columns per
thread), softmax_r2 (2 rows per block) and layernorm_r8 (8 rows per block:
one dg, db add per 8 rows and column) for the cases of those names, and
peer_cases.kernels()'s conv5.
The references compare sampled rows (pixels) and the whole parameter
gradients, in float64.
"""
from __future__ import annotations

import math
import os
import sys

import numpy as np

from peer_cases import Case, _f32, sample

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "test", "python"))
# the kernels' shape constants: columns, eps, rows per block, threads per block
from kernels_rows_params import COLS, EPS, ROWS, THREADS  # noqa: E402
from kernels_rows_fast import ROWS as FAST_ROWS  # noqa: E402
from kernels_rows_fast import THREADS as FAST_THREADS  # noqa: E402
# kernels_rows_variants.py's: softmax_v8's threads, softmax_r2's and layernorm_r8's rows
from kernels_rows_variants import R2_ROWS, R8_ROWS, V8_THREADS  # noqa: E402
#: rows compared element by element
SAMPLE_ROWS = 64


def _rows(n_rows):
    return np.unique(np.linspace(0, n_rows - 1, min(n_rows, SAMPLE_ROWS)).astype(np.int64))


def _flat(rows):
    return (rows[:, None] * COLS + np.arange(COLS)).reshape(-1)


# ---------------------------------------------------------------------------
# float64 references
# ---------------------------------------------------------------------------

def _ln_stats(x):
    m = x.mean(1, keepdims=True)
    return m, 1.0 / np.sqrt(x.var(1, keepdims=True) + EPS)


def _ln_y(h, s, x="x", y="y"):
    rows = _rows(len(h[x]))
    xs = h[x][rows]
    m, rs = _ln_stats(xs)
    return {y: (((xs - m) * rs * h["g"] + h["b"]).reshape(-1), _flat(rows))}


def _ln_grads(h, dy, s, x="x"):
    name = x
    x, g = h[x], h["g"]
    dg, db = np.zeros(COLS), np.zeros(COLS)
    for a in range(0, len(x), 4096):  # the parameters' sums over every row, in chunks
        xc, dc = x[a:a + 4096], dy[a:a + 4096]
        m, rs = _ln_stats(xc)
        dg += (dc * (xc - m) * rs).sum(0)
        db += dc.sum(0)
    rows = _rows(len(x))
    xs, ds = x[rows], dy[rows]
    m, rs = _ln_stats(xs)
    xhat, dxhat = (xs - m) * rs, ds * g
    dx = rs * (dxhat - dxhat.mean(1, keepdims=True)
               - xhat * (dxhat * xhat).mean(1, keepdims=True))
    return {name: (dx.reshape(-1), _flat(rows)), "g": (dg, None), "b": (db, None)}


def _softmax(x):
    e = np.exp(x - x.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def _sm_y(h, s, x="X", y="Y"):
    rows = _rows(len(h[x]))
    return {y: (_softmax(h[x][rows]).reshape(-1), _flat(rows))}


def _sm_grads(h, dy, s, x="X"):
    rows = _rows(len(h[x]))
    p, d = _softmax(h[x][rows]), dy[rows]
    return {x: ((p * (d - (p * d).sum(1, keepdims=True))).reshape(-1), _flat(rows))}


def _conv_y(h, s):
    x, w = h["x"], h["w"]
    m = len(x) - 4
    k = sample(m * m)
    i, j = k // m, k % m
    y = sum(w[a, b] * x[i + a, j + b] for a in range(5) for b in range(5))
    return {"y": (y, k)}


def _conv_grads(h, dy, s):
    x, w = h["x"], h["w"]
    side, m = len(x), len(x) - 4
    k = sample(side * side)
    p, q = k // side, k % side
    dx = np.zeros(len(k))
    for a in range(5):
        for b in range(5):
            i, j = p - a, q - b  # x[p, q] feeds y[i, j] as its x[i + a, j + b]
            ok = (i >= 0) & (i < m) & (j >= 0) & (j < m)
            dx[ok] += w[a, b] * dy[i[ok], j[ok]]
    dw = np.array([[np.sum(dy * x[a:a + m, b:b + m]) for b in range(5)] for a in range(5)])
    return {"x": (dx, k), "w": (dw.reshape(-1), None)}


# ---------------------------------------------------------------------------
# the peers' versions (L: torch or jax.numpy)
# ---------------------------------------------------------------------------

def _is_torch(L):
    return L.__name__ == "torch"


def _peer_layernorm(L, x, g, b):
    if _is_torch(L):
        return L.nn.functional.layer_norm(x, (x.shape[-1],), g, b, EPS)
    m = L.mean(x, axis=-1, keepdims=True)
    v = L.mean(L.square(x - m), axis=-1, keepdims=True)
    return (x - m) / L.sqrt(v + EPS) * g + b


def _peer_softmax(L, x):
    if _is_torch(L):
        return L.softmax(x, -1)
    import jax
    return jax.nn.softmax(x, axis=-1)


def _peer_conv2d(L, x, w):
    """Cross-correlation (no flip), valid, float32 all the way: TF32 is off
    (peer_backends.py; JAX: precision HIGHEST)."""
    if _is_torch(L):
        return L.nn.functional.conv2d(x[None, None], w[None, None])[0, 0]
    import jax
    return jax.lax.conv_general_dilated(x[None, None], w[None, None], (1, 1), "VALID",
                                        precision=jax.lax.Precision.HIGHEST)[0, 0]


def row_cases(n: int) -> list:
    rows = max(n // COLS, ROWS)
    side = max(math.isqrt(n // 4), 8)
    m = side - 4
    tile = (32, 8)

    rows8 = -(-rows // R8_ROWS) * R8_ROWS

    def rows_of(rng, k=rows):
        return _f32(rng, k * COLS).reshape(k, COLS)

    def ln_inputs(rng, x="X", y="Y", rows=rows):
        return {y: np.zeros((rows, COLS), np.float32), x: rows_of(rng, rows),
                "g": (1 + 0.1 * _f32(rng, COLS)).astype(np.float32), "b": _f32(rng, COLS)}

    return [
        # 256 threads, one row per block, 4 columns per thread (test/python/kernels_rows_fast.py):
        # dX written once, dY read once; the compiler runs R rows per block in dg.vjp's
        # reverse (lowering/coarsen/rows.py; R = 16 at 2^26): dg and db one add per
        # block of R rows and element
        Case("layernorm", ["Y", "X", "g", "b"], ["X", "g", "b"], "Y", (2, 3, 6),
             ln_inputs, _peer_layernorm, lambda h, s: _ln_y(h, s, "X", "Y"),
             lambda h, dy, s: _ln_grads(h, dy, s, "X"), kernel="layernorm_fast",
             geometry=lambda n: ((1, rows), (FAST_THREADS, 1)), peer_check=True),
        # the same with 4 rows per block written in the kernel (its reverse unrolled)
        Case("layernorm_r4", ["Y", "X", "g", "b"], ["X", "g", "b"], "Y", (2, 3, 6),
             ln_inputs, _peer_layernorm, lambda h, s: _ln_y(h, s, "X", "Y"),
             lambda h, dy, s: _ln_grads(h, dy, s, "X"), kernel="layernorm_fast_rows",
             geometry=lambda n: ((1, rows // FAST_ROWS), (FAST_THREADS, 1))),
        # one block per row, a thread per column (test/python/kernels_rows_collective.py)
        Case("layernorm_1t", ["X", "g", "b", "Y"], ["X", "g", "b"], "Y", (2, 3, 6),
             ln_inputs, _peer_layernorm, lambda h, s: _ln_y(h, s, "X", "Y"),
             lambda h, dy, s: _ln_grads(h, dy, s, "X"), kernel="layernorm",
             geometry=lambda n: ((1, rows), (COLS, 1))),
        # ROWS (2) rows per block, shared-memory trees, g and b read per row
        # (kernels_rows_params.py): diffgpu-combine-adds sums dg and db over the block's
        # rows and writes dx with plain updates
        Case("layernorm_r2", ["y", "x", "g", "b"], ["x", "g", "b"], "y", (2, 3, 6),
             lambda rng: ln_inputs(rng, "x", "y"), _peer_layernorm, _ln_y, _ln_grads,
             kernel="layernorm_rows", geometry=lambda n: (rows // ROWS, THREADS),
             peer_check=True),
        Case("softmax", ["Y", "X"], ["X"], "Y", (2, 3, 6),
             lambda rng: {"Y": np.zeros((rows, COLS), np.float32), "X": rows_of(rng)},
             _peer_softmax, _sm_y, _sm_grads, kernel="softmax_fast",
             geometry=lambda n: ((1, rows), (FAST_THREADS, 1)), peer_check=True),
        Case("softmax_1t", ["X", "Y"], ["X"], "Y", (2, 3, 6),
             lambda rng: {"Y": np.zeros((rows, COLS), np.float32), "X": rows_of(rng)},
             _peer_softmax, _sm_y, _sm_grads, kernel="softmax",
             geometry=lambda n: ((1, rows), (COLS, 1))),
        # kernels_rows_variants.py: 128 threads per row, 8 columns per thread
        Case("softmax_v8", ["Y", "X"], ["X"], "Y", (2, 3, 6),
             lambda rng: {"Y": np.zeros((rows, COLS), np.float32), "X": rows_of(rng)},
             _peer_softmax, _sm_y, _sm_grads, kernel="softmax_v8",
             geometry=lambda n: ((1, rows), (V8_THREADS, 1))),
        # the layernorm case in softmax_v8's shape: 128 threads per row, 8 columns per
        # thread; the reverse coarsened over rows as `layernorm`'s
        Case("layernorm_v8", ["Y", "X", "g", "b"], ["X", "g", "b"], "Y", (2, 3, 6),
             ln_inputs, _peer_layernorm, lambda h, s: _ln_y(h, s, "X", "Y"),
             lambda h, dy, s: _ln_grads(h, dy, s, "X"), kernel="layernorm_v8",
             geometry=lambda n: ((1, rows), (V8_THREADS, 1))),
        # 256 threads, R2_ROWS (2) rows per block (a constant-trip loop)
        Case("softmax_r2", ["Y", "X"], ["X"], "Y", (2, 3, 6),
             lambda rng: {"Y": np.zeros((rows, COLS), np.float32), "X": rows_of(rng)},
             _peer_softmax, _sm_y, _sm_grads, kernel="softmax_r2",
             geometry=lambda n: ((1, rows // R2_ROWS), (FAST_THREADS, 1))),
        # layernorm_fast_rows with 8 rows per block: dg and db one add per 8 rows and column
        # (at least 8 rows: the smoke's n takes 4)
        Case("layernorm_r8", ["Y", "X", "g", "b"], ["X", "g", "b"], "Y", (2, 3, 6),
             lambda rng: ln_inputs(rng, rows=rows8), _peer_layernorm,
             lambda h, s: _ln_y(h, s, "X", "Y"),
             lambda h, dy, s: _ln_grads(h, dy, s, "X"), kernel="layernorm_r8",
             geometry=lambda n: ((1, rows8 // R8_ROWS), (FAST_THREADS, 1))),
        Case("conv2d", ["y", "x", "w"], ["x", "w"], "y", (0.5, 0.75, 1.5),
             lambda rng: {"y": np.zeros((m, m), np.float32),
                          "x": _f32(rng, side * side).reshape(side, side),
                          "w": _f32(rng, 25, 0.2).reshape(5, 5)},
             _peer_conv2d, _conv_y, _conv_grads, kernel="conv5",
             geometry=lambda n: (((m + tile[0] - 1) // tile[0], (m + tile[1] - 1) // tile[1]),
                                 tile), peer_check=True),
    ]

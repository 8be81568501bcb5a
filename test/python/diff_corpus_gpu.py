"""Differentiated kernels that use shared memory, barriers and atomics.

`CASES` is a list of `DiffCase`: kernel, grid, block, `make(dtype, rng)`
building numpy launch arguments, `kinds` (per argument "dup": a float array
the kernel reads, "out": a float array it writes or accumulates into, both
differentiated as Duplicated; "const"; "active": a float scalar), and
optionally `ref(*args)` (numpy primal: updates float64 copies in place) and
`vjp(args, D)` (analytic: {index: gradient} for output seeds D). test_gpu_diff.py
checks every case in both modes against finite differences (dg.gradcheck),
float32 against float64 and, where given, `ref` and `vjp`;
scripts/gpu_check.py imports `gpu_cases()` to run them on a GPU.

All kernels keep barriers reachable by every thread of a block: guards that
differ within a block only skip loads/stores, and returns are block-uniform
or come after the last barrier.
"""
from __future__ import annotations

import math

import numpy as np

import diffgpu as dg
from diff_corpus_base import DiffCase, activities, collector, rnd, zeros  # noqa: F401
from diff_corpus_base import gpu_cases as _gpu_cases
from diff_corpus_base import load_variant as _load_variant

# threads per block (1-D kernels) and 2-D tile side: small for the CPU tests
# (whole Jacobians); `load_variant` makes a copy with blocks of several warps
B, T = globals().get("_BLOCK_OVERRIDE") or (8, 4)


CASES: list[DiffCase] = []
case = collector(CASES)


# --- 1. tree reduction: sum of squares per block -----------------------------------
def _sumsq_ref(x, out):
    n = len(x)
    for b in range(len(out)):
        out[b] = np.sum(x[b * B:min(n, (b + 1) * B)] ** 2)


@case(3, B, lambda dt, r: [rnd(r, dt, 2 * B + 5), zeros(dt, 3)], ["dup", "out"], _sumsq_ref,
      lambda a, D: {0: 2 * a[0] * np.repeat(D[1], B)[:len(a[0])]})
@dg.kernel
def block_sumsq(x, out):
    s = dg.shared_array(B, np.float64)
    t = dg.thread_id(0)
    i = dg.global_id(0)
    s[t] = 0.0
    if i < len(x):
        s[t] = x[i] * x[i]
    dg.syncthreads()
    stride = B // 2
    while stride > 0:
        if t < stride:
            s[t] += s[t + stride]
        dg.syncthreads()
        stride = stride // 2
    if t == 0:
        out[dg.block_id(0)] = s[0]


# --- 2. 1-D stencil with a tile + halo in shared memory ----------------------------
def _stencil_ref(x, w, y):
    p = np.concatenate([[0.0], x, [0.0]])
    y[:] = w[0] * p[:-2] + w[1] * p[1:-1] + w[2] * p[2:]


def _stencil_vjp(a, D):
    x, w, d = a[0], a[1], D[2]
    p = np.concatenate([[0.0], x, [0.0]])
    dp = np.zeros(len(x) + 2)
    dp[:-2] += w[0] * d
    dp[1:-1] += w[1] * d
    dp[2:] += w[2] * d
    return {0: dp[1:-1], 1: np.array([d @ p[:-2], d @ p[1:-1], d @ p[2:]])}


@case(3, B, lambda dt, r: [rnd(r, dt, 2 * B + 6), rnd(r, dt, 3),
                           zeros(dt, 2 * B + 6)], ["dup", "dup", "out"],
      _stencil_ref, _stencil_vjp)
@dg.kernel
def stencil3(x, w, y):
    s = dg.shared_array(B + 2, np.float64)
    t = dg.thread_id(0)
    i = dg.global_id(0)
    n = len(x)
    s[t + 1] = 0.0
    if i < n:
        s[t + 1] = x[i]
    if t == 0:
        s[0] = 0.0
        if i > 0:
            if i - 1 < n:
                s[0] = x[i - 1]
    if t == B - 1:
        s[B + 1] = 0.0
        if i + 1 < n:
            s[B + 1] = x[i + 1]
    dg.syncthreads()
    if i < n:
        y[i] = w[0] * s[t] + w[1] * s[t + 1] + w[2] * s[t + 2]


# --- 3. Hillis-Steele inclusive scan of sin(x) per block ---------------------------
def _scan_ref(x, y):
    for b in range(0, len(x), B):
        y[b:b + B] = np.cumsum(np.sin(x[b:b + B]))


def _scan_vjp(a, D):
    x, d = a[0], D[1]
    g = np.zeros_like(x)
    for b in range(0, len(x), B):
        g[b:b + B] = np.cumsum(d[b:b + B][::-1])[::-1]
    return {0: g * np.cos(x)}


@case(2, B, lambda dt, r: [rnd(r, dt, 2 * B), zeros(dt, 2 * B)], ["dup", "out"],
      _scan_ref, _scan_vjp)
@dg.kernel
def scan_hs(x, y):
    s = dg.shared_array(B, np.float64)
    t = dg.thread_id(0)
    i = dg.global_id(0)
    s[t] = math.sin(x[i])
    dg.syncthreads()
    off = 1
    while off < B:
        v = 0.0
        if t >= off:
            v = s[t - off]
        dg.syncthreads()
        s[t] += v
        dg.syncthreads()
        off = off * 2
    y[i] = s[t]


# --- 4. transpose through a shared 2-D tile (2-D blocks) ---------------------------
def _transpose_ref(a, b):
    b[:] = a.T ** 2


@case((2, 3), (T, T), lambda dt, r: [rnd(r, dt, 2 * T, 3 * T), zeros(dt, 3 * T, 2 * T)],
      ["dup", "out"], _transpose_ref, lambda a, D: {0: 2 * a[0] * D[1].T})
@dg.kernel
def transpose_tile(a, b):
    tile = dg.shared_array((T, T), np.float64)
    tx = dg.thread_id(0)
    ty = dg.thread_id(1)
    tile[tx, ty] = a[dg.block_id(0) * T + tx, dg.block_id(1) * T + ty]
    dg.syncthreads()
    v = tile[ty, tx]
    b[dg.block_id(1) * T + tx, dg.block_id(0) * T + ty] = v * v


# --- 5. softmax over each block: max and sum by shared reductions ------------------
def _softmax_ref(x, y):
    for b in range(0, len(x), B):
        e = np.exp(x[b:b + B] - x[b:b + B].max())
        y[b:b + B] = e / e.sum()


def _softmax_vjp(a, D):
    x, d = a[0], D[1]
    g = np.zeros_like(x)
    for b in range(0, len(x), B):
        e = np.exp(x[b:b + B] - x[b:b + B].max())
        p = e / e.sum()
        g[b:b + B] = p * (d[b:b + B] - p @ d[b:b + B])
    return {0: g}


@case(2, B, lambda dt, r: [rnd(r, dt, 2 * B, lo=-2, hi=2), zeros(dt, 2 * B)],
      ["dup", "out"], _softmax_ref, _softmax_vjp)
@dg.kernel
def block_softmax(x, y):
    m = dg.shared_array(B, np.float64)
    s = dg.shared_array(B, np.float64)
    t = dg.thread_id(0)
    i = dg.global_id(0)
    m[t] = x[i]
    dg.syncthreads()
    stride = B // 2
    while stride > 0:
        if t < stride:
            m[t] = max(m[t], m[t + stride])
        dg.syncthreads()
        stride = stride // 2
    e = math.exp(x[i] - m[0])
    s[t] = e
    dg.syncthreads()
    stride = B // 2
    while stride > 0:
        if t < stride:
            s[t] += s[t + stride]
        dg.syncthreads()
        stride = stride // 2
    y[i] = e / s[0]


# --- 6. a loss accumulated by every thread with atomic_add -------------------------
def _loss_ref(x, y, loss):
    loss[0] += np.sum((x - y) ** 2)


@case(3, B, lambda dt, r: [rnd(r, dt, 2 * B + 4), rnd(r, dt, 2 * B + 4),
                           rnd(r, dt, 1)], ["dup", "dup", "out"],
      _loss_ref, lambda a, D: {0: 2 * (a[0] - a[1]) * D[2][0],
                               1: -2 * (a[0] - a[1]) * D[2][0], 2: D[2]})
@dg.kernel
def atomic_loss(x, y, loss):
    i = dg.global_id(0)
    if i < len(x):
        dg.atomic_add(loss, 0, (x[i] - y[i]) ** 2)


# --- 7. weighted histogram: data-dependent bins ------------------------------------
NBINS = 5


def _bins(r, n):
    return r.integers(0, NBINS, n).astype(np.int64)


def _hist_ref(x, bins, w, h):
    np.add.at(h, bins, w * np.tanh(x))


@case(3, B, lambda dt, r: [rnd(r, dt, 2 * B + 3), _bins(r, 2 * B + 3),
                           rnd(r, dt, 2 * B + 3), zeros(dt, NBINS)],
      ["dup", "const", "dup", "out"], _hist_ref,
      lambda a, D: {0: D[3][a[1]] * a[2] / np.cosh(a[0]) ** 2,
                    2: D[3][a[1]] * np.tanh(a[0]), 3: D[3]})
@dg.kernel
def weighted_hist(x, bins, w, h):
    i = dg.global_id(0)
    if i < len(x):
        dg.atomic_add(h, bins[i], w[i] * math.tanh(x[i]))


# --- 8. matrix-vector product, x tiled through shared memory -----------------------
ROWS, COLS = B + 3, B + 5


def _matvec_ref(a, x, y):
    y[:] = a @ x


@case(2, B, lambda dt, r: [rnd(r, dt, ROWS, COLS), rnd(r, dt, COLS), zeros(dt, ROWS)],
      ["dup", "dup", "out"], _matvec_ref,
      lambda a, D: {0: np.outer(D[2], a[1]), 1: a[0].T @ D[2]})
@dg.kernel
def matvec_tiled(a, x, y):
    xs = dg.shared_array(B, np.float64)
    t = dg.thread_id(0)
    row = dg.global_id(0)
    acc = 0.0
    for c0 in range(0, a.shape[1], B):
        xs[t] = 0.0
        if c0 + t < a.shape[1]:
            xs[t] = x[c0 + t]
        dg.syncthreads()
        if row < a.shape[0]:
            for k in range(B):
                if c0 + k < a.shape[1]:
                    acc += a[row, c0 + k] * xs[k]
        dg.syncthreads()
    if row < a.shape[0]:
        y[row] = acc


# --- 9. several smoothing passes in shared memory (barriers in a loop) -------------
def _smooth_ref(x, y, passes):
    for b in range(0, len(x), B):
        s = x[b:b + B].astype(np.float64).copy()
        for _ in range(passes):
            left = np.concatenate([s[:1], s[:-1]])
            right = np.concatenate([s[1:], s[-1:]])
            s = np.tanh(0.25 * left + 0.5 * s + 0.25 * right)
        y[b:b + B] = s


@case(2, B, lambda dt, r: [rnd(r, dt, 2 * B), zeros(dt, 2 * B), 3], ["dup", "out", "const"],
      _smooth_ref)
@dg.kernel
def smooth_passes(x, y, passes):
    s = dg.shared_array(B, np.float64)
    t = dg.thread_id(0)
    i = dg.global_id(0)
    s[t] = x[i]
    dg.syncthreads()
    for p in range(passes):
        left = s[max(t - 1, 0)]
        right = s[min(t + 1, B - 1)]
        v = math.tanh(0.25 * left + 0.5 * s[t] + 0.25 * right)
        dg.syncthreads()
        s[t] = v
        dg.syncthreads()
    y[i] = s[t]


# --- 10. float32 data, float64 shared accumulation ---------------------------------
def _mixed_ref(x, y):
    for b in range(0, len(x), B):
        y[b:b + B] = x[b:b + B] * np.sum(np.asarray(x[b:b + B], np.float64) ** 3)


@case(2, B, lambda dt, r: [rnd(r, dt, 2 * B), zeros(dt, 2 * B)], ["dup", "out"], _mixed_ref)
@dg.kernel
def shared_f64_mixed(x, y):
    s = dg.shared_array(B, np.float64)
    t = dg.thread_id(0)
    i = dg.global_id(0)
    s[t] = x[i] * x[i] * x[i]
    dg.syncthreads()
    total = 0.0
    for k in range(B):
        total += s[k]
    y[i] = x[i] * total


# --- 11. 2-D blocks, shared 2-D tile, neighbours with wrap-around ------------------
def _tile2d_ref(a, b):
    for bi in range(0, a.shape[0], T):
        for bj in range(0, a.shape[1], T):
            s = a[bi:bi + T, bj:bj + T].astype(np.float32)  # the shared tile's type
            b[bi:bi + T, bj:bj + T] = s * np.roll(s, -1, 0) + np.sin(np.roll(s, -1, 1))


@case((2, 2), (T, T), lambda dt, r: [rnd(r, dt, 2 * T, 2 * T), zeros(dt, 2 * T, 2 * T)],
      ["dup", "out"], _tile2d_ref,
      tol=dict(eps=1e-3, atol=2e-3, rtol=2e-3))  # the tile is float32: coarser steps
@dg.kernel
def tile2d_neighbours(a, b):
    s = dg.shared_array((T, T), np.float32)
    tx = dg.thread_id(0)
    ty = dg.thread_id(1)
    i = dg.global_id(0)
    j = dg.global_id(1)
    s[tx, ty] = a[i, j]
    dg.syncthreads()
    b[i, j] = s[tx, ty] * s[(tx + 1) % T, ty] + math.sin(s[tx, (ty + 1) % T])


# --- 12. dot product: block reduction, then one atomic_add per block ---------------
def _dot_ref(x, y, out):
    out[0] += x @ y


@case(3, B, lambda dt, r: [rnd(r, dt, 2 * B + 5), rnd(r, dt, 2 * B + 5),
                           zeros(dt, 1)], ["dup", "dup", "out"],
      _dot_ref, lambda a, D: {0: a[1] * D[2][0], 1: a[0] * D[2][0], 2: D[2]})
@dg.kernel
def dot_atomic(x, y, out):
    s = dg.shared_array(B, np.float64)
    t = dg.thread_id(0)
    i = dg.global_id(0)
    s[t] = 0.0
    if i < len(x):
        s[t] = x[i] * y[i]
    dg.syncthreads()
    stride = B // 2
    while stride > 0:
        if t < stride:
            s[t] += s[t + stride]
        dg.syncthreads()
        stride = stride // 2
    if t == 0:
        dg.atomic_add(out, 0, s[0])


# --- 13. block-uniform early return, barriers, then a per-thread return ------------
def _guard_ref(x, y):
    n = len(x)
    for b in range(0, n, B):
        blk = x[b:min(n, b + B)]
        full = np.zeros(B)
        full[:len(blk)] = blk
        y[b:b + len(blk)] = blk * np.roll(full, -1)[:len(blk)] ** 2


@case(4, B, lambda dt, r: [rnd(r, dt, B + 5), zeros(dt, B + 5)], ["dup", "out"], _guard_ref)
@dg.kernel
def guarded_barrier(x, y):
    # grid 4 for B + 5 elements: blocks 2 and 3 leave as a whole, block 1 is ragged
    if dg.block_id(0) * B >= len(x):
        return
    s = dg.shared_array(B, np.float64)
    t = dg.thread_id(0)
    i = dg.global_id(0)
    s[t] = 0.0
    if i < len(x):
        s[t] = x[i]
    dg.syncthreads()
    if i >= len(x):
        return
    nb = s[(t + 1) % B]
    y[i] = x[i] * nb * nb


# --- 14. nonlinear map before a shared reduction -----------------------------------
def _tanh_ref(x, out):
    v = np.tanh(x) * np.exp(-x * x)
    for b in range(len(out)):
        out[b] = np.sum(v[b * B:(b + 1) * B])


@case(2, B, lambda dt, r: [rnd(r, dt, 2 * B), zeros(dt, 2)], ["dup", "out"], _tanh_ref,
      lambda a, D: {0: np.repeat(D[1], B) * np.exp(-a[0] ** 2)
                    * (1 / np.cosh(a[0]) ** 2 - 2 * a[0] * np.tanh(a[0]))})
@dg.kernel
def tanh_reduce(x, out):
    s = dg.shared_array(B, np.float64)
    t = dg.thread_id(0)
    i = dg.global_id(0)
    s[t] = math.tanh(x[i]) * math.exp(-x[i] * x[i])
    dg.syncthreads()
    stride = B // 2
    while stride > 0:
        if t < stride:
            s[t] = s[t] + s[t + stride]
        dg.syncthreads()
        stride = stride // 2
    if t == 0:
        out[dg.block_id(0)] = s[0]


# --- 15. atomic_add of a product: gradients of both factors and a scalar -----------
def _prod_ref(a, b, idx, out, c):
    np.add.at(out, idx, c * a * b)


@case(3, B, lambda dt, r: [rnd(r, dt, 2 * B + 2), rnd(r, dt, 2 * B + 2),
                           _bins(r, 2 * B + 2), zeros(dt, NBINS), 0.7],
      ["dup", "dup", "const", "out", "active"], _prod_ref,
      lambda a, D: {0: a[4] * a[1] * D[3][a[2]], 1: a[4] * a[0] * D[3][a[2]], 3: D[3],
                    4: float(np.sum(a[0] * a[1] * D[3][a[2]]))})
@dg.kernel
def atomic_product(a, b, idx, out, c):
    i = dg.global_id(0)
    if i < len(a):
        dg.atomic_add(out, idx[i], c * a[i] * b[i])


# --- 16, 17. a shared-memory kernel differentiated inside a kernel, both modes ------
@dg.kernel
def neighbour_square(x, y):
    s = dg.shared_array(B, np.float64)
    t = dg.thread_id(0)
    i = dg.global_id(0)
    s[t] = x[i]
    dg.syncthreads()
    y[i] = s[t] * s[(t + 1) % B]


def _inner_ref(x, dy, y, dx):
    for b in range(0, len(x), B):
        s = x[b:b + B]
        y[b:b + B] = s * np.roll(s, -1)
        d = dy[b:b + B]
        dx[b:b + B] += d * np.roll(s, -1) + np.roll(d * s, 1)
    dy[:] = 0.0  # y is overwritten: its adjoint is consumed


@case(2, B, lambda dt, r: [rnd(r, dt, 2 * B), rnd(r, dt, 2 * B), zeros(dt, 2 * B),
                           zeros(dt, 2 * B)], ["dup", "out", "out", "out"], _inner_ref)
@dg.kernel
def inner_autodiff_shared(x, dy, y, dx):
    dg.autodiff(neighbour_square, dg.Duplicated(x, dx), dg.Duplicated(y, dy))


def _inner_fwd_ref(x, vx, y, vy):
    for b in range(0, len(x), B):
        s, v = x[b:b + B], vx[b:b + B]
        y[b:b + B] = s * np.roll(s, -1)
        vy[b:b + B] = v * np.roll(s, -1) + s * np.roll(v, -1)


@case(2, B, lambda dt, r: [rnd(r, dt, 2 * B), rnd(r, dt, 2 * B), zeros(dt, 2 * B),
                           zeros(dt, 2 * B)], ["dup", "dup", "out", "out"], _inner_fwd_ref)
@dg.kernel
def inner_fwddiff_shared(x, vx, y, vy):
    dg.fwddiff(neighbour_square, dg.Duplicated(x, vx), dg.Duplicated(y, vy))


# ---------------------------------------------------------------------------
# helpers for the tests and the GPU check
# ---------------------------------------------------------------------------

def load_variant(block: int, tile: int):
    """A fresh copy of this module whose kernels use `block` threads per
    1-D block and `tile` x `tile` 2-D tiles (diff_corpus_base.load_variant)."""
    return _load_variant(__name__, __file__, block, tile)


def gpu_cases():
    """The GPU check's cases of this module (diff_corpus_base.gpu_cases)."""
    return _gpu_cases(CASES, B, T)

"""Corpus kernels (diff_corpus_gpu.py) that stage tiles in shared memory and
read their neighbours: a 1-D stencil with a halo, a 2-D transpose tile, a
tiled matrix-vector product, smoothing passes (barriers in a loop), 2-D
wrap-around neighbours, block-uniform early returns, and a neighbour
exchange differentiated inside a kernel (reverse and forward). Section
numbers are the cases' places in diff_corpus_gpu.CASES.
"""
from __future__ import annotations

import math

import numpy as np

import diffgpu as dg
from diff_corpus_base import DiffCase, collector, rnd, zeros

# threads per block (1-D kernels) and 2-D tile side: small for the CPU tests;
# diff_corpus_gpu.load_variant re-runs this file with blocks of several warps
B, T = globals().get("_BLOCK_OVERRIDE") or (8, 4)


CASES: list[DiffCase] = []
case = collector(CASES)


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

"""Corpus kernels (diff_corpus_gpu.py) whose primal accumulates with
atomic_add: a loss summed by every thread, a weighted histogram (bins
from the data), a dot product added once per block after a shared
reduction, a product with an Active scalar factor. Section numbers are the
cases' places in diff_corpus_gpu.CASES.
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

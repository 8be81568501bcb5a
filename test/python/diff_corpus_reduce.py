"""Corpus kernels (diff_corpus_gpu.py) that reduce or scan within a block
through shared memory: tree sums, a Hillis-Steele scan, a softmax (max and
sum reductions), a float64 accumulation of float32 data, a nonlinear map
before a reduction. Section numbers are the cases' places in
diff_corpus_gpu.CASES.
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

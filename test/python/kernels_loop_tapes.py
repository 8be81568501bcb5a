"""Kernels whose derivatives reverse loops with a runtime trip count
(lowering/autodiff/remat.py, checkpoint.py), defined once for
test/python/lowering/autodiff/test_loop_tapes.py and
scripts/gpu_cases/loop_tapes.py.

- `nbody`: an all-pairs inner loop over j with one accumulator; its body
  follows from x[i], y[i] and the loads of x[j], y[j]: recomputed, no tape;
- `recur`: the recurrence s = sin(s) * w[t] + x[i] over n trips: the carried
  s is kept at checkpoints;
- `scan_written`: a recurrence that loads an array the loop writes: its
  body cannot be evaluated again, so it keeps the tape (the heap on a GPU
  once it outgrows 128 words);
- `spin`: a `while` loop whose trip counts are read from an array: its tape
  has no formula of the launch (test/python/runtime/test_tape_overflow.py,
  scripts/gpu_cases/tape_overflow.py, bench/tape_flag.py).
"""
from __future__ import annotations

import diffgpu as dg


@dg.kernel
def nbody(f, x, y):
    i = dg.global_id(0)
    if i < len(x):
        xi = x[i]
        yi = y[i]
        ax = 0.0
        for j in range(len(x)):
            dx = x[j] - xi
            dy = y[j] - yi
            inv = 1.0 / dg.sqrt(dx * dx + dy * dy + 0.01)
            ax += dx * inv * inv * inv
        f[i] = ax


@dg.kernel
def nbody_grad(f, df, x, dx, y, dy):
    dg.autodiff(nbody, dg.Duplicated(f, df), dg.Duplicated(x, dx), dg.Duplicated(y, dy))


@dg.kernel
def recur(out, x, w, n):
    i = dg.global_id(0)
    if i < len(out):
        s = x[i]
        for t in range(n):
            s = dg.sin(s) * w[t] + x[i]
        out[i] = s


@dg.kernel
def recur_grad(out, dout, x, dx, w, dw, n):
    dg.autodiff(recur, dg.Duplicated(out, dout), dg.Duplicated(x, dx), dg.Duplicated(w, dw), n)


@dg.kernel
def scan_written(a, x, n):
    i = dg.global_id(0)
    if i < len(x):
        s = x[i]
        for t in range(n):
            s = s * 0.5 + dg.sin(a[i, t])
            a[i, t + 1] = s
        x[i] = s


@dg.kernel
def scan_written_grad(a, da, x, dx, n):
    dg.autodiff(scan_written, dg.Duplicated(a, da), dg.Duplicated(x, dx), n)


@dg.kernel
def back_step(out, x, w, n):
    """A negative step and an integer carried beside the float one (both
    checkpointed: the int indexes w)."""
    i = dg.global_id(0)
    if i < len(out):
        s = x[i]
        k = 0
        for t in range(n, 0, -2):
            s = dg.cos(s * w[t - 1]) + s * 0.5 + w[k % 3]
            k = k + 1
        out[i] = s * s


@dg.kernel
def two_carried(out, x, w, n):
    """Two carried floats, each feeding the other."""
    i = dg.global_id(0)
    if i < len(out):
        s = x[i]
        p = 1.0
        for t in range(n):
            p = p * s
            s = dg.sin(s) * w[t] + p * 0.1
        out[i] = s + p


@dg.kernel
def spin(out, x, n):
    i = dg.global_id(0)
    if i < len(x):
        s = x[i]
        t = 0
        while t < n[i]:
            s = dg.sin(s) * 0.9 + 0.1 * x[i]
            t += 1
        out[i] = s


@dg.kernel
def spin_grad(out, dout, x, dx, n):
    dg.autodiff(spin, dg.Duplicated(out, dout), dg.Duplicated(x, dx), n)

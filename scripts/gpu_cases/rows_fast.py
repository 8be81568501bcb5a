"""Row programs with 4 columns per thread (test/python/kernels_rows_fast.py):
layernorm (one and 4 rows per block) and softmax launched (against numpy),
differentiated by dg.vjp
(the functional kinds at constant offsets of global ids: dX written once
from registers, dY only read; against the CPU's dg.vjp) and by dg.autodiff,
plus a small kernel whose launch decides between those kinds and the
accumulating ones. The block collectives take one barrier each (two
alternating slot arrays, lowering/gpu/slot_plan.py): a race there would show
as a wrong statistic in some rows, so the cases run 64 and 130 rows."""
from __future__ import annotations

import os
import sys

import numpy as np

import diffgpu as dg

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "test", "python"))
import kernels_rows_fast as K  # noqa: E402


def _f32(r, *shape):
    return r.standard_normal(shape).astype(np.float32)


def _ln(R, vjp=False):
    def make(r):
        X, g, b = _f32(r, R, K.COLS), (1 + 0.1 * _f32(r, K.COLS)).astype(np.float32), \
            _f32(r, K.COLS)
        out = [np.zeros((R, K.COLS), np.float32), X, g, b]
        return out + [_f32(r, R, K.COLS)] if vjp else out
    return make


def _sm(R, vjp=False):
    def make(r):
        out = [np.zeros((R, K.COLS), np.float32), _f32(r, R, K.COLS)]
        return out + [_f32(r, R, K.COLS)] if vjp else out
    return make


def _ln_reverse(R):
    def make(r):
        z, c = np.zeros, K.COLS
        return [dg.Duplicated(z((R, c), np.float32), _f32(r, R, c)),
                dg.Duplicated(_f32(r, R, c), z((R, c), np.float32)),
                dg.Duplicated((1 + 0.1 * _f32(r, c)).astype(np.float32), z(c, np.float32)),
                dg.Duplicated(_f32(r, c), z(c, np.float32))]
    return make


def _ln_ref(Y, X, g, b):
    Y[...] = K.layernorm_ref(X.astype(np.float64), g, b)


def _sm_ref(Y, X):
    Y[...] = K.softmax_ref(X.astype(np.float64))


@dg.kernel
def pairs(Y, X):
    """Columns j and j + 32 per thread: 'grad' with 32 threads, 'dup' with 64
    (block collectives need whole warps)."""
    r = dg.global_id(1)
    j = dg.global_id(0)
    u = X[r, j]
    v = X[r, j + 32]
    Y[r, j] = u * dg.block_sum(u * v) + v


def cases():
    out = []
    for R in (64, 130):
        grid, block = K.fast_launch(R)
        out += [
            (f"rows fast layernorm {R} rows: launch", K.layernorm_fast, grid, block, "launch",
             _ln(R), _ln_ref),
            (f"rows fast layernorm {R} rows: vjp", K.layernorm_fast, grid, block, "vjp",
             _ln(R, vjp=True), None),
            (f"rows fast softmax {R} rows: launch", K.softmax_fast, grid, block, "launch",
             _sm(R), _sm_ref),
            (f"rows fast softmax {R} rows: vjp", K.softmax_fast, grid, block, "vjp",
             _sm(R, vjp=True), None),
        ]
    for R in (8, 64):
        grid, block = K.rows_launch(R)
        out += [
            (f"rows fast layernorm 4 rows per block, {R} rows: launch", K.layernorm_fast_rows,
             grid, block, "launch", _ln(R), _ln_ref),
            (f"rows fast layernorm 4 rows per block, {R} rows: vjp", K.layernorm_fast_rows,
             grid, block, "vjp", _ln(R, vjp=True), None),
        ]
    grid, block = K.fast_launch(64)
    out.append(("rows fast layernorm: reverse", K.layernorm_fast, grid, block, "reverse",
                _ln_reverse(64), None))
    for threads, cols in ((32, 64), (32, 70), (64, 96)):
        out.append((f"rows fast offsets j, j + 32, {threads} threads: vjp", pairs, (1, 3),
                    (threads, 1), "vjp", lambda r, c=cols: [
                        np.zeros((3, c), np.float32), _f32(r, 3, c), _f32(r, 3, c)], None))
    return out

"""The row-program variants of test/python/kernels_rows_variants.py on the
GPU: softmax_v8 (128 threads per row, 8 columns each), softmax_r2 (2 rows
per block) and layernorm_r8 (8 rows per block) launched (against numpy) and
differentiated by dg.vjp (against the CPU's dg.vjp). 130 rows for the
softmaxes and 136 for the layer norm: many blocks, so a race in a block
collective or in the dg/db adds would show as a wrong row or parameter."""
from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "test", "python"))
import kernels_rows_fast as K  # noqa: E402
import kernels_rows_variants as V  # noqa: E402


def _f32(r, *shape):
    return r.standard_normal(shape).astype(np.float32)


def _ln(R, vjp=False):
    def make(r):
        out = [np.zeros((R, K.COLS), np.float32), _f32(r, R, K.COLS),
               (1 + 0.1 * _f32(r, K.COLS)).astype(np.float32), _f32(r, K.COLS)]
        return out + [_f32(r, R, K.COLS)] if vjp else out
    return make


def _sm(R, vjp=False):
    def make(r):
        out = [np.zeros((R, K.COLS), np.float32), _f32(r, R, K.COLS)]
        return out + [_f32(r, R, K.COLS)] if vjp else out
    return make


def _ln_ref(Y, X, g, b):
    Y[...] = K.layernorm_ref(X.astype(np.float64), g, b)


def _sm_ref(Y, X):
    Y[...] = K.softmax_ref(X.astype(np.float64))


def cases():
    out = []
    for name, kernel, (grid, block), R in (
            ("softmax_v8", V.softmax_v8, V.v8_launch(130), 130),
            ("softmax_r2", V.softmax_r2, V.r2_launch(130), 130)):
        out += [(f"rows variants {name} {R} rows: launch", kernel, grid, block, "launch",
                 _sm(R), _sm_ref),
                (f"rows variants {name} {R} rows: vjp", kernel, grid, block, "vjp",
                 _sm(R, vjp=True), None)]
    R = 17 * V.R8_ROWS
    grid, block = V.ln_launch(R, V.R8_ROWS)
    out += [(f"rows variants layernorm_r8 {R} rows: launch", V.layernorm_r8, grid, block,
             "launch", _ln(R), _ln_ref),
            (f"rows variants layernorm_r8 {R} rows: vjp", V.layernorm_r8, grid, block, "vjp",
             _ln(R, vjp=True), None)]
    return out

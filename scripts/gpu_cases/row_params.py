"""Gradients of parameters read by every row (lowering/reduce/combine_adds.py):
a block's adds into dg[c] and db[c] over the rows it handles are summed in
registers, one add per block and column. The GPU's gradients must equal the
CPU's (float sums: to the check's tolerance) for the unrolled rows, the
grid-stride loop over rows and the 4-rows-per-block layer norm, with guards
(rows and columns that are not multiples of the block's)."""
from __future__ import annotations

import os
import sys

import numpy as np

import diffgpu as dg

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "test", "python"))
from kernels_rows_params import (COLS, ROWS, THREADS, affine_rows, affine_rows4,  # noqa: E402
                                 layernorm_rows, two_adds)


def _f32(r, *shape):
    return r.standard_normal(shape).astype(np.float32)


def _affine(rows, cols):
    def make(r):
        return [dg.Duplicated(np.zeros((rows, cols), np.float32), _f32(r, rows, cols)),
                dg.Duplicated(_f32(r, rows, cols), np.zeros((rows, cols), np.float32)),
                dg.Duplicated(_f32(r, cols), np.zeros(cols, np.float32)),
                dg.Duplicated(_f32(r, cols), np.zeros(cols, np.float32))]
    return make


def _vjp_affine(rows, cols):
    def make(r):
        return [np.zeros((rows, cols), np.float32), _f32(r, rows, cols), _f32(r, cols),
                _f32(r, cols), _f32(r, rows, cols)]
    return make


def _layernorm(rows):
    def make(r):
        return [dg.Duplicated(np.zeros((rows, COLS), np.float32), _f32(r, rows, COLS)),
                dg.Duplicated(_f32(r, rows, COLS), np.zeros((rows, COLS), np.float32)),
                dg.Duplicated((1 + 0.1 * _f32(r, COLS)).astype(np.float32),
                              np.zeros(COLS, np.float32)),
                dg.Duplicated(_f32(r, COLS), np.zeros(COLS, np.float32))]
    return make


def cases():
    rows, cols = 1001, 200  # guarded rows and columns
    return [
        ("row params: reverse, 4 rows per block", affine_rows4, (rows + ROWS - 1) // ROWS, 256,
         "reverse", _affine(rows, cols), None),
        ("row params: vjp, 4 rows per block", affine_rows4, (rows + ROWS - 1) // ROWS, 256,
         "vjp", _vjp_affine(rows, cols), None),
        ("row params: reverse, grid-stride rows", affine_rows, 37, 256, "reverse",
         _affine(rows, cols), None),
        ("row params: reverse, grid-stride rows (generic)", affine_rows, 37, 256, "generic",
         lambda r: [np.zeros((rows, cols), np.float32), _f32(r, rows, cols), _f32(r, cols),
                    _f32(r, cols)], None),
        ("row params: layer norm reverse, 4 rows per block", layernorm_rows, 64 // ROWS,
         THREADS, "reverse", _layernorm(64), None),
        ("row params: two adds into out[0]", two_adds, 41, 256, "launch",
         lambda r: [np.zeros(1, np.float32), _f32(r, 10_000)], None),
    ]

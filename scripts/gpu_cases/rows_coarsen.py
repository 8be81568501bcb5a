"""dg.vjp with the rows coarsening (lowering/coarsen/rows.py) on the GPU,
against the CPU's dg.vjp (coarsened by the same rule): layernorm_fast
(test/python/kernels_rows_fast.py, one row per block) at 4227 rows (R = 2,
the last block 1 row) and 8451 rows (R = 4, the last block 3 rows), and
kernels_rows_coarsen.py's shift_rows_shared (a shared array per row: each
row's iteration ends in a barrier) at 4225 rows (R = 2). Enough rows that
the default rule (runtime/specialize.py `rows_factor`: at least 2 x 132 x 8
blocks left) coarsens them; a missing remainder or barrier would show as
wrong rows of dX, a lost or doubled row as wrong dg / db."""
from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "test", "python"))
import kernels_rows_coarsen as C  # noqa: E402
import kernels_rows_fast as K  # noqa: E402


def _f32(r, *shape):
    return r.standard_normal(shape).astype(np.float32)


def _ln(R):
    def make(r):
        return [np.zeros((R, K.COLS), np.float32), _f32(r, R, K.COLS),
                (1 + 0.1 * _f32(r, K.COLS)).astype(np.float32), _f32(r, K.COLS),
                _f32(r, R, K.COLS)]
    return make


def _shift(R):
    def make(r):
        return [np.zeros((R, C.COLS)), r.standard_normal((R, C.COLS)),
                r.standard_normal(C.COLS), r.standard_normal((R, C.COLS))]
    return make


def cases():
    out = []
    for R in (4227, 8451):
        grid, block = K.fast_launch(R)
        out.append((f"rows coarsen layernorm_fast {R} rows: vjp", K.layernorm_fast, grid,
                    block, "vjp", _ln(R), None))
    R = 4225
    grid, block = C.launch(R)
    out.append((f"rows coarsen shift_rows_shared {R} rows: vjp", C.shift_rows_shared, grid,
                block, "vjp", _shift(R), None))
    return out

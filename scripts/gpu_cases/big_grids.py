"""Grids whose y or z extent exceeds the GPU's 65535 (runtime/args.py
`hardware_grid`: the launch runs on a folded hardware grid, and
`dg.block_id` / `dg.grid_dim` of y and z return the user's values).
Each kernel writes what its blocks see into the row of its logical block
id; the CPU (which runs the grid as it is) gives the expected values."""
from __future__ import annotations

import numpy as np

import diffgpu as dg


@dg.kernel
def big_grid_ids(out):
    """Row b = the block's logical id: its x, y, z ids and the grid's y, z."""
    if dg.thread_id(0) == 0:
        gx, gy = dg.grid_dim(0), dg.grid_dim(1)
        b = (dg.block_id(2) * gy + dg.block_id(1)) * gx + dg.block_id(0)
        out[b, 0] = dg.block_id(0)
        out[b, 1] = dg.block_id(1)
        out[b, 2] = dg.block_id(2)
        out[b, 3] = gy * 1000000 + dg.grid_dim(2)


@dg.kernel
def big_grid_scale(y, x):
    """y[b] = x[b]^2 * (1 + y-id % 7) over the logical blocks b (one thread
    each): its gradient reads the same geometry."""
    t = dg.thread_id(0)
    gx, gy = dg.grid_dim(0), dg.grid_dim(1)
    b = (dg.block_id(2) * gy + dg.block_id(1)) * gx + dg.block_id(0)
    if t == 0 and b < len(x):
        y[b] = x[b] * x[b] * (1.0 + dg.block_id(1) % 7)


def _blocks(grid):
    g = tuple(grid) + (1,) * (3 - len(grid))
    return g[0] * g[1] * g[2]


def _ids(grid):
    return lambda r: [np.full((_blocks(grid), 4), -1, np.int64)]


def cases():
    out = []
    for grid in ((2, 70000), (1, 1, 70000), (3, 65536, 2), (1, 65535, 2), (2, 70001, 1)):
        out.append((f"big grid ids {grid}", big_grid_ids, grid, 32, "launch", _ids(grid), None))
    out.append(("big grid ids (1, 70000) generic", big_grid_ids, (1, 70000), 32, "generic",
                _ids((1, 70000)), None))
    for grid in ((2, 70000), (3, 65536, 2)):
        n = _blocks(grid)
        out.append((f"big grid scale {grid}", big_grid_scale, grid, 32, "launch",
                    lambda r, n=n: [np.zeros(n, np.float32),
                                    r.standard_normal(n).astype(np.float32)], None))
        out.append((f"reverse big grid scale {grid}", big_grid_scale, grid, 32, "reverse",
                    lambda r, n=n: [dg.Duplicated(np.zeros(n, np.float32),
                                                  r.standard_normal(n).astype(np.float32)),
                                    dg.Duplicated(r.standard_normal(n).astype(np.float32),
                                                  np.zeros(n, np.float32))], None))
        out.append((f"vjp big grid scale {grid}", big_grid_scale, grid, 32, "vjp",
                    lambda r, n=n: [np.zeros(n, np.float32),
                                    r.standard_normal(n).astype(np.float32),
                                    r.standard_normal(n).astype(np.float32)], None))
    return out

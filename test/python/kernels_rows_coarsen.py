"""Row kernels for the rows coarsening of `dg.vjp` (lowering/coarsen/rows.py):
one row per block (`r = gid(1)`, block (COLS, 1), grid (1, R)), each
reading a parameter `g` every row reads, so that the reverse adds into dg at
an index independent of the row. `scale_rows` is eligible; the others must
keep a block per row (the reason in their docstring) and still give the
right gradients. Used by test/python/lowering/coarsen/test_coarsen_rows.py.
"""
import numpy as np

import diffgpu as dg

COLS = 32


def launch(rows):
    """(grid, block) for `rows` rows."""
    return (1, rows), (COLS, 1)


@dg.kernel
def scale_rows(Y, X, g):
    """Y[r, j] = X[r, j] * g[j]: eligible."""
    r = dg.global_id(1)
    j = dg.global_id(0)
    Y[r, j] = X[r, j] * g[j]


@dg.kernel
def scale_rows_block_id(Y, X, g):
    """The row from block_id(1) itself (not gid(1)): refused."""
    r = dg.block_id(1)
    j = dg.global_id(0)
    Y[r, j] = X[r, j] * g[j]


@dg.kernel
def scale_next_row(Y, X, g):
    """Y[r, j] = X[(r + 1) % grid_dim(1), j] * g[j]: reads grid_dim(1), which
    the coarsened launch changes: refused."""
    r = dg.global_id(1)
    j = dg.global_id(0)
    Y[r, j] = X[(r + 1) % dg.grid_dim(1), j] * g[j]


@dg.kernel
def scale_rows_ticket(Y, X, g, tickets):
    """Every thread takes a ticket (an atomic whose result is used) and
    scales its row when the ticket is non-negative (always): refused."""
    r = dg.global_id(1)
    j = dg.global_id(0)
    t = dg.atomic_add(tickets, 0, 1)
    if t >= 0:
        Y[r, j] = X[r, j] * g[j]


@dg.kernel
def shift_rows_shared(Y, X, g):
    """Y[r, j] = X[r, (j + 1) % COLS] * g[j] through a shared row: eligible,
    each row's iteration closed by a barrier."""
    tile = dg.shared_array(COLS, np.float64)
    r = dg.global_id(1)
    j = dg.global_id(0)
    tile[j] = X[r, j]
    dg.syncthreads()
    Y[r, j] = tile[(j + 1) % COLS] * g[j]


@dg.kernel
def scale_rows_masked(Y, X, g, m):
    """Y[r, j] = X[r, j] * g[j] where m[j] > 0: eligible, but its row's loads
    sit under the branch, so none of them is loaded a row ahead."""
    r = dg.global_id(1)
    j = dg.global_id(0)
    if m[j] > 0:
        Y[r, j] = X[r, j] * g[j]

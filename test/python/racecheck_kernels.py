"""The kernels of the data-race detector's tests (test_racecheck.py: racy
kernels and their reports; test_racecheck_free.py: race-free kernels and the
switches), with `checked` (a launch run race-checked) and `line_of` (the
line of a `# RACY-...` marker in this file, which reports must name).
"""
import os

import numpy as np

import diffgpu as dg

KERNELS_FILE = os.path.abspath(__file__)


def checked(launch):
    """Run `launch()` race-checked; the RaceError, or None."""
    with dg.racecheck():
        try:
            launch()
        except dg.RaceError as exc:
            return exc
    return None


def line_of(text: str) -> int:
    """Line number (1-based) of the first line of this file containing `text`."""
    with open(KERNELS_FILE) as f:
        for n, line in enumerate(f, 1):
            if text in line and "line_of(" not in line:
                return n
    raise AssertionError(text)


# ---------------------------------------------------------------------------
# Racy kernels
# ---------------------------------------------------------------------------

@dg.kernel
def loss_no_atomic(x, out):
    i = dg.global_id(0)
    if i < len(x):
        out[0] += x[i] * x[i]  # RACY-LOSS


@dg.kernel
def write_write(x, y):
    i = dg.global_id(0)
    if i < len(x):
        y[0] = x[i]  # RACY-WW


@dg.kernel
def shift_left(y):
    i = dg.global_id(0)
    if i + 1 < len(y):
        y[i] = y[i + 1]  # RACY-SHIFT


@dg.kernel
def per_thread_slot(x, y):
    # slot t is written by thread t of *every* block: races across blocks only
    t = dg.thread_id(0)
    y[t] = x[dg.global_id(0)]  # RACY-BLOCKS


@dg.kernel
def shared_no_barrier(x, y):
    s = dg.shared_array(8, np.float64)
    t = dg.thread_id(0)
    s[t] = x[t]  # RACY-SH-W
    y[t] = s[(t + 1) % 8]  # RACY-SH-R


@dg.kernel
def loop_missing_barrier(x, y, n):
    s = dg.shared_array(8, np.float64)
    t = dg.thread_id(0)
    acc = 0.0
    for k in range(n):
        s[t] = x[t] + k  # RACY-LOOP-W
        dg.syncthreads()
        acc += s[(t + 1) % 8]  # RACY-LOOP-R
    y[t] = acc


@dg.kernel
def write_2d(x, y):
    i = dg.global_id(0)
    if i < len(x):
        y[1, i % 2] = x[i]  # RACY-2D


@dg.func
def store_first(a, v):
    a[0] = v  # RACY-FUNC


@dg.kernel
def race_in_func(x, y):
    i = dg.global_id(0)
    if i < len(x):
        store_first(y, x[i])


@dg.kernel
def halve(x, y):
    i = dg.global_id(0)
    if i < len(x):
        y[i // 2] = x[i]  # RACY-HALVE


@dg.kernel
def copy_shifted(a, b):
    i = dg.global_id(0)
    if i + 1 < len(b):
        b[i + 1] = a[i] * 2.0  # RACY-ALIAS


@dg.kernel
def grid_2d_race(out):
    # every thread of the 2-D grid writes out[0]
    out[0] = dg.thread_id(0) + 10 * dg.thread_id(1) + 100 * dg.block_id(1)  # RACY-2DGRID


@dg.kernel
def atomic_then_plain(out, x):
    i = dg.global_id(0)
    dg.atomic_add(out, 0, x[i])
    if i == 0:
        x[1] = 0.0  # RACY-AFTER-ATOMIC: thread 1 reads x[1]


@dg.kernel
def zero_then_add(out, x):
    i = dg.global_id(0)
    if i == 0:
        out[0] = 0.0  # RACY-ZERO: the others' atomics may come first
    dg.atomic_add(out, 0, x[i])  # RACY-ZERO-ADD


@dg.kernel
def read_partial_sum(out, x, y):
    i = dg.global_id(0)
    dg.atomic_add(out, 0, x[i])  # RACY-PARTIAL-ADD
    y[i] = out[0]  # RACY-PARTIAL: a partial sum


@dg.kernel
def zero_under_neighbours_adds(d, x):
    i = dg.global_id(0)
    if i + 1 < len(d):
        dg.atomic_add(d, i + 1, x[i])  # RACY-NEIGHBOUR-ADD
    d[i] = 0.0  # RACY-NEIGHBOUR-ZERO


@dg.kernel
def zero_block0_then_add(out, x):
    # the barrier orders block 0's threads only: block 1's atomics race
    i = dg.global_id(0)
    if i == 0:
        out[0] = 0.0  # RACY-ACROSS-BLOCKS
    dg.syncthreads()
    dg.atomic_add(out, 0, x[i])


# ---------------------------------------------------------------------------
# Race-free kernels
# ---------------------------------------------------------------------------

@dg.kernel
def atomic_sum(x, out):
    i = dg.global_id(0)
    if i < len(x):
        dg.atomic_add(out, 0, x[i] * x[i])


@dg.kernel
def atomic_hist(x, h):
    i = dg.global_id(0)
    if i < len(x):
        dg.atomic_add(h, int(x[i]) % 3, 1.0)


@dg.kernel
def scale(x, y):
    i = dg.global_id(0)
    if i < len(x):
        y[i] = 2.0 * x[i]


@dg.kernel
def broadcast_read(x, w, y):
    i = dg.global_id(0)
    if i < len(y):
        y[i] = x[0] * w[i]


@dg.kernel
def stencil(x, y):
    i = dg.global_id(0)
    if i + 1 < len(x):
        y[i] = x[i] + x[i + 1]


@dg.kernel
def own_element_updates(y):
    i = dg.global_id(0)
    if i < len(y):
        y[i] = y[i] + 1.0
        y[i] = y[i] * 3.0


@dg.kernel
def shared_reverse(x, y):
    s = dg.shared_array(8, np.float64)
    t = dg.thread_id(0)
    i = dg.global_id(0)
    s[t] = x[i]
    dg.syncthreads()
    y[i] = s[7 - t]


@dg.kernel
def shared_tree_sum(x, out):
    s = dg.shared_array(8, np.float64)
    t = dg.thread_id(0)
    s[t] = x[dg.global_id(0)]
    dg.syncthreads()
    stride = 4
    while stride > 0:
        if t < stride:
            s[t] += s[t + stride]
        dg.syncthreads()
        stride = stride // 2
    if t == 0:
        out[dg.block_id(0)] = s[0]


@dg.kernel
def loop_two_barriers(x, y, n):
    s = dg.shared_array(8, np.float64)
    t = dg.thread_id(0)
    acc = 0.0
    for k in range(n):
        s[t] = x[t] + k
        dg.syncthreads()
        acc += s[(t + 1) % 8]
        dg.syncthreads()
    y[t] = acc


@dg.kernel
def zero_barrier_add(out, x):
    # each block zeroes its own element, a barrier, then its threads add
    i = dg.global_id(0)
    if dg.thread_id(0) == 0:
        out[dg.block_id(0)] = 0.0
    dg.syncthreads()
    dg.atomic_add(out, dg.block_id(0), x[i])


@dg.kernel
def shared_histogram(x, h):
    # atomics into shared memory, a barrier, plain reads of the sums
    s = dg.shared_array(2, np.float64)
    t = dg.thread_id(0)
    if t < 2:
        s[t] = 0.0
    dg.syncthreads()
    dg.atomic_add(s, t % 2, x[dg.global_id(0)])
    dg.syncthreads()
    if t < 2:
        h[2 * dg.block_id(0) + t] = s[t]


@dg.kernel
def own_element_then_atomic(x, y):
    # one thread's plain write and its own atomic on one element: ordered
    i = dg.global_id(0)
    y[i] = x[i]
    dg.atomic_add(y, i, 1.0)

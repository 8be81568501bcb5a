"""Barriers that only some threads of a block reach: a CompileError at the
barrier when the branch or the loop trip count around it is computed from
the thread id (diffgpu-check-barriers), a dg.DivergentBarrierError from a
race-checked launch when it depends on loaded data; uniform barriers pass
both checks."""
import os

import numpy as np
import pytest

import diffgpu as dg
from racecheck_kernels import checked

HERE = os.path.abspath(__file__)


def line_of(text: str) -> int:
    with open(HERE) as f:
        for n, line in enumerate(f, 1):
            if text in line and "line_of(" not in line:
                return n
    raise AssertionError(text)


# ---------------------------------------------------------------------------
# Rejected at compile time
# ---------------------------------------------------------------------------

@dg.kernel
def half_block(x):
    if dg.thread_id(0) < 16:  # BRANCH
        dg.syncthreads()  # BARRIER-IN-BRANCH
    x[dg.thread_id(0)] = 1.0


@dg.kernel
def thread_trips(x):
    t = dg.thread_id(0)
    for k in range(t):  # LOOP
        dg.syncthreads()  # BARRIER-IN-LOOP
    x[t] = 1.0


@dg.kernel
def carried_trips(x):
    t = dg.thread_id(0)
    c = t
    while c < 8:  # WHILE
        dg.syncthreads()  # BARRIER-IN-WHILE
        c += 1
    x[t] = 1.0


@dg.kernel
def early_return(x):
    i = dg.global_id(0)
    if i >= len(x):  # RETURN-IF
        return
    dg.syncthreads()  # BARRIER-AFTER-RETURN
    x[i] = 1.0


@dg.func
def sync_below(t, n):
    if t < n:
        dg.syncthreads()  # BARRIER-IN-FUNC


@dg.kernel
def func_with_thread_id(x):
    sync_below(dg.thread_id(0), 4)
    x[dg.thread_id(0)] = 1.0


@dg.func
def sync():
    dg.syncthreads()  # BARRIER-OF-CALL


@dg.kernel
def call_in_branch(x):
    if dg.global_id(0) % 2 == 0:
        sync()  # CALL-IN-BRANCH
    x[dg.thread_id(0)] = 1.0


REJECTED = [
    (half_block, "# BARRIER-IN-BRANCH", "# BRANCH", "under a condition that depends on the "
     "thread id (the branch at"),
    (thread_trips, "# BARRIER-IN-LOOP", "# LOOP", "in a loop whose trip count depends on "
     "the thread id (the loop at"),
    (carried_trips, "# BARRIER-IN-WHILE", "# WHILE", "in a loop whose trip count"),
    (early_return, "# BARRIER-AFTER-RETURN", "# RETURN-IF", "under a condition"),
    (func_with_thread_id, "# BARRIER-IN-FUNC", "def sync_below", "under a condition"),
    (call_in_branch, "# CALL-IN-BRANCH", "# BARRIER-OF-CALL", "this call reaches "
     "dg.syncthreads()"),
]


@pytest.mark.parametrize("kernel,at,why_line,why", REJECTED,
                         ids=[c[0].name for c in REJECTED])
def test_thread_dependent_barrier_is_a_compile_error(kernel, at, why_line, why):
    x = np.zeros(32)
    with pytest.raises(dg.CompileError) as info:
        kernel[1, 32](x)
    e = info.value
    assert (e.filename, e.line) == (HERE, line_of(at))  # at the user's line
    assert e.source_line.strip().startswith(("dg.syncthreads()", "sync()"))
    assert why in str(e) and "every thread of a block must reach a barrier" in str(e)
    if why_line != "def sync_below":  # the condition inside the function is on its line
        assert f"{HERE}:{line_of(why_line)}:" in str(e)
    assert not x.any()  # nothing ran


def test_rejected_for_gpu_targets_and_derivatives_too():
    with pytest.raises(dg.CompileError, match="depends on the thread id"):
        half_block.ir(np.zeros(32), stage="gpu", target="sm_90")
    x, dx = np.zeros(32), np.zeros(32)
    with pytest.raises(dg.CompileError) as info:
        dg.autodiff(thread_trips[1, 32], dg.Duplicated(x, dx))
    assert info.value.line == line_of("# BARRIER-IN-LOOP")


# ---------------------------------------------------------------------------
# Reported at run time by the race check
# ---------------------------------------------------------------------------

@dg.kernel
def data_branch(x, y):
    s = dg.shared_array(8, np.float64)
    t = dg.thread_id(0)
    s[t] = x[t]
    if x[t] > 0.0:
        dg.syncthreads()  # DATA-BARRIER
    y[t] = s[(t + 1) % 8]


@dg.kernel
def data_trips(n, y):
    i = dg.global_id(0)
    acc = 0.0
    for k in range(n[i]):
        dg.syncthreads()  # DATA-LOOP-BARRIER
        acc += 1.0
    y[i] = acc


def test_data_dependent_branch_reported():
    x, y = np.arange(8.0) - 3.0, np.zeros(8)  # threads 0-3 skip the barrier
    data_branch[1, 8](x, y)  # unchecked: runs, no diagnostic
    err = checked(lambda: data_branch[1, 8](x, y))
    assert isinstance(err, dg.DivergentBarrierError)
    msg = str(err)
    assert msg.startswith("kernel 'data_branch': the barrier at ")
    assert err.site == f"{HERE}:{line_of('# DATA-BARRIER')}:9"
    assert f"{err.site}: dg.syncthreads()" in msg
    assert "reached by 4 of the 8 threads of block (0, 0, 0)" in msg
    assert "thread (0, 0, 0) did not reach it" in msg
    # every thread takes the branch: no report
    assert checked(lambda: data_branch[1, 8](np.arange(8.0) + 1.0, np.zeros(8))) is None


def test_data_dependent_trip_count_reported():
    y = np.zeros(8)
    err = checked(lambda: data_trips[2, 4](np.array([2, 2, 2, 2, 2, 2, 1, 2]), y))
    assert isinstance(err, dg.DivergentBarrierError)
    assert err.site.startswith(f"{HERE}:{line_of('# DATA-LOOP-BARRIER')}:")
    assert "reached by 3 of the 4 threads of block (1, 0, 0)" in str(err)
    assert "thread (2, 0, 0) did not reach it" in str(err)
    assert list(y) == [2, 2, 2, 2, 2, 2, 1, 2]  # the launch ran to its end
    assert checked(lambda: data_trips[2, 4](np.full(8, 3), y)) is None


def test_derivative_reports_its_divergent_barrier():
    x, dx = np.arange(8.0) - 3.0, np.zeros(8)
    y, dy = np.zeros(8), np.ones(8)
    err = checked(lambda: dg.autodiff(data_branch[1, 8], dg.Duplicated(x, dx),
                                      dg.Duplicated(y, dy)))
    assert isinstance(err, dg.DivergentBarrierError)
    assert "kernel 'data_branch' (reverse-mode derivative)" in str(err)


# ---------------------------------------------------------------------------
# Uniform barriers: accepted, and no report
# ---------------------------------------------------------------------------

@dg.kernel
def uniform_barriers(x, y, n):
    s = dg.shared_array(8, np.float64)
    t = dg.thread_id(0)
    if dg.block_id(0) * 8 >= len(x):  # whole blocks return
        return
    s[t] = x[dg.global_id(0)]
    dg.syncthreads()
    stride = 4
    while stride > 0:  # a counter carried from a constant
        if t < stride:  # the work is guarded, the barrier is not
            s[t] += s[t + stride]
        dg.syncthreads()
        stride = stride // 2
    for k in range(n):  # a kernel argument
        dg.syncthreads()
    if x[0] > -1.0:  # loaded, and the same for every thread
        dg.syncthreads()
    sync_below(3, 4)  # a device function called with constants
    if t == 0:
        y[dg.block_id(0)] = s[0]


def test_uniform_barriers_pass_both_checks():
    x, y = np.arange(16.0), np.zeros(3)
    assert checked(lambda: uniform_barriers[3, 8](x, y, 2)) is None
    np.testing.assert_array_equal(y, [np.sum(x[:8]), np.sum(x[8:]), 0.0])

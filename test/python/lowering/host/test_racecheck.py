"""The data-race detector of host launches (`with dg.racecheck():`,
DIFFGPU_RACECHECK=1): racy kernels raise dg.RaceError naming the array, the
element, both threads and both source lines (kernels: racecheck_kernels.py);
the checked program is a separate, cached variant. Race-free kernels and the
switches: test_racecheck_free.py."""
import numpy as np

import diffgpu as dg
from diffgpu.driver.launch import STATS
from racecheck_kernels import (KERNELS_FILE, atomic_then_plain, checked, copy_shifted,
                               grid_2d_race, halve, line_of, loop_missing_barrier,
                               loss_no_atomic, per_thread_slot, race_in_func,
                               read_partial_sum, shared_no_barrier, shift_left, write_2d,
                               write_write, zero_block0_then_add, zero_then_add,
                               zero_under_neighbours_adds)


def test_loss_without_atomic_forward_and_details():
    x = np.arange(8, dtype=np.float32)
    out = np.zeros(1, np.float32)
    err = checked(lambda: loss_no_atomic[2, 4](x, out))
    assert err is not None
    msg = str(err)
    line = line_of("# RACY-LOSS")
    # both accesses (the add's store and its load) carry the line of `out[0] += ...`
    assert msg.count(f"{KERNELS_FILE}:{line}:") == 2 and "out[0] += x[i] * x[i]" in msg
    assert "data race on out[0] (global memory)" in msg
    assert "write by block (0, 0, 0) thread (0, 0, 0)" in msg
    assert "read by block (0, 0, 0) thread (1, 0, 0)" in msg
    assert err.array == "out" and err.index == "0"
    assert out[0] == np.sum(x * x)  # the launch ran to its end


def test_write_write():
    err = checked(lambda: write_write[1, 4](np.ones(4), np.zeros(1)))
    assert err is not None and "data race on y[0]" in str(err)
    assert str(err).count(f"{KERNELS_FILE}:{line_of('# RACY-WW')}:") == 2
    assert "write by block (0, 0, 0) thread (0, 0, 0)" in str(err)
    assert "write by block (0, 0, 0) thread (1, 0, 0)" in str(err)


def test_read_write_neighbour():
    err = checked(lambda: shift_left[1, 8](np.arange(9.0)))
    assert err is not None
    msg = str(err)
    assert "data race on y[1]" in msg  # read by thread 0, then written by thread 1
    assert "read by block (0, 0, 0) thread (0, 0, 0)" in msg
    assert "write by block (0, 0, 0) thread (1, 0, 0)" in msg


def test_race_across_blocks_only():
    err = checked(lambda: per_thread_slot[2, 4](np.ones(8), np.zeros(4)))
    assert err is not None
    msg = str(err)
    assert "data race on y[0]" in msg
    assert "block (0, 0, 0) thread (0, 0, 0)" in msg
    assert "block (1, 0, 0) thread (0, 0, 0)" in msg
    # one block alone does not race
    assert checked(lambda: per_thread_slot[1, 4](np.ones(4), np.zeros(4))) is None


def test_shared_memory_without_barrier():
    err = checked(lambda: shared_no_barrier[1, 8](np.arange(8.0), np.zeros(8)))
    assert err is not None
    msg = str(err)
    assert f"data race on s[1] (shared memory, allocated at {KERNELS_FILE}:" in msg
    assert f":{line_of('# RACY-SH-W')}:" in msg and f":{line_of('# RACY-SH-R')}:" in msg
    assert err.index == "1"  # written by thread 1 after thread 0 read it


def test_missing_barrier_in_loop():
    # iteration k+1 writes s[t] while other threads may still read iteration k's
    err = checked(lambda: loop_missing_barrier[1, 8](np.arange(8.0), np.zeros(8), 3))
    assert err is not None
    msg = str(err)
    assert f":{line_of('# RACY-LOOP-W')}:" in msg and f":{line_of('# RACY-LOOP-R')}:" in msg
    # one iteration has no second write: race-free
    assert checked(lambda: loop_missing_barrier[1, 8](np.arange(8.0), np.zeros(8), 1)) is None


def test_2d_index_in_report():
    err = checked(lambda: write_2d[1, 4](np.ones(4), np.zeros((2, 2))))
    assert err is not None and "data race on y[1, 0]" in str(err)
    assert err.index == "1, 0"


def test_race_inside_device_function():
    err = checked(lambda: race_in_func[1, 4](np.ones(4), np.zeros(2)))
    assert err is not None and f":{line_of('# RACY-FUNC')}:" in str(err)
    assert "data race on y[0]" in str(err)


def test_gradient_kernels_race():
    x, y = np.ones(8), np.zeros(4)
    dx, dy = np.zeros(8), np.ones(4)
    err = checked(lambda: dg.autodiff(halve[2, 4], dg.Duplicated(x, dx),
                                      dg.Duplicated(y, dy)))
    assert err is not None
    assert "kernel 'halve' (reverse-mode derivative)" in str(err)
    assert f":{line_of('# RACY-HALVE')}:" in str(err)
    err = checked(lambda: dg.fwddiff(halve[2, 4], dg.Duplicated(x, dx),
                                     dg.Duplicated(y, np.zeros(4))))
    assert err is not None and "forward-mode derivative" in str(err)


def test_reverse_loss_race_names_shadow_or_primal():
    x = np.arange(4.0)
    out, dout, dx = np.zeros(1), np.ones(1), np.zeros(4)
    err = checked(lambda: dg.autodiff(loss_no_atomic[1, 4], dg.Duplicated(x, dx),
                                      dg.Duplicated(out, dout)))
    assert err is not None and err.array in ("out", "shadow(out)")


def test_aliasing_arguments_share_a_shadow():
    a = np.arange(8.0)
    # b is a: thread i writes element i+1, which thread i+1 reads
    err = checked(lambda: copy_shifted[1, 8](a, a))
    assert err is not None and f":{line_of('# RACY-ALIAS')}:" in str(err)
    assert checked(lambda: copy_shifted[1, 8](np.arange(8.0), np.zeros(8))) is None


def test_strided_view_index():
    base = np.zeros(16)
    err = checked(lambda: write_write[1, 4](np.ones(4), base[8::2]))
    assert err is not None and "data race on y[0]" in str(err)


# ---------------------------------------------------------------------------
# Switches and variants
# ---------------------------------------------------------------------------

def test_unchecked_mode_is_a_separate_uninstrumented_program():
    x, out = np.arange(4.0), np.zeros(1)
    loss_no_atomic[1, 4](x, out)  # no error without the check
    before = STATS["compile"]
    assert checked(lambda: loss_no_atomic[1, 4](x, out)) is not None
    assert STATS["compile"] == before + 1  # its own compiled variant
    plain = [p for k, p in loss_no_atomic._programs.items() if "racecheck" not in k]
    checked_ = [p for k, p in loss_no_atomic._programs.items() if "racecheck" in k]
    assert plain and checked_
    assert all("__dg_race" not in p.host.llvm_text for p in plain)
    assert all("__dg_race_access" in p.host.llvm_text for p in checked_)
    with dg.racecheck():
        with dg.racecheck(False):
            loss_no_atomic[1, 4](x, out)  # off inside


def test_checked_variant_from_the_disk_cache():
    x, out = np.arange(4.0), np.zeros(1)
    assert checked(lambda: loss_no_atomic[1, 4](x, out)) is not None
    loss_no_atomic._programs.clear()  # forget the in-memory programs
    getattr(loss_no_atomic, "_fast", {}).clear()
    hits = STATS["disk_hit"]
    err = checked(lambda: loss_no_atomic[1, 4](x, out))
    assert STATS["disk_hit"] == hits + 1
    assert err is not None and f":{line_of('# RACY-LOSS')}:" in str(err)
    loss_no_atomic[1, 4](x, out)  # and the unchecked one stays unchecked


def test_2d_geometry_in_report():
    err = checked(lambda: grid_2d_race[(1, 2), (2, 3)](np.zeros(1)))
    assert err is not None
    msg = str(err)
    # the first two threads in emulation order: thread (0, 0, 0) then (1, 0, 0)
    assert "write by block (0, 0, 0) thread (0, 0, 0)" in msg
    assert "write by block (0, 0, 0) thread (1, 0, 0)" in msg
    assert "(11 racing accesses in all)" in msg  # 12 writes: each after the first


def test_atomics_are_not_checked_plain_accesses_still_are():
    err = checked(lambda: atomic_then_plain[1, 4](np.zeros(1), np.ones(4)))
    assert err is not None and "data race on x[1]" in str(err)
    assert f":{line_of('# RACY-AFTER-ATOMIC')}:" in str(err)


# ---------------------------------------------------------------------------
# Plain accesses against other threads' atomics
# ---------------------------------------------------------------------------

def _plain_vs_atomic(err, plain: str, atomic: str, what: str):
    assert err is not None
    msg = str(err)
    assert f"{what} by block" in msg and "atomic add by block" in msg
    assert f":{line_of(plain)}:" in msg and f":{line_of(atomic)}:" in msg
    assert "a plain access against an atomic one" in msg


def test_plain_write_against_atomics():
    out = np.zeros(1)
    err = checked(lambda: zero_then_add[1, 4](out, np.ones(4)))
    _plain_vs_atomic(err, "# RACY-ZERO:", "# RACY-ZERO-ADD", "write")
    assert err.array == "out" and err.index == "0"


def test_plain_read_of_a_sum_being_added_to():
    err = checked(lambda: read_partial_sum[1, 4](np.zeros(1), np.ones(4), np.zeros(4)))
    _plain_vs_atomic(err, "# RACY-PARTIAL:", "# RACY-PARTIAL-ADD", "read")


def test_zeroing_against_neighbours_atomic_adds():
    err = checked(lambda: zero_under_neighbours_adds[1, 4](np.zeros(4), np.ones(4)))
    _plain_vs_atomic(err, "# RACY-NEIGHBOUR-ZERO", "# RACY-NEIGHBOUR-ADD", "write")
    assert err.array == "d" and err.index == "1"  # thread 0 adds into it, thread 1 zeroes it


def test_a_barrier_does_not_order_other_blocks_atomics():
    assert checked(lambda: zero_block0_then_add[1, 4](np.zeros(1), np.ones(4))) is None
    err = checked(lambda: zero_block0_then_add[2, 4](np.zeros(1), np.ones(8)))
    assert err is not None and f":{line_of('# RACY-ACROSS-BLOCKS')}:" in str(err)
    assert "block (1, 0, 0)" in str(err) and "atomic add" in str(err)

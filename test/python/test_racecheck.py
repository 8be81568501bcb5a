"""The data-race detector of host launches (`with dg.racecheck():`,
DIFFGPU_RACECHECK=1): racy kernels raise dg.RaceError naming the array, the
element, both threads and both source lines; race-free kernels (atomics,
barriers, disjoint writes, reads only...) run as usual, with the same
results as the unchecked program."""
import os
import subprocess
import sys

import numpy as np
import pytest

import diffgpu as dg
from diffgpu.launch import STATS

HERE = os.path.abspath(__file__)


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
    with open(HERE) as f:
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


def test_loss_without_atomic_forward_and_details():
    x = np.arange(8, dtype=np.float32)
    out = np.zeros(1, np.float32)
    err = checked(lambda: loss_no_atomic[2, 4](x, out))
    assert err is not None
    msg = str(err)
    line = line_of("# RACY-LOSS")
    assert f"{HERE}:{line}:" in msg and "out[0] += x[i] * x[i]" in msg
    assert "data race on out[0] (global memory)" in msg
    assert "write by block (0, 0, 0) thread (0, 0, 0)" in msg
    assert "read by block (0, 0, 0) thread (1, 0, 0)" in msg
    assert err.array == "out" and err.index == "0"
    assert out[0] == np.sum(x * x)  # the launch ran to its end


def test_write_write():
    err = checked(lambda: write_write[1, 4](np.ones(4), np.zeros(1)))
    assert err is not None and "data race on y[0]" in str(err)
    assert str(err).count(f"{HERE}:{line_of('# RACY-WW')}:") == 2
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
    assert f"data race on s[1] (shared memory, allocated at {HERE}:" in msg
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


def _same_as_unchecked(kernel, grid, block, make):
    ref = make()
    kernel[grid, block](*ref)
    args = make()
    assert checked(lambda: kernel[grid, block](*args)) is None
    for a, b in zip(args, ref):
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b)


RACE_FREE = [
    (atomic_sum, 2, 4, lambda: [np.arange(8.0), np.zeros(1)]),
    (atomic_hist, 2, 4, lambda: [np.arange(8.0), np.zeros(3)]),
    (scale, 3, 4, lambda: [np.arange(10.0), np.zeros(10)]),
    (broadcast_read, 2, 4, lambda: [np.full(1, 3.0), np.arange(8.0), np.zeros(8)]),
    (stencil, 2, 4, lambda: [np.arange(9.0), np.zeros(8)]),
    (own_element_updates, 2, 4, lambda: [np.arange(8.0)]),
    (shared_reverse, 2, 8, lambda: [np.arange(16.0), np.zeros(16)]),
    (shared_tree_sum, 2, 8, lambda: [np.arange(16.0), np.zeros(2)]),
    (loop_two_barriers, 1, 8, lambda: [np.arange(8.0), np.zeros(8), 3]),
    (per_thread_slot, 1, 4, lambda: [np.arange(4.0), np.zeros(4)]),
]


@pytest.mark.parametrize("kernel,grid,block,make", RACE_FREE,
                         ids=[c[0].name for c in RACE_FREE])
def test_race_free(kernel, grid, block, make):
    _same_as_unchecked(kernel, grid, block, make)


def test_race_free_gradients():
    x, w, y = np.full(1, 3.0), np.arange(8.0), np.zeros(8)
    dx, dw, dy = np.zeros(1), np.zeros(8), np.ones(8)
    acts = (dg.Duplicated(x, dx), dg.Duplicated(w, dw), dg.Duplicated(y, dy))
    assert checked(lambda: dg.autodiff(broadcast_read[2, 4], *acts)) is None
    assert dx[0] == np.sum(w) and np.all(dw == 3.0)
    xs, dxs = np.arange(16.0), np.zeros(16)
    assert checked(lambda: dg.autodiff(shared_reverse[2, 8], dg.Duplicated(xs, dxs),
                                       dg.Duplicated(np.zeros(16), np.ones(16)))) is None
    assert np.all(dxs == 1.0)
    assert checked(lambda: dg.fwddiff(stencil[2, 4], dg.Duplicated(np.arange(9.0),
                                                                   np.ones(9)),
                                      dg.Duplicated(np.zeros(8), np.zeros(8)))) is None


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


def test_racecheck_rejects_non_bool():
    with pytest.raises(TypeError):
        with dg.racecheck("yes"):
            pass


def test_environment_variable(tmp_path):
    script = tmp_path / "k.py"
    script.write_text(
        "import numpy as np, diffgpu as dg\n"
        "@dg.kernel\n"
        "def k(x, out):\n"
        "    i = dg.global_id(0)\n"
        "    out[0] += x[i]\n"
        "try:\n"
        "    k[1, 4](np.ones(4), np.zeros(1))\n"
        "    print('NO RACE')\n"
        "except dg.RaceError as e:\n"
        "    print('RACE', e.array)\n")
    env = dict(os.environ, DIFFGPU_RACECHECK="1")
    repo = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
    env["PYTHONPATH"] = os.path.join(repo, "python") + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         env=env, timeout=120)
    assert "RACE out" in out.stdout, out.stdout + out.stderr
    env["DIFFGPU_RACECHECK"] = "0"
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         env=env, timeout=120)
    assert "NO RACE" in out.stdout, out.stdout + out.stderr


def _corpus():
    sys.path.insert(0, os.path.dirname(HERE))
    from kernels_corpus import CASES
    return CASES


@pytest.mark.parametrize("case", _corpus(), ids=[c.name for c in _corpus()])
def test_corpus_is_race_free_and_unchanged(case):
    """No false alarm on the 50 race-free kernels of the corpus, and the
    checked program computes what the reference does."""
    args = case.make(np.float64, np)
    expected = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    case.ref(*expected)
    err = checked(lambda: case.kernel[case.grid, case.block](*args))
    assert err is None, str(err)
    for got, want in zip(args, expected):
        if isinstance(got, np.ndarray):
            np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-11)


def test_interrupting_a_checked_launch(tmp_path):
    """Ctrl-C stops a race-checked launch too; the next checked launch
    reports its race."""
    script = tmp_path / "k.py"
    script.write_text(
        "import os, signal, threading, numpy as np, diffgpu as dg\n"
        "@dg.kernel\n"
        "def spin(x, out):\n"
        "    i = dg.global_id(0)\n"
        "    while x[i] < 1.0:\n"
        "        out[0] += 1.0\n"
        "    out[0] += x[i]\n"
        "x = np.zeros(4); out = np.zeros(1)\n"
        "with dg.racecheck():\n"
        "    try:\n"
        "        spin[1, 4](np.full(4, 2.0), out)  # compiled before the timer starts\n"
        "    except dg.RaceError:\n"
        "        pass\n"
        "    threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT)).start()\n"
        "    try:\n"
        "        spin[1, 4](x, out)\n"
        "    except KeyboardInterrupt:\n"
        "        print('INTERRUPTED')\n"
        "    try:\n"
        "        spin[1, 4](np.full(4, 2.0), out)\n"
        "    except dg.RaceError as e:\n"
        "        print('RACE', e.array, e.index)\n")
    repo = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(repo, "python") + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         env=env, timeout=120)
    assert "INTERRUPTED" in out.stdout and "RACE out 0" in out.stdout, out.stdout + out.stderr


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


@dg.kernel
def grid_2d_race(out):
    # every thread of the 2-D grid writes out[0]
    out[0] = dg.thread_id(0) + 10 * dg.thread_id(1) + 100 * dg.block_id(1)  # RACY-2DGRID


def test_2d_geometry_in_report():
    err = checked(lambda: grid_2d_race[(1, 2), (2, 3)](np.zeros(1)))
    assert err is not None
    msg = str(err)
    # the first two threads in emulation order: thread (0, 0, 0) then (1, 0, 0)
    assert "write by block (0, 0, 0) thread (0, 0, 0)" in msg
    assert "write by block (0, 0, 0) thread (1, 0, 0)" in msg
    assert "(11 racing accesses in all)" in msg  # 12 writes: each after the first


@dg.kernel
def atomic_then_plain(out, x):
    i = dg.global_id(0)
    dg.atomic_add(out, 0, x[i])
    if i == 0:
        x[1] = 0.0  # RACY-AFTER-ATOMIC: thread 1 reads x[1]


def test_atomics_are_not_checked_plain_accesses_still_are():
    err = checked(lambda: atomic_then_plain[1, 4](np.zeros(1), np.ones(4)))
    assert err is not None and "data race on x[1]" in str(err)
    assert f":{line_of('# RACY-AFTER-ATOMIC')}:" in str(err)

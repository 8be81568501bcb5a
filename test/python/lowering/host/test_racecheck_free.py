"""The data-race detector raises no false alarm: race-free kernels
(atomics, barriers, disjoint writes, reads only, a barrier between a plain
write and the block's atomics, the whole kernel corpus)
run as usual under `dg.racecheck()`, with the same results as the unchecked
program; gradients too. And its switches: DIFFGPU_RACECHECK=1, a non-bool
argument, Ctrl-C during a checked launch. Racy kernels: test_racecheck.py."""
import os
import subprocess
import sys

import numpy as np
import pytest

import diffgpu as dg
from racecheck_kernels import (atomic_hist, atomic_sum, broadcast_read, checked,
                               loop_two_barriers, own_element_then_atomic, own_element_updates,
                               per_thread_slot, scale, shared_histogram, shared_reverse,
                               shared_tree_sum, stencil, zero_barrier_add)
from test_interrupt import SIGINT_DEFAULT

HERE = os.path.abspath(__file__)


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
    (zero_barrier_add, 2, 4, lambda: [np.full(2, 5.0), np.arange(8.0)]),
    (shared_histogram, 2, 4, lambda: [np.arange(8.0), np.zeros(4)]),
    (own_element_then_atomic, 2, 4, lambda: [np.arange(8.0), np.zeros(8)]),
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
        SIGINT_DEFAULT +
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

"""tape.capture(): the recorded program and its reverse replayed as one
object. On the host its launch() makes the same calls as recording and
tape.gradient, so this checks the replay itself (versions copied into the
arrays kept at recording, fixed result arrays); on a GPU the same calls are
captured into a CUDA graph (the GPU test skips without one)."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import numpy as np
import pytest

import diffgpu as dg

sys.path.insert(0, os.path.dirname(__file__))
import tape_programs as P  # noqa: E402


def _program(x0, k, x, v, f, loss, steps=6):
    dg.copy(x, x0)          # the program sets its own start: a replay starts over
    dg.fill(v, 0.0)
    for _ in range(steps):
        P.spring_force[1, P.B](f, x, k)
        P.integrate[1, P.B](x, v, f, 0.05)
    dg.fill(loss, 0.0)
    P.sq_loss[1, P.B](x, loss)


def _arrays(xp=np, n=10, seed=0):
    rng = np.random.default_rng(seed)
    x0 = xp.asarray(np.arange(n) * 1.1 + rng.uniform(0, 0.1, n))
    k = xp.asarray(rng.uniform(0.5, 1.5, n))
    return x0, k, xp.zeros(n), xp.zeros(n), xp.zeros(n), xp.zeros(1)


def _fresh_gradient(x0, k):
    a = [np.array(t, copy=True) for t in _arrays()]
    a[0][...] = x0
    a[1][...] = k
    with dg.Tape() as tape:
        _program(*a)
    return tape.gradient(a[5], wrt=[a[0], a[1]])


def test_captured_replay_on_the_host_follows_input_updates():
    x0, k, x, v, f, loss = _arrays()
    with dg.Tape() as tape:
        _program(x0, k, x, v, f, loss)
    want = tape.gradient(loss, wrt=[x0, k])
    graph = tape.capture(loss, wrt=[x0, k])
    g1 = graph.launch()
    assert all(np.array_equal(a, b) for a, b in zip(g1, want))
    same = graph.gradients
    for step in range(3):   # an optimiser updating k and x0 in place
        k -= 0.05 * same[1]
        x0 -= 0.01 * same[0]
        got = graph.launch()
        assert got[0] is same[0] and got[1] is same[1]   # rewritten in place
        ref = _fresh_gradient(x0, k)
        assert all(np.array_equal(a, b) for a, b in zip(got, ref)), step
    assert graph.launches == 4


def test_capture_refuses_checkpointed_tapes():
    x0, k, x, v, f, loss = _arrays()
    with dg.Tape(checkpoints=2) as tape:
        _program(x0, k, x, v, f, loss)
    with pytest.raises(dg.TapeError, match="checkpointed tape.*cannot be captured"):
        tape.capture(loss, wrt=[x0])


REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
HAS_MLIR = importlib.util.find_spec("mlir") is not None
#: where `scripts/gpu_tape_check.py --prepare DIR` compiled the tape programs
CHECK_DIR = os.environ.get("DIFFGPU_TAPE_CHECK_DIR", os.path.join(REPO, ".gputape"))


def _gpu_cache(monkeypatch):
    """Without MLIR (the GPU machine) the programs come from CHECK_DIR."""
    if not HAS_MLIR:
        if not os.path.isdir(os.path.join(CHECK_DIR, "cache")):
            pytest.skip(f"no MLIR and no prepared cache in {CHECK_DIR} "
                        "(scripts/gpu_tape_check.py --prepare)")
        monkeypatch.setenv("DIFFGPU_CACHE_DIR", os.path.join(CHECK_DIR, "cache"))


@pytest.mark.gpu
def test_gpu_tape_check(monkeypatch):
    """scripts/gpu_tape_check.py --run on the prepared directory: every
    program of tape_programs.py on CuPy arrays against the CPU's gradients."""
    if not os.path.isfile(os.path.join(CHECK_DIR, "expected.npz")):
        pytest.skip(f"no prepared {CHECK_DIR} (scripts/gpu_tape_check.py --prepare)")
    res = subprocess.run([sys.executable, os.path.join(REPO, "scripts", "gpu_tape_check.py"),
                          "--run", CHECK_DIR], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-4000:]


@pytest.mark.gpu
def test_captured_graph_on_the_gpu(monkeypatch):
    import cupy as cp

    _gpu_cache(monkeypatch)
    host = _arrays()
    dev = [cp.asarray(a) for a in host]
    with dg.Tape() as tape:
        _program(*dev)
    want = tape.gradient(dev[5], wrt=[dev[0], dev[1]])
    graph = tape.capture(dev[5], wrt=[dev[0], dev[1]])
    for _ in range(3):
        got = graph.launch()
        graph.synchronize()
        for a, b in zip(got, want):
            np.testing.assert_allclose(cp.asnumpy(a), cp.asnumpy(b), rtol=1e-12)
    assert graph.graph is not None

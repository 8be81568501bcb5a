"""A derivative's heap tape that cannot grow, inside a graph of
`tape.capture`: the replay that overflowed raises the LaunchError before it
returns gradients, and a graph without a watched program reads nothing.

On the host a replay makes the recorded calls again, and each launch reads
its flag (runtime/cpu.py); DIFFGPU_TAPE_CAP_WORDS makes the tape's buffer
fail. On a GPU the flags of the graph's watched programs are copied to a
pinned host buffer by the graph's last nodes and read after one
synchronisation (runtime/graph_flags.py): checked on the CuPy stand-in
(standin_devices.py), whose graphs keep the kernel launches and the flag
copies as nodes and run them at each replay, and whose `overflow` makes a
launch of a module with the flag set it, as a thread whose tape could not
grow does. On a GPU: scripts/gpu_overflow_capture.py
(`--prepare DIR` here, `--run DIR` there); its `--cpu-smoke` runs here.
"""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import diffgpu as dg
from diffgpu import switches

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "bench"))
import standin_devices  # noqa: E402
import tape as TB  # noqa: E402  (bench/tape.py: the heat program, no heap tape)
sys.path.insert(0, os.path.join(HERE, ".."))
from kernels_loop_tapes import spin  # noqa: E402  (while t < n[i]: trip counts from an array, no formula)

T = 64  # threads, one block




def _forget(*kernels):
    """Drop what the kernels compiled and planned (the cap and the stand-in
    change programs: none may serve another test)."""
    for k in kernels:
        k._programs.clear()
        for name in ("_fast", "_tape_plans", "_plans"):
            k.__dict__.pop(name, None)


@pytest.fixture(autouse=True)
def _fresh_spin():
    _forget(spin)
    yield
    _forget(spin)


def _inputs(xp, trips, seed=0):
    x = np.random.default_rng(seed).uniform(-1, 1, T)
    return (xp(np.zeros(T)), xp(np.zeros(T)), xp(np.zeros(T)), xp(x),
            xp(np.full(T, trips, np.int32)))


def _chain(a, b, c, x, n):
    """Three launches of one program: out a, then b from a, then c from b."""
    spin[1, T](a, x, n)
    spin[1, T](b, a, n)
    spin[1, T](c, b, n)


def _reference(x, trips):
    """d c / d x of `_chain` by the chain rule, float64 numpy."""
    s, ds = np.asarray(x, float).copy(), np.ones(T)
    for _ in range(3):
        inp, dinp = s.copy(), ds.copy()
        for _ in range(trips):
            s, ds = np.sin(s) * 0.9 + 0.1 * inp, np.cos(s) * 0.9 * ds + 0.1 * dinp
    return ds


def test_a_host_replay_that_overflows_raises_and_the_next_is_right(monkeypatch):
    """The trip counts are an array the graph reads at each replay: raised
    in place past the cap, that replay is the LaunchError; lowered again,
    the next replay's gradient is right (the flag was cleared)."""
    monkeypatch.setenv(switches.TAPE_CAP, "256")  # 200 trips: one buffer of 256; 300: 512
    a, b, c, x, n = _inputs(np.asarray, 200)
    with dg.Tape() as tape:
        _chain(a, b, c, x, n)
    graph = tape.capture(c, wrt=[x], cotangents=[np.ones(T)])
    (g,) = graph.launch()
    assert np.allclose(g, _reference(x, 200))
    n[...] = 300
    with pytest.raises(dg.LaunchError) as e:
        graph.launch()
    assert str(e.value).startswith("kernel 'spin': its derivative's tape outgrew the heap's "
                                   "test cap"), e.value
    assert "needed a buffer of 512 words" in str(e.value)
    assert graph.launches == 1  # the failed replay is not counted as one
    n[...] = 150
    (g,) = graph.launch()
    assert np.allclose(g, _reference(x, 150)) and graph.launches == 2


@pytest.fixture
def devices(monkeypatch):
    dev = standin_devices.install(monkeypatch)
    yield dev
    sys.modules.pop("cupy", None)


def _captured(dev, trips=300):
    """The spin chain recorded on stand-in arrays and its graph, launched
    once (eagerly, then captured)."""
    a, b, c, x, n = _inputs(dev.array, trips)
    with dg.Tape() as tape:
        _chain(a, b, c, x, n)
    graph = tape.capture(c, wrt=[x], cotangents=[dev.array(np.ones(T))])
    graph.launch()
    assert graph.graph is not None
    return graph


def _since(dev, at, *kinds):
    return tuple(dev.counts[k] - at[k] for k in kinds)


def test_a_replay_that_overflows_raises_at_the_replay(devices):
    """Three launches of one watched program in the forward, three reverse
    launches of its derivative: the graph ends with one flag copy (the
    derivative's module; a launch that fits never clears the flag, so one
    read sees all six), each replay waits once and copies nothing more, and
    the replay whose launches overflow raises, names the kernel, clears the
    flag; the replay after it runs as usual."""
    graph = _captured(devices)
    assert len(graph.flags.flags) == 1
    assert devices.captured["kernel"] == 6 and devices.captured["readback"] == 1
    assert devices.captured["pinned"] == 0  # allocated before the capture
    for _ in range(2):
        at = devices.snapshot()
        graph.launch()
        assert _since(devices, at, "sync", "readback", "flag clear", "pinned") == (1, 0, 0, 0)
    devices.overflow = 1 << 21
    at = devices.snapshot()
    with pytest.raises(dg.LaunchError) as e:
        graph.launch()
    msg = str(e.value)
    assert msg.startswith("kernel 'spin': its derivative's tape outgrew the GPU's malloc "
                          "heap of 1073741824 bytes"), msg
    assert f"needed a buffer of {1 << 21} words" in msg, msg
    # the wait, the readback by the graph's node, the clear and its wait
    assert _since(devices, at, "sync", "readback", "flag clear") == (2, 0, 1)
    (_, _, ptr), = graph.flags.flags
    assert ptr.word[0] == 0 and not graph.flags.words.any()
    assert graph.launches == 3
    devices.overflow = 0
    at = devices.snapshot()
    graph.launch()
    assert _since(devices, at, "sync", "flag clear") == (1, 0) and graph.launches == 4


def test_an_overflow_before_the_capture_raises_at_that_launch(devices):
    """The first launch runs eagerly: its watched launches read their flags
    themselves (one sync each), and the overflow is raised there; nothing
    was captured, and the next launch captures."""
    a, b, c, x, n = _inputs(devices.array, 300)
    with dg.Tape() as tape:
        _chain(a, b, c, x, n)
    graph = tape.capture(c, wrt=[x], cotangents=[devices.array(np.ones(T))])
    devices.overflow = 4096
    with pytest.raises(dg.LaunchError, match="kernel 'spin.*needed a buffer of 4096 words"):
        graph.launch()
    assert graph.graph is None and devices.captured is None
    devices.overflow = 0
    graph.launch()
    assert graph.graph is not None and devices.captured["readback"] == 1


def test_a_graph_without_watched_programs_reads_nothing(devices):
    """bench/tape.py's heat program (no heap tape): no flag in the graph,
    no pinned buffer, and a replay neither waits nor reads."""
    a = {k: devices.array(v) for k, v in TB.inputs("heat", 256, np).items()}
    tape, wrt = TB.taped("heat", a, 4)
    graph = tape.capture(a["loss"], wrt=wrt)
    at = devices.snapshot()
    graph.launch()
    assert graph.graph is not None and graph.flags is None
    assert devices.captured["readback"] == 0
    assert _since(devices, at, "pinned", "readback") == (0, 0)
    at = devices.snapshot()
    for _ in range(3):
        graph.launch()
    assert _since(devices, at, "sync", "readback", "flag clear", "kernel") == (0, 0, 0, 0)


def test_a_capture_that_fails_keeps_no_graph(devices, monkeypatch):
    """An error while capturing ends the capture and drops its graph: the
    next launch starts over (eagerly), it never replays a partial graph."""
    from diffgpu.hostdiff.tape import graphs

    a, b, c, x, n = _inputs(devices.array, 300)
    with dg.Tape() as tape:
        _chain(a, b, c, x, n)
    graph = tape.capture(c, wrt=[x], cotangents=[devices.array(np.ones(T))])
    real = graphs.TapeGraph._run

    def failing(self):
        if devices.capturing is not None:
            raise RuntimeError("stand-in: the capture failed")
        real(self)
    monkeypatch.setattr(graphs.TapeGraph, "_run", failing)
    with pytest.raises(RuntimeError, match="the capture failed"):
        graph.launch()
    assert graph.graph is None and graph.flags is None and devices.capturing is None
    monkeypatch.setattr(graphs.TapeGraph, "_run", real)
    graph.launch()
    assert graph.graph is not None and len(graph.flags.flags) == 1


def test_the_gpu_script_runs_its_steps_on_the_cpu():
    """gpu_overflow_capture.py --cpu-smoke: the --run steps on numpy with
    the cap (200 trips fit, 300 overflow), in a process of its own."""
    script = os.path.join(HERE, "..", "..", "..", "scripts", "gpu_overflow_capture.py")
    env = {k: v for k, v in os.environ.items() if k != switches.TAPE_CAP}
    res = subprocess.run([sys.executable, script, "--cpu-smoke"], capture_output=True,
                         text=True, env=env, timeout=600)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    rows = [line.split("  ")[0] for line in res.stdout.splitlines()]
    assert rows == ["1 eager + capture", "2 two replays", "3 overflowing replay",
                    "4 replay after it"], res.stdout
    assert "LaunchError: kernel 'spin': its derivative's tape outgrew the heap's test cap" \
        in res.stdout

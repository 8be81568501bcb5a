#!/usr/bin/env python3
"""A heap-tape overflow inside a CUDA graph of `tape.capture`, on a GPU:
the replay that overflowed raises, and a graph without a watched program
reads nothing.

    python scripts/gpu_overflow_capture.py --prepare DIR [--chip sm_90]   # here (MLIR, no GPU)
    python scripts/gpu_overflow_capture.py --run DIR                      # on the GPU (numpy + CuPy)
    python scripts/gpu_overflow_capture.py --cpu-smoke                    # here: the same steps on numpy

The program: `spin[4, 256](out, x, n)` (test/python/kernels_loop_tapes.py):
a `while` loop whose trip counts are read from the int32 array `n`, so its
derivative's heap tape has no formula of the launch and its program is
watched (runtime/gpu.py `watch_tape`). Recorded with `dg.Tape` at 300 trips
a thread (one heap buffer of 512 words: malloc is used and succeeds), then
captured; `--run` checks, printing one row each and exiting 1 on a failure:

1. `graph.launch()` (eager, then captured): the gradient against the CPU's
   (saved by --prepare), the graph holds one flag copy (`graph.flags`);
2. two replays: the gradient against the CPU's, each replay one wait;
3. `n[...] = 2**21` in place (1,024 threads of 16 MiB buffers, far over the
   1 GiB heap): the replay raises `dg.LaunchError` naming `spin` and the
   GPU's malloc heap; the device flag reads 0 afterwards;
4. `n[...] = 300`: the next replay's gradient is the CPU's again;
5. bench/tape.py's `heat` (no heap tape) captured: `graph.flags` is None
   (no flag copy, no wait), its gradient against float64 numpy.

It also prints the host time of a replay of the spin graph (it waits) and
of the heat graph (it does not). `--run` blocks the import of MLIR: the
programs come from DIR/cache, compiled by `--prepare` (bench/tape.py
`compile_programs`: every program the same calls select, generic and with
the GPU's launch facts). `--cpu-smoke` runs steps 1 to 4 on numpy with
DIFFGPU_TAPE_CAP_WORDS=256 (200 trips fit, 300 overflow).
"""
from __future__ import annotations

import os
import sys
import time
import traceback

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if __name__ == "__main__" and "--run" in sys.argv:
    sys.modules["mlir"] = None  # the GPU run must not need MLIR: prove it
sys.path.insert(0, os.path.join(REPO, "scripts"))
import repo_imports  # noqa: E402

repo_imports.bootstrap()
sys.path.insert(0, os.path.join(REPO, "test", "python"))
sys.path.insert(0, os.path.join(REPO, "bench"))
import numpy as np  # noqa: E402

import diffgpu as dg  # noqa: E402
import tape as TB  # noqa: E402  (bench/tape.py: the heat program, compile_programs)
from kernels_loop_tapes import spin  # noqa: E402

GRID, BLOCK = 4, 256
THREADS = GRID * BLOCK
TRIPS, BIG = 300, 1 << 21
HEAT_N, HEAT_STEPS = 1 << 16, 4


def _spin_graph(xp, trips):
    """spin recorded at `trips` trips a thread and captured: (graph, n)."""
    x = xp.asarray(np.random.default_rng(0).uniform(-1, 1, THREADS))
    out, n = xp.zeros(THREADS), xp.asarray(np.full(THREADS, trips, np.int32))
    with dg.Tape() as tape:
        spin[GRID, BLOCK](out, x, n)
    return tape.capture(out, wrt=[x], cotangents=[xp.ones(THREADS)]), n


def _heat_graph(xp):
    a = TB.inputs("heat", HEAT_N, xp)
    tape, wrt = TB.taped("heat", a, HEAT_STEPS)
    return tape.capture(a["loss"], wrt=wrt)


def _host(a):
    return np.asarray(a.get() if hasattr(a, "get") else a)


def prepare(directory: str, chip: str) -> int:
    os.makedirs(directory, exist_ok=True)
    os.environ["DIFFGPU_CACHE_DIR"] = os.path.join(os.path.abspath(directory), "cache")
    os.environ.pop("DIFFGPU_TAPE_CAP_WORDS", None)  # (part of the cache key)
    want = {}

    def run():
        graph, _ = _spin_graph(np, TRIPS)
        for _ in range(2):
            (g,) = graph.launch()
        want["spin"] = g.copy()
        heat = _heat_graph(np)
        for _ in range(2):
            heat.launch()
    count = TB.compile_programs(run, chip)
    np.savez(os.path.join(directory, "overflow_capture.npz"), **want)
    print(f"prepared gpu_overflow_capture.py: {count} programs for {chip} in {directory}")
    return 0


def steps(xp, sync, ok_trips, big, want, heap_words=None):
    """Steps 1 to 4 (module docstring); yields (row, status)."""
    graph, n = _spin_graph(xp, ok_trips)
    (g,) = graph.launch()
    sync()
    np.testing.assert_allclose(_host(g), want, rtol=1e-9, atol=1e-12)
    if xp is not np:
        assert graph.graph is not None and graph.flags is not None, "no flag in the graph"
        assert len(graph.flags.flags) == 1, f"{len(graph.flags.flags)} flags, want 1"
    yield "1 eager + capture", "gradient ok" + (", 1 flag copy in the graph" if xp is not np
                                                 else "")
    checks = []
    if xp is not np:  # count the replays' waits
        real = graph.flags.check
        graph.flags.check = lambda stream: checks.append(1) or real(stream)
    for _ in range(2):
        (g,) = graph.launch()
        np.testing.assert_allclose(_host(g), want, rtol=1e-9, atol=1e-12)
    yield "2 two replays", f"gradient ok, flag reads {len(checks)}"
    n[...] = big
    try:
        graph.launch()
        raise AssertionError("the overflowing replay raised nothing")
    except dg.LaunchError as e:
        msg = str(e)
        assert msg.startswith("kernel 'spin"), msg
        # on a GPU the words of the first buffer malloc refused depend on the race
        # for the heap; the CPU's cap refuses the buffer after 256 words: 512
        assert (f"needed a buffer of {heap_words} words" if heap_words else
                "outgrew the GPU's malloc heap") in msg, msg
    if xp is not np:  # the flag was cleared (read as runtime/gpu.py check_tape does)
        ptr, word = graph.flags.flags[0][2], np.zeros(1, np.int64)
        ptr.copy_to_host_async(word.ctypes.data, 8, xp.cuda.get_current_stream())
        sync()
        assert word[0] == 0, f"the flag was left at {word[0]}"
    yield "3 overflowing replay", f"LaunchError: {msg[:110]}..."
    n[...] = ok_trips
    (g,) = graph.launch()
    np.testing.assert_allclose(_host(g), want, rtol=1e-9, atol=1e-12)
    yield "4 replay after it", "gradient ok"
    if xp is not np:
        yield "  replay host ms", f"spin graph (waits): {_replay_ms(graph, sync):.4f}"


def _replay_ms(graph, sync, count=50) -> float:
    graph.launch()
    sync()
    t0 = time.perf_counter()
    for _ in range(count):
        graph.launch()
    sync()
    return (time.perf_counter() - t0) / count * 1e3


def run(directory: str) -> int:
    os.environ["DIFFGPU_CACHE_DIR"] = os.path.join(os.path.abspath(directory), "cache")
    import cupy as cp
    want = dict(np.load(os.path.join(directory, "overflow_capture.npz")))
    sync = cp.cuda.get_current_stream().synchronize
    rows, bad = [], 0
    it = steps(cp, sync, TRIPS, BIG, want["spin"])
    try:
        for row in it:
            rows.append(row)
            print(*row, sep="  ", flush=True)
    except Exception as e:  # noqa: BLE001  (reported)
        bad += 1
        traceback.print_exc()
        rows.append(("spin", f"FAIL {type(e).__name__}: {str(e)[:200]}"))
    try:
        heat = _heat_graph(cp)
        got = heat.launch()
        sync()
        assert heat.graph is not None and heat.flags is None, "the heat graph reads flags"
        for _ in range(2):
            got = heat.launch()
        sync()
        TB.check_reference("heat graph", got,
                           TB.reference("heat", TB.inputs("heat", HEAT_N, np), HEAT_STEPS))
        rows.append(("5 heat graph", "no flag, gradient ok, host ms per replay (no wait) "
                     f"{_replay_ms(heat, sync):.4f}"))
    except Exception as e:  # noqa: BLE001
        bad += 1
        traceback.print_exc()
        rows.append(("5 heat graph", f"FAIL {type(e).__name__}: {str(e)[:200]}"))
    print()
    for name, status in rows:
        print(f"  {name:24} {status}")
    print("FAILED" if bad else "all passed")
    return 1 if bad else 0


def cpu_smoke() -> int:
    os.environ["DIFFGPU_TAPE_CAP_WORDS"] = "256"
    graph, _ = _spin_graph(np, 200)
    (want,) = graph.launch()
    for row in steps(np, lambda: None, 200, 300, want.copy(), 512):
        print(*row, sep="  ")
    return 0


def main(argv=None) -> int:
    from benchlib import prepare_run  # bench/benchlib.py
    return prepare_run(__doc__, prepare, run, argv, cpu_smoke=cpu_smoke)


if __name__ == "__main__":
    sys.exit(main())

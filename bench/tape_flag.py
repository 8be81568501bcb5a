#!/usr/bin/env python3
"""What reading a heap tape's overflow flag after each launch costs on a GPU.

    python bench/tape_flag.py --cpu-smoke         # here: the same calls on numpy, a table
    python bench/tape_flag.py --prepare DIR       # here: compile what --run needs for sm_90
    python bench/tape_flag.py --run DIR           # on the GPU (numpy + CuPy, no MLIR)

A derivative whose tape has no formula of the launch (here a `while` loop
whose trip counts are read from an array) is watched: after each launch
runtime/gpu.py `GpuProgram.check_tape` copies the 8-byte flag
`@__dg_tape_overflow` to the host on the launch's stream and waits for it
(docs/autodiff.md, "A tape larger than the heap"). Each row times the same
calls with the read (watch on) and without it (watch off: a second process
in which `GpuProgram.watch_tape` does nothing), in ms per call, median of 5
rounds:

| row           | what is timed                                                        |
|---------------|----------------------------------------------------------------------|
| dg.autodiff   | host-level `dg.autodiff(spin[4, 256], ...)`, 200 calls (it returns gradients) |
| kernel launch | `spin_grad[4, 256](...)` (dg.autodiff inside a kernel), 1,000 launches, one sync at the end |

1,024 threads, 300 taped words each (one heap buffer of 512 words): no
overflow, so the rows measure the read alone. The kernel launch row is the
worst case: without the read the launches queue asynchronously, with it
each one waits for the GPU.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if __name__ == "__main__" and ("--run" in sys.argv or "--run-one" in sys.argv):
    sys.modules["mlir"] = None  # the GPU run must not need MLIR: prove it
sys.path.insert(0, os.path.join(REPO, "scripts"))
import repo_imports  # noqa: E402

repo_imports.bootstrap()
import numpy as np  # noqa: E402

import diffgpu as dg  # noqa: E402

sys.path.insert(0, os.path.join(REPO, "test", "python"))
from kernels_loop_tapes import spin, spin_grad  # noqa: E402

THREADS, TRIPS, GRID, BLOCK = 1024, 300, 4, 256
ROUNDS = {"dg.autodiff": 200, "kernel launch": 1000}


def _arrays(xp):
    x = xp.asarray(np.random.default_rng(0).uniform(-1, 1, THREADS))
    return (xp.zeros(THREADS), xp.ones(THREADS), x, xp.zeros(THREADS),
            xp.full(THREADS, TRIPS, np.int32))


def _calls(xp):
    out, dout, x, dx, n = _arrays(xp)

    def autodiff():
        dout[...] = 1
        dg.autodiff(spin[GRID, BLOCK], dg.Duplicated(out, dout), dg.Duplicated(x, dx), n)

    def launch():
        spin_grad[GRID, BLOCK](out, dout, x, dx, n)
    return {"dg.autodiff": autodiff, "kernel launch": launch}


def _time(fn, count, sync) -> float:
    fn()
    sync()
    ts = []
    for _ in range(5):
        sync()
        t0 = time.perf_counter()
        for _ in range(count):
            fn()
        sync()
        ts.append((time.perf_counter() - t0) / count * 1e3)
    return sorted(ts)[2]


def measure(xp, sync, rounds) -> dict:
    return {name: _time(fn, rounds[name], sync) for name, fn in _calls(xp).items()}


def _table(rows) -> None:
    print(f"{'row':14s} {'watch on':>10s} {'watch off':>10s}   (ms per call, median of 5)")
    for name, (on, off) in rows.items():
        print(f"{name:14s} {on:10.4f} {off:10.4f}")


def prepare(path: str, chip: str = "sm_90") -> None:
    """The programs of both rows for `chip`, from the same calls on numpy
    arrays (interop.compile_only), into DIR/cache."""
    from diffgpu.interop import compile_only
    os.environ["DIFFGPU_CACHE_DIR"] = os.path.join(os.path.abspath(path), "cache")
    with compile_only(chip):
        for fn in _calls(np).values():
            fn()
    print(f"prepared bench/tape_flag.py's programs for {chip} in {path}")


def run_one(path: str, watch: bool) -> dict:
    import cupy
    from diffgpu.runtime import gpu
    os.environ["DIFFGPU_CACHE_DIR"] = os.path.join(os.path.abspath(path), "cache")
    if not watch:
        gpu.GpuProgram.watch_tape = lambda self: None
    sync = cupy.cuda.get_current_stream().synchronize
    return measure(cupy, sync, ROUNDS)


def run(path: str) -> int:
    """Each setting in a process of its own (a program keeps its setting)."""
    got = {}
    for watch in ("on", "off"):
        out = subprocess.run([sys.executable, __file__, "--run-one", path, watch],
                             check=True, capture_output=True, text=True).stdout
        got[watch] = json.loads(out.strip().splitlines()[-1])  # what run_one printed
    _table({k: (got["on"][k], got["off"][k]) for k in ROUNDS})
    return 0


def cpu_smoke() -> int:
    """The same calls on numpy, a few of each (the CPU reads its flag after
    every launch anyway: one column), and the gradient against numpy's."""
    rows = measure(np, lambda: None, {"dg.autodiff": 2, "kernel launch": 2})
    out, dout, x, dx, n = _arrays(np)
    spin_grad[GRID, BLOCK](out, dout, x, dx, n)
    s, ds = x.copy(), np.ones(THREADS)
    for _ in range(TRIPS):
        s, ds = np.sin(s) * 0.9 + 0.1 * x, np.cos(s) * 0.9 * ds + 0.1
    assert np.allclose(dx, ds), "the gradient differs from numpy's"
    _table({k: (v, float("nan")) for k, v in rows.items()})
    return 0


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--run-one"]:
        print(json.dumps(run_one(argv[1], argv[2] == "on")))
        return 0
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from benchlib import prepare_run
    return prepare_run(__doc__, prepare, run, argv, cpu_smoke=cpu_smoke)


if __name__ == "__main__":
    sys.exit(main())

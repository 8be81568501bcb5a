#!/usr/bin/env python3
"""Compile-time benchmark (CPU, no GPU needed): prints a table.

- `import diffgpu` in a fresh interpreter (goal: < 0.5 s; it must not import MLIR);
- a small kernel, and a kernel differentiating it, to PTX for sm_90, in-process
  after import and after a first warm-up compile (goal: <= 35 ms);
- the same to the host JIT (LLVM dialect + ExecutionEngine; goal: <= 100 ms);
- the compile driver alone (diffgpu.driver.compiler.compile of the frontend's text),
  which the two rows above include (they add the frontend and the cache).
Every compile uses a fresh, empty cache directory, so nothing is reused from
disk or memory; the per-thread MLIR context and pass managers are (that is
the design: compiler.py). Each row is the median of REPS compiles; the
machine's load average is printed with the table (the numbers are only
meaningful on a quiet machine).
"""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

REPS = 15


def import_time(reps: int = 5) -> float:
    code = ("import time, sys; t = time.perf_counter(); import diffgpu; "
            "d = time.perf_counter() - t; assert 'mlir' not in sys.modules; print(d)")
    out = [float(subprocess.check_output([sys.executable, "-c", code], text=True))
           for _ in range(reps)]
    return statistics.median(out)


def driver_only(kernel, sig, target, reps=REPS) -> float:
    """compiler.compile of the frontend's text (no frontend, no cache)."""
    from diffgpu.driver import compiler
    from diffgpu.driver.aot import parse_signature
    from diffgpu.driver.launch import build_module

    text = build_module(kernel, parse_signature(sig), target).text
    times = []
    for _ in range(reps):
        t, c = time.perf_counter(), time.process_time()
        compiler.compile(text, target)
        times.append((time.perf_counter() - t, time.process_time() - c))
    return _medians(times)


def _medians(times) -> tuple:
    """(median wall time, median CPU time of this process, all threads)."""
    return (statistics.median(t for t, _ in times), statistics.median(c for _, c in times))


def main() -> int:
    import diffgpu as dg

    @dg.kernel
    def f(y, x):
        i = dg.global_id(0)
        if i < len(x):
            y[i] = dg.exp(-x[i] * x[i]) * dg.sin(x[i])

    @dg.kernel
    def df(y, dy, x, dx):
        dg.autodiff(f, dg.Duplicated(y, dy), dg.Duplicated(x, dx))

    sig2, sig4 = ("float32[:]",) * 2, ("float32[:]",) * 4
    rows = [("import diffgpu (fresh process)", (import_time(), None), 0.5)]

    def fresh(kernel, sig, target, reps=REPS):
        times = []
        for _ in range(reps):
            with tempfile.TemporaryDirectory() as d:
                os.environ["DIFFGPU_CACHE_DIR"] = d
                kernel._programs.clear()  # no in-memory reuse either
                t, c = time.perf_counter(), time.process_time()
                dg.compile(kernel, sig, target=target)
                times.append((time.perf_counter() - t, time.process_time() - c))
        return _medians(times)

    fresh(f, sig2, "sm_90", reps=1)  # warm-up: loads MLIR and the dialect
    fresh(df, sig4, "host", reps=1)
    load = os.getloadavg()
    rows.append(("small kernel -> PTX sm_90", fresh(f, sig2, "sm_90"), None))
    rows.append(("kernel + its gradient -> PTX sm_90", fresh(df, sig4, "sm_90"), 0.035))
    rows.append(("small kernel -> host JIT", fresh(f, sig2, "host"), None))
    rows.append(("kernel + its gradient -> host JIT", fresh(df, sig4, "host"), 0.100))
    rows.append(("  driver only: gradient -> PTX", driver_only(df, sig4, "sm_90"), None))
    rows.append(("  driver only: gradient -> host LLVM", driver_only(df, sig4, "host"), None))

    x = np.zeros(4, np.float32)
    assert ".entry df" in df.ir(x, x, x, x, stage="ptx", target="sm_90")
    load = (load, os.getloadavg())
    print(f"load average (1, 5, 15 min) before: {' '.join(f'{x:.2f}' for x in load[0])}; "
          f"after: {' '.join(f'{x:.2f}' for x in load[1])} ({os.cpu_count()} cores); "
          f"median of {REPS}")
    print("wall: median wall-clock time; cpu: median CPU time of the process (all its "
          "threads), less sensitive to other processes on a loaded machine")
    print(f"{'what':40} {'wall ms':>8} {'cpu ms':>8} {'goal ms':>8} {'met':>4}")
    for what, (t, c), goal in rows:
        g = f"{goal * 1e3:.0f}" if goal else "-"
        met = ("yes" if t <= goal else "no") if goal else "-"
        cpu = f"{c * 1e3:8.1f}" if c is not None else f"{'-':>8}"
        print(f"{what:40} {t * 1e3:8.1f} {cpu} {g:>8} {met:>4}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

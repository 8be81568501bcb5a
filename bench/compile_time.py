#!/usr/bin/env python3
"""Compile-time benchmark (CPU, no GPU needed): prints a table.

- `import diffgpu` in a fresh interpreter (goal: < 0.5 s; it must not import MLIR);
- a small kernel, and a kernel differentiating it, to PTX for sm_90, in-process
  after import and after a first warm-up compile (goal: < 50 ms);
- the same to the host (LLVM dialect + ExecutionEngine).
Every compile uses a fresh, empty cache directory, so nothing is reused.
"""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np


def import_time(reps: int = 5) -> float:
    code = ("import time, sys; t = time.perf_counter(); import diffgpu; "
            "d = time.perf_counter() - t; assert 'mlir' not in sys.modules; print(d)")
    out = [float(subprocess.check_output([sys.executable, "-c", code], text=True))
           for _ in range(reps)]
    return statistics.median(out)


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
    rows = [("import diffgpu (fresh process)", import_time(), 0.5)]

    def fresh(kernel, sig, target, reps=7):
        times = []
        for _ in range(reps):
            with tempfile.TemporaryDirectory() as d:
                os.environ["DIFFGPU_CACHE_DIR"] = d
                kernel._programs.clear()  # no in-memory reuse either
                t = time.perf_counter()
                dg.compile(kernel, sig, target=target)
                times.append(time.perf_counter() - t)
        return statistics.median(times)

    fresh(f, sig2, "sm_90", reps=1)  # warm-up: loads MLIR and the dialect
    rows.append(("small kernel -> PTX sm_90", fresh(f, sig2, "sm_90"), 0.05))
    rows.append(("kernel + its gradient -> PTX sm_90", fresh(df, sig4, "sm_90"), 0.05))
    rows.append(("small kernel -> host JIT", fresh(f, sig2, "host"), None))
    rows.append(("kernel + its gradient -> host JIT", fresh(df, sig4, "host"), None))

    x = np.zeros(4, np.float32)
    assert ".entry df" in df.ir(x, x, x, x, stage="ptx", target="sm_90")
    print(f"{'what':40} {'median ms':>10} {'goal ms':>8} {'met':>4}")
    for what, t, goal in rows:
        g = f"{goal * 1e3:.0f}" if goal else "-"
        met = ("yes" if t <= goal else "no") if goal else "-"
        print(f"{what:40} {t * 1e3:10.1f} {g:>8} {met:>4}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

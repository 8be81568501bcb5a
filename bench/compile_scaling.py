#!/usr/bin/env python3
"""Compile time against kernel size (CPU, no GPU needed): prints a table.

The kernel is one flat sum, `Y[0] = X[0] * 1.0 + X[1] * 2.0 + ...` (term i
reads X[i % 16]), with N terms; its gradient is a kernel calling
`dg.autodiff` on it. Each row compiles once with a fresh, empty cache:

- host: the first launch (frontend, passes, LLVM JIT), primal and gradient;
- sm_90: `kernel.ir(..., stage="ptx", target="sm_90")`, primal and gradient.

The last column is the time per term relative to the smallest N: about 1
means linear. Before the fixes this table was made for, the gradient's adds
to dX each became a block sum (a barrier and a shared array); the host
lowering made one phase function per barrier taking every shared array, so
the code grew as N * N: 100 terms gave 107,000 lines of LLVM and took 19 s
to launch, 250 terms 115 s. Now diffgpu-aggregate-atomics builds at most 16
block sums per kernel, and LLVM text over 8,000 lines is JIT-compiled at
O0 (O2 is super-linear on one huge function).

    python bench/compile_scaling.py [N ...]    # default: 250 1000 2000
"""
from __future__ import annotations

import os
import sys
import tempfile
import time

import numpy as np

WIDTH = 16


def kernels(n: int, workdir: str):
    import diffgpu as dg

    terms = " + ".join(f"X[{i % WIDTH}] * {float(i + 1)!r}" for i in range(n))
    src = f"def k(Y, X):\n    Y[0] = {terms}\n"
    path = os.path.join(workdir, f"k{n}.py")
    with open(path, "w") as f:
        f.write(src)
    ns: dict = {}
    exec(compile(src, path, "exec"), ns)
    k = dg.kernel(ns["k"])

    @dg.kernel
    def grad(Y, dY, X, dX):
        dg.autodiff(k, dg.Duplicated(Y, dY), dg.Duplicated(X, dX))

    return k, grad


def timed(fn) -> tuple:
    with tempfile.TemporaryDirectory() as d:
        os.environ["DIFFGPU_CACHE_DIR"] = d
        t, c = time.perf_counter(), time.process_time()
        fn()
        return time.perf_counter() - t, time.process_time() - c


def main(sizes) -> int:
    workdir = tempfile.mkdtemp()
    y, x, dy, dx = np.zeros(1), np.arange(WIDTH, dtype=np.float64), np.ones(1), np.zeros(WIDTH)
    k0, g0 = kernels(3, workdir)  # warm-up: loads MLIR and the dialect
    timed(lambda: g0[1, 1](y, dy, x, dx))
    timed(lambda: g0.ir(y, dy, x, dx, stage="ptx", target="sm_90"))
    cases = {
        "host launch, primal": lambda k, g: k[1, 1](y, x),
        "host launch, gradient": lambda k, g: g[1, 1](y, dy.copy(), x, dx),
        "sm_90 PTX, primal": lambda k, g: k.ir(y, x, stage="ptx", target="sm_90"),
        "sm_90 PTX, gradient": lambda k, g: g.ir(y, dy, x, dx, stage="ptx", target="sm_90"),
    }
    load = os.getloadavg()
    rows = []
    for what, run in cases.items():
        base = None
        for n in sizes:
            k, g = kernels(n, workdir)
            wall, cpu = timed(lambda: run(k, g))
            base = base or cpu / n
            rows.append((what, n, wall, cpu, cpu / n / base))
            print(f"  {what} {n}: {wall:.2f} s", file=sys.stderr, flush=True)
    print(f"load average (1, 5, 15 min) before: {' '.join(f'{v:.2f}' for v in load)}; "
          f"after: {' '.join(f'{v:.2f}' for v in os.getloadavg())} ({os.cpu_count()} cores)")
    print("wall/cpu: one compile with a fresh cache; cpu/term vs first: CPU time per term "
          "relative to the smallest N (1.0 = linear)")
    print(f"{'what':24} {'terms':>6} {'wall s':>8} {'cpu s':>8} {'cpu/term vs first':>18}")
    for what, n, wall, cpu, rel in rows:
        print(f"{what:24} {n:6d} {wall:8.2f} {cpu:8.2f} {rel:18.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main([int(a) for a in sys.argv[1:]] or [250, 1000, 2000]))

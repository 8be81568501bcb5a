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

The second table is reverse mode through `dg.vjp` (host: the call, with its
compile; sm_90: the PTX of the same programs, rebuilt for the GPU):

- a chain of N statements under the thread's guard, `t_j = t_{j-1} * X[j %
  16] + sin(t_{j-2}) * c_j` (test_compile_scaling.py's), N = 1000 and 2000;
- a 7x7 convolution written out, `Y[i, j] = X[i, j] * W[0, 0] + ... +
  X[i + 6, j + 6] * W[6, 6]` (49 terms, 16x16 outputs);
- a 49-point 1-D stencil written out, `y[i] = 0.01 * x[i] + ... + 0.49 *
  x[i + 48]` (dg.vjp's gathered kind: one clone of the body per offset).

    python bench/compile_scaling.py [N ...]    # default: 250 1000 2000
    python bench/compile_scaling.py --vjp [N ...]   # the second table only (chains: 1000 2000)
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
    k = load_kernel(f"def k(Y, X):\n    Y[0] = {terms}\n", "k", workdir, f"k{n}")

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


def load_kernel(src: str, name: str, workdir: str, stem: str | None = None):
    """The kernel `name` defined by `src` (written to a file: kernels need one)."""
    import diffgpu as dg

    text = "import diffgpu as dg\n\n\n" + src
    path = os.path.join(workdir, f"{stem or name}.py")
    with open(path, "w") as f:
        f.write(text)
    ns: dict = {}
    exec(compile(text, path, "exec"), ns)
    return dg.kernel(ns[name])


def vjp_cases(workdir: str, chains) -> dict:
    """name -> (kernel, launcher args (grid, block), arguments, cotangents)."""
    rng = np.random.default_rng(0)
    out = {}
    for n in chains:
        body = "".join(f"        t{j} = t{j - 1} * X[{j % WIDTH}] + dg.sin(t{j - 2}) * "
                       f"{(0.5, 1.25, -0.75, 1.5)[j % 4]!r}\n" for j in range(2, n))
        src = (f"def chain(Y, X):\n    i = dg.global_id(0)\n    if i < len(Y):\n"
               f"        t0 = X[0]\n        t1 = X[1]\n{body}        Y[i] = t{n - 1}\n")
        out[f"chain, {n} statements"] = (load_kernel(src, "chain", workdir, f"chain{n}"), ((1,), (1,)),
                                         (np.zeros(1), rng.standard_normal(WIDTH) * 0.3),
                                         {"Y": np.ones(1)})
    terms = " + ".join(f"X[i + {a}, j + {b}] * W[{a}, {b}]" for a in range(7) for b in range(7))
    src = ("def conv(Y, X, W):\n    i = dg.global_id(0)\n    j = dg.global_id(1)\n"
           f"    if i < Y.shape[0] and j < Y.shape[1]:\n        Y[i, j] = {terms}\n")
    out["7x7 convolution (49 terms)"] = (
        load_kernel(src, "conv", workdir), ((2, 2), (8, 8)),
        (np.zeros((16, 16)), rng.standard_normal((22, 22)), rng.standard_normal((7, 7))),
        {"Y": np.ones((16, 16))})
    terms = " + ".join(f"x[i + {k}] * {0.01 * (k + 1)!r}" for k in range(49))
    src = f"def taps(y, x):\n    i = dg.global_id(0)\n    if i < len(y) - 48:\n        y[i] = {terms}\n"
    out["49-point stencil"] = (load_kernel(src, "taps", workdir), ((1,), (128,)),
                               (np.zeros(128), rng.standard_normal(128)), {"y": np.ones(128)})
    return out


def vjp_table(chains=(1000, 2000)) -> int:
    import diffgpu as dg
    from benchlib import recorded_programs
    from diffgpu.driver.launch import get_program

    rows = []
    for what, (k, (grid, block), args, cot) in vjp_cases(tempfile.mkdtemp(), chains).items():
        with recorded_programs() as seen:
            host = timed(lambda: dg.vjp(k[grid, block], *args, cotangents=cot))
        gpu = timed(lambda: [get_program(d, t, "sm_90", diff) for d, t, diff, _ in seen
                             if diff is not None])
        rows.append((what, host, gpu))
        print(f"  {what}: {host[0]:.2f} s, {gpu[0]:.2f} s", file=sys.stderr, flush=True)
    print("dg.vjp: host = the call (compile and JIT, fresh cache); sm_90 = the PTX of the same "
          "reverse-mode programs")
    print(f"{'kernel':28} {'host wall s':>11} {'cpu s':>7} {'sm_90 wall s':>12} {'cpu s':>7}")
    for what, (hw, hc), (gw, gc) in rows:
        print(f"{what:28} {hw:11.2f} {hc:7.2f} {gw:12.2f} {gc:7.2f}")
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--vjp"]:
        sys.exit(vjp_table([int(a) for a in sys.argv[2:]] or [1000, 2000]))
    sys.exit(main([int(a) for a in sys.argv[1:]] or [250, 1000, 2000]) or vjp_table())

#!/usr/bin/env python3
"""Cost of the host target's run-time checks (CPU only): prints tables.

1. Ctrl-C (lowering/host/cancel.py, runtime/host_signal.py): every kernel of
   the corpus (test/python/kernels_corpus.py) compiled with and without the
   cancel checks (`diffgpu-to-host{cancel=0}`), launched from the main thread
   through `HostProgram.launch` (argument packing, bounds status, the SIGINT
   hand-over: everything a launch pays), timed in adjacent pairs (see
   `compare`: the machine may be shared with other work).
   Then loop-heavy kernels (runtime-bound `for`, `while`), where the checks in
   the loop headers weigh most, and grids of many blocks (a check per block).
2. The race detector (lowering/host/racecheck.py): the same corpus and a few
   larger kernels, checked (`{racecheck=1}`) against unchecked.

    python bench/host_checks.py [--rounds 15] [--log bench/host_checks.log]
"""
from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import tempfile
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "test", "python"))
sys.path.insert(0, os.path.join(REPO, "python"))
os.environ.setdefault("DIFFGPU_CACHE_DIR", tempfile.mkdtemp(prefix="diffgpu-bench-"))

import diffgpu as dg  # noqa: E402
from diffgpu.errors import RaceError  # noqa: E402
from diffgpu.runtime.args import infer_signature  # noqa: E402
from diffgpu.driver.compiler import compile_host  # noqa: E402


def build(kernel, args):
    from diffgpu.driver.launch import build_module
    sig = infer_signature(args, kernel.arg_names, kernel.name)
    src = build_module(kernel, sig.types, "host")
    return src, sig.types


def per_launch(prog, entry, args, types, grid, block, n) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        prog.launch(entry, args, types, grid, block)
    return (time.perf_counter() - t0) / n


def compare(progs, entry, args, types, grid, block, rounds, target_s=0.002):
    """Per-launch times of two programs, measured in adjacent pairs (A, B,
    then B, A) so that a machine shared with other work slows both alike:
    (median time of A, median time of A times the median of the B/A ratios)."""
    one = per_launch(progs[0], entry, args, types, grid, block, 1)
    n = max(1, min(2000, int(target_s / max(one, 1e-7))))
    times, ratios = [], []
    for r in range(rounds * 8):
        order = (0, 1) if r % 2 == 0 else (1, 0)
        t = [0.0, 0.0]
        for k in order:
            t[k] = per_launch(progs[k], entry, args, types, grid, block, n)
        times.append(t[0])
        ratios.append(t[1] / t[0])
    base = statistics.median(times)
    return [base, base * statistics.median(ratios)]


def dims(x):
    return (x, 1, 1) if isinstance(x, int) else tuple(x) + (1,) * (3 - len(x))


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


# Loop-heavy kernels -----------------------------------------------------------

@dg.kernel
def for_loop(x, y, n):
    i = dg.global_id(0)
    s = 0.0
    for k in range(n):
        s += x[(i + k) % len(x)] * 0.5
    y[i] = s


@dg.kernel
def while_loop(x, y, n):
    i = dg.global_id(0)
    s = 0.0
    k = 0
    while k < n:
        s += x[(i + k) % len(x)]
        k += 1
    y[i] = s


@dg.kernel
def saxpy(a, x, y):
    i = dg.global_id(0)
    if i < len(x):
        y[i] = a * x[i] + y[i]


@dg.kernel
def block_sum(x, out):
    s = dg.shared_array(256, np.float64)
    t = dg.thread_id(0)
    s[t] = x[dg.global_id(0)]
    dg.syncthreads()
    stride = 128
    while stride > 0:
        if t < stride:
            s[t] += s[t + stride]
        dg.syncthreads()
        stride = stride // 2
    if t == 0:
        out[dg.block_id(0)] = s[0]


def loop_cases():
    x = np.random.default_rng(0).random(1024)
    return [("for_loop n=2000", for_loop, [x, np.zeros(256), 2000], 4, 64),
            ("while_loop n=2000", while_loop, [x, np.zeros(256), 2000], 4, 64)]


def big_cases():
    n = 1 << 16
    x = np.random.default_rng(1).random(n)
    return [("saxpy 65536", saxpy, [2.0, x, np.zeros(n)], n // 256, 256),
            ("block_sum 65536", block_sum, [x, np.zeros(n // 256)], n // 256, 256),
            ("for_loop n=200", for_loop, [x[:1024], np.zeros(256), 200], 4, 64)]


def grid_cases():
    """Launches of many blocks, where the checks of the block loops (one per
    block) and of the barrier lowering's block-level loops weigh most."""
    n = 1 << 16
    x = np.random.default_rng(1).random(n)
    return big_cases()[:2] + [("saxpy 65536, 1-thread blocks", saxpy, [2.0, x, np.zeros(n)],
                               n, 1)]


def corpus():
    from kernels_corpus import CASES
    out = []
    for c in CASES:
        out.append((c.name, c.kernel, c.make(np.float64, np), c.grid, c.block))
    return out


def cancel_table(cases, rounds, log):
    log(f"{'kernel':28} {'no checks us':>13} {'checks us':>10} {'overhead':>9}")
    ratios = []
    for name, kernel, args, grid, block in cases:
        src, types = build(kernel, args)
        plain = compile_host(src.text, cancel=False)
        checked = compile_host(src.text)
        assert plain._cancel is None and checked._cancel is not None
        a, b = compare([plain, checked], src.entry, args, types, dims(grid), dims(block),
                       rounds)
        ratios.append(b / a)
        log(f"{name:28} {a * 1e6:13.2f} {b * 1e6:10.2f} {100 * (b / a - 1):+8.2f}%")
    log(f"{'geometric mean':28} {'':13} {'':10} {100 * (geomean(ratios) - 1):+8.2f}%")
    return geomean(ratios)


def race_table(cases, rounds, log):
    log(f"{'kernel':28} {'unchecked us':>13} {'checked us':>11} {'slowdown':>9}")
    ratios = []
    for name, kernel, args, grid, block in cases:
        src, types = build(kernel, args)
        plain = compile_host(src.text)
        checked = compile_host(src.text, racecheck=True)
        try:
            checked.launch(src.entry, args, types, dims(grid), dims(block))
        except RaceError as exc:
            log(f"{name:28} RACE: {str(exc).splitlines()[0]}")
            continue
        a, b = compare([plain, checked], src.entry, args, types, dims(grid), dims(block),
                       max(3, rounds // 3))
        ratios.append(b / a)
        log(f"{name:28} {a * 1e6:13.2f} {b * 1e6:11.2f} {b / a:8.2f}x")
    log(f"{'geometric mean':28} {'':13} {'':11} {geomean(ratios):8.2f}x")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--log", help="also write the tables to this file")
    ap.add_argument("--only", choices=["cancel", "race"])
    opts = ap.parse_args()
    lines = []

    def log(s=""):
        print(s, flush=True)
        lines.append(s)

    log(f"# host checks, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
        f"{os.cpu_count()} CPUs, rounds={opts.rounds}")
    if opts.only in (None, "cancel"):
        log("\n## Ctrl-C checks: corpus (float64), per launch")
        cancel_table(corpus(), opts.rounds, log)
        log("\n## Ctrl-C checks: loop-heavy kernels")
        cancel_table(loop_cases(), opts.rounds, log)
        log("\n## Ctrl-C checks: grids")
        cancel_table(grid_cases(), opts.rounds, log)
    if opts.only in (None, "race"):
        log("\n## race detector: corpus (float64), per launch")
        race_table(corpus(), opts.rounds, log)
        log("\n## race detector: larger kernels")
        race_table(big_cases(), opts.rounds, log)
    if opts.log:
        with open(opts.log, "w") as f:
            f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

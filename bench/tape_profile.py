#!/usr/bin/env python3
"""Where a dg.Tape's host time goes: bench/tape.py's programs under cProfile,
after warm rounds (plans, programs, CuPy's memory pool all warm).

    python bench/tape_profile.py --cpu            # here: numpy, bench/tape.py's smoke sizes
    python bench/tape_profile.py --run DIR        # on the GPU: DIR is bench/tape.py --prepare's

Per program: the recording loop and `gradient()` timed apart, each as host
time (the calls return) and as the wait for the device after it (a
synchronize), then one more round under cProfile, its functions listed by
their own time and by cumulative time. The GPU run uses bench/tape.py's
sizes and its prepared cache; no MLIR there.
"""
from __future__ import annotations

import cProfile
import io
import os
import pstats
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tape as T  # noqa: E402  (bench/tape.py: programs, sizes, inputs)

WARM = 3
TOP = 18


def profile(name, n, steps, xp, sync) -> None:
    pristine = T.inputs(name, n, xp)

    def fresh():
        return {k: xp.array(v, copy=True) for k, v in pristine.items()}

    def one():
        a = fresh()
        sync()
        t0 = time.perf_counter()
        tape, wrt = T.taped(name, a, steps)
        t1 = time.perf_counter()
        sync()
        t2 = time.perf_counter()
        tape.gradient(a["loss"], wrt=wrt)
        t3 = time.perf_counter()
        sync()
        t4 = time.perf_counter()
        return len(tape.operations), (t1 - t0, t2 - t1, t3 - t2, t4 - t3)

    for _ in range(WARM):
        one()
    rounds = [one() for _ in range(5)]
    ops = rounds[0][0]
    med = [sorted(r[1][k] for r in rounds)[2] * 1e3 for k in range(4)]
    print(f"== {name}: {ops} operations; median of 5 warm rounds, ms: record {med[0]:.2f} "
          f"(+ device wait {med[1]:.2f}), gradient {med[2]:.2f} (+ device wait {med[3]:.2f}); "
          f"host per operation: record {med[0] / ops * 1e3:.1f} us, gradient "
          f"{med[2] / ops * 1e3:.1f} us")
    prof = cProfile.Profile()
    prof.enable()
    one()
    prof.disable()
    for order in ("tottime", "cumulative"):
        s = io.StringIO()
        pstats.Stats(prof, stream=s).strip_dirs().sort_stats(order).print_stats(TOP)
        body = s.getvalue()
        print(f"-- by {order}")
        print(body[body.find("   ncalls"):].rstrip())
    print()


def main(argv) -> int:
    if argv[:1] == ["--cpu"]:
        for name, (n, steps) in T.SMOKE.items():
            profile(name, n, steps, np, lambda: None)
        return 0
    if len(argv) == 2 and argv[0] == "--run":
        sys.modules["mlir"] = None  # the GPU machine has no MLIR: prove it
        os.environ["DIFFGPU_CACHE_DIR"] = os.path.join(os.path.abspath(argv[1]), "cache")
        import cupy as cp
        for name, (n, steps) in T.SIZES.items():
            profile(name, n, steps, cp, cp.cuda.runtime.deviceSynchronize)
        return 0
    print(__doc__.strip().splitlines()[2:4], file=sys.stderr)
    print("usage: bench/tape_profile.py --cpu | --run DIR", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Time of a warm disk-cache hit in a fresh process (GPU target, no MLIR).

    python bench/cache_hit.py [--runs 5]

Compiles one kernel (with a callee and module constants) for sm_90 into a
private cache directory, then starts fresh processes that block MLIR imports
and time `get_program` on that signature: key computation, the directory
checks, reading and verifying the entry, and building the GPU program object
(no CuPy call). Times are CPU time (the process's own), so a busy machine
disturbs them less. Prints the median over runs, in microseconds: the first
hit of a process, and a repeated hit (the in-memory table cleared each time).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap

KERNEL = textwrap.dedent("""
    import math
    import numpy as np
    import diffgpu as dg

    SCALE = 2.5
    SHAPE = (4, 8)

    class Cfg:
        offset = 0.25

    @dg.func
    def soft(x):
        return math.log(1.0 + math.exp(x)) * SCALE

    @dg.kernel
    def k(A, B):
        i = dg.global_id(0)
        if i < len(A):
            A[i] = soft(B[i]) + Cfg.offset * SHAPE[1] + np.float32(1.0)
    """)

CHILD = textwrap.dedent("""
    import sys, time
    sys.modules['mlir'] = None
    import importlib.util
    from diffgpu.driver.launch import STATS, get_program
    from diffgpu.runtime.store import cache
    from diffgpu.types import ArrayType
    spec = importlib.util.spec_from_file_location('benchk', sys.argv[1])
    m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
    types = (ArrayType('float32', 1), ArrayType('float32', 1))
    clock = time.process_time   # CPU time: the machine may be shared
    t0 = clock()
    prog = get_program(m.k, types, 'sm_90')
    t1 = clock()
    assert STATS['disk_hit'] == 1 and STATS['compile'] == 0, STATS
    again = []
    for _ in range(200):   # the same hit again: key + checks + read + program
        m.k._programs.clear()
        t = clock()
        get_program(m.k, types, 'sm_90')
        again.append(clock() - t)
    assert STATS['disk_hit'] == 201 and STATS['compile'] == 0, STATS
    again.sort()
    print((t1 - t0) * 1e6, again[len(again) // 2] * 1e6)
    """)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    opts = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "benchk.py")
        with open(path, "w") as f:
            f.write(KERNEL)
        env = dict(os.environ, DIFFGPU_CACHE_DIR=os.path.join(tmp, "cache"))
        prep = ("import importlib.util, sys\n"
                "from diffgpu.driver.launch import get_program\n"
                "from diffgpu.types import ArrayType\n"
                "spec = importlib.util.spec_from_file_location('benchk', sys.argv[1])\n"
                "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
                "get_program(m.k, (ArrayType('float32', 1),) * 2, 'sm_90')\n")
        subprocess.run([sys.executable, "-c", prep, path], env=env, check=True)
        keys, hits = [], []
        for _ in range(opts.runs):
            out = subprocess.run([sys.executable, "-c", CHILD, path], env=env, check=True,
                                 capture_output=True, text=True).stdout.split()
            keys.append(float(out[0]))
            hits.append(float(out[1]))
        print(f"first disk hit in a fresh process: {statistics.median(keys):8.0f} us CPU "
              f"(min {min(keys):.0f})")
        print(f"repeated disk hit (median of 200): {statistics.median(hits):8.0f} us CPU "
              "(key + directory checks + read + checksum + GPU program object)")


if __name__ == "__main__":
    main()

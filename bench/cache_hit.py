"""Time of a warm disk-cache hit in a fresh process (GPU target, no MLIR).

    python bench/cache_hit.py [--runs 5]

Compiles one kernel (with a callee and module constants) for sm_90 into a
private cache directory, then starts fresh processes that block MLIR imports
and time `get_program` on that signature: key computation, the directory
checks, reading and verifying the entry, and building the GPU program object
(no CuPy call). Prints the median over runs, in microseconds.
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
    from diffgpu.launch import STATS, get_program
    from diffgpu.runtime import cache
    from diffgpu.types import ArrayType
    spec = importlib.util.spec_from_file_location('benchk', sys.argv[1])
    m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
    types = (ArrayType('float32', 1), ArrayType('float32', 1))
    t0 = time.perf_counter()
    key = cache.cache_key(m.k, types, 'sm_90')
    t1 = time.perf_counter()
    prog = get_program(m.k, types, 'sm_90')
    t2 = time.perf_counter()
    assert STATS['disk_hit'] == 1 and STATS['compile'] == 0, STATS
    print((t1 - t0) * 1e6, (t2 - t1) * 1e6)
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
                "from diffgpu.launch import get_program\n"
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
        print(f"cache key (fresh process): {statistics.median(keys):8.0f} us")
        print(f"get_program disk hit:      {statistics.median(hits):8.0f} us "
              "(key + checks + read + GPU program object)")


if __name__ == "__main__":
    main()

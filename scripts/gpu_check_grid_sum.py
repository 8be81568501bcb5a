#!/usr/bin/env python3
"""GPU check of the cross-block finish of float32 sums (lowering/reduce/grid_sum.py,
docs/atomics.md "Accuracy"): accuracy at 2^26, per-stream scratch, cost.

    python scripts/gpu_check_grid_sum.py --prepare scripts/.grid_sum   # here: sm_90, no GPU
    python scripts/gpu_check_grid_sum.py --run scripts/.grid_sum       # on the GPU (CuPy)

--run checks, with the programs --prepare compiled (never the generic one):

1. 2^26 float32 squares of normal, hashed and periodic (equal block sums)
   values, blocks of 256 and 1024: within 1e-5 of the float64 sum;
2. two streams launching the same kernel at once, 64 launches each, every
   launch adding its own sum to its own element: each element within 1e-5 of
   its sum (a scratch shared by the streams would mix them);
3. the time of one 2^26 sum (CUDA events, median of 7 rounds of 20).
Prints one line per check; exit status 1 if any check fails.
"""
from __future__ import annotations

import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if __name__ == "__main__" and "--run" in sys.argv:
    sys.modules["mlir"] = None  # the GPU run must not need MLIR: prove it
sys.path.insert(0, os.path.join(REPO, "scripts"))
import repo_imports  # noqa: E402

repo_imports.bootstrap()

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(REPO, "bench"))
from benchlib import cupy_ms, prepare_run  # noqa: E402
sys.path.insert(0, os.path.join(REPO, "test", "python"))  # the tests' shared kernels
sys.path.insert(0, os.path.join(REPO, "test", "python", "lowering", "reduce"))
from test_grid_sum import sumsq, sumsq_at  # noqa: E402  (the kernels the CPU tests check)

N = 1 << 26
LAUNCHES = 64
SMALL = 1 << 20


def data(name, n):
    if name == "normal":
        return np.random.default_rng(11).standard_normal(n).astype(np.float32)
    if name == "hashed":
        k = np.arange(n, dtype=np.int64) * 2654435761 % 4294967296 // 65536
        return k.astype(np.float32) / np.float32(65536.0) + np.float32(0.5)
    return (np.arange(n) % 256).astype(np.float32) / np.float32(256.0) + np.float32(0.5)


def ref(x):
    return float(np.sum(np.square(x, dtype=np.float64)))


def _use_cache(path: str) -> None:
    os.environ["DIFFGPU_CACHE_DIR"] = os.path.join(os.path.abspath(path), "cache")


def prepare(path: str, chip: str = "sm_90") -> None:
    """The launches of --run on numpy arrays of the same shapes and layouts:
    their programs (specialised for the launch facts) into the cache."""
    _use_cache(path)
    from diffgpu.interop import compile_only
    x, small = np.zeros(N, np.float32), np.zeros(SMALL, np.float32)
    with compile_only(chip):
        for block in (256, 1024):
            sumsq[N // block, block](np.zeros(1, np.float32), x)
        sumsq_at[SMALL // 256, 256](np.zeros(LAUNCHES, np.float32), 0, small)
    print(f"prepared for {chip} in {os.environ['DIFFGPU_CACHE_DIR']}")


def run(path: str) -> int:
    _use_cache(path)
    import cupy

    from diffgpu.driver import launch
    bad = 0

    def check(what, err, limit=1e-5):
        nonlocal bad
        ok = err <= limit
        bad += not ok
        print(f"{what:<52} {err:9.2e} {'ok' if ok else 'FAILED'}", flush=True)

    for name in ("normal", "hashed", "periodic"):
        host = data(name, N)
        x = cupy.asarray(host)
        for block in (256, 1024):
            out = cupy.zeros(1, np.float32)
            sumsq[N // block, block](out, x)
            check(f"2^26 {name} squares, blocks of {block}", abs(float(out[0]) - ref(host))
                  / ref(host))
    progs = [p for p in sumsq._programs.values() if p.kind == "gpu"]
    check("programs with scratch (not the generic fallback)",
          float(launch.STATS["generic_fallback"] + sum(p.gpu.scratch is None for p in progs)), 0)

    host = [data("hashed", SMALL), data("periodic", SMALL)]
    xs = [cupy.asarray(h) for h in host]
    outs = [cupy.zeros(LAUNCHES, np.float32) for _ in xs]
    streams = [cupy.cuda.Stream(non_blocking=True) for _ in xs]
    cupy.cuda.Device().synchronize()  # the copies above ran on the default stream
    for k in range(LAUNCHES):
        for s, out, x in zip(streams, outs, xs):
            with s:
                sumsq_at[SMALL // 256, 256](out, k, x)
    for s in streams:
        s.synchronize()
    for j, (out, h) in enumerate(zip(outs, host)):
        got = cupy.asnumpy(out).astype(np.float64)
        check(f"stream {j}: {LAUNCHES} launches, worst element", float(np.max(np.abs(got - ref(h)))
                                                                        / ref(h)))
    scratch = [p.gpu.scratch for p in sumsq_at._programs.values() if p.kind == "gpu"]
    check("scratch buffers minus the 2 streams", abs(sum(len(s._params) for s in scratch) - 2.0),
          0)

    x, out = cupy.asarray(data("hashed", N)), cupy.zeros(1, np.float32)
    t = cupy_ms(lambda: sumsq[N // 256, 256](out, x))
    print(f"{'2^26 sum of squares, blocks of 256 (ms, median)':<52} {t:9.4f}")
    return 1 if bad else 0


def main(argv=None) -> int:
    return prepare_run(__doc__, prepare, run, argv)


if __name__ == "__main__":
    sys.exit(main())

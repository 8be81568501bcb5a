#!/usr/bin/env python3
"""Host time per launch of a cached kernel with 4 array arguments.

    python bench/launch_overhead.py --standin            # here: no GPU, a CuPy stand-in
    python bench/launch_overhead.py --prepare DIR        # here: compile for sm_90 into DIR
    python bench/launch_overhead.py --run DIR            # GPU machine: CuPy, no MLIR

`--standin` replaces CuPy by a module whose kernels do nothing, so the time
is diffgpu's own Python work per launch (argument checks, launch facts,
program lookup, packing): the part the fast path (runtime/fastpath.py)
cuts. It also times the CPU path (numpy arrays, the kernel runs in the JIT)
and the first launch of each argument signature (the full checks).

`--run` times the real thing on CuPy arrays: diffgpu's launch of the cached
kernel against a CuPy RawKernel of the same body (the anchor), each as the
host time of many back-to-back launches on tiny arrays (asynchronous: the
GPU is never the bottleneck), median of rounds.
"""
from __future__ import annotations

import os
import sys
import time
import types

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "scripts")); import repo_imports; repo_imports.bootstrap()  # noqa: E402,E702,I001
from benchlib import standin_prepare_run  # noqa: E402
N = 1024
BLOCK = 256


def define():
    import diffgpu as dg

    @dg.kernel
    def fma4(d, a, b, c):
        i = dg.global_id(0)
        if i < len(d):
            d[i] = a[i] * b[i] + c[i]

    return fma4


#: the clock of `_per_launch_us`: wall time on the GPU (the driver's work
#: counts); --standin takes the process's CPU time, which other work on a
#: shared machine does not inflate (it is all diffgpu's own work there)
CLOCK = [time.perf_counter]


def _per_launch_us(fn, reps=2000, rounds=7, sync=None):
    fn()
    clock = CLOCK[0]
    times = []
    for _ in range(rounds):
        t = clock()
        for _ in range(reps):
            fn()
        times.append((clock() - t) / reps * 1e6)
        if sync:
            sync()
    times.sort()
    return times[len(times) // 2]


# ---------------------------------------------------------------------------
# a CuPy stand-in: arrays on a pretend device, kernels that do nothing
# ---------------------------------------------------------------------------

class _Flags:
    def __init__(self, c):
        self.c_contiguous = c


class _Mem:
    def __init__(self, ptr):
        self.ptr = ptr


class _Dev:
    id = 0
    compute_capability = "90"

    def __init__(self, *_):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class StandinArray:
    """A numpy array posing as a CuPy device array (same attributes)."""

    def __init__(self, host):
        self._h = host
        self.shape, self.strides, self.dtype = host.shape, host.strides, host.dtype
        self.ndim, self.itemsize, self.size = host.ndim, host.itemsize, host.size
        self.nbytes = host.nbytes
        self.data = _Mem(host.__array_interface__["data"][0])
        self.device = _Dev()
        self.flags = _Flags(host.flags.c_contiguous)  # CuPy: a cheap attribute

    @property
    def __cuda_array_interface__(self):  # built per access, as CuPy does
        return {"shape": self.shape, "typestr": self.dtype.str,
                "data": (self.data.ptr, False),
                "strides": None if self._h.flags.c_contiguous else self.strides,
                "version": 3}


def install_standin():
    calls = []

    class Function:
        def __call__(self, grid, block, args):
            calls.append(len(args))

    class RawModule:
        def __init__(self, path=None, code=None):
            pass

        def get_function(self, name):
            return Function()

    runtime = types.SimpleNamespace(getDevice=lambda: 0, getDeviceCount=lambda: 1,
                                    pointerGetAttributes=lambda p: types.SimpleNamespace(device=0))
    stream = types.SimpleNamespace(synchronize=lambda: None, ptr=0)
    cuda = types.SimpleNamespace(Device=_Dev, runtime=runtime,
                                 get_current_stream=lambda: stream)
    sys.modules["cupy"] = types.SimpleNamespace(  # zeros: a kernel's scratch (runtime/scratch.py)
        cuda=cuda, RawModule=RawModule, __name__="cupy",
        zeros=lambda n, dtype=np.float64: StandinArray(np.zeros(n, dtype)))
    return calls


def _other_arrays(make):
    """Launches' worth of 4 distinct arrays each: more keys than a kernel
    keeps (fastpath._HOT_MAX), so every launch takes the checked level."""
    from diffgpu.runtime import fastpath
    return [[make(np.zeros(N, np.float32)) for _ in range(4)]
            for _ in range(fastpath._HOT_MAX + 100)]


def _cycling(k, grid, sets):
    it = [0]

    def launch():
        args = sets[it[0] % len(sets)]
        it[0] += 1
        k[grid, BLOCK](*args)
    return launch


def standin() -> None:
    calls = install_standin()
    CLOCK[0] = time.process_time
    import diffgpu as dg  # noqa: F401
    from diffgpu.driver.launch import STATS
    from diffgpu.runtime import fastpath

    k = define()
    host = [np.random.default_rng(i).standard_normal(N).astype(np.float32) for i in range(4)]
    dev = [StandinArray(h) for h in host]
    grid = N // BLOCK
    k[grid, BLOCK](*dev)  # compiles for sm_90 (the stand-in's chip)
    assert calls, "the stand-in kernel was not called"
    reused = STATS["fast_reuse"]
    fast = _per_launch_us(lambda: k[grid, BLOCK](*dev))
    launcher = k[grid, BLOCK]
    fast_pre = _per_launch_us(lambda: launcher(*dev))
    reused = STATS["fast_reuse"] - reused
    checked = STATS["fast_checked"]
    other = _per_launch_us(_cycling(k, grid, _other_arrays(StandinArray)), reps=400)
    checked = STATS["fast_checked"] - checked

    def full():
        k.__dict__["_fast"] = {}  # every launch takes the full checks
        k[grid, BLOCK](*dev)
    slow = _per_launch_us(full, reps=300)
    k.__dict__["_fast"] = {}
    k[grid, BLOCK](*host)
    cpu = _per_launch_us(lambda: k[grid, BLOCK](*host), reps=300)
    cpu_other = _per_launch_us(_cycling(k, grid, _other_arrays(lambda a: a)), reps=300)
    print(f"host CPU time per launch, 4 arrays of {N} float32 (CuPy stand-in, kernel does "
          "nothing):")
    print(f"  same arrays, k[grid, block](...)         {fast:7.1f} us")
    print(f"  same arrays, launcher reused             {fast_pre:7.1f} us")
    print(f"  other arrays every launch (checks, facts) {other:6.1f} us")
    print(f"  full checks every launch (first launch)  {slow:7.1f} us")
    print(f"  CPU path (numpy, the kernel runs), same arrays  {cpu:7.1f} us")
    print(f"  CPU path, other arrays every launch             {cpu_other:7.1f} us")
    print(f"  launches: {reused} reused an earlier one, {checked} took the checked level; "
          f"fast-path entries: {sum(len(v.programs) for v in k._fast.values())} programs, "
          f"{len(fastpath._ARRAYS)} array types")


# ---------------------------------------------------------------------------
# the GPU
# ---------------------------------------------------------------------------

def prepare(path: str, chip: str = "sm_90") -> None:
    os.environ["DIFFGPU_CACHE_DIR"] = os.path.join(os.path.abspath(path), "cache")
    sys.path.insert(0, os.path.join(REPO, "scripts"))
    import gpu_check_specialize as SPEC
    from diffgpu.driver.launch import get_program
    from diffgpu.runtime.args import infer_signature

    k = define()
    host = [np.zeros(N, np.float32) for _ in range(4)]
    types_ = infer_signature(host).types
    get_program(k, types_, chip)  # generic
    print("specialised for", SPEC.launch_programs(k, N // BLOCK, BLOCK, host, chip))
    print(f"prepared {k.name} for {chip} in {path}")


def run(path: str) -> None:
    sys.modules["mlir"] = None  # the GPU machine has no MLIR: prove it
    os.environ["DIFFGPU_CACHE_DIR"] = os.path.join(os.path.abspath(path), "cache")
    import cupy as cp

    from diffgpu.driver.launch import STATS

    k = define()
    dev = [cp.asarray(np.random.default_rng(i).standard_normal(N).astype(np.float32))
           for i in range(4)]
    grid = N // BLOCK
    k[grid, BLOCK](*dev)
    cp.cuda.runtime.deviceSynchronize()
    want = cp.asnumpy(dev[1] * dev[2] + dev[3])
    assert np.allclose(cp.asnumpy(dev[0]), want), "diffgpu result differs"
    sync = cp.cuda.runtime.deviceSynchronize
    dg_us = _per_launch_us(lambda: k[grid, BLOCK](*dev), sync=sync)
    key_us, call_us = _parts(k, dev, grid, sync)
    other = _cycling(k, grid, _other_arrays(cp.asarray))
    other_us = _per_launch_us(other, reps=400, sync=sync)
    raw = cp.RawKernel(r'''extern "C" __global__ void fma4(float* d, const float* a,
        const float* b, const float* c, long long n) { long long i = (long long)blockIdx.x *
        blockDim.x + threadIdx.x; if (i < n) d[i] = a[i] * b[i] + c[i]; }''', "fma4")
    n = np.int64(N)
    raw_us = _per_launch_us(lambda: raw((grid,), (BLOCK,), (dev[0], dev[1], dev[2], dev[3], n)),
                            sync=sync)
    print(f"host time per launch, 4 arrays: diffgpu {dg_us:.1f} us, CuPy RawKernel "
          f"{raw_us:.1f} us; diffgpu with other arrays every launch {other_us:.1f} us; "
          f"programs: {STATS['disk_hit']} from the cache, "
          f"{STATS['generic_fallback']} generic fallbacks; launches: {STATS['fast_reuse']} "
          f"reused, {STATS['fast_checked']} checked")
    print(f"  of diffgpu's {dg_us:.1f} us: its launch key {key_us:.1f} us, CuPy's call of the "
          f"kept function and arguments {call_us:.1f} us")


def _parts(k, dev, grid, sync):
    """(us of the fast path's launch key, us of the CuPy call it ends in) of a
    launch repeated on the same arrays: where its time goes."""
    from diffgpu.runtime import fastpath

    g3, b3 = (grid, 1, 1), (BLOCK, 1, 1)
    key_us = _per_launch_us(lambda: fastpath.launch_key(dev, g3, b3))
    ready = k._fast.hot[fastpath.launch_key(dev, g3, b3)]
    fn, values = ready.packed[:2]
    call_us = _per_launch_us(lambda: fn(ready.grid, ready.block, values), sync=sync)
    return key_us, call_us


def main(argv=None) -> int:
    return standin_prepare_run(__doc__, standin, prepare, run, "dg-launch-", argv)


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Host time per `dg.vjp` / `dg.jvp` call, next to a plain launch of the
same kernel.

    python bench/vjp_overhead.py --standin            # here: no GPU, a CuPy stand-in
    python bench/vjp_overhead.py --prepare DIR        # here: compile for sm_90 into DIR
    python bench/vjp_overhead.py --run DIR            # GPU machine: CuPy, no MLIR

Kernels: `square` (2 arrays), `softplus` (2 arrays), `saxpy` (an Active
scalar) and `add4` (4 arrays), from bench/peer_cases.py; besides dg.vjp,
dg.jvp and a plain launch, the host-level dg.autodiff (arrays Duplicated,
scalars Active) and dg.fwddiff of the same arguments. `--standin` (the
stand-in of bench/launch_overhead.py, whose kernels do nothing, extended
here with the allocations `dg.vjp` makes) times diffgpu's own Python work
per call, with the process's CPU time; it also times the CPU path (numpy,
the kernels run). `--run` times the real thing on tiny CuPy arrays: host
time of many back-to-back calls (asynchronous: the GPU is never the
bottleneck), median of rounds, and a CuPy RawKernel launch as the anchor.
"""
from __future__ import annotations

import os
import sys
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "bench"))
sys.path.insert(0, os.path.join(REPO, "scripts")); import repo_imports; repo_imports.bootstrap()  # noqa: E402,E702,I001
from benchlib import standin_prepare_run  # noqa: E402
import launch_overhead as LO  # noqa: E402
from launch_overhead import N, BLOCK, _per_launch_us  # noqa: E402

CASES = ("square", "softplus", "saxpy", "add4")


def _kernels():
    import peer_cases
    ks = peer_cases.kernels()
    return {n: ks[n] for n in CASES}


def _args(name, make, rng):
    """(launch arguments, cotangents, tangents, shadows) of case `name`:
    `shadows` has one array per array argument (the `dg.autodiff` /
    `dg.fwddiff` rows' Duplicated shadows), None per scalar."""
    args, cot, tan = _vjp_args(name, make, rng)
    shadows = [None if isinstance(a, (float, np.floating)) else
               make(rng.standard_normal(N).astype(np.float32)) for a in args]
    return args, cot, tan, shadows


def _vjp_args(name, make, rng):
    def arr():
        return make(rng.standard_normal(N).astype(np.float32))
    if name in ("square", "softplus"):
        y, x = arr(), arr()
        return [y, x], {"y": arr()}, {"x": arr()}
    if name == "saxpy":
        o, x, y = arr(), arr(), arr()
        return [o, np.float32(2.0), x, y], {"o": arr()}, {"a": 1.0, "x": arr(), "y": arr()}
    o, a, b, c = arr(), arr(), arr(), arr()
    return [o, a, b, c], {"o": arr()}, {"a": arr(), "b": arr(), "c": arr()}


def _calls(k, args, cot, tan, shadows):
    """dg.vjp, dg.jvp, a plain launch, dg.autodiff (arrays Duplicated,
    scalars Active), dg.fwddiff (scalars Duplicated with a tangent of 1)."""
    import diffgpu as dg
    launcher = k[N // BLOCK, BLOCK]
    rev = [dg.Active(a) if s is None else dg.Duplicated(a, s) for a, s in zip(args, shadows)]
    fwd = [dg.Duplicated(a, type(a)(1.0)) if s is None else dg.Duplicated(a, s)
           for a, s in zip(args, shadows)]
    return (lambda: dg.vjp(launcher, *args, cotangents=cot),
            lambda: dg.jvp(launcher, *args, tangents=tan),
            lambda: launcher(*args),
            lambda: dg.autodiff(launcher, *rev),
            lambda: dg.fwddiff(launcher, *fwd))


def _table(rows, what: str, extra=()):
    print(f"host time per call, {N} float32 per array ({what}):")
    print(f"  {'kernel':10s} {'dg.vjp':>9s} {'dg.jvp':>9s} {'launch':>9s} "
          f"{'autodiff':>9s} {'fwddiff':>9s}" + "".join(f" {e:>10s}" for e in extra))
    for name, vals in rows:
        print(f"  {name:10s}" + "".join(f" {v:8.1f}us" if v is not None else "        -"
                                          for v in vals))


# ---------------------------------------------------------------------------
# the stand-in: launch_overhead's, plus what dg.vjp allocates
# ---------------------------------------------------------------------------

def install_standin():
    calls = LO.install_standin()
    cp = sys.modules["cupy"]
    S = LO.StandinArray
    S.sum = lambda self, dtype=None: S(np.asarray(self._h.sum(dtype=dtype)))
    S.astype = lambda self, dtype: S(self._h.astype(dtype))
    S.fill = lambda self, v: self._h.fill(v)
    cp.empty = lambda shape, dtype=np.float64: S(np.empty(shape, dtype))
    cp.zeros = lambda shape, dtype=np.float64: S(np.zeros(shape, dtype))
    cp.asarray = lambda a: a
    cp.array = lambda a, copy=True: S(a._h.copy())
    return calls


def standin() -> None:
    install_standin()
    LO.CLOCK[0] = time.process_time
    import diffgpu as dg  # noqa: F401
    from diffgpu.driver.launch import STATS

    ks = _kernels()
    rows, cpu = [], []
    for name, k in ks.items():
        fs = _calls(k, *_args(name, LO.StandinArray, np.random.default_rng(0)))
        for f in fs:
            f()  # compiles for sm_90 (the stand-in's chip)
        rows.append((name, [_per_launch_us(f, reps=500) for f in fs]))
        fs = _calls(k, *_args(name, lambda a: a, np.random.default_rng(0)))
        cpu.append((name, [_per_launch_us(f, reps=200) for f in fs]))
    _table(rows, "CuPy stand-in, CPU time, kernels do nothing")
    _table(cpu, "CPU path: numpy, the kernels run")
    print(f"  vjp/jvp calls: {STATS['vjp_reuse']} reused a plan, {STATS['vjp_plan']} planned; "
          f"autodiff/fwddiff calls: {STATS['autodiff_reuse']} replayed, "
          f"{STATS['autodiff_plan']} checked")


# ---------------------------------------------------------------------------
# the GPU
# ---------------------------------------------------------------------------

def prepare(path: str, chip: str = "sm_90") -> None:
    os.environ["DIFFGPU_CACHE_DIR"] = os.path.join(os.path.abspath(path), "cache")
    install_standin()  # the calls run on stand-in device arrays: programs for `chip`
    from diffgpu.driver.launch import get_program
    from diffgpu.runtime.args import infer_signature

    ks = _kernels()
    for name, k in ks.items():
        args = _args(name, LO.StandinArray, np.random.default_rng(0))
        for f in _calls(k, *args):
            f()
            f()  # the second call replays the plan: the device type is known then
        # the generic programs too: used where the GPU's arrays give other facts
        get_program(k, infer_signature(args[0]).types, chip)
        for diff in (("reverse", tuple("dup" if s is not None else "active" for s in args[3])),
                     ("forward", ("dup",) * len(args[3]))):
            get_program(k, infer_signature(args[0]).types, chip, diff=diff)
        for recipe in k.__dict__.get("_plans", {}).values():
            get_program(k, recipe.types, chip, diff=recipe.diff)
    print(f"prepared {', '.join(ks)} (vjp, jvp, launch, autodiff, fwddiff) for {chip} in {path}")


def run(path: str) -> None:
    sys.modules["mlir"] = None  # the GPU machine has no MLIR: prove it
    os.environ["DIFFGPU_CACHE_DIR"] = os.path.join(os.path.abspath(path), "cache")
    import cupy as cp

    from diffgpu.driver.launch import STATS

    sync = cp.cuda.runtime.deviceSynchronize
    raw = cp.RawKernel(r'''extern "C" __global__ void sq(float* y, const float* x,
        long long n) { long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] = x[i] * x[i]; }''', "sq")
    ks = _kernels()
    rows = []
    for name, k in ks.items():
        args, cot, tan, shadows = _args(name, cp.asarray, np.random.default_rng(0))
        fs = _calls(k, args, cot, tan, shadows)
        vjp = fs[0]
        first = vjp()
        again = vjp()  # replays the plan
        sync()
        if name == "square":
            want = 2 * cp.asnumpy(args[1]) * cp.asnumpy(cot["y"])
            assert np.allclose(cp.asnumpy(again["x"]), want, rtol=1e-5), "square: wrong vjp"
        for n, g in first.items():
            if isinstance(g, cp.ndarray) and g.ndim:
                assert g is not again[n], "two calls returned the same array"
                assert np.allclose(cp.asnumpy(g), cp.asnumpy(again[n])), f"{name}: {n} differs"
        rows.append((name, [_per_launch_us(f, reps=500, sync=sync) for f in fs]))
    y, x = cp.zeros(N, cp.float32), cp.ones(N, cp.float32)
    n = np.int64(N)
    raw_us = _per_launch_us(lambda: raw((N // BLOCK,), (BLOCK,), (y, x, n)), sync=sync)
    _table(rows, "H200, host wall time, back-to-back")
    print(f"  CuPy RawKernel (square) launch: {raw_us:.1f} us")
    print(f"  programs: {STATS['disk_hit']} from the cache, {STATS['compile']} compiled, "
          f"{STATS['generic_fallback']} generic fallbacks; vjp/jvp calls: "
          f"{STATS['vjp_reuse']} reused a plan, {STATS['vjp_plan']} planned; "
          f"autodiff/fwddiff: {STATS['autodiff_reuse']} replayed, "
          f"{STATS['autodiff_plan']} checked")


def main(argv=None) -> int:
    return standin_prepare_run(__doc__, standin, prepare, run, "dg-vjp-", argv)


if __name__ == "__main__":
    sys.exit(main())

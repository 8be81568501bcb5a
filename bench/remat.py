#!/usr/bin/env python3
"""Recomputation instead of the tape (lowering/autodiff/remat.py), on and off.

    python bench/remat.py --prepare bench/.cache/remat   # here: compile for sm_90 (no GPU)
    python bench/remat.py --run bench/.cache/remat       # GPU machine: numpy + CuPy, no MLIR

Each case is `dg.autodiff` of a kernel with a loop whose trip count is a
runtime argument (so the loop is not unrolled and its values reach the
reverse sweep through the per-thread tape), inside a kernel, compiled twice:
with recomputation (the default) and with `DIFFGPU_REMAT=0` (the setting is
part of the cache key, so both programs sit in one cache). `--prepare` also
prints, per case and setting, the tape words each iteration pushes and the
PTX's tape traffic (`.local` depot bytes, generic ld/st instructions: the
tape's buffer, device malloc calls: its growth path) and its read-only
loads (`ld.global.nc`). `--run` checks every gradient
against float64 numpy, then times the gradient launch (CUDA events, median
of rounds of back-to-back launches) and prints one table.

Cases (N threads, a loop of M iterations each; wsin and gather are
test/python/kernels_remat.py's, which test_remat.py checks):
- `wsin`: y[i] = sum_k w[k] sin(x[i] k), x and w differentiated (dw by
  atomics);
- `conv`: y[i] = tanh(sum_k w[k] x[(i + k) % n]), a circular filter, x
  differentiated;
- `gather`: s = x[i]; s = 0.9 s + t[(7 i + 3 k) % len(t)] cos(s), a
  loop-carried value (s stays on the tape either way).
"""
from __future__ import annotations

import os
import re
import sys

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "scripts")); import repo_imports; repo_imports.bootstrap()  # noqa: E402,E702,I001
from benchlib import cupy_ms, prepare_run  # noqa: E402

N = 1 << 20
M = 32  # 4 words x 32 = 128: the taped wsin stays in the tape's first buffer (no malloc)
BLOCK = 256
TAPS = 1 << 10  # len(t) of `gather`
SETTINGS = (("on", "1"), ("off", "0"))


def define():
    import diffgpu as dg
    sys.path.insert(0, os.path.join(REPO, "test", "python"))
    from kernels_remat import gather, wsin_grad  # defined once (test_remat.py)

    @dg.kernel
    def conv(y, x, w, m):
        i = dg.global_id(0)
        if i < len(x):
            acc = 0.0
            for k in range(m):
                acc += w[k] * x[(i + k) % len(x)]
            y[i] = dg.tanh(acc)

    @dg.kernel
    def conv_grad(y, dy, x, dx, w, m):
        dg.autodiff(conv, dg.Duplicated(y, dy), dg.Duplicated(x, dx), w, m)

    @dg.kernel
    def gather_x_grad(y, dy, x, dx, t, m):  # t constant (kernels_remat.gather_grad: dt too)
        dg.autodiff(gather, dg.Duplicated(y, dy), dg.Duplicated(x, dx), t, m)

    return {"wsin": wsin_grad, "conv": conv_grad, "gather": gather_x_grad}


def make_args(name, xp=np, seed=0):
    """The launch arguments of case `name` (float32), built with `xp`."""
    r = np.random.default_rng(seed)
    f = lambda *s, lo=-1.0, hi=1.0: xp.asarray(r.uniform(lo, hi, s).astype(np.float32))  # noqa: E731
    zeros = lambda n: xp.zeros(n, np.float32)  # noqa: E731
    if name == "wsin":
        return [zeros(N), f(N), f(N, lo=-0.3, hi=0.3), zeros(N), f(M), zeros(M), M]
    if name == "conv":
        return [zeros(N), f(N), f(N), zeros(N), f(M), M]
    return [zeros(N), f(N), f(N), zeros(N), f(TAPS), M]


def reference(name, args):
    """(name of array, index in args, float64 numpy value) of the results."""
    a = [np.asarray(v, np.float64) if isinstance(v, np.ndarray) else v for v in args]
    if name == "wsin":
        _, dy, x, _, w, _, m = a
        ang = np.outer(x, np.arange(m))
        return [("y", 0, np.sin(ang) @ w), ("dx", 3, dy * ((np.cos(ang) * np.arange(m)) @ w)),
                ("dw", 5, np.sin(ang).T @ dy)]
    if name == "conv":
        _, dy, x, _, w, m = a
        idx = (np.arange(N)[:, None] + np.arange(m)[None, :]) % N
        y = np.tanh(x[idx] @ w)
        g = dy * (1 - y * y)
        dx = np.zeros(N)
        np.add.at(dx, idx, g[:, None] * w[None, :])
        return [("y", 0, y), ("dx", 3, dx)]
    _, dy, x, _, t, m = a
    s = x.copy()
    hist = []
    i = np.arange(N)
    for k in range(m):
        hist.append(s)
        s = s * 0.9 + t[(i * 7 + k * 3) % len(t)] * np.cos(s)
    g = dy.copy()
    for k in reversed(range(m)):
        g = g * (0.9 - t[(i * 7 + k * 3) % len(t)] * np.sin(hist[k]))
    return [("y", 0, s), ("dx", 3, g)]


def _use(setting, kernel):
    """Compile / look up programs with recomputation `setting` ("1"/"0")."""
    os.environ["DIFFGPU_REMAT"] = setting
    kernel._programs.clear()  # the in-memory programs do not key on the setting
    kernel.__dict__.pop("_fast", None)


def _tape_words(text) -> int:
    """Push sites of the derivative's tape (one capacity check each, tape.py):
    the words each iteration of the case's one loop pushes."""
    start = text.index("func.func @__dg_rev_")
    return len(re.findall(r"arith\.cmpi uge", text[start:text.index("\n  }\n", start)]))


def _local_use(ptx) -> tuple:
    """(bytes of `.local` depots, generic ld/st instructions, malloc calls,
    ld.global.nc instructions) of the PTX. The tape's words go through a
    generic pointer (its buffer is a local array or a malloc'd one); the
    kernels' own arrays use ld/st.global."""
    depot = sum(int(b) for b in re.findall(r"\.local\s+\.align\s+\d+\s+\.b8\s+\w+\[(\d+)\]",
                                           ptx))
    return (depot, len(re.findall(r"\b(?:ld|st)\.[ubfs]\d+", ptx)),
            len(re.findall(r"call\.uni \(retval0\), malloc", ptx)),
            len(re.findall(r"ld\.global\.nc", ptx)))


def prepare(path: str, chip: str = "sm_90") -> None:
    os.environ["DIFFGPU_CACHE_DIR"] = os.path.join(os.path.abspath(path), "cache")
    import gpu_check_specialize as SPEC
    from diffgpu.driver.launch import get_program
    from diffgpu.runtime.args import infer_signature

    kernels = define()
    grid = N // BLOCK
    print(f"{'case':8} {'remat':5} {'tape words/iteration':>21} {'.local bytes':>13} "
          f"{'generic ld/st':>14} {'malloc':>7} {'ld.global.nc':>13} {'PTX lines':>10}  facts")
    for name, k in kernels.items():
        args = make_args(name)
        for label, setting in SETTINGS:
            _use(setting, k)
            get_program(k, infer_signature(args).types, chip)  # the generic program
            facts = SPEC.launch_programs(k, grid, BLOCK, args, chip)
            words = _tape_words(k.ir(*args, stage="autodiff", target=chip, grid=grid,
                                     block=BLOCK))
            ptx = k.ir(*args, stage="ptx", target=chip, grid=grid, block=BLOCK)
            depot, ldst, mallocs, nc = _local_use(ptx)
            print(f"{name:8} {label:5} {words:21d} {depot:13d} {ldst:14d} {mallocs:7d} "
                  f"{nc:13d} {ptx.count(chr(10)):10d}  {facts}")
    print(f"prepared {len(kernels)} cases x {len(SETTINGS)} settings for {chip} in {path}")


_time = cupy_ms  # bench/benchlib.py: ms


def _rel_err(got, want) -> float:
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30))


def run(path: str) -> int:
    sys.modules["mlir"] = None  # the GPU machine has no MLIR: prove it
    os.environ["DIFFGPU_CACHE_DIR"] = os.path.join(os.path.abspath(path), "cache")
    import cupy as cp

    from diffgpu.driver.launch import STATS

    kernels = define()
    grid = N // BLOCK
    rows, bad = [], 0
    for name, k in kernels.items():
        host = make_args(name)
        times = {}
        for label, setting in SETTINGS:
            _use(setting, k)
            fallback = STATS["generic_fallback"]
            dev = [cp.asarray(a) if isinstance(a, np.ndarray) else a for a in host]
            k[grid, BLOCK](*dev)  # checked before it is timed
            cp.cuda.runtime.deviceSynchronize()
            got = [cp.asnumpy(a) if isinstance(a, cp.ndarray) else a for a in dev]
            errs = []
            for what, pos, want in reference(name, host):
                err = _rel_err(got[pos].astype(np.float64), want)
                errs.append(f"{what} {err:.1e}")
                if err > 2e-4:
                    bad += 1
                    print(f"WRONG: {name} remat {label}: {what} relative error {err:.2e}")
            generic = STATS["generic_fallback"] - fallback
            work = [cp.asarray(a) if isinstance(a, np.ndarray) else a for a in host]
            times[label] = _time(lambda: k[grid, BLOCK](*work))
            rows.append((name, label, times[label], ", ".join(errs),
                         "generic program" if generic else "specialised"))
        rows.append((name, "off/on", times["off"] / times["on"], "", ""))
    print(f"reverse gradient (dg.autodiff in a kernel), N = {N} threads, M = {M} "
          f"iterations each, float32, {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}")
    print(f"{'case':8} {'remat':6} {'ms':>9}  {'checked vs float64 numpy':34} program")
    for name, label, t, errs, prog in rows:
        if label == "off/on":
            print(f"{name:8} {label:6} {t:8.2f}x")
        else:
            print(f"{name:8} {label:6} {t:9.3f}  {errs:34} {prog}")
    print(f"programs: {STATS['disk_hit']} from the cache, {STATS['generic_fallback']} generic "
          f"fallbacks; {bad} wrong results")
    return 1 if bad else 0


def main(argv=None) -> int:
    return prepare_run(__doc__, prepare, run, argv)


if __name__ == "__main__":
    sys.exit(main())

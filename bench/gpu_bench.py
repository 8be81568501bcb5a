#!/usr/bin/env python3
"""GPU benchmark: diffgpu primal and gradient kernels against the device copy
bandwidth, PyTorch autograd and jax on the same computation.

Two steps, two machines (the GPU machine has no MLIR):

    python bench/gpu_bench.py --prepare bench/.bundle     # here: compile a bundle for sm_90
    python bench/gpu_bench.py --run bench/.bundle         # there: time, print a table

Each diffgpu gradient kernel is `dg.autodiff` of the primal inside a kernel:
it runs the primal (y = f(x)) and the reverse sweep (dx += f'(x) * dy, dy
consumed), like PyTorch's forward + backward and jax.vjp's primal + pullback.
Times are the median over repeats of back-to-back launches between CUDA
events, after a warm-up; bytes are the minimum each version must move.
"""
from __future__ import annotations

import math
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "scripts"))
from benchlib import cupy_ms, prepare_run  # noqa: E402

N = 1 << 26
BLOCK = 256


def define_kernels():
    import diffgpu as dg
    sys.path.insert(0, os.path.join(REPO, "test", "python"))
    from kernels_specialize import scale_shift, scale_shift_grad  # defined once

    @dg.kernel
    def gauss_sin(y, x):
        i = dg.global_id(0)
        if i < len(x):
            v = x[i]
            y[i] = dg.exp(-v * v) * dg.sin(v)

    @dg.kernel
    def gauss_sin_grad(y, dy, x, dx):
        dg.autodiff(gauss_sin, dg.Duplicated(y, dy), dg.Duplicated(x, dx))

    return {k.name: k for k in (scale_shift, scale_shift_grad, gauss_sin, gauss_sin_grad)}


def prepare(path: str, chip: str) -> None:
    import diffgpu as dg

    kernels = define_kernels()
    compiled = []
    for name, k in kernels.items():
        sig = ("float32[:]",) * (2 if not name.endswith("_grad") else 4)
        compiled.append(dg.compile(k, sig, target=chip))
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    dg.save_bundle(path, compiled)
    print(f"bundle with {len(compiled)} kernels for {chip} written to {path}")


# ---------------------------------------------------------------------------
# timing on the GPU
# ---------------------------------------------------------------------------

_time_cupy = cupy_ms  # bench/benchlib.py


def _time_torch(fn, reps=20, rounds=7):
    import torch

    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(rounds):
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(reps):
            fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) / reps)
    times.sort()
    return times[len(times) // 2]


def _time_jax(fn, reps=20, rounds=7):
    import time

    fn().block_until_ready()
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(reps):
            out = fn()
        out.block_until_ready()
        times.append((time.perf_counter() - t) * 1e3 / reps)
    times.sort()
    return times[len(times) // 2]


def _raw_kernel(bundled, args, grid):
    """The CuPy function of a bundled entry, called with pre-packed arguments:
    the kernel's own time, without diffgpu's per-launch Python work."""
    from diffgpu.runtime.gpu import _load_function, pack_args
    from diffgpu.driver.launch import Program

    entry = next(e for e in bundled.entries if e.matches(args))
    prog = Program(entry.payload)
    fn = _load_function(prog.gpu.ptx, prog.gpu.entry, 0)
    flat = tuple(pack_args(args, prog.flat_types))
    return lambda: fn((grid,), (BLOCK,), flat)


def _host_us(fn, reps=50):
    import time

    import cupy as cp

    fn()
    cp.cuda.runtime.deviceSynchronize()
    t = time.perf_counter()
    for _ in range(reps):
        fn()
    host = (time.perf_counter() - t) / reps
    cp.cuda.runtime.deviceSynchronize()
    return host * 1e6


def run(path: str) -> int:
    sys.modules.setdefault("mlir", None)  # prove the run needs no MLIR
    import gpu_check  # noqa: F401  (sets up `import diffgpu` from the repo)
    import cupy as cp
    import numpy as np

    import diffgpu as dg

    bundle = dg.load_bundle(path)
    rng = np.random.default_rng(0)
    x_host = rng.standard_normal(N).astype(np.float32)
    x = cp.asarray(x_host)
    y = cp.empty_like(x)
    dy = cp.asarray(rng.standard_normal(N).astype(np.float32))
    dx = cp.zeros_like(x)
    grid = (N + BLOCK - 1) // BLOCK
    rows = []
    nbytes = 4 * N

    t_copy = _time_cupy(lambda: cp.copyto(y, x))
    bw_copy = 2 * nbytes / t_copy / 1e6
    rows.append(("device copy (cupy)", "", t_copy, 2 * nbytes, "100%"))

    def pct(t, moved):
        return f"{100 * (moved / t / 1e6) / bw_copy:.0f}%"

    # correctness first: one launch of each, compared with numpy
    checks = []
    bundle["gauss_sin"][grid, BLOCK](y, x)
    ref = np.exp(-x_host.astype(np.float64) ** 2) * np.sin(x_host.astype(np.float64))
    checks.append(("gauss_sin", float(np.max(np.abs(cp.asnumpy(y) - ref)))))
    dy_host = cp.asnumpy(dy)
    dx.fill(0)
    dyc = dy.copy()
    bundle["gauss_sin_grad"][grid, BLOCK](y, dyc, x, dx)
    xd = x_host.astype(np.float64)
    dref = (np.exp(-xd ** 2) * (np.cos(xd) - 2 * xd * np.sin(xd))) * dy_host
    checks.append(("gauss_sin_grad", float(np.max(np.abs(cp.asnumpy(dx) - dref)))))

    prim = {}
    overhead = []
    for name in ("scale_shift", "gauss_sin"):
        k = bundle[name][grid, BLOCK]
        t = _time_cupy(lambda: k(y, x))
        prim[name] = t
        rows.append((f"diffgpu {name}", "primal", t, 2 * nbytes, pct(t, 2 * nbytes)))
        raw = _raw_kernel(bundle[name], (y, x), grid)
        t = _time_cupy(raw)
        rows.append((f"diffgpu {name}", "primal, raw launch", t, 2 * nbytes, pct(t, 2 * nbytes)))
        kg = bundle[name + "_grad"][grid, BLOCK]
        t = _time_cupy(lambda: kg(y, dy, x, dx))
        # reads x, dy, dx; writes y, dy (consumed), dx
        rows.append((f"diffgpu {name}", "gradient", t, 6 * nbytes,
                     f"{t / prim[name]:.2f}x primal"))
        raw = _raw_kernel(bundle[name + "_grad"], (y, dy, x, dx), grid)
        t = _time_cupy(raw)
        rows.append((f"diffgpu {name}", "gradient, raw launch", t, 6 * nbytes,
                     f"{t / prim[name]:.2f}x primal"))
        overhead.append((name, _host_us(lambda: k(y, x)), _host_us(lambda: kg(y, dy, x, dx))))

    try:
        import torch

        xt = torch.as_tensor(x_host, device="cuda").requires_grad_(True)
        gt = torch.as_tensor(cp.asnumpy(dy), device="cuda")
        fns = {"scale_shift": lambda v: 2.0 * v + 1.0,
               "gauss_sin": lambda v: torch.exp(-v * v) * torch.sin(v)}
        for name, f in fns.items():
            t = _time_torch(lambda: torch.autograd.grad(f(xt), xt, gt))
            rows.append((f"pytorch {name}", "autograd fwd+bwd", t, 3 * nbytes, ""))
    except Exception as exc:  # torch missing or failing: say so in the table
        rows.append((f"pytorch: {type(exc).__name__}: {exc}"[:60], "", math.nan, 0, ""))

    try:
        os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
        import jax
        import jax.numpy as jnp

        xj = jnp.asarray(x_host)
        gj = jnp.asarray(cp.asnumpy(dy))
        fns = {"scale_shift": lambda v: 2.0 * v + 1.0,
               "gauss_sin": lambda v: jnp.exp(-v * v) * jnp.sin(v)}
        for name, f in fns.items():
            step = jax.jit(lambda v, g, f=f: jax.vjp(f, v)[1](g)[0])
            t = _time_jax(lambda: step(xj, gj))
            rows.append((f"jax {name}", "jit(vjp)", t, 3 * nbytes, ""))
    except Exception as exc:
        rows.append((f"jax: {type(exc).__name__}: {exc}"[:60], "", math.nan, 0, ""))

    dev = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    print(f"\n{dev}, N = 2^26 float32 elements, block {BLOCK}; "
          f"copy bandwidth {bw_copy:.0f} GB/s")
    print(f"{'version':28} {'what':18} {'ms':>8} {'GB/s (min bytes)':>17} {'note':>14}")
    for name, what, t, moved, note in rows:
        gbs = moved / t / 1e6 if moved and t == t else math.nan
        print(f"{name:28} {what:18} {t:8.3f} {gbs:17.0f} {note:>14}")
    print("\nhost time per diffgpu launch (argument checks + packing), us: " + ", ".join(
        f"{n} primal {a:.0f} / gradient {b:.0f}" for n, a, b in overhead))
    print("max |error| vs float64 numpy:", ", ".join(f"{n} {e:.2e}" for n, e in checks))
    bad = [n for n, e in checks if not e < 1e-4]
    return 1 if bad else 0


def main(argv=None) -> int:
    return prepare_run(__doc__, prepare, run, argv, metavar="BUNDLE")


if __name__ == "__main__":
    sys.exit(main())

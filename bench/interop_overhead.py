"""Per-call cost of a diffgpu kernel inside PyTorch and JAX, against the same
computation written natively, on whatever device the frameworks use here.

    python bench/interop_overhead.py [--n 1000] [--reps 200] [--dtype float32]

For each framework (skipped if not installed): the forward call and a
forward + backward call of `y = x * x` (a one-line kernel, so the time is the
call's overhead), median of `reps` calls after a warm-up, in microseconds.
`--dtype float16` / `bfloat16` times the 16-bit path (the native side
computes in that dtype too).
JAX runs under `jax.jit`; on the CPU its kernel goes through a
`pure_callback`, on a CUDA jaxlib through XLA's kernel call (diffgpu/bridges/jax_gpu.py).
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "scripts"))
import repo_imports  # noqa: E402  (diffgpu from this checkout where it is not installed)

repo_imports.bootstrap()
import diffgpu as dg  # noqa: E402


@dg.kernel
def square(y, x):
    i = dg.global_id(0)
    if i < len(x):
        y[i] = x[i] * x[i]


def _grid(x, **_):
    return (x.shape[0] + 255) // 256


def _time(fn, reps, sync):
    fn()
    sync()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e6


def bench_torch(n, reps, dtype):
    import torch

    dev = "cuda" if torch.cuda.is_available() else "cpu"
    sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)
    op = dg.torch.op(square, outputs={"y": "x"}, grid=_grid, block=256)
    x = torch.rand(n, device=dev).to(getattr(torch, dtype)).requires_grad_()

    def fb(f):
        def run():
            f(x).sum().backward()
        return run
    rows = [("torch", dev, "forward", _time(lambda: op(x), reps, sync),
             _time(lambda: x * x, reps, sync)),
            ("torch", dev, "forward+backward", _time(fb(op), reps, sync),
             _time(fb(lambda v: v * v), reps, sync))]
    return rows


def bench_jax(n, reps, dtype):
    import jax
    import jax.numpy as jnp

    f = dg.jax.op(square, outputs={"y": "x"}, grid=_grid, block=256)
    x = jnp.asarray(np.random.default_rng(0).random(n, np.float32), dtype)
    ours, native = jax.jit(f), jax.jit(lambda v: v * v)
    g_ours = jax.jit(jax.grad(lambda v: f(v).astype(jnp.float32).sum()))
    g_native = jax.jit(jax.grad(lambda v: (v * v).astype(jnp.float32).sum()))
    dev = jax.default_backend()

    def t(fn):
        return _time(lambda: fn(x).block_until_ready(), reps, lambda: None)
    return [("jax.jit", dev, "forward", t(ours), t(native)),
            ("jax.jit", dev, "grad", t(g_ours), t(g_native))]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=1000)
    p.add_argument("--reps", type=int, default=200)
    p.add_argument("--dtype", default="float32", choices=("float32", "float16", "bfloat16"))
    a = p.parse_args(argv)
    print(f"y = x * x, n = {a.n} {a.dtype}, median of {a.reps} calls (microseconds)\n")
    print("| framework | device | call | diffgpu op | native | overhead |")
    print("|---|---|---|---:|---:|---:|")
    for name, fn in (("torch", bench_torch), ("jax", bench_jax)):
        try:
            rows = fn(a.n, a.reps, a.dtype)
        except ImportError as exc:
            print(f"| {name} | - | skipped: {exc} | | | |")
            continue
        for fw, dev, call, ours, native in rows:
            print(f"| {fw} | {dev} | {call} | {ours:.0f} | {native:.0f} | {ours - native:+.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

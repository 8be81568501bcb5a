"""Backends and peers of bench/peers.py: array module + device timer (numpy
and wall clock for --cpu-smoke, CuPy and CUDA events on the GPU), the
PyTorch eager / torch.compile / JAX versions of a case, and the launch-cost
probe (a cached diffgpu kernel vs a CuPy RawKernel)."""
from __future__ import annotations

import os
import time

import numpy as np

from benchlib import cupy_ms


def add4_args(xp):
    """The arguments of the launch-cost probe: four small float32 arrays."""
    return [xp.zeros(1024, np.float32) for _ in range(4)]


# ---------------------------------------------------------------------------
# backends: arrays, timers
# ---------------------------------------------------------------------------

class Host:
    """--cpu-smoke: numpy arrays, wall-clock timer."""
    name = "cpu (numpy, smoke test)"

    def __init__(self):
        self.xp = np

    def to(self, a):
        return a.copy() if isinstance(a, np.ndarray) else a

    def get(self, a):
        return np.asarray(a)

    def sync(self):
        pass

    def time(self, fn, budget_ms=20.0):
        fn()
        t = time.perf_counter()
        fn()
        once = (time.perf_counter() - t) * 1e3
        reps = int(min(max(budget_ms / max(once, 1e-3), 1), 5))
        out = []
        for _ in range(3):
            t = time.perf_counter()
            for _ in range(reps):
                fn()
            out.append((time.perf_counter() - t) * 1e3 / reps)
        return sorted(out)[len(out) // 2]


class Device:
    """--run: CuPy arrays, CUDA events around back-to-back calls."""

    def __init__(self):
        import cupy as cp
        self.cp = self.xp = cp
        props = cp.cuda.runtime.getDeviceProperties(0)
        self.name = props["name"].decode()
        self.chip = f"sm_{cp.cuda.Device().compute_capability}"

    def to(self, a):
        return self.cp.asarray(a) if isinstance(a, np.ndarray) else a

    def get(self, a):
        return self.cp.asnumpy(a) if not isinstance(a, np.ndarray) else a

    def sync(self):
        self.cp.cuda.runtime.deviceSynchronize()

    def time(self, fn, budget_ms=40.0, rounds=7):
        """benchlib.cupy_ms with as many calls per round as fit `budget_ms`
        (at most 20), from one timed call."""
        once = cupy_ms(fn, reps=1, rounds=1)
        reps = int(min(max(budget_ms / max(once, 1e-3), 1), 20))
        return cupy_ms(fn, reps=reps, rounds=rounds)


# peers
# ---------------------------------------------------------------------------

def peer_names(case):
    """The peers' inputs: the kernel's parameters but the output array."""
    return [p for p in case.params if p != case.out]


def _torch_inputs(be, case, host, g_host):
    import torch
    # float32 convolutions and matmuls, not TF32 (they must pass the float64 check)
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = "cuda" if isinstance(be, Device) else "cpu"
    ins, diff = [], []
    for p in peer_names(case):
        v = host[p]
        if isinstance(v, float):
            t = torch.tensor(v, dtype=torch.float32, device=dev)
        elif v.dtype.kind == "i":
            t = torch.as_tensor(v.astype(np.int64), device=dev)
        else:
            t = torch.as_tensor(v, device=dev)
        if p in case.diff:
            t.requires_grad_(True)
            diff.append(t)
        ins.append(t)
    g = torch.as_tensor(np.asarray(case.peer_cot(g_host)), device=dev)
    return torch, ins, diff, g


def _torch_values(case, primal, grads):
    """The peer's results as numpy arrays, by name (cases with `peer_check`)."""
    if not case.peer_check:
        return {}
    names = [p for p in peer_names(case) if p in case.diff]
    out = {name: v.detach().cpu().numpy() for name, v in zip(names, grads)}
    out[case.out] = primal.detach().cpu().numpy()
    return {"values": out}


def torch_eager(be, case, host, g_host):
    torch, ins, diff, g = _torch_inputs(be, case, host, g_host)
    f = lambda: case.peer(torch, *ins)  # noqa: E731
    with torch.no_grad():
        p = be.time(f)
    fb = be.time(lambda: torch.autograd.grad(f(), diff, g))
    return {"P": p, "FB": fb, **_torch_values(case, f(), torch.autograd.grad(f(), diff, g))}


def torch_compile(be, case, host, g_host):
    torch, ins, diff, g = _torch_inputs(be, case, host, g_host)
    # every case compiles the same Python code: start from an empty dynamo
    # cache, or the recompile limit silently turns later cases into eager mode
    torch._dynamo.reset()

    def fwd(*a):
        return case.peer(torch, *a)

    cp, cfb = torch.compile(fwd), torch.compile(lambda *a: fwd(*a))
    with torch.no_grad():
        p = be.time(lambda: cp(*ins))
        primal = cp(*ins)
    fb = be.time(lambda: torch.autograd.grad(cfb(*ins), diff, g))
    return {"P": p, "FB": fb,
            **_torch_values(case, primal, torch.autograd.grad(cfb(*ins), diff, g))}


def jax_peer(be, case, host, g_host):
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    import jax
    import jax.numpy as jnp
    jax.config.update("jax_default_matmul_precision", "highest")  # no TF32 (conv2d: HIGHEST too)
    names = peer_names(case)
    vals = [jnp.float32(host[p]) if isinstance(host[p], float) else jnp.asarray(host[p])
            for p in names]
    pos = [i for i, p in enumerate(names) if p in case.diff]
    g = jnp.asarray(np.asarray(case.peer_cot(g_host)))

    def f(*a):
        return case.peer(jnp, *a)

    def pullback(gg, *a):
        def part(*d):
            full = list(a)
            for i, v in zip(pos, d):
                full[i] = v
            return f(*full)
        return jax.vjp(part, *[a[i] for i in pos])[1](gg)

    fp, fb = jax.jit(f), jax.jit(pullback)

    def timed(fn):
        out = fn()
        jax.block_until_ready(out)
        t = time.perf_counter()
        fn()
        jax.block_until_ready(fn())
        once = (time.perf_counter() - t) * 1e3 / 2
        reps = int(min(max(40.0 / max(once, 1e-3), 1), 20))
        ts = []
        for _ in range(7 if isinstance(be, Device) else 3):
            t = time.perf_counter()
            for _ in range(reps):
                out = fn()
            jax.block_until_ready(out)
            ts.append((time.perf_counter() - t) * 1e3 / reps)
        return sorted(ts)[len(ts) // 2]

    out = {"P": timed(lambda: fp(*vals)), "FB": timed(lambda: fb(g, *vals))}
    if case.peer_check:
        grads = fb(g, *vals)
        out["values"] = {names[i]: np.asarray(v) for i, v in zip(pos, grads)}
        out["values"][case.out] = np.asarray(fp(*vals))
    return out


# ---------------------------------------------------------------------------
# launch cost, table, JSON, chart
# ---------------------------------------------------------------------------

_ADD4_CUDA = r"""
extern "C" __global__ void add4(float* o, const float* a, const float* b, const float* c,
                                long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) o[i] = a[i] + b[i] + c[i];
}
"""


def launch_cost(be, kernels, reps=2000):
    """Host microseconds per call of a cached 4-array kernel (tiny arrays, no
    sync between calls) for diffgpu and, on the GPU, a CuPy RawKernel."""
    xp = be.xp
    arrs = add4_args(xp)
    k = kernels["add4"][4, 256]
    out = {}

    def per_call(fn, r):
        fn()
        be.sync()
        t = time.perf_counter()
        for _ in range(r):
            fn()
        dt = (time.perf_counter() - t) / r
        be.sync()
        return dt * 1e6

    out["diffgpu"] = per_call(lambda: k(*arrs), reps if isinstance(be, Device) else 50)
    if isinstance(be, Device):
        raw = be.cp.RawKernel(_ADD4_CUDA, "add4")
        n = np.int64(1024)
        out["cupy_rawkernel"] = per_call(lambda: raw((4,), (256,), (*arrs, n)), reps)
    return out


#: the peers, in table order: name -> fn(backend, case, host arrays, cotangent)
PEERS = (("torch_eager", torch_eager), ("torch_compile", torch_compile), ("jax", jax_peer))

"""float16 arrays on the GPU (stored in 16 bits, computed in float32): the
seven computations of bench/peer_cases.py with their float32 arrays in
float16 (sumsq's accumulator stays float32), launch, reverse and forward
mode, plus a contiguous copy and a strided (reversed, step 2) view. The
CPU's results are expected, within gpu_check_io.HALF_TOL (float16 results
may be a few roundings apart: atomic adds in another order, libdevice vs
libm); bench/float16.py checks accuracy against float64 and times float16
against float32."""
from __future__ import annotations

import os
import sys

import numpy as np

import diffgpu as dg

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "bench"))
import peer_cases as PC  # noqa: E402

N = 1 << 16
SEVEN = ("square", "saxpy", "softplus", "stencil", "loop16", "sumsq", "gather")


def _convert(case, host):
    return {p: (v.astype(np.float16) if isinstance(v, np.ndarray) and v.dtype == np.float32
                and not (case.name == "sumsq" and p == "out") else v)
            for p, v in host.items()}


def _make(case, mode):
    def make(r):
        host = _convert(case, case.make(r))
        args = [host[p] for p in case.params]
        if mode == "launch":
            return args
        out = []
        for p, a in zip(case.params, args):
            if isinstance(a, float):
                out.append(dg.Active(a) if mode == "reverse" else dg.Duplicated(a, 1.0))
            elif a.dtype.kind == "f":
                out.append(dg.Duplicated(a, r.standard_normal(a.shape).astype(a.dtype)))
            else:
                out.append(dg.Const(a))
        return out
    return make


@dg.kernel
def copy16(y, x):
    i = dg.global_id()
    if i < len(x):
        y[i] = x[i] * 2.0


def _copy16_ref(y, x):
    y[:] = x * np.float16(2)


def cases():
    kernels = PC.kernels()
    out = []
    for case in PC.cases(N):
        if case.name not in SEVEN:
            continue
        k = kernels[case.kernel]
        for mode in ("launch", "reverse", "forward"):
            out.append((f"float16 {case.name} {mode}", k, (N + 255) // 256, 256, mode,
                        _make(case, mode), None))
    out += [
        ("float16 copy x2 contiguous", copy16, N // 256, 256, "launch",
         lambda r: [np.zeros(N, np.float16), r.standard_normal(N).astype(np.float16)],
         _copy16_ref),
        ("float16 copy x2 strided", copy16, N // 512, 256, "launch",
         lambda r: [np.zeros(N, np.float16)[::-2], r.standard_normal(N).astype(np.float16)[::2]],
         _copy16_ref),
    ]
    return out

"""Differentiation with 70 array arguments (the groups layout of
diffgpu.autodiff, dialects/names.py): reverse and forward mode of `many`
(71 Duplicated arrays), its in-kernel dg.autodiff `d_many` (142 array
parameters, about 2.3 KB of PTX parameters), and `mixed`, 35 arrays and 35
Active scalars alternating. The CPU's results are expected."""
from __future__ import annotations

import os
import sys

import numpy as np

import diffgpu as dg

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "test", "python"))
from kernels_many_args import d_many, many, mixed  # noqa: E402

N, K = 4096, 70


def _dup(r, dt):
    return dg.Duplicated(r.uniform(-1, 1, N).astype(dt), r.uniform(-1, 1, N).astype(dt))


def cases():
    out = []
    for dt in (np.float32, np.float64):
        tn = np.dtype(dt).name
        out += [
            (f"many args 70 arrays reverse {tn}", many, N // 256, 256, "reverse",
             lambda r, dt=dt: [_dup(r, dt) for _ in range(K + 1)], None),
            (f"many args 70 arrays forward {tn}", many, N // 256, 256, "forward",
             lambda r, dt=dt: [_dup(r, dt) for _ in range(K + 1)], None),
            (f"many args in-kernel autodiff {tn}", d_many, N // 256, 256, "launch",
             lambda r, dt=dt: [r.uniform(-1, 1, N).astype(dt) for _ in range(2 * K + 2)],
             None),
            (f"many args alternating types reverse {tn}", mixed, N // 256, 256, "reverse",
             lambda r, dt=dt: [a for _ in range(K // 2) for a in (
                 _dup(r, dt), dg.Active(dt(r.uniform(-1, 1))))] + [_dup(r, dt)], None),
        ]
    return out

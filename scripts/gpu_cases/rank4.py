"""Arrays of 4 dimensions on the GPU: strided views (a reversed, a step-2
and a transposed axis), A.shape[3], dg.atomic_add with 4 indices, a 4-d
shared array, and reverse / forward mode and an in-kernel dg.autodiff of a
4-d kernel. Numpy references where the result is plain, else the CPU's."""
from __future__ import annotations

import os
import sys

import numpy as np

import diffgpu as dg

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "test", "python"))
import kernels_rank4 as K  # noqa: E402

SHAPE = (64, 3, 4, 5)


def _view(r, dt):
    base = r.uniform(-1, 1, (64, 6, 10, 4)).astype(dt)
    return base[::-1, ::2, ::2, :].transpose(0, 1, 3, 2)


def _scale_ref(a, b, s):
    b[...] = s * a * a + np.arange(SHAPE[3])


def _sum_ref(a, out):
    out[..., 0] += np.sin(a).sum(axis=3)


def _dup(a, r):
    return dg.Duplicated(a, r.uniform(-1, 1, a.shape).astype(a.dtype))


def cases():
    out = []
    for dt in (np.float32, np.float64):
        tn = np.dtype(dt).name
        out += [
            (f"rank4 strided scale {tn}", K.scale4, 1, 64, "launch",
             lambda r, dt=dt: [_view(r, dt), np.zeros(SHAPE, dt)[:, :, :, ::-1], dt(0.5)],
             _scale_ref),
            (f"rank4 atomics 4 indices {tn}", K.sum_last4, 1, 64, "launch",
             lambda r, dt=dt: [_view(r, dt), np.zeros(SHAPE[:3] + (1,), dt)], _sum_ref),
            (f"rank4 scale reverse {tn}", K.scale4, 1, 64, "reverse",
             lambda r, dt=dt: [_dup(np.ascontiguousarray(_view(r, dt)), r),
                               _dup(np.zeros(SHAPE, dt), r), dg.Active(dt(0.5))], None),
            (f"rank4 scale forward {tn}", K.scale4, 1, 64, "forward",
             lambda r, dt=dt: [_dup(_view(r, dt), r), _dup(np.zeros(SHAPE, dt), r),
                               dg.Duplicated(dt(0.5), dt(1.0))], None),
            (f"rank4 in-kernel autodiff {tn}", K.d_scale4, 1, 64, "launch",
             lambda r, dt=dt: [_view(r, dt), np.zeros(SHAPE, dt), np.zeros(SHAPE, dt),
                               r.uniform(-1, 1, SHAPE).astype(dt), dt(0.5)], None),
        ]
    out.append(("rank4 shared array f32", K.shared4, 1, 16, "launch",
                lambda r: [r.uniform(-1, 1, 16).astype(np.float32), np.zeros(1, np.float32)],
                None))
    return out

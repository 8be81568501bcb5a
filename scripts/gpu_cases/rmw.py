"""dg.vjp of dg.atomic_max / dg.atomic_min (docs/collectives.md, atomic max
and min): a plain launch gives the final values, then the derivative
program sends each element's cotangent to the contribution that won (the
original value where it won). Distinct values only (ties may pick another
thread on the GPU than on the CPU), float32 and float64, several blocks
into one element, a 2-D index. The GPU must give the CPU's gradients.
The forward mode and ties run in test/python/hostdiff/test_atomic_max_min.py
(its `gpu` tests)."""
from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "test", "python"))
import kernels_rmw as K  # noqa: E402


def _distinct(r, n, dt):
    return (r.permutation(n) * 0.37 - n * 0.15).astype(dt)


def _vjp(n, m, dt, big):
    def make(r):
        A = np.full(m, -big, dt)
        A[0] = big  # the original value wins element 0
        return [A, _distinct(r, n, dt), r.standard_normal(m).astype(dt)]
    return make


def _vjp2d(n, dt):
    def make(r):
        A = np.full((4, 8), -1e9, dt)
        A[3, 7] = 1e9
        return [A, _distinct(r, n, dt), r.standard_normal((4, 8)).astype(dt)]
    return make


def cases():
    out = []
    for dt in (np.float32, np.float64):
        name = np.dtype(dt).name
        out.append((f"rmw atomic_max {name}: vjp, 8 blocks into 5 elements", K.max_k, 8, 128,
                    "vjp", _vjp(1024, 5, dt, 1e9), None))
        out.append((f"rmw atomic_min {name}: vjp, 8 blocks into 5 elements", K.min_k, 8, 128,
                    "vjp", _vjp(1024, 5, dt, -1e9), None))
        out.append((f"rmw atomic_max {name}: vjp, 2-D index", K.max2d_k, 4, 256, "vjp",
                    _vjp2d(1000, dt), None))
    return out

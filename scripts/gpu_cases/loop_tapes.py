"""Reverse mode of loops with a runtime trip count, without device malloc
(lowering/autodiff/remat.py LOOP_OPS, checkpoint.py): an all-pairs n-body
inner loop (its body recomputed in the reverse) and a recurrence
s = sin(s) * w[t] + x[i] (64 checkpoints of s and a 64-slot replay buffer in
local memory) at trip counts of one replay per trip (1,000) and of
sub-segments (5,000), and a loop that keeps its tape (it reads what it
writes). The CPU's gradients are expected."""
from __future__ import annotations

import os
import sys

import numpy as np

import diffgpu as dg

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "test", "python"))
from kernels_loop_tapes import nbody, recur, scan_written  # noqa: E402


def _dup(a):
    return dg.Duplicated(a, np.zeros_like(a))


def _nbody(r, n, dt):
    f = np.zeros(n, dt)
    return [dg.Duplicated(f, r.standard_normal(n).astype(dt)),
            _dup(r.standard_normal(n).astype(dt)), _dup(r.standard_normal(n).astype(dt))]


def _recur(r, m, n, dt):
    return [dg.Duplicated(np.zeros(m, dt), r.uniform(-1, 1, m).astype(dt)),
            _dup(r.uniform(-1, 1, m).astype(dt)), _dup(r.uniform(-0.9, 0.9, n).astype(dt)), n]


def cases():
    out = []
    for dt in (np.float32, np.float64):
        name = np.dtype(dt).name
        out += [
            (f"loop tapes nbody 4096 {name}", nbody, 16, 256, "reverse",
             lambda r, dt=dt: _nbody(r, 4096, dt), None),
            (f"loop tapes recurrence n=1000 {name}", recur, 4, 256, "reverse",
             lambda r, dt=dt: _recur(r, 1000, 1000, dt), None),
            (f"loop tapes recurrence n=5000 {name}", recur, 2, 128, "reverse",
             lambda r, dt=dt: _recur(r, 200, 5000, dt), None),
        ]
    out.append(("loop tapes scan keeps its tape f64", scan_written, 1, 64, "reverse",
                lambda r: [_dup(r.uniform(-1, 1, (64, 41))), _dup(r.uniform(-1, 1, 64)), 40], None))
    return out

"""Kernels whose guards are bounds on the global id, or are not
(lowering/coarsen/bounds.py), defined once: imported by
test_coarsen_bounds.py and scripts/gpu_check_specialize.py."""
from __future__ import annotations

import diffgpu as dg


@dg.kernel
def stencil(y, x):  # Python's `and`: a short-circuit scf.if
    i = dg.global_id(0)
    if i >= 1 and i < len(x) - 1:
        y[i] = 0.25 * x[i - 1] + 0.5 * x[i] + 0.25 * x[i + 1]


@dg.kernel
def lower_then_upper(y, x):  # N op A; the upper bound in a nested guard
    i = dg.global_id(0)
    if 3 <= i:
        if i < len(x):
            y[i - 3] = x[i] - x[i - 3]


@dg.kernel
def nested(y, x):  # a bound guard inside a bound guard
    i = dg.global_id(0)
    if i < len(y):
        y[i] = x[i]
        if len(x) - 2 > i:
            y[i] = x[i] + x[i + 2]


@dg.kernel
def parity(y, x):  # not a bound: depends on g otherwise
    i = dg.global_id(0)
    if i < len(x) and i % 2 == 0:
        y[i] = x[i]


@dg.kernel
def loaded(y, x):  # a bound on a loaded value
    i = dg.global_id(0)
    if i < len(x) and x[0] > 0.0:
        y[i] = x[i]


@dg.kernel
def either(y, x):  # a disjunction
    i = dg.global_id(0)
    if i < 2 or i > len(x) - 3:
        y[i] = x[i]


@dg.kernel
def doubled(y, x):  # 2 * g: not g plus a constant
    i = dg.global_id(0)
    if i * 2 < len(x):
        y[i] = x[2 * i]


@dg.kernel
def saxpy(o, a, x, y):  # `a` Active: its gradient goes through the slot adds
    i = dg.global_id(0)
    if i < len(x):
        o[i] = a * x[i] + y[i]


@dg.kernel
def sumsq(out, x):  # a reduction (coarsened by 16); its gradient by 4
    i = dg.global_id(0)
    if i < len(x):
        v = x[i]
        dg.atomic_add(out, 0, v * v)

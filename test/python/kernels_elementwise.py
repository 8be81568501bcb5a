"""Elementwise kernels (and a sum of squares by atomic_add) the functional,
specialisation and replay tests and bench/peer_cases.py share (defined
once, imported)."""
import diffgpu as dg


@dg.kernel
def square(y, x):
    i = dg.global_id(0)
    if i < len(x):
        v = x[i]
        y[i] = v * v


@dg.kernel
def saxpy(o, a, x, y):
    i = dg.global_id(0)
    if i < len(x):
        o[i] = a * x[i] + y[i]


@dg.kernel
def stencil(y, x):
    i = dg.global_id(0)
    if i >= 1 and i < len(x) - 1:
        y[i] = 0.25 * x[i - 1] + 0.5 * x[i] + 0.25 * x[i + 1]


@dg.kernel
def sumsq(out, x):
    i = dg.global_id(0)
    if i < len(x):
        v = x[i]
        dg.atomic_add(out, 0, v * v)


@dg.kernel
def gather(y, x, idx):
    i = dg.global_id(0)
    if i < len(idx):
        y[i] = x[idx[i]]

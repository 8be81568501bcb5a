"""Row gathers and row scatter-adds, defined once: test_vector_red.py and
bench/vector_red.py import them.

The reverse mode of a row gather `out[i, d] = T[idx[i], d]` adds each row of
the output's cotangent into the gathered row of T's shadow: D adjacent
atomic adds per thread, which sm_90 does as vector reductions
(lowering/reduce/vector_red.py). `scatter_rows4` is the same in a primal.
"""
import diffgpu as dg


@dg.kernel
def gather_rows2(T, idx, out):
    i = dg.global_id(0)
    if i < len(idx):
        r = idx[i]
        for d in range(2):
            out[i * 2 + d] = T[r * 2 + d]


@dg.kernel
def gather_rows4(T, idx, out):
    i = dg.global_id(0)
    if i < len(idx):
        r = idx[i]
        for d in range(4):
            out[i * 4 + d] = T[r * 4 + d]


@dg.kernel
def gather_rows8(T, idx, out):
    i = dg.global_id(0)
    if i < len(idx):
        r = idx[i]
        for d in range(8):
            out[i * 8 + d] = T[r * 8 + d]


@dg.kernel
def gather_rows4_2d(T, idx, out):
    i = dg.global_id(0)
    if i < len(idx):
        r = idx[i]
        for d in range(4):
            out[i, d] = T[r, d]


@dg.kernel
def scatter_rows4(out, idx, x):
    i = dg.global_id(0)
    if i < len(idx):
        r = idx[i] * 4
        dg.atomic_add(out, r, x[i * 4])
        dg.atomic_add(out, r + 1, x[i * 4 + 1])
        dg.atomic_add(out, r + 2, x[i * 4 + 2])
        dg.atomic_add(out, r + 3, x[i * 4 + 3])


#: width -> the 1-D gather of that many floats per row
GATHERS = {2: gather_rows2, 4: gather_rows4, 8: gather_rows8}


@dg.kernel
def gather_rows40(T, idx, out):
    """Rows of 40: a loop too long to unroll, so the store stays in it."""
    i = dg.global_id(0)
    if i < len(idx):
        r = idx[i]
        for d in range(40):
            out[i * 40 + d] = T[r * 40 + d] * T[r * 40 + d]


@dg.kernel
def overlapping_rows(T, idx, out):
    """Rows of 4 at a stride of 2: threads i and i + 1 share elements."""
    i = dg.global_id(0)
    if i < len(idx):
        r = idx[i]
        for d in range(4):
            out[i * 2 + d] = T[r * 4 + d]


@dg.kernel
def split_rows(T, idx, out):
    """Two stores per thread outside loops: out[2i] and out[2i + 1]."""
    i = dg.global_id(0)
    if i < len(idx):
        r = idx[i]
        out[i * 2] = T[r * 2] * 3.0
        out[i * 2 + 1] = dg.sin(T[r * 2 + 1])

"""`dg.vjp` of outputs written in rows (lowering/autodiff/functional/rows.py): a row
gather's output `out[i * D + d]` is written once per element, so its
cotangent is read as it is (kind `cot`: no copy, no primal stores, no
consuming stores). Each gradient equals numpy's and Enzyme's convention
(`dg.autodiff` with Duplicated arrays); rows that threads share keep
Enzyme's convention."""
import numpy as np
import pytest

import diffgpu as dg
from kernels_rows import (gather_rows2, gather_rows4, gather_rows8, gather_rows40,
                          overlapping_rows, split_rows)

RNG = np.random.default_rng(5)
ROWS, N, BLOCK = 16, 96, 32


def _reverse_kinds(kernel):
    return [s.split("[reverse ")[1].rstrip("]") for s in kernel.signatures if "[reverse" in s]


def _inputs(width, out_width=None):
    T = RNG.standard_normal(ROWS * width)
    idx = RNG.integers(0, ROWS, N).astype(np.int32)
    idx[:5] = 2  # a row gathered by several threads: its adds collide
    out = np.zeros(N * (out_width or width))
    return T, idx, out, RNG.standard_normal(out.size)


def _enzyme(launch, T, idx, out, g):
    dT = np.zeros_like(T)
    dg.autodiff(launch, dg.Duplicated(T, dT), idx, dg.Duplicated(out.copy(), g.copy()))
    return dT


@pytest.mark.parametrize("kernel,width", [(gather_rows2, 2), (gather_rows4, 4),
                                          (gather_rows8, 8), (gather_rows40, 40)])
def test_row_gather_vjp_reads_its_cotangent(kernel, width):
    T, idx, out, g = _inputs(width)
    g0 = g.copy()
    launch = kernel[N // BLOCK, BLOCK]
    grad = dg.vjp(launch, T, idx, out, cotangents={"out": g})["T"]
    assert _reverse_kinds(kernel)[-1] == "dup, const, cot"
    rows = g.reshape(N, width) * (2 * T.reshape(ROWS, width)[idx] if width == 40 else 1)
    want = np.zeros((ROWS, width))
    np.add.at(want, idx, rows)
    np.testing.assert_allclose(grad.reshape(ROWS, width), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(grad, _enzyme(launch, T, idx, out, g), rtol=1e-12, atol=1e-12)
    assert np.array_equal(g, g0) and not out.any()  # cotangent untouched, no outputs


def test_two_stores_per_thread():
    T, idx, out, g = _inputs(2)
    launch = split_rows[N // BLOCK, BLOCK]
    grad = dg.vjp(launch, T, idx, out, cotangents={"out": g})["T"]
    assert _reverse_kinds(split_rows)[-1] == "dup, const, cot"
    rows = g.reshape(N, 2) * np.stack([np.full(N, 3.0), np.cos(T.reshape(ROWS, 2)[idx, 1])], 1)
    want = np.zeros((ROWS, 2))
    np.add.at(want, idx, rows)
    np.testing.assert_allclose(grad.reshape(ROWS, 2), want, rtol=1e-12, atol=1e-12)


def test_overlapping_rows_keep_enzymes_convention():
    """out[2i + d], d < 4: an element is written by two threads, the later
    store wins; its cotangent must be consumed once (Enzyme's convention)."""
    T, idx, out, g = _inputs(4, out_width=2)
    out = np.zeros(N * 2 + 2)
    g = RNG.standard_normal(out.size)
    launch = overlapping_rows[1, N]  # one block: the order of the stores is the threads'
    grad = dg.vjp(launch, T, idx, out, cotangents={"out": g})["T"]
    assert _reverse_kinds(overlapping_rows)[-1] == "dup, const, dup"
    np.testing.assert_allclose(grad, _enzyme(launch, T, idx, out, g), rtol=1e-12, atol=1e-12)

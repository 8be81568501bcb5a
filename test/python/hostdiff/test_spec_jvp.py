"""dg.jvp without zero-fill: an output whose every element the launch stores
exactly once gets an uninitialised tangent buffer (plan.Call.written_once);
anything the analysis cannot prove keeps the zero-filled one. Uninitialised
buffers are NaN-filled here, so an element the kernel does not write shows."""
from __future__ import annotations

import numpy as np
import pytest

import diffgpu as dg
from diffgpu.hostdiff import buffers
from kernels_elementwise import square  # noqa: E402  (defined once)

RNG = np.random.default_rng(11)


@dg.kernel
def positive(y, x):
    i = dg.global_id(0)
    if i < len(x):
        if x[i] > 0.0:
            y[i] = x[i]


@dg.kernel
def shifted(y, x):
    i = dg.global_id(0)
    if i >= 1 and i < len(x):
        y[i] = 2.0 * x[i]


@dg.kernel
def copy2d(y, x):
    i = dg.global_id(0)
    j = dg.global_id(1)
    if i < y.shape[0] and j < y.shape[1]:
        y[i, j] = 3.0 * x[i, j]


@pytest.fixture
def allocs(monkeypatch):
    """Counts of zeros_like / empty_like calls; empty buffers are NaN."""
    count = {"zeros": 0, "empty": 0}
    zeros = buffers.zeros_like

    def zeros_like(a):
        count["zeros"] += 1
        return zeros(a)

    def empty_like(a):
        count["empty"] += 1
        out = zeros(a)
        out[...] = np.nan
        return out
    monkeypatch.setattr(buffers, "zeros_like", zeros_like)
    monkeypatch.setattr(buffers, "empty_like", empty_like)
    return count


def test_square_tangent_is_not_zero_filled(allocs):
    x, t = RNG.standard_normal(100).astype(np.float32), RNG.standard_normal(100).astype(np.float32)
    y = np.zeros_like(x)
    tans = dg.jvp(square[4, 32], y, x, tangents={"x": t})
    np.testing.assert_allclose(tans["y"], 2 * x * t, rtol=1e-6)
    assert allocs["zeros"] == 0
    assert allocs["empty"] == 2  # the primal's scratch output and the tangent


@pytest.mark.parametrize("grid,n_out,why", [
    (3, 100, "the launch reaches 96 of 100 elements"),
    (4, 120, "the guard len(x) = 100 stops before the output's end"),
])
def test_uncovered_outputs_stay_zero_filled(allocs, grid, n_out, why):
    x, t = RNG.standard_normal(100), RNG.standard_normal(100)
    y = np.zeros(n_out)
    got = dg.jvp(square[grid, 32], y, x, tangents={"x": t})["y"]
    want = np.zeros(n_out)
    m = min(grid * 32, 100)
    want[:m] = 2 * x[:m] * t[:m]
    np.testing.assert_array_equal(got, want, err_msg=why)
    assert allocs["zeros"] == 1, why


@pytest.mark.parametrize("kernel,want", [
    (positive, lambda x, t: np.where(x > 0, t, 0.0)),
    (shifted, lambda x, t: np.concatenate([[0.0], 2 * t[1:]])),
])
def test_conditional_stores_stay_zero_filled(allocs, kernel, want):
    x, t = RNG.standard_normal(64), RNG.standard_normal(64)
    got = dg.jvp(kernel[2, 32], np.zeros(64), x, tangents={"x": t})["y"]
    np.testing.assert_array_equal(got, want(x, t))
    assert allocs["zeros"] == 1


def test_2d_guards_on_both_extents(allocs):
    x, t = RNG.standard_normal((5, 7)), RNG.standard_normal((5, 7))
    got = dg.jvp(copy2d[(1, 1), (8, 8)], np.zeros((5, 7)), x, tangents={"x": t})["y"]
    np.testing.assert_array_equal(got, 3.0 * t)
    assert allocs["zeros"] == 0
    # a launch with 4 threads in y reaches 4 of the 7 columns
    got = dg.jvp(copy2d[(1, 1), (8, 4)], np.zeros((5, 7)), x, tangents={"x": t})["y"]
    want = np.zeros((5, 7))
    want[:, :4] = 3.0 * t[:, :4]
    np.testing.assert_array_equal(got, want)
    assert allocs["zeros"] == 1


def test_store_guards_of_the_analysis():
    from diffgpu.hostdiff.plan import access_facts
    from diffgpu.runtime.args import infer_signature

    def guards(kernel, *args):
        sig = infer_signature(list(args), kernel.arg_names, kernel.name)
        return [f.get("store_guards") for f in access_facts(kernel, sig.types)]

    v, m = np.zeros(4), np.zeros((2, 2))
    assert guards(square, v, v) == [[[0, 1, 0]], None]
    assert guards(copy2d, m, m) == [[[1, 0, 1], [0, 0, 0]], None]
    assert guards(positive, v, v) == [None, None]
    assert guards(shifted, v, v) == [None, None]

"""`dg.vjp` of 1-D stencils through the gathered `grad` kind
(lowering/autodiff/functional/transpose.py): every gradient element written once, no
atomic, equal to the scatter form (Enzyme's convention) it replaces; the
cases that must keep the scatter; the sm_90 PTX's memory operations."""
from __future__ import annotations

import re

import numpy as np
import pytest

import diffgpu as dg
from diffgpu.hostdiff import plan as P
from kernels_elementwise import stencil  # defined once

RNG = np.random.default_rng(11)


@dg.kernel
def nonlinear(y, x):
    i = dg.global_id(0)
    if i >= 2 and i < len(x) - 1:
        y[i] = x[i - 2] * x[i + 1] + dg.sin(x[i])


@dg.kernel
def twice(y, x):
    i = dg.global_id(0)
    if i >= 1 and i < len(x) - 1:
        y[i] = 0.5 * x[i - 1]
        if x[i] > 0.0:
            y[i] = x[i + 1]


@dg.kernel
def strided(y, x):
    i = dg.global_id(0)
    if i < len(y):
        y[i] = x[2 * i] + 3.0 * x[2 * i + 1]


def f32(n):
    return RNG.standard_normal(n).astype(np.float32)


def scatter(kernel, n, grid, block, y, x, g):
    """The gradient by reverse mode with Enzyme's convention (atomics)."""
    dx = np.zeros(n, np.float32)
    dg.autodiff(kernel[grid, block], dg.Duplicated(y.copy(), g.copy()), dg.Duplicated(x, dx))
    return dx


def stencil_ref(x, g):
    n, want = len(x), np.zeros(len(x))
    for i in range(1, n - 1):
        for k, c in ((-1, 0.25), (0, 0.5), (1, 0.25)):
            want[i + k] += c * g[i]
    return want


@pytest.mark.parametrize("n,grid,block", [(70, 3, 32), (64, 2, 32), (5, 1, 8), (33, 1, 64)])
def test_stencil_gathered_equals_scatter(kinds, n, grid, block):
    x, y, g = f32(n), np.zeros(n, np.float32), f32(n)
    xbar = dg.vjp(stencil[grid, block], y, x, cotangents={"y": g})["x"]
    assert kinds == [["cot", "grad"]]
    assert not np.isnan(xbar).any()  # every element written (the buffer starts NaN)
    np.testing.assert_allclose(xbar, stencil_ref(x, g), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(xbar, scatter(stencil, n, grid, block, y, x, g),
                               rtol=1e-6, atol=1e-7)


def test_nonlinear_stencil_replays_the_tape(kinds):
    n = 90
    x, y, g = f32(n), np.zeros(n, np.float32), f32(n)
    xbar = dg.vjp(nonlinear[3, 32], y, x, cotangents={"y": g})["x"]
    assert kinds == [["cot", "grad"]]
    want = np.zeros(n)
    for i in range(2, n - 1):
        want[i - 2] += x[i + 1] * g[i]
        want[i + 1] += x[i - 2] * g[i]
        want[i] += np.cos(x[i]) * g[i]
    np.testing.assert_allclose(xbar, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(xbar, scatter(nonlinear, n, 3, 32, y, x, g), rtol=1e-6,
                               atol=1e-7)


def test_launch_short_of_x_keeps_the_scatter(kinds):
    n = 70  # 64 threads: x[64..69] have no thread to gather them
    x, y, g = f32(n), np.zeros(n, np.float32), f32(n)
    xbar = dg.vjp(stencil[2, 32], y, x, cotangents={"y": g})["x"]
    assert kinds == [["cot", "dup"]]
    want = np.zeros(n)
    for i in range(1, 64):
        for k, c in ((-1, 0.25), (0, 0.5), (1, 0.25)):
            want[i + k] += c * g[i]
    np.testing.assert_allclose(xbar, want, rtol=1e-6, atol=1e-6)


def test_outputs_by_a_later_launch_still_gather(kinds):
    n = 64
    x, y, g = f32(n), np.zeros(n, np.float32), f32(n)
    xbar = dg.vjp(stencil[2, 32], y, x, cotangents={"y": g}, outputs=True)["x"]
    assert kinds == [["cot", "grad"]]
    np.testing.assert_allclose(xbar, stencil_ref(x, g), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(y[1:-1], 0.25 * x[:-2] + 0.5 * x[1:-1] + 0.25 * x[2:],
                               rtol=1e-6)


def test_output_stored_twice_keeps_the_scatter(kinds):
    n = 64  # y is not `cot`: its consumed cotangent is a write the replay would see
    x, y, g = f32(n), np.zeros(n, np.float32), f32(n)
    xbar = dg.vjp(twice[2, 32], y, x, cotangents={"y": g})["x"]
    assert kinds == [["dup", "dup"]]
    want = np.zeros(n)
    for i in range(1, n - 1):
        if x[i] > 0:
            want[i + 1] += g[i]
        else:
            want[i - 1] += 0.5 * g[i]
    np.testing.assert_allclose(xbar, want, rtol=1e-6, atol=1e-7)


def test_non_unit_stride_writes_each_element_once(kinds):
    """x[2 i] and x[2 i + 1]: no stencil, but thread i's elements alone
    (lowering/autodiff/functional/owned.py): 'grad', each element written
    once from a register (the buffer NaN-filled: all written)."""
    n = 40
    x, y, g = f32(2 * n), np.zeros(n, np.float32), f32(n)
    xbar = dg.vjp(strided[2, 32], y, x, cotangents={"y": g})["x"]
    assert kinds[0][1] == "grad"
    want = np.zeros(2 * n)
    want[0::2], want[1::2] = g, 3.0 * g
    np.testing.assert_allclose(xbar, want, rtol=1e-6)


def test_access_fact_names_the_offsets():
    facts = P.Call(stencil[1, 8], (np.zeros(8, np.float32), np.zeros(8, np.float32)),
                   "access").facts
    assert facts[1]["stencil"] == [-1, 0, 1] and facts[1]["load_key"] is None
    assert facts[0]["stencil"] is None
    sf = P.Call(strided[1, 8], (np.zeros(8, np.float32), np.zeros(16, np.float32)),
                "access").facts
    assert sf[1]["stencil"] is None


def _has_nvptx():
    from diffgpu.driver.compiler import has_nvptx
    return has_nvptx()


@pytest.mark.skipif(not _has_nvptx(), reason="MLIR bindings without NVPTX")
@pytest.mark.parametrize("facts", [False, True])
def test_ptx_reads_dy_writes_dx_once_no_atomic(facts):
    """The whole sm_90 pipeline (with and without the launch's no-alias
    facts): dy[j + 1], dy[j], dy[j - 1] (one new word per element, the
    neighbours from cache), one store of dx[j], no load of x (the adjoint
    is linear), no atomic, no shared memory, no barrier."""
    from diffgpu.driver.launch import get_program
    from diffgpu.runtime.specialize import Facts
    from diffgpu.types import ArrayType

    f = Facts(noalias=True, contiguous=(True,) * 4, unit_dims=(1, 2)) if facts else None
    ptx = get_program(stencil, (ArrayType("float32", 1),) * 2, "sm_90",
                      ("reverse", ("cot", "grad")), f).payload["ptx"]
    assert "atom." not in ptx and "red." not in ptx and "bar.sync" not in ptx
    assert ".shared" not in ptx
    assert len(re.findall(r"\bst\.global\.", ptx)) == 1
    assert len(re.findall(r"\bld\.global\.", ptx)) == 3


@dg.kernel
def scaled(y, a, x, w):
    i = dg.global_id(0)
    if i >= 1 and i < len(x) - 1:
        y[i] = a * (x[i - 1] - x[i + 1]) * w[i]


def test_stencil_with_an_active_scalar_and_an_elementwise_input(kinds):
    n, a = 100, 1.25
    x, w, y, g = f32(n), f32(n), np.zeros(n, np.float32), f32(n)
    grads = dg.vjp(scaled[4, 32], y, a, x, w, cotangents={"y": g})
    assert kinds == [["cot", "active", "grad", "grad"]]
    i = np.arange(1, n - 1)
    d = x[i - 1].astype(np.float64) - x[i + 1]
    want_x = np.zeros(n)
    np.add.at(want_x, i - 1, a * w[i] * g[i])
    np.add.at(want_x, i + 1, -a * w[i] * g[i])
    want_w = np.zeros(n)
    want_w[i] = a * d * g[i]
    np.testing.assert_allclose(grads["x"], want_x, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(grads["w"], want_w, rtol=1e-5, atol=1e-6)
    assert grads["a"] == pytest.approx(float(np.sum(d * w[i] * g[i])), rel=1e-5)


@dg.kernel
def lane_weighted(y, x):
    i = dg.global_id(0)
    if i >= 1 and i < len(x):
        y[i] = x[i - 1] * dg.thread_id(0)


def test_thread_id_outside_the_global_id_keeps_the_scatter(kinds):
    n = 64  # replaying thread j - k would need j - k's thread_id, not j's shifted
    x, y, g = f32(n), np.zeros(n, np.float32), f32(n)
    xbar = dg.vjp(lane_weighted[2, 32], y, x, cotangents={"y": g})["x"]
    assert kinds == [["cot", "dup"]]
    want = np.zeros(n)
    want[:-1] = g[1:] * (np.arange(1, n) % 32)
    np.testing.assert_allclose(xbar, want, rtol=1e-6)

"""Stencil adjoints gathered per block (lowering/reduce/stencil_adjoint.py).

The reverse sweep of a stencil scatters `dx[i + k] += ...`; the pass sums
those adds per block through shared memory, atomics only across block edges.
Gradients are checked on the CPU against analytic ones, against the
per-thread atomic path (a launch with y threads takes it) and against finite
differences, for block sizes where every thread is an edge (1) and where
blocks are partial.
"""
from __future__ import annotations

import numpy as np
import pytest

import diffgpu as dg


@dg.kernel
def smooth(y, x):  # 3-point stencil under a boundary guard
    i = dg.global_id(0)
    if i >= 1 and i < len(x) - 1:
        y[i] = 0.25 * x[i - 1] + 0.5 * x[i] + 0.25 * x[i + 1]


@dg.kernel
def wide(y, x):  # nonlinear, offsets -2 and +1 and 0
    i = dg.global_id(0)
    if i >= 2 and i < len(x) - 1:
        y[i] = x[i - 2] * x[i + 1] + dg.sin(x[i])


@dg.kernel
def laplace(y, x):  # 5-point stencil on a 2-D array, rows from y threads
    i = dg.global_id(1)
    j = dg.global_id(0)
    if i >= 1 and i < x.shape[0] - 1 and j >= 1 and j < x.shape[1] - 1:
        y[i, j] = x[i - 1, j] + x[i + 1, j] + x[i, j - 1] + x[i, j + 1] - 4.0 * x[i, j]


N = 301


def smooth_grad(dy):
    d = dy.copy()
    d[0] = d[-1] = 0
    g = np.zeros_like(dy)
    g[:-2] += 0.25 * d[1:-1]
    g[1:-1] += 0.5 * d[1:-1]
    g[2:] += 0.25 * d[1:-1]
    return g


def wide_grad(x, dy):
    i = np.arange(2, len(x) - 1)
    g = np.zeros_like(x)
    np.add.at(g, i - 2, dy[i] * x[i + 1])
    np.add.at(g, i + 1, dy[i] * x[i - 2])
    np.add.at(g, i, dy[i] * np.cos(x[i]))
    return g


def reverse(kernel, grid, block, x, dy):
    dx, dyc = np.zeros_like(x), dy.copy()
    dg.autodiff(kernel[grid, block], dg.Duplicated(np.zeros_like(x), dyc),
                dg.Duplicated(x, dx))
    return dx, dyc


def rand(seed=0):
    r = np.random.default_rng(seed)
    return r.standard_normal(N), r.standard_normal(N)


@pytest.mark.parametrize("block", [1, 7, 32, 48, 128, 1024])
def test_smooth_gradient_any_block(block):
    x, dy = rand()
    dx, dyc = reverse(smooth, (N + block - 1) // block, block, x, dy)
    np.testing.assert_allclose(dx, smooth_grad(dy), rtol=1e-13, atol=1e-15)
    assert not dyc[1:-1].any()  # the shadow of y is consumed, as before


@pytest.mark.parametrize("block", [1, 5, 64])
def test_nonlinear_offsets_gradient(block):
    x, dy = rand(1)
    dx, _ = reverse(wide, (N + block - 1) // block, block, x, dy)
    np.testing.assert_allclose(dx, wide_grad(x, dy), rtol=1e-12, atol=1e-14)


def test_gather_equals_per_thread_atomics():
    """A launch with y threads takes the per-thread atomic path; with one y
    thread the gather. Same adds, so the same gradient (up to the order of
    float additions)."""
    x, dy = rand(2)
    gathered, _ = reverse(wide, (N + 31) // 32, 32, x, dy)
    atomic, _ = reverse(wide, ((N + 31) // 32, 1), (32, 2), x, dy)  # y thread 1 adds zeros
    np.testing.assert_allclose(gathered, atomic, rtol=1e-13, atol=1e-15)


def laplace_grad(dy):
    d = np.zeros_like(dy)
    d[1:-1, 1:-1] = dy[1:-1, 1:-1]
    g = -4.0 * d
    g[:-1, :] += d[1:, :]
    g[1:, :] += d[:-1, :]
    g[:, :-1] += d[:, 1:]
    g[:, 1:] += d[:, :-1]
    return g


@pytest.mark.parametrize("block", [(16, 8), (4, 4), (1, 1), (7, 3), (32, 1)])
def test_2d_stencil_gradient(block):
    # float32: five float64 adds would need 45 KiB of shared memory, over the
    # pass's budget (they keep their atomics)
    r = np.random.default_rng(4)
    x = r.standard_normal((37, 29)).astype(np.float32)
    dy = r.standard_normal((37, 29)).astype(np.float32)
    grid = ((29 + block[0] - 1) // block[0], (37 + block[1] - 1) // block[1])
    dx, dyc = np.zeros_like(x), dy.copy()
    dg.autodiff(laplace[grid, block], dg.Duplicated(np.zeros_like(x), dyc),
                dg.Duplicated(x, dx))
    np.testing.assert_allclose(dx, laplace_grad(dy.astype(np.float64)), rtol=1e-5,
                               atol=1e-5)


def test_2d_stencil_ir_gathers():
    from diffgpu.driver.launch import build_module, check_launch_args

    args = (np.zeros((8, 8), np.float32), np.zeros((8, 8), np.float32))
    types = check_launch_args(laplace, args).types
    src = build_module(laplace, types, "host", ("reverse", ("dup", "dup")))
    text = run_passes_on(src.text, ["diffgpu-autodiff", "diffgpu-stencil-adjoint"])
    # gather: the element's own add (atomic at an edge) and one crossing add per
    # nonzero offset (4); a launch with z threads: one add per offset (5)
    assert text.count('"diffgpu.barrier"') == 1 and text.count("diffgpu.stencil") == 10


def test_gradcheck_finite_differences():
    x = np.random.default_rng(3).standard_normal(40)
    assert dg.gradcheck(wide[5, 8], dg.Duplicated(np.zeros(40), np.zeros(40)),
                        dg.Duplicated(x, np.zeros(40)))


# ---------------------------------------------------------------------------
# The IR and the GPU code
# ---------------------------------------------------------------------------

def reverse_text(kernel, n, target="sm_90", passes=None):
    """PTX of the reverse program (or its IR after `passes`)."""
    from diffgpu.driver.launch import build_module, check_launch_args

    args = (np.zeros(n, np.float32), np.zeros(n, np.float32))
    types = check_launch_args(kernel, args).types
    src = build_module(kernel, types, target, ("reverse", ("dup", "dup")))
    if passes is None:
        from diffgpu.driver.compiler import compile_ptx
        return compile_ptx(src.text, target).ptx
    return run_passes_on(src.text, passes)


def run_passes_on(text, passes):
    from diffgpu._mlir import ir
    from diffgpu.dialects import make_context
    from diffgpu.lowering.registry import run_passes

    with make_context(), ir.Location.unknown():
        module = ir.Module.parse(text)
        run_passes(passes, module.operation)
        return str(module)


def test_gradient_ir_gathers():
    text = reverse_text(smooth, 64, target="host",
                        passes=["diffgpu-autodiff", "diffgpu-stencil-adjoint"])
    assert text.count('"diffgpu.barrier"') == 1
    assert text.count("diffgpu.stencil") == 6  # 3 kept for other launch shapes


def test_ptx_has_one_barrier_and_only_edge_atomics():
    text = reverse_text(smooth, 64)
    assert text.count("bar.sync") == 1
    # the element's own add at a block edge, two contributions crossing an edge,
    # and (other launch shapes) one per offset; LLVM may merge some
    assert 1 <= text.count("atom.global.add.f32") <= 6


def gpu_cases():
    """Cases for scripts/gpu_check.py (reverse mode; expected: the CPU)."""
    def make(n):
        def args(r):
            x = r.standard_normal(n).astype(np.float32)
            return [dg.Duplicated(np.zeros(n, np.float32), r.standard_normal(n).astype(
                np.float32)), dg.Duplicated(x, np.zeros(n, np.float32))]
        return args

    def make2d(shape):
        def args(r):
            x = r.standard_normal(shape).astype(np.float32)
            return [dg.Duplicated(np.zeros(shape, np.float32), r.standard_normal(shape).astype(
                np.float32)), dg.Duplicated(x, np.zeros(shape, np.float32))]
        return args

    n = 100_003
    return [
        ("stencil reverse 2-D 5-point, blocks of 32x8", laplace, (20, 63), (32, 8), "reverse",
         make2d((500, 633)), None),
        ("stencil reverse 3-point, blocks of 256", smooth, (n + 255) // 256, 256, "reverse",
         make(n), None),
        ("stencil reverse 3-point, blocks of 48", smooth, (n + 47) // 48, 48, "reverse",
         make(n), None),
        ("stencil reverse nonlinear -2/+1, blocks of 64", wide, (n + 63) // 64, 64, "reverse",
         make(n), None),
    ]

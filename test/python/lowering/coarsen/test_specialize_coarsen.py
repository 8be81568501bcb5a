"""Thread coarsening (lowering/coarsen/coarsen.py): which kernels are eligible, the
rewrite run on the CPU (the pass on a host module, launched on a quarter of
the blocks) against the plain kernel, and the GPU code (vector accesses)."""
from __future__ import annotations

import re

import numpy as np
import pytest

import diffgpu as dg
from diffgpu.runtime import specialize as S


@dg.kernel
def scale_shift(y, x):
    i = dg.global_id(0)
    if i < len(x):
        y[i] = 2.0 * x[i] + 1.0


@dg.kernel
def poly(y, x, w, a):
    i = dg.global_id(0)
    if i < len(x):
        v = x[i]
        s = 0.0
        for k in range(3):
            s = s * v + w[i] * a
        y[i] = dg.exp(-v * v) * s


@dg.kernel
def scale_shift_grad(y, dy, x, dx):
    dg.autodiff(scale_shift, dg.Duplicated(y, dy), dg.Duplicated(x, dx))


@dg.kernel
def fma3(y, x, w, a):
    i = dg.global_id(0)
    if i < len(x):
        v = x[i]
        y[i] = dg.exp(-v * v) * (w[i] * a + v)


@dg.kernel
def fma3_grad(y, dy, x, dx, w, dw, a):
    dg.autodiff(fma3, dg.Duplicated(y, dy), dg.Duplicated(x, dx), dg.Duplicated(w, dw), a)


@dg.kernel
def uses_tid(y, x):  # thread_id alone: depends on the thread mapping
    i = dg.global_id(0)
    if i < len(x):
        y[i] = x[i] + dg.thread_id(0)


@dg.kernel
def grid_stride(y, x):  # grid_dim: depends on the number of threads
    i = dg.global_id(0)
    if i < len(x):
        y[i] = x[i] * dg.grid_dim(0)


@dg.kernel
def neighbour(y, x):  # reads other threads' elements: still eligible (no writes to x)
    i = dg.global_id(0)
    if i + 1 < len(x):
        y[i] = x[i + 1] - x[i]


@dg.kernel
def with_atomic(out, x):
    i = dg.global_id(0)
    if i < len(x):
        dg.atomic_add(out, 0, x[i])


@dg.kernel
def two_statements(y, x):  # something after the guard
    i = dg.global_id(0)
    if i < len(x):
        y[i] = x[i]
    y[0] = 1.0


def _module_fn(kernel, args):
    from diffgpu._mlir import ir
    from diffgpu.dialects import make_context

    text = kernel.ir(*args, stage="dialect", target="host")
    ctx = make_context()
    with ctx:
        m = ir.Module.parse(text)
    fn = next(o.operation for o in m.body.operations
              if o.operation.attributes["sym_name"].value == kernel.name)
    return ctx, m, fn


@pytest.mark.parametrize("kernel,nargs,ok", [
    (scale_shift, 2, True), (fma3, 3, True), (neighbour, 2, True),
    (poly, 3, False),  # a loop: compute-bound, nothing to vectorise
    (scale_shift_grad, 4, False),  # a derivative wrapper: only with noalias facts
    (uses_tid, 2, False), (grid_stride, 2, False), (with_atomic, 2, False),
    (two_statements, 2, False),
])
def test_eligibility(kernel, nargs, ok):
    from diffgpu.lowering.coarsen import coarsen

    args = [np.zeros(8, np.float32) for _ in range(nargs)] + (
        [2.0] if kernel in (poly, fma3) else [])
    ctx, _m, fn = _module_fn(kernel, args)
    with ctx:
        assert coarsen.eligible(fn) is ok


def run_pipeline(text, elements):
    """Run our passes `elements` on diffgpu IR `text`."""
    from diffgpu._mlir import ir
    from diffgpu.dialects import make_context
    from diffgpu.lowering.registry import build_pass_manager, run_passes

    ctx = make_context()
    with ctx, ir.Location.unknown():
        module = ir.Module.parse(text)
        run_passes(build_pass_manager(elements, ctx), module)
        return str(module)


def _coarsened_host_program(kernel, args):
    """The kernel's module marked as a coarsened GPU launch would be, the
    pass run, compiled for the CPU."""
    from diffgpu.driver.launch import build_module
    from diffgpu.lowering.facts.attrs import coarsen_factor
    from diffgpu.runtime.args import infer_signature
    try:
        from diffgpu.driver.compiler import compile_host
    except ImportError:  # the older layout
        from diffgpu.runtime.cpu import compile_host

    types = infer_signature(args).types
    facts = S.Facts(True, (), (1, 2), (), True)
    src = build_module(kernel, types, "host", facts=facts)
    assert coarsen_factor(src.text) == S.COARSEN
    # as in the GPU pipeline: differentiate, apply the facts, then coarsen
    text = run_pipeline(src.text, ["diffgpu-verify-targets", "diffgpu-autodiff",
                                   "diffgpu-specialize", "diffgpu-coarsen"])
    assert "diffgpu.coarsen" in text and "__dg_tail" in text
    return compile_host(text), types


@pytest.mark.parametrize("n", [1000, 1024, 1021, 3])
def test_coarsened_equals_plain_on_the_cpu(n):
    rng = np.random.default_rng(n)
    x, w = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    d1, d2, d3 = (rng.standard_normal(n).astype(np.float32) for _ in range(3))
    for kernel, args in ((scale_shift, [np.zeros(n, np.float32), x]),
                         (fma3, [np.zeros(n, np.float32), x, w, 0.5]),
                         (neighbour, [np.zeros(n, np.float32), x]),
                         (scale_shift_grad, [np.zeros(n, np.float32), d1, x, d2]),
                         (fma3_grad, [np.zeros(n, np.float32), d1, x, d2, w, d3, 0.5])):
        block = 32
        grid = -(-n // block)
        grid += -grid % S.COARSEN  # a multiple of COARSEN, as the fact requires
        want = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        kernel[grid, block](*want)
        prog, types = _coarsened_host_program(kernel, args)
        got = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        prog.launch(kernel.name, got, types, (grid // S.COARSEN, 1, 1), (block, 1, 1))
        for g, w_ in zip(got, want):
            if isinstance(g, np.ndarray):
                assert np.array_equal(g, w_), kernel.name


def test_no_coarsening_without_the_facts():
    from diffgpu.lowering.facts.attrs import coarsen_factor
    x = np.zeros(64, np.float32)
    for grid in (6, (4, 2)):  # not a multiple of 4; a 2-D grid
        text = scale_shift.ir(x, x.copy(), stage="dialect", target="sm_90", grid=grid,
                              block=32)
        assert coarsen_factor(text) == 1


def test_ptx_vector_access():
    from diffgpu.driver.compiler import has_nvptx
    if not has_nvptx():
        pytest.skip("these MLIR bindings have no NVPTX backend")
    x, y = np.zeros(4096, np.float32), np.zeros(4096, np.float32)
    if x.ctypes.data % 16 or y.ctypes.data % 16:
        pytest.skip("numpy gave an array that is not 16-byte aligned")
    ptx = scale_shift.ir(y, x, stage="ptx", target="sm_90", grid=16, block=256)
    assert re.search(r"ld\.global\.nc\.v4\.(b|f)32", ptx)
    assert re.search(r"st\.global\.v4\.(b|f)32", ptx)
    # the gradient too: its derivative function inlined, all loads first
    d, dx = np.zeros(4096, np.float32), np.zeros(4096, np.float32)
    if d.ctypes.data % 16 == 0 and dx.ctypes.data % 16 == 0:
        ptx = scale_shift_grad.ir(y, d, x, dx, stage="ptx", target="sm_90", grid=16,
                                  block=256)
        fast = ptx[:ptx.index("__dg_tail,")] if "__dg_tail," in ptx else ptx
        assert len(re.findall(r"st\.global\.v4", fast)) == 3, fast
        assert len(re.findall(r"ld\.global(\.nc)?\.v4", fast)) == 3
    # an unaligned view: no vector access, still coarsened
    ptx = scale_shift.ir(y[1:], x[1:], stage="ptx", target="sm_90", grid=16, block=256)
    assert ".v4." not in ptx and "ld.global.nc" in ptx

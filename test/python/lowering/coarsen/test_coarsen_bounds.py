"""Coarsening kernels whose guards are conjunctions of lower and upper bounds
on the global id (lowering/coarsen/bounds.py): which kernels qualify, the
coarsened program against the plain one on the CPU (the stencil, its
gathered `dg.vjp` gradient, nested guards), and the GPU code (vector
accesses, no atomics, the tail function)."""
from __future__ import annotations

import re

import numpy as np
import pytest

import diffgpu as dg
from diffgpu.runtime import specialize as S
from kernels_coarsen import doubled, either, loaded, lower_then_upper, nested, parity, stencil
from test_specialize_coarsen import _module_fn, run_pipeline


@pytest.mark.parametrize("kernel,ok", [
    (stencil, True), (lower_then_upper, True), (nested, True),
    (parity, False), (loaded, False), (either, False), (doubled, False),
])
def test_eligibility(kernel, ok):
    from diffgpu.lowering.coarsen import coarsen

    ctx, _m, fn = _module_fn(kernel, [np.zeros(8, np.float32) for _ in range(2)])
    with ctx:
        assert coarsen.eligible(fn) is ok


def _facts(nargs):
    return S.Facts(noalias=True, contiguous=(True,) * nargs, unit_dims=(1, 2),
                   aligned=(), grid_div=True)


def _host_program(kernel, types, diff=None):
    """The module as a coarsened GPU launch would mark it, the pass run,
    compiled for the CPU: (program, entry name, factor)."""
    from diffgpu.driver.compiler import compile_host
    from diffgpu.driver.launch import build_module, flat_types
    from diffgpu.lowering.facts.attrs import coarsen_factor

    src = build_module(kernel, types, "host", diff=diff,
                       facts=_facts(len(flat_types(types, diff))))
    text = run_pipeline(src.text, ["diffgpu-verify-targets", "diffgpu-autodiff",
                                   "diffgpu-specialize", "diffgpu-coarsen"])
    factor = coarsen_factor(text)
    assert factor == S.COARSEN and "__dg_tail" in text
    return compile_host(text), src.entry, factor


def _grid(n, block):
    grid = -(-n // block)
    return grid + (-grid % S.COARSEN)  # a multiple of COARSEN, as the fact requires


@pytest.mark.parametrize("n", [3, 5, 64, 1021, 1024])
@pytest.mark.parametrize("kernel", [stencil, lower_then_upper, nested])
def test_coarsened_equals_plain_on_the_cpu(kernel, n):
    from diffgpu.runtime.args import infer_signature

    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)  # untouched elements must stay
    block = 8
    grid = _grid(n, block)
    want = [y.copy(), x]
    kernel[grid, block](*want)
    types = infer_signature([y, x]).types
    prog, entry, factor = _host_program(kernel, types)
    got = [y.copy(), x]
    prog.launch(entry, got, types, (grid // factor, 1, 1), (block, 1, 1))
    assert np.array_equal(got[0], want[0])


@pytest.mark.parametrize("n", [3, 6, 64, 1021])
def test_coarsened_stencil_vjp_equals_plain_on_the_cpu(n):
    """The gathered gradient (lowering/autodiff/functional/transpose.py), coarsened,
    against `dg.vjp` on the CPU: every dx element written once."""
    from diffgpu.driver.launch import flat_types
    from diffgpu.runtime.args import infer_signature

    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(np.float32)
    dy = rng.standard_normal(n).astype(np.float32)
    block = 8
    grid = _grid(n, block)
    want = dg.vjp(stencil[grid, block], np.zeros(n, np.float32), x,
                  cotangents={"y": dy})["x"]
    types = infer_signature([np.zeros(n, np.float32), x]).types
    diff = ("reverse", ("cot", "grad"))
    prog, entry, factor = _host_program(stencil, types, diff)
    dx = np.full(n, np.nan, np.float32)  # written, not accumulated
    prog.launch(entry, [np.zeros(n, np.float32), dy.copy(), x, dx],
                flat_types(types, diff), (grid // factor, 1, 1), (block, 1, 1))
    assert np.array_equal(dx, want)


def _fast_path(ptx: str, entry: str) -> str:
    """The entry's in-range path: its text up to the tail call."""
    body = ptx[ptx.index(f".entry {entry}("):]
    return body[:body.index("__dg_tail")]


def test_ptx_stencil_and_its_vjp():
    """sm_90 code of the stencil and of its `dg.vjp` gradient: coarsened by
    4 (the tail function), one v4 load of x (dy) and one v4 store of y (dx)
    per thread, the two neighbours scalar, no atomic; with 64- and 32-bit
    indices (the gradient's store was split in two v2 before
    coarsen_rewrite._sign_test)."""
    from diffgpu.driver import compiler
    from diffgpu.driver.launch import build_module
    from diffgpu.lowering.coarsen.coarsen import factor_in_ptx
    from diffgpu.driver.compiler import has_nvptx
    from diffgpu.runtime.args import infer_signature

    if not has_nvptx():
        pytest.skip("these MLIR bindings have no NVPTX backend")
    n = 4096
    x, y = np.zeros(n, np.float32), np.zeros(n, np.float32)
    types = infer_signature([y, x]).types
    facts = S.Facts(noalias=True, contiguous=(True,) * 4, unit_dims=(1, 2),
                    aligned=(True,) * 4, grid_div=True, grid_div16=True)
    for diff, index32 in [(d, i) for d in (None, ("reverse", ("cot", "grad")))
                          for i in (False, True)]:
        nargs = 2 if diff is None else 4
        f = S.Facts(**{**facts.__dict__, "contiguous": (True,) * nargs,
                       "aligned": (True,) * nargs, "index32": index32})
        src = build_module(stencil, types, "sm_90", diff=diff, facts=f)
        ptx = compiler.compile(src.text, "sm_90").text
        assert factor_in_ptx(ptx, src.entry) == 4
        fast = _fast_path(ptx, src.entry)
        assert len(re.findall(r"ld\.global(\.nc)?\.v4\.(b|f)32", fast)) == 1, fast
        assert len(re.findall(r"st\.global\.v4\.(b|f)32", fast)) == 1, fast
        assert len(re.findall(r"ld\.global(\.nc)?\.(b|f)32", fast)) == 2, fast  # neighbours
        assert not re.search(r"\b(atom|red)\.", ptx)

"""Coarsening derivative kernels with Active scalars (lowering/coarsen/coarsen.py,
coarsen_reduce.slot_epilogue): the host-API derivative kernel adds each
thread's gradient of an Active scalar into a slot buffer the runtime sums;
coarsened, a thread sums its copies' gradients and adds once. Checked on
the CPU against the generic program (arrays exactly, the slot sum up to
the order of the float additions) and in the sm_90 code (vector accesses)."""
from __future__ import annotations

import re

import numpy as np
import pytest

import diffgpu as dg
from diffgpu.runtime import specialize as S
from kernels_elementwise import saxpy  # defined once
from test_specialize_coarsen import run_pipeline


@dg.kernel
def scaled_sum(out, a, x):  # an Active scalar and a reduction: not an elementwise body
    i = dg.global_id(0)
    if i < len(x):
        dg.atomic_add(out, 0, a * x[i])


@dg.kernel
def affine(o, a, b, x):  # two Active scalars: two slot buffers
    i = dg.global_id(0)
    if i < len(x):
        o[i] = a * x[i] + b


#: Enzyme's convention (dg.autodiff) and dg.vjp's functional kinds
KINDS = [("dup", "active", "dup", "dup"), ("cot", "active", "grad", "grad")]


def _program(kernel, types, diff, facts):
    from diffgpu.driver.compiler import compile_host
    from diffgpu.driver.launch import build_module
    from diffgpu.lowering.facts.attrs import coarsen_factor

    src = build_module(kernel, types, "host", diff=diff, facts=facts)
    text = run_pipeline(src.text, ["diffgpu-verify-targets", "diffgpu-autodiff",
                                   "diffgpu-specialize", "diffgpu-coarsen"])
    return compile_host(text), src.entry, coarsen_factor(text), text


def _facts(nflat):
    return S.Facts(noalias=True, contiguous=(True,) * nflat, unit_dims=(1, 2), aligned=(),
                   grid_div=True)


@pytest.mark.parametrize("kinds", KINDS)
@pytest.mark.parametrize("n", [1, 7, 100, 1021, 1024])
def test_coarsened_saxpy_gradient_equals_generic_on_the_cpu(kinds, n):
    from diffgpu.hostdiff.diff import ACTIVE_SLOTS
    from diffgpu.driver.launch import flat_types
    from diffgpu.runtime.args import infer_signature

    rng = np.random.default_rng(n)
    x, y = (rng.standard_normal(n).astype(np.float32) for _ in range(2))
    do = rng.standard_normal(n).astype(np.float32)
    types = infer_signature([np.zeros(n, np.float32), 1.5, x, y]).types
    diff = ("reverse", kinds)
    ftypes = flat_types(types, diff)
    block = 8
    grid = -(-n // block)
    grid += -grid % S.COARSEN
    dx, dy = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    runs = []
    for facts in (None, _facts(len(ftypes))):
        prog, entry, factor, text = _program(saxpy, types, diff, facts)
        assert factor == (1 if facts is None else S.COARSEN)
        assert ("__dg_tail" in text) is (facts is not None)
        args = [np.zeros(n, np.float32), do.copy(), 1.5, x, dx.copy(), y, dy.copy(),
                np.zeros(ACTIVE_SLOTS, np.float64)]
        prog.launch(entry, args, ftypes, (grid // factor, 1, 1), (block, 1, 1))
        runs.append(args)
    plain, coarse = runs
    for k in (0, 1, 4, 6):  # o (written), o-bar (Enzyme: consumed), x-bar, y-bar
        np.testing.assert_array_equal(plain[k], coarse[k])
    want = float(np.dot(x.astype(np.float64), do.astype(np.float64)))
    for run in (plain, coarse):  # the gradient of a: the slots' sum
        assert run[7].sum() == pytest.approx(want, rel=1e-6, abs=1e-9)
    base = dx if kinds[2] == "dup" else 0  # Enzyme's convention accumulates
    np.testing.assert_allclose(coarse[4], base + 1.5 * do, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("n", [5, 1021])
def test_two_active_scalars(n):
    """Two gradients returned by the derivative call, two slot adds: each
    summed over the copies, the arrays exactly the generic program's."""
    from diffgpu.hostdiff.diff import ACTIVE_SLOTS
    from diffgpu.driver.launch import flat_types
    from diffgpu.runtime.args import infer_signature

    rng = np.random.default_rng(n)
    x, do = (rng.standard_normal(n).astype(np.float32) for _ in range(2))
    types = infer_signature([np.zeros(n, np.float32), 1.5, 0.5, x]).types
    diff = ("reverse", ("cot", "active", "active", "grad"))
    ftypes = flat_types(types, diff)
    grid = -(-n // 8)
    grid += -grid % S.COARSEN
    runs = []
    for facts in (None, _facts(len(ftypes))):
        prog, entry, factor, _text = _program(affine, types, diff, facts)
        assert factor == (1 if facts is None else S.COARSEN)
        args = [np.zeros(n, np.float32), do.copy(), 1.5, 0.5, x, np.zeros(n, np.float32),
                np.zeros(ACTIVE_SLOTS, np.float64), np.zeros(ACTIVE_SLOTS, np.float64)]
        prog.launch(entry, args, ftypes, (grid // factor, 1, 1), (8, 1, 1))
        runs.append(args)
    np.testing.assert_array_equal(runs[0][5], runs[1][5])
    d64 = do.astype(np.float64)
    for run in runs:
        assert run[6].sum() == pytest.approx(float(np.dot(x.astype(np.float64), d64)), rel=1e-6)
        assert run[7].sum() == pytest.approx(float(d64.sum()), rel=1e-6)


def test_unmarked_block_indexed_add_is_not_a_slot():
    """Only the derivative kernel's own slot adds (marked) may move to
    another block's slot: a kernel's own per-block add must not."""
    from diffgpu.lowering.coarsen import reduce as R
    from test_specialize_coarsen import _module_fn

    @dg.kernel
    def per_block(out, x):
        i = dg.global_id(0)
        if i < len(x):
            dg.atomic_add(out, dg.block_id(0), x[i])

    ctx, _m, fn = _module_fn(per_block, [np.zeros(8, np.float32), np.zeros(8, np.float32)])
    with ctx:
        from diffgpu.lowering.coarsen import coarsen
        assert coarsen.analyze(fn, reduce=True) is None
        assert not any(R.slot_atomic(o) for o in coarsen._walk(fn))


def test_reduction_with_active_scalar_keeps_its_program():
    """scaled_sum's reverse reads out's cotangent and adds a's gradient:
    the slot epilogue is accepted, and the result equals the generic
    program's whatever the pass decides."""
    from diffgpu.hostdiff.diff import ACTIVE_SLOTS
    from diffgpu.driver.launch import flat_types
    from diffgpu.runtime.args import infer_signature

    n = 1021
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    types = infer_signature([np.zeros(1, np.float32), 2.0, x]).types
    diff = ("reverse", ("dup", "active", "dup"))
    ftypes = flat_types(types, diff)
    grid = 128
    outs = []
    for facts in (None, _facts(len(ftypes))):
        prog, entry, factor, _text = _program(scaled_sum, types, diff, facts)
        args = [np.zeros(1, np.float32), np.full(1, 0.5, np.float32), 2.0, x,
                np.zeros(n, np.float32), np.zeros(ACTIVE_SLOTS, np.float64)]
        prog.launch(entry, args, ftypes, (grid // factor, 1, 1), (8, 1, 1))
        outs.append(args)
    np.testing.assert_array_equal(outs[0][4], outs[1][4])
    assert outs[1][5].sum() == pytest.approx(0.5 * float(x.astype(np.float64).sum()), rel=1e-5)
    assert outs[0][5].sum() == pytest.approx(outs[1][5].sum(), rel=1e-5)


@pytest.mark.parametrize("kinds", KINDS)
def test_ptx_saxpy_gradient_vectorised(kinds):
    """sm_90: coarsened by 4, every array in one v4 access per thread, no
    scalar access in the in-range path (Enzyme's convention: x, y, o-bar,
    x-bar, y-bar in; o, o-bar, x-bar, y-bar out. vjp: x and o-bar in, x-bar
    and y-bar out)."""
    from diffgpu.driver import compiler
    from diffgpu.driver.launch import build_module, flat_types
    from diffgpu.lowering.coarsen.coarsen import factor_in_ptx
    from diffgpu.driver.compiler import has_nvptx
    from diffgpu.runtime.args import infer_signature

    if not has_nvptx():
        pytest.skip("these MLIR bindings have no NVPTX backend")
    n = 4096
    types = infer_signature([np.zeros(n, np.float32), 1.5, np.zeros(n, np.float32),
                             np.zeros(n, np.float32)]).types
    diff = ("reverse", kinds)
    nflat = len(flat_types(types, diff))
    flags = tuple(not isinstance(t, type(types[1])) for t in flat_types(types, diff))
    facts = S.Facts(noalias=True, contiguous=flags, unit_dims=(1, 2), aligned=flags,
                    grid_div=True, grid_div16=True)
    assert nflat == 8
    src = build_module(saxpy, types, "sm_90", diff=diff, facts=facts)
    ptx = compiler.compile(src.text, "sm_90").text
    assert factor_in_ptx(ptx, src.entry) == 4
    body = ptx[ptx.index(f".entry {src.entry}("):]
    fast = body[:body.index("__dg_tail")]
    loads, stores = (5, 4) if kinds[0] == "dup" else (2, 2)
    assert len(re.findall(r"ld\.global(\.nc)?\.v4\.(b|f)32", fast)) == loads, fast
    assert len(re.findall(r"st\.global\.v4\.(b|f)32", fast)) == stores, fast
    assert not re.search(r"ld\.global(\.nc)?\.(b|f)32", fast)  # no scalar access left

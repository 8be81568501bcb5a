"""Thread coarsening of reduction kernels (lowering/coarsen/coarsen.py,
`reduction_atomic`): each thread sums REDUCE_COARSEN elements in a register
before its one atomic add; run on the CPU against the plain kernel, the
kernels that must stay as they are, and the GPU code (atomics per element)."""
from __future__ import annotations

import re

import numpy as np
import pytest

import diffgpu as dg
from diffgpu.lowering.coarsen import coarsen
from diffgpu.runtime import specialize as S

from test_specialize_coarsen import _module_fn, run_pipeline


@dg.kernel
def sumsq(out, x):
    i = dg.global_id(0)
    if i < len(x):
        dg.atomic_add(out, 0, x[i] * x[i])


@dg.kernel
def sumsq_grad(out, dout, x, dx):  # its reverse reads dout[0]: an elementwise kernel
    dg.autodiff(sumsq, dg.Duplicated(out, dout), dg.Duplicated(x, dx))


@dg.kernel
def two_sums(out, x, w, count):  # two uniform addresses, and an integer count
    i = dg.global_id(0)
    if i < len(x):
        dg.atomic_add(out, 1, x[i] * w[i])
        dg.atomic_add(out, 0, x[i])
        dg.atomic_add(count, 0, 1)


@dg.kernel
def scale_and_sum(out, y, x):  # an elementwise store and a sum: both coarsened
    i = dg.global_id(0)
    if i < len(x):
        v = x[i]
        y[i] = 2.0 * v
        dg.atomic_add(out, 0, v)


@dg.kernel
def result_used(out, y, x):  # the atomic's old value is read
    i = dg.global_id(0)
    if i < len(x):
        y[i] = dg.atomic_add(out, 0, x[i])


@dg.kernel
def scatter(out, x):  # the address depends on the thread
    i = dg.global_id(0)
    if i < len(x):
        dg.atomic_add(out, i % 4, x[i])


@dg.kernel
def reads_out(out, y, x):  # a load of the summed array could see the moved add
    i = dg.global_id(0)
    if i < len(x):
        dg.atomic_add(out, 0, x[i])
        y[i] = out[1]


@dg.kernel
def loaded_index(out, idx, x):  # the address is loaded: another copy could change it
    i = dg.global_id(0)
    if i < len(x):
        idx[i] = 0
        dg.atomic_add(out, idx[0], x[i])


@dg.kernel
def nested(out, x):  # the add is conditional on the element
    i = dg.global_id(0)
    if i < len(x):
        if x[i] > 0.0:
            dg.atomic_add(out, 0, x[i])


@dg.kernel
def with_barrier(out, x):
    i = dg.global_id(0)
    if i < len(x):
        dg.syncthreads()
        dg.atomic_add(out, 0, x[i])


@pytest.mark.parametrize("kernel,arrays,ok", [
    (sumsq, 2, True), (two_sums, 4, True), (scale_and_sum, 3, True), (result_used, 3, False), (scatter, 2, False),
    (reads_out, 3, False), (nested, 2, False), (loaded_index, 3, False),
])
def test_reduction_eligibility(kernel, arrays, ok):
    args = [np.zeros(8, np.float32) for _ in range(arrays)]
    if kernel is two_sums:
        args[-1] = np.zeros(1, np.int32)
    if kernel is loaded_index:
        args[1] = np.zeros(8, np.int32)
    ctx, _m, fn = _module_fn(kernel, args)
    with ctx:
        assert coarsen.analyze(fn) is None  # never without the reduction rule
        assert (coarsen.analyze(fn, reduce=True) is not None) is ok
        assert coarsen.factor_for(fn, _m, True, True, True) == (16 if ok else 1)
        assert coarsen.factor_for(fn, _m, True, True, False) == (4 if ok else 1)
        assert coarsen.factor_for(fn, _m, False, True, True) == 1  # arrays may alias


def test_barrier_not_coarsened():
    args = [np.zeros(8, np.float32) for _ in range(2)]
    try:
        ctx, _m, fn = _module_fn(with_barrier, args)
    except dg.CompileError:
        pytest.skip("barriers under a guard are rejected by the frontend")
    with ctx:
        assert coarsen.analyze(fn, reduce=True) is None


def test_gradient_of_a_reduction_coarsened_by_4():
    """Its reverse writes a gradient per element: coarsened by 4 (measured
    faster than 16 on the H200: coarsen.factor_for), also with a grid that
    is a multiple of 16."""
    args = [np.zeros(8, np.float32) for _ in range(4)]
    ctx, m, fn = _module_fn(sumsq_grad, args)
    with ctx:
        assert coarsen.factor_for(fn, m, True, True, True) == 4
        assert coarsen.factor_for(fn, m, True, True, False) == 4
        assert coarsen.factor_for(fn, m, False, True, True) == 1
    for n in (1, 100, 1021, 4096, 5003):
        rng = np.random.default_rng(n)
        x = rng.standard_normal(n).astype(np.float32)
        args = [np.zeros(1, np.float32), np.array([0.75], np.float32), x,
                rng.standard_normal(n).astype(np.float32)]
        block = 32
        grid = -(-n // block)
        grid += -grid % 16
        want = [a.copy() for a in args]
        sumsq_grad[grid, block](*want)
        prog, types, factor = _program(sumsq_grad, args, True)
        assert factor == 4
        got = [a.copy() for a in args]
        prog.launch(sumsq_grad.name, got, types, (grid // factor, 1, 1), (block, 1, 1))
        # out: the forward pass's sum, in another order; the rest exactly
        np.testing.assert_allclose(got[0], want[0], rtol=1e-5)
        for g, w_ in zip(got[1:], want[1:]):
            assert np.array_equal(g, w_)
        np.testing.assert_allclose(got[3], args[3] + 1.5 * x, rtol=1e-6)


def _program(kernel, args, grid_div16):
    from diffgpu.driver.compiler import compile_host
    from diffgpu.driver.launch import build_module
    from diffgpu.lowering.facts.attrs import coarsen_factor
    from diffgpu.runtime.args import infer_signature

    types = infer_signature(args).types
    src = build_module(kernel, types, "host",
                       facts=S.Facts(True, (), (1, 2), (), True, grid_div16))
    factor = coarsen_factor(src.text)
    text = run_pipeline(src.text, ["diffgpu-verify-targets", "diffgpu-autodiff",
                                   "diffgpu-specialize", "diffgpu-coarsen",
                                   "diffgpu-aggregate-atomics"])
    assert coarsen.tail_name(kernel.name, factor) in text
    return compile_host(text), types, factor


@pytest.mark.parametrize("n", [1, 100, 1000, 4096, 5003, 70001])
@pytest.mark.parametrize("grid_div16", [True, False])
def test_coarsened_reduction_equals_plain_on_the_cpu(n, grid_div16):
    rng = np.random.default_rng(n)
    x, w = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    for kernel, args in ((sumsq, [np.zeros(1, np.float32), x]),
                         (two_sums, [np.zeros(2, np.float32), x, w, np.zeros(1, np.int32)]),
                         (scale_and_sum, [np.zeros(1, np.float32), np.zeros(n, np.float32), x])):
        block = 32
        grid = -(-n // block)
        step = 16 if grid_div16 else 4
        grid += -grid % step
        want = [a.copy() for a in args]
        kernel[grid, block](*want)
        prog, types, factor = _program(kernel, args, grid_div16)
        assert factor == step
        got = [a.copy() for a in args]
        prog.launch(kernel.name, got, types, (grid // factor, 1, 1), (block, 1, 1))
        exact = np.array([(x.astype(np.float64) ** 2).sum()] if kernel is sumsq else
                         [x.astype(np.float64).sum(), (x.astype(np.float64) * w).sum()]
                         [:len(got[0])])
        if kernel is scale_and_sum:
            assert np.array_equal(got[1], want[1]) and np.array_equal(got[1], 2 * x)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-4 * np.sqrt(n))
        np.testing.assert_allclose(got[0], exact, rtol=1e-5, atol=1e-4 * np.sqrt(n))
        if kernel is two_sums:
            assert got[3][0] == want[3][0] == n


def test_ptx_one_atomic_per_16_elements():
    from diffgpu.driver.compiler import has_nvptx
    if not has_nvptx():
        pytest.skip("these MLIR bindings have no NVPTX backend")
    x, out = np.zeros(1 << 16, np.float32), np.zeros(1, np.float32)
    ptx = sumsq.ir(out, x, stage="ptx", target="sm_90", grid=256, block=256)
    assert coarsen.factor_in_ptx(ptx, "sumsq") == 16
    entry = ptx[ptx.index(".entry"):]
    # the kernel: 16 elements of x in four vector loads, one atomic (the
    # block's sum; the tail function keeps its own)
    assert len(re.findall(r"ld\.global(\.nc)?\.v4\.(b|f)32", entry)) == 4, entry
    assert len(re.findall(r"(red|atom)\.global(\.\w+)*\.add\.f32", entry)) == 1, entry
    plain = sumsq.ir(out, x, stage="ptx", target="sm_90", grid=255, block=256)
    assert coarsen.factor_in_ptx(plain, "sumsq") == 1
    assert len(re.findall(r"ld\.global(\.nc)?\.v4", plain)) == 0
    # the gradient (forward and reverse), coarsened by 4: x and dx in one
    # vector load each, dx in one vector store, dout[0] read once per 4
    # elements, one atomic for out
    dout, dx = np.ones(1, np.float32), np.zeros(1 << 16, np.float32)
    if dx.ctypes.data % 16 == 0:
        ptx = sumsq_grad.ir(out, dout, x, dx, stage="ptx", target="sm_90", grid=256, block=256)
        assert coarsen.factor_in_ptx(ptx, sumsq_grad.name) == 4
        entry = ptx[ptx.index(".entry"):]
        assert len(re.findall(r"ld\.global(\.nc)?\.v4\.(b|f)32", entry)) == 2, entry
        assert len(re.findall(r"st\.global\.v4\.(b|f)32", entry)) == 1, entry
        fast = entry[:entry.index("call")]
        assert len(re.findall(r"ld\.global(\.nc)?\.(b|f)32", fast)) == 1, fast  # dout[0]
        assert len(re.findall(r"(red|atom)\.global(\.\w+)*\.add\.f32", entry)) == 1, entry


def test_coarsened_sum_of_2_26_squares_within_1e5():
    """Hashed values in [0.5, 1.5): nearly equal block sums, whose sequential
    roundings add up (docs/atomics.md: 5.7e-5 off with one add per block of
    256). Coarsened by 16, 2^14 adds of 4096-term sums remain."""
    from kernels_sums import sumsq_gen, sumsq_gen_ref

    big, block = 1 << 26, 256
    out = np.zeros(1, np.float32)
    prog, types, factor = _program(sumsq_gen, [out, big], True)
    assert factor == 16
    prog.launch(sumsq_gen.name, [out, big], types, (big // block // factor, 1, 1),
                (block, 1, 1))
    ref = np.zeros(1)
    sumsq_gen_ref(ref, big)
    assert abs(out[0] - ref[0]) / ref[0] < 1e-5


@pytest.mark.parametrize("gx", [6, 8, 16, 48, 1 << 18])
def test_fast_path_facts_equal_the_full_path(gx):
    """The fast path (repeated launches, a CuPy stand-in: nothing runs)
    selects the program of the same facts."""
    import os
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "bench"))
    import launch_overhead as LO

    from diffgpu.runtime import fastpath, gpu
    from diffgpu.types import ArrayType

    @dg.kernel  # its own kernel: the stand-in's functions stay with its programs
    def sumsq_fast(out, x):
        i = dg.global_id(0)
        if i < len(x):
            dg.atomic_add(out, 0, x[i] * x[i])

    x, out = np.zeros(64, np.float32), np.zeros(1, np.float32)
    types = (ArrayType("float32", 1),) * 2
    full = S.launch_facts([out, x], types, (gx, 1, 1), (256, 1, 1))
    assert full.grid_div16 == (gx % 16 == 0)
    LO.install_standin()
    saved, gpu._chips = gpu._chips, {0: "sm_90"}
    try:
        dev = (LO.StandinArray(out), LO.StandinArray(x))
        for _ in range(3):
            sumsq_fast[gx, 256](*dev)
        ready = sumsq_fast._fast.hot[fastpath.launch_key(dev, (gx, 1, 1), (256, 1, 1))]
    finally:
        sys.modules.pop("cupy", None)
        gpu._chips = saved
    assert ready.program.payload["facts"] == full.key()


@pytest.mark.parametrize("n", [1, 100, 1021, 4096, 5003])
def test_vjp_program_coarsened_equals_generic_on_the_cpu(n):
    """The program `dg.vjp` launches (the reverse wrapper: reads x and the
    cotangent of out, writes x's gradient), coarsened by 4, against the
    uncoarsened one."""
    from diffgpu.driver.compiler import compile_host
    from diffgpu.driver.launch import build_module, flat_types
    from diffgpu.runtime.args import infer_signature

    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(np.float32)
    types = infer_signature([np.zeros(1, np.float32), x]).types
    diff = ("reverse", ("cot", "grad"))
    block = 32
    grid = -(-n // block)
    grid += -grid % 16
    results = []
    for facts in (None, S.Facts(True, (), (1, 2), (), True, True)):
        src = build_module(sumsq, types, "host", diff=diff, facts=facts)
        text = run_pipeline(src.text, ["diffgpu-verify-targets", "diffgpu-autodiff",
                                       "diffgpu-specialize", "diffgpu-coarsen"])
        factor = 4 if facts is not None else 1
        assert (coarsen.tail_name(src.entry, 4) in text) is (factor == 4)
        args = [np.zeros(1, np.float32), np.array([0.5], np.float32), x.copy(),
                np.full(n, 7.0, np.float32)]  # (out, its cotangent, x, x's gradient)
        compile_host(text).launch(src.entry, args, flat_types(types, diff),
                                  (grid // factor, 1, 1), (block, 1, 1))
        results.append(args)
    for a, b in zip(*results):
        assert np.array_equal(a, b)
    np.testing.assert_allclose(results[1][3], x, rtol=1e-6)  # 2 * x * 0.5, written


@dg.kernel
def long_body(out, x):  # 16 copies of a long body: coarsened by 4 only
    i = dg.global_id(0)
    if i < len(x):
        v = x[i]
        s = v
        s = (s * v + 1.0) * (s - v) + 0.5
        s = (s * v + 1.0) * (s - v) + 0.5
        s = (s * v + 1.0) * (s - v) + 0.5
        s = (s * v + 1.0) * (s - v) + 0.5
        s = (s * v + 1.0) * (s - v) + 0.5
        s = (s * v + 1.0) * (s - v) + 0.5
        s = (s * v + 1.0) * (s - v) + 0.5
        s = (s * v + 1.0) * (s - v) + 0.5
        s = (s * v + 1.0) * (s - v) + 0.5
        s = (s * v + 1.0) * (s - v) + 0.5
        s = (s * v + 1.0) * (s - v) + 0.5
        s = (s * v + 1.0) * (s - v) + 0.5
        dg.atomic_add(out, 0, s)


def test_long_reduction_body_gets_factor_4():
    args = [np.zeros(8, np.float32), np.zeros(8, np.float32)]
    ctx, m, fn = _module_fn(long_body, args)
    with ctx:
        assert coarsen.factor_for(fn, m, True, True, True) == 4
        assert coarsen.factor_for(fn, m, True, True, False) == 4

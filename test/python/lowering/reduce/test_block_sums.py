"""`diffgpu-block-sums` (lowering/reduce/block_sums.py): several uniform-address
adds at one site summed over the block together, one barrier; the transposing
warp sum of lowering/reduce/block_sum.py on the GPU (counted in the sm_90 PTX),
one shared array per value on the CPU. Checked on the CPU against float64
sums for block sizes where warps are partial or absent, and for conv2d's
filter gradient (25 taps: dg.vjp) against numpy and finite differences."""
from __future__ import annotations

import re

import numpy as np
import pytest

import diffgpu as dg
import kernels_stencil2d as S

RNG = np.random.default_rng(5)


@dg.kernel
def moments(out, x):  # three sums at one site: count, sum, sum of squares
    i = dg.global_id(0)
    if i < len(x):
        v = x[i]
        dg.atomic_add(out, 0, 1.0)
        dg.atomic_add(out, 1, v)
        dg.atomic_add(out, 2, v * v)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("block", [1, 32, 48, 256, 1024])
def test_moments_any_block(dtype, block):
    n = 3001
    x = RNG.standard_normal(n).astype(dtype)
    out = np.zeros(3, dtype)
    moments[(n + block - 1) // block, block](out, x)
    want = [n, np.sum(x, dtype=np.float64), np.sum(np.square(x, dtype=np.float64))]
    tol = 1e-12 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(out, want, rtol=tol, atol=tol)


def test_remark_names_the_group():
    x = np.ones(64, np.float32)
    lines = dg.explain(moments[2, 32], np.zeros(3, np.float32), x)
    assert any("block-sums [applied]" in s and "3 adds summed over the block together" in s
               for s in lines)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_conv2d_filter_gradient(dtype):
    """25 filter taps: one group, summed per block; equal to numpy's sums."""
    x, w = RNG.standard_normal((37, 29)).astype(dtype), RNG.standard_normal((5, 5)).astype(dtype)
    y, dy = np.zeros((33, 25), dtype), RNG.standard_normal((33, 25)).astype(dtype)
    with dg.explain(file=False) as ex:
        # a definition of its own: remarks are reported when a process first selects a
        # program (a compile or a disk hit), and other tests may have run S.conv2d already
        g = dg.vjp(dg.kernel(S.conv2d.py_func)[(3, 2), (16, 16)], y, x, w,
                   cotangents={"y": dy})
    assert any("block-sums [applied]" in s and "25 adds" in s for s in ex.lines)
    x64, dy64 = x.astype(np.float64), dy.astype(np.float64)
    dw = np.array([[(dy64 * x64[a:a + 33, b:b + 25]).sum() for b in range(5)]
                   for a in range(5)])
    tol = 1e-12 if dtype == np.float64 else 2e-5
    np.testing.assert_allclose(g["w"], dw, rtol=tol, atol=tol * 10)


def test_conv2d_filter_gradient_finite_differences():
    x, w = RNG.standard_normal((14, 13)), RNG.standard_normal((5, 5))
    y, dy = np.zeros((10, 9)), RNG.standard_normal((10, 9))
    launch = S.conv2d[(1, 1), (16, 16)]
    g = dg.vjp(launch, y, x, w, cotangents={"y": dy})["w"]
    v, eps = RNG.standard_normal((5, 5)), 1e-6

    def f(t):
        out = np.zeros_like(y)
        launch(out, x, w + t * v)
        return float((dy * out).sum())

    fd = (f(eps) - f(-eps)) / (2 * eps)
    assert abs(float((g * v).sum()) - fd) <= 1e-7 * max(1.0, abs(fd))


def _has_nvptx():
    from diffgpu.driver.compiler import has_nvptx
    return has_nvptx()


def _ptx(kernel, types, diff, nargs):
    from diffgpu.driver.launch import get_program
    from diffgpu.runtime.specialize import Facts
    facts = Facts(noalias=True, contiguous=(True,) * nargs, unit_dims=(1, 2))
    ptx = get_program(kernel, types, "sm_90", diff, facts).payload["ptx"]
    return {k: len(re.findall(p, ptx)) for k, p in (
        ("barriers", r"\bbar\.sync"), ("shuffles", r"\bshfl\."), ("fences", r"\bfence\."))}


@pytest.mark.skipif(not _has_nvptx(), reason="MLIR bindings without NVPTX")
def test_ptx_one_barrier_for_three_sums():
    """3 values: a 4-value transposing warp sum (3 + 3 shuffles) per level,
    one barrier; one float64 finish's fences per value, the same code for
    every lane (fences counted once, not three times)."""
    from diffgpu.types import ArrayType
    c = _ptx(moments, (ArrayType("float32", 1),) * 2, None, 2)
    assert c["barriers"] == 1 and c["shuffles"] == 12, c
    assert c["fences"] <= 4, c


@pytest.mark.skipif(not _has_nvptx(), reason="MLIR bindings without NVPTX")
def test_ptx_conv2d_filter_gradient_one_barrier():
    """dg.vjp's conv2d derivative (image gathered, filter summed): one
    barrier and 62 shuffles for the 25 taps (aggregate-atomics alone: 16
    barriers and 10 shuffles per tap, 9 taps left to the warp path)."""
    from diffgpu.types import ArrayType
    c = _ptx(S.conv2d, (ArrayType("float32", 2),) * 3, ("reverse", ("cot", "grad", "dup")), 6)
    assert c["barriers"] == 1 and c["shuffles"] == 62, c


def test_only_the_last_adds_are_grouped(tmp_path):
    """70 adds at one site: the last 64 in two groups of 32, the 6 before
    them left to aggregate-atomics (one block sum each); the remark says so;
    every sum right."""
    import importlib.util
    body = "".join(f"        dg.atomic_add(out, {k}, x[i] * {k + 1}.0)\n" for k in range(70))
    src = ("import diffgpu as dg\n\n\n@dg.kernel\ndef many(out, x):\n"
           "    i = dg.global_id(0)\n    if i < len(x):\n" + body)
    path = tmp_path / "many_adds.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("many_adds", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    x = RNG.standard_normal(200)
    out = np.zeros(70)
    with dg.explain(file=False) as ex:
        mod.many[4, 64](out, x)
    np.testing.assert_allclose(out, x.sum() * np.arange(1, 71), rtol=1e-12)
    applied = [s for s in ex.lines if "block-sums [applied]" in s]
    assert len(applied) == 2 and all("32 adds" in s for s in applied)
    assert any("only the last 64 uniform adds" in s for s in ex.lines)
    text = next(iter(mod.many._programs.values())).host.llvm_text
    phases = text.count("llvm.func @many__phase")
    assert 2 + 6 <= phases <= 2 + 6 + 1, phases  # a phase per barrier

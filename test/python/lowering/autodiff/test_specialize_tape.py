"""Register tapes (lowering/autodiff/unroll.py): loops with a small constant
trip count are unrolled in the derivative's clone, so their values reach the
reverse sweep through one-value slots instead of the tape's stack; the
results equal those of the stack tape bit for bit."""
from __future__ import annotations

import numpy as np
import pytest

import diffgpu as dg
from diffgpu.lowering.autodiff import unroll
from kernels_specialize import loop16, loop16_grad  # noqa: F401  (defined once)

STACK = "memref<1xmemref<?xi64>>"  # the tape stack's holder (tape.py)


@dg.kernel
def nested(y, x):
    i = dg.global_id(0)
    if i < len(x):
        s = x[i]
        for a in range(3):
            for b in range(2, 8, 3):
                s = s * dg.cos(s + a * 0.5 - b)
        y[i] = s


@dg.kernel
def nested_grad(y, dy, x, dx):
    dg.autodiff(nested, dg.Duplicated(y, dy), dg.Duplicated(x, dx))


@dg.kernel
def long_loop(y, x, n):
    i = dg.global_id(0)
    if i < len(x):
        s = x[i]
        for k in range(n):  # not a constant: the stack tape
            s = s + 0.01 * dg.sin(s)
        for k in range(100):  # more than MAX_TRIPS: the stack tape
            s = s - 0.001 * s * s
        y[i] = s


@dg.kernel
def long_loop_grad(y, dy, x, dx, n):
    dg.autodiff(long_loop, dg.Duplicated(y, dy), dg.Duplicated(x, dx), n)


def _f32(seed, n=70):
    return np.random.default_rng(seed).standard_normal(n).astype(np.float32)


def _rev(text):
    start = text.index("func.func @__dg_rev_")
    return text[start:text.index("\n  }\n", start)]


def _launch(kernel, args, monkeypatch=None, trips=None):
    args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    if monkeypatch is not None:
        monkeypatch.setattr(unroll, "MAX_TRIPS", trips)
    kernel[3, 32](*args)
    return args


@pytest.mark.parametrize("kernel,nargs", [(loop16_grad, 6), (nested_grad, 4)])
def test_constant_loops_use_slots_not_the_stack(kernel, nargs):
    args = [_f32(k) for k in range(nargs)]
    rev = _rev(kernel.ir(*args, stage="autodiff", target="host", grid=3, block=32))
    assert STACK not in rev and "scf.for" not in rev


def test_long_and_dynamic_loops_use_checkpoints_not_the_stack(monkeypatch):
    """Loops that are not unrolled: their carried value s is kept at 64
    checkpoints (checkpoint.py); with recomputation off, the stack tape."""
    args = [_f32(k) for k in range(4)] + [5]
    rev = _rev(long_loop_grad.ir(*args, stage="autodiff", target="host", grid=3, block=32))
    assert STACK not in rev and rev.count("scf.for") >= 2
    assert rev.count("memref.alloca() : memref<64xf32>") == 4  # C and B slots, two loops
    monkeypatch.setenv("DIFFGPU_REMAT", "0")
    rev = _rev(long_loop_grad.ir(*args, stage="autodiff", target="host", grid=3, block=32))
    assert STACK in rev and "memref<64xf32>" not in rev


@pytest.mark.parametrize("kernel,nargs", [(loop16_grad, 6), (nested_grad, 4)])
def test_unrolled_equals_stack_tape(kernel, nargs, monkeypatch, tmp_path):
    # a fresh kernel object per variant: programs are cached per definition
    args = [_f32(10 + k) for k in range(nargs)]
    got = _launch(kernel, args)
    fresh = dg.kernel(kernel.py_func)
    fresh_args = [a.copy() for a in args]
    monkeypatch.setattr(unroll, "MAX_TRIPS", 0)  # nothing unrolled
    monkeypatch.setenv("DIFFGPU_REMAT", "0")  # no checkpoints either: the stack
    monkeypatch.setenv("DIFFGPU_CACHE_DIR", str(tmp_path))  # not the unrolled entries
    fresh[3, 32](*fresh_args)
    rev = _rev(fresh.ir(*args, stage="autodiff", target="host", grid=3, block=32))
    assert STACK in rev  # the comparison ran the stack tape
    for g, w in zip(got, fresh_args):
        assert np.array_equal(g, w)


def test_gradient_values_loop16():
    x, p = _f32(20, 40) * 0.5, _f32(21, 40)
    y, dy = np.zeros(40, np.float32), np.ones(40, np.float32)
    dx, dp = np.zeros(40, np.float32), np.zeros(40, np.float32)
    loop16_grad[2, 32](y, dy, x, dx, p, dp)
    # float64 reference: forward-mode by hand
    s, ds_dx, ds_dp = x.astype(np.float64), np.ones(40), np.zeros(40)
    pp = p.astype(np.float64)
    for _ in range(16):
        f = 1 + 0.1 * np.cos(s) * pp
        ds_dx, ds_dp = ds_dx * f, ds_dp * f + 0.1 * np.sin(s)
        s = s + 0.1 * np.sin(s) * pp
    np.testing.assert_allclose(y, s, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(dx, ds_dx, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(dp, ds_dp, rtol=1e-4, atol=1e-5)


def test_ptx_has_no_heap_tape():
    from diffgpu.driver.compiler import has_nvptx
    if not has_nvptx():
        pytest.skip("these MLIR bindings have no NVPTX backend")
    args = [_f32(k, 64) for k in range(6)]
    ptx = loop16_grad.ir(*args, stage="ptx", target="sm_90", grid=2, block=32)
    assert "malloc" not in ptx


def test_sin_and_its_derivative_share_one_sincos_on_the_gpu():
    """The slot of the forward value is forwarded (lowering/facts/specialize.py)
    and diffgpu-fuse-sincos joins sin(s) and the derivative's cos(s)."""
    args = [_f32(30 + k, 64) for k in range(6)]
    text = loop16_grad.ir(*args, stage="gpu", target="sm_90", grid=2, block=32)
    rev = text[text.index("gpu.func @loop16_grad"):]
    assert rev.count("math.sincos") == 16 and "math.cos " not in rev
    # the host has no sincos: separate calls, the same results as before
    host = loop16_grad.ir(*args, stage="autodiff", target="host", grid=2, block=32)
    assert "math.sincos" not in host


def test_fuse_sincos_pass_on_text():
    from diffgpu._mlir import ir
    from diffgpu.dialects import make_context
    from diffgpu.lowering.gpu.sincos import fuse_block

    src = """func.func @f(%x: f32, %y: f32) -> (f32, f32, f32) {
      %s = math.sin %x : f32
      %t = math.sin %y : f32
      %c = math.cos %x : f32
      return %s, %t, %c : f32, f32, f32
    }"""
    with make_context():
        m = ir.Module.parse(src)
        block = m.body.operations[0].regions[0].blocks[0]
        assert fuse_block(block) == 1
        text = str(m)
    assert text.count("math.sincos") == 1 and text.count("math.sin ") == 1
    assert "math.cos" not in text

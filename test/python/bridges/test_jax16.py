"""dg.jax on jnp.float16 and jnp.bfloat16 arrays: stored in 16 bits,
computed in float32, gradients accumulated in float32 and returned in the
array's dtype, through jax.vjp / jax.grad under jax.jit. On the CPU the
arrays reach diffgpu through jax.pure_callback (bfloat16 as ml_dtypes');
on a GPU the reverse kernel's 16-bit shadows are float32 arrays XLA rounds
after the call (bridges/jax_gpu.py).

Every result is checked against JAX's float32 computation on the same 16-bit
values and cotangents, rounded once (half_bridge.assert_rounded).
"""
import os
import re
import sys

import numpy as np
import pytest

jax = pytest.importorskip("jax", reason="jax is not installed (pip install jax jaxlib)")
import jax.numpy as jnp  # noqa: E402

import diffgpu as dg  # noqa: E402
import diffgpu.jax as dgj  # noqa: E402
from interop_kernels import DTYPES16, OPS, TEST_ARGS, reference, wrap  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import half_bridge as H  # noqa: E402

OPS_J = {name: wrap(dgj, name) for name in [*OPS, "gather"]}
gpu = pytest.mark.gpu


def _outs(x):
    return x if isinstance(x, tuple) else (x,)


def _vjp(fn, vals, dtype, cots=None, jit=True):
    """(outputs, gradients, cotangents) of `fn` at `vals` (floats stay
    scalars, arrays become `dtype`) by jax.vjp, with the cotangents `cots`
    (None: 16-bit values of the outputs' dtype)."""
    pos = [k for k, v in enumerate(vals) if not isinstance(v, float)]

    def f(*arrays):
        full = list(vals)
        for k, a in zip(pos, arrays):
            full[k] = a
        return _outs(fn(*full))
    arrays = [jnp.asarray(vals[k], dtype) for k in pos]
    outs, pullback = jax.vjp(jax.jit(f) if jit else f, *arrays)
    if cots is None:
        cots = tuple(jnp.asarray(H.values(o.shape, o.dtype.name, 10 + k), o.dtype)
                     for k, o in enumerate(outs))
    return outs, pullback(tuple(cots)), cots


def check_op(name, dtype):
    """jax.vjp of op `name` under jax.jit on 16-bit arrays against float32
    jax.numpy on the same values and cotangents."""
    vals = [a if isinstance(a, float) else H.values(a, dtype, seed=k)
            for k, a in enumerate(TEST_ARGS[name])]
    outs, grads, cots = _vjp(OPS_J[name], vals, jnp.dtype(dtype))
    refs, ref_grads, _ = _vjp(lambda *a: reference(name, jnp, *a), vals, jnp.float32,
                              cots=[c.astype(jnp.float32) for c in cots], jit=False)
    for k, (o, r) in enumerate(zip(outs, refs)):
        assert o.dtype == jnp.dtype(dtype)
        H.assert_rounded(o.astype(jnp.float32), r, dtype, f"{name} output {k}")
    for k, (g, r) in enumerate(zip(grads, ref_grads)):
        assert g.dtype == jnp.dtype(dtype)
        H.assert_rounded(g.astype(jnp.float32), r, dtype, f"{name} gradient {k}")


def check_gather(dtype):
    x, idx, cot, grad = H.gather_case(dtype)
    op = OPS_J["gather"]
    xj = jnp.asarray(x, dtype)
    y, pullback = jax.vjp(jax.jit(lambda x: op(x, jnp.asarray(idx))), xj)
    H.assert_rounded(y.astype(jnp.float32), x[idx], dtype)
    (g,) = pullback(jnp.asarray(cot, dtype))
    assert g.dtype == jnp.dtype(dtype)
    H.assert_rounded(g.astype(jnp.float32), grad, dtype)


@pytest.mark.parametrize("dtype", DTYPES16)
@pytest.mark.parametrize("name", sorted(OPS))
def test_vjp_equals_reference_to_16bit_rounding(name, dtype):
    check_op(name, dtype)


@pytest.mark.parametrize("dtype", DTYPES16)
def test_gradient_accumulated_in_float32(dtype):
    check_gather(dtype)


@pytest.mark.parametrize("dtype", DTYPES16)
def test_grad_of_a_float32_loss(dtype):
    # jax.grad through the op: the loss in float32, the gradient in dtype
    x = H.values(70, dtype, 0)
    op = OPS_J["square_scale"]
    g = jax.jit(jax.grad(lambda x: jnp.sum(op(x, 1.5).astype(jnp.float32))))(
        jnp.asarray(x, dtype))
    assert g.dtype == jnp.dtype(dtype)
    H.assert_rounded(g.astype(jnp.float32), 3.0 * x, dtype)


def test_mixed_dtypes_follow_the_float32_float64_rules():
    x = jnp.asarray(H.values((5, 3), "float16", 0), jnp.float16)
    w = jnp.asarray(H.values((3, 4), "float16", 1), jnp.float32)
    b = jnp.asarray(H.values((4,), "bfloat16", 2), jnp.bfloat16)
    op = OPS_J["dense_tanh"]
    y = op(x, w, b)
    assert y.dtype == jnp.float16
    gx, gw, gb = jax.grad(lambda *a: jnp.sum(op(*a).astype(jnp.float32)), argnums=(0, 1, 2))(
        x, w, b)
    assert (gx.dtype, gw.dtype, gb.dtype) == (jnp.float16, jnp.float32, jnp.bfloat16)
    rx, rw, rb = jax.grad(lambda *a: jnp.sum(jnp.tanh(a[0] @ a[1] + a[2])), argnums=(0, 1, 2))(
        x.astype(jnp.float32), w, b.astype(jnp.float32))
    H.assert_rounded(gx.astype(jnp.float32), rx, "float16")
    np.testing.assert_allclose(gw, rw, rtol=1e-5, atol=1e-6)
    H.assert_rounded(gb.astype(jnp.float32), rb, "bfloat16")


def test_clear_errors():
    op = OPS_J["square_scale"]
    for dtype in (jnp.uint8, jnp.int16, jnp.complex64):
        with pytest.raises(dg.LaunchError, match=f"input 'x' has dtype {jnp.dtype(dtype)}; "
                                                 "diffgpu arrays are float32, float64, float16"):
            op(jnp.ones(4, dtype), 2.0)
    bad = dgj.op(OPS["square_scale"][0], outputs={"y": lambda x, **_: (x.shape, np.int16)},
                 scalars={"a": float}, grid=1, block=32)
    with pytest.raises(dg.LaunchError, match="output 'y' has dtype <class 'numpy.int16'>"):
        bad(jnp.ones(4, jnp.float16), 2.0)


def test_gpu_lowering_16_bit_shadows_are_float32(monkeypatch, cuda_lowering):
    # the CUDA lowering of a bfloat16 vjp, here: the reverse kernel call's
    # shadows of x and of the output are f32 (dup32), and the gradient is
    # converted to bf16 after the call (rounded once)
    monkeypatch.delenv("DIFFGPU_JAX_KERNEL_CALL", raising=False)
    cuda_lowering()
    f = OPS_J["square_scale"]
    fn = jax.jit(jax.value_and_grad(lambda x: jnp.sum(f(x, 1.5).astype(jnp.float32))))
    text = fn.trace(jnp.ones(70, jnp.bfloat16)).lower(lowering_platforms=("cuda",)).as_text()
    calls = [line for line in text.splitlines()
             if re.search(r"custom_call @triton_kernel_call_ffi\(", line)]
    fwd, rev = sorted(calls, key=len)
    assert re.search(r"-> tensor<70xbf16>", fwd)
    # written: y (bf16), its f32 shadow (the cotangent), x's f32 shadow
    assert re.search(r"-> \(tensor<70xbf16>, tensor<70xf32>, tensor<70xf32>\)", rev), rev
    assert re.search(r"stablehlo.convert %\S+ : \(tensor<70xf32>\) -> tensor<70xbf16>", text)


def test_prepare_bfloat16_for_the_gpu(tmp_path, monkeypatch):
    # f.prepare: the forward and the reverse program with float32 shadows of
    # the bfloat16 arrays (dup32) that the GPU lowering launches, for sm_90
    monkeypatch.setenv("DIFFGPU_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(OPS["square_scale"][0], "_programs", {})  # none compiled in memory
    OPS_J["square_scale"].prepare("sm_90", H.values(70, "bfloat16", 0).astype(jnp.bfloat16),
                                  1.5)
    entries = H.gpu_entries(tmp_path)
    assert {"square_scale", "__dg_reverse_square_scale"} <= set(entries)
    (rev,) = entries["__dg_reverse_square_scale"]
    # the entry's arrays: y (bf16), y's f32 shadow, x (bf16), x's f32 shadow
    assert rev["flat_types"][:4] == ["bfloat16[:]", "float32[:]", "bfloat16[:]", "float32[:]"]


# -- GPU: XLA launches the PTX ----------------------------------------------------

@gpu
@pytest.mark.parametrize("dtype", DTYPES16)
@pytest.mark.parametrize("name", sorted(OPS))
def test_gpu_vjp_equals_reference_to_16bit_rounding(jax_cuda, name, dtype):
    check_op(name, dtype)


@gpu
@pytest.mark.parametrize("dtype", DTYPES16)
def test_gpu_gradient_accumulated_in_float32(jax_cuda, dtype):
    check_gather(dtype)

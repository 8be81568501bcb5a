"""dg.jax: kernels under jax.jit with diffgpu's gradient as their custom_vjp.

On the CPU the kernel runs through jax.pure_callback; the `gpu` tests need a
CUDA jaxlib and launch the PTX from XLA's stream (diffgpu/bridges/jax_gpu.py).
"""
import re

import numpy as np
import pytest

jax = pytest.importorskip("jax", reason="jax is not installed (pip install jax jaxlib: "
                                        "124 MB of wheels, about 500 MB installed)")
import jax.numpy as jnp  # noqa: E402

import diffgpu as dg  # noqa: E402
import diffgpu.jax as dgj  # noqa: E402
from interop_kernels import OPS, TEST_ARGS, reference, wrap  # noqa: E402

OPS_J = {name: wrap(dgj, name) for name in OPS}


@pytest.fixture(autouse=True)
def _x64():
    """float64 arrays in these tests only (JAX's switch is process-wide)."""
    with jax.enable_x64(True):
        yield


def _inputs(name, dtype, seed=0):
    rng = np.random.default_rng(seed)

    def rnd(*shape):
        return jnp.asarray(rng.standard_normal(shape).astype(dtype))
    return tuple(a if isinstance(a, float) else rnd(*a) for a in TEST_ARGS[name])


def _outs(x):
    return x if isinstance(x, tuple) else (x,)


def _loss(fn, name, args):
    """A scalar loss of the kernel's outputs that weighs every element."""
    outs = _outs(fn(*args))
    return sum(jnp.sum(jnp.sin(o) * (1 + k)) for k, o in enumerate(outs))


def _diff_positions(name, args):
    return tuple(i for i, a in enumerate(args) if not isinstance(a, float))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", sorted(OPS))
def test_grad_of_jit_equals_jax_numpy(name, dtype):
    args = _inputs(name, dtype)
    pos = _diff_positions(name, args)

    def make(fn):
        def f(*arrays):
            full = list(args)
            for p, a in zip(pos, arrays):
                full[p] = a
            return _loss(fn, name, full)
        return f
    arrays = [args[p] for p in pos]
    got = jax.grad(jax.jit(make(OPS_J[name])), argnums=tuple(range(len(pos))))(*arrays)
    want = jax.grad(make(lambda *a: reference(name, jnp, *a)),
                    argnums=tuple(range(len(pos))))(*arrays)
    tol = 1e-12 if dtype == "float64" else 1e-5
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


@pytest.mark.parametrize("name", sorted(OPS))
def test_jit_forward_equals_jax_numpy(name):
    args = _inputs(name, "float64")
    got = _outs(jax.jit(lambda *a: OPS_J[name](*a), static_argnums=(
        (1,) if name == "square_scale" else ()))(*args))
    want = _outs(reference(name, jnp, *args))
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


def test_grad_inside_a_training_step():
    # a jitted SGD step whose gradient flows through the kernel
    x = jnp.asarray(np.random.default_rng(3).standard_normal((16, 3)))
    t = jnp.sin(x[:, :1])
    op = OPS_J["dense_tanh"]

    def loss(params, fn):
        w, b = params
        return jnp.mean((fn(x, w, b) - t) ** 2)

    def step(params, fn):
        g = jax.grad(loss)(params, fn)
        return [p - 0.5 * gp for p, gp in zip(params, g)], loss(params, fn)
    ours = jax.jit(lambda p: step(p, op))
    ref = jax.jit(lambda p: step(p, lambda *a: reference("dense_tanh", jnp, *a)))
    p = q = [jnp.full((3, 1), 0.1), jnp.zeros(1)]
    losses = []
    for _ in range(4):
        p, lp = ours(p)
        q, lq = ref(q)
        losses.append(float(lp))
        np.testing.assert_allclose(lp, lq, rtol=1e-12)
    assert losses[-1] < losses[0]


def test_integer_output_next_to_a_float_one():
    @dg.kernel
    def split(y, k, x):
        i = dg.global_id(0)
        if i < len(x):
            y[i] = x[i] * x[i]
            k[i] = int(x[i] > 0)
    op = dgj.op(split, outputs={"y": "x", "k": lambda x, **_: (x.shape, np.int64)},
                grid=1, block=32)
    x = jnp.array([-1.0, 2.0, 3.0])
    y, k = jax.jit(op)(x)
    assert k.tolist() == [0, 1, 1] and k.dtype == jnp.int64
    g = jax.jit(jax.grad(lambda x: op(x)[0].sum()))(x)
    assert g.tolist() == [-2.0, 4.0, 6.0]


def test_clear_errors():
    op = OPS_J["square_scale"]
    with pytest.raises(dg.LaunchError, match="input 'x' has dtype uint8"):
        op(jnp.ones(4, jnp.uint8), 2.0)  # (float16 and bfloat16 are: test_jax16.py)
    with pytest.raises(dg.LaunchError, match="scalar 'a' must be a Python number"):
        jax.jit(lambda x, a: op(x, a))(jnp.ones(4), 2.0)
    with pytest.raises(dg.LaunchError, match="takes 2 inputs"):
        op(jnp.ones(4))


# -- GPU: XLA launches the PTX on its own stream --------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(OPS))
def test_gpu_grad_of_jit_equals_jax_numpy(jax_cuda, name):
    test_grad_of_jit_equals_jax_numpy(name, "float64")
    test_jit_forward_equals_jax_numpy(name)


def _lower_for_cuda(cuda_lowering, registrations=("triton_kernel_call_ffi",), legacy=True):
    """The StableHLO text of a jitted value_and_grad through dense_tanh,
    lowered for "cuda" on this machine with a recorder in place of jaxlib's
    kernel-call library; returns (text, the recorded kernel calls)."""
    calls = cuda_lowering(registrations, legacy)
    f = OPS_J["dense_tanh"]
    x, w, b = jnp.ones((5, 3)), jnp.ones((3, 4)), jnp.ones(4)
    fn = jax.jit(jax.value_and_grad(lambda x, w, b: f(x, w, b).sum(), argnums=(0, 1, 2)))
    return fn.trace(x, w, b).lower(lowering_platforms=("cuda",)).as_text(), calls


def _custom_calls(text, target):
    return [line for line in text.splitlines()
            if re.search(rf"custom_call @{target}\(", line)]


def test_gpu_lowering_without_a_gpu(monkeypatch, cuda_lowering):
    # the CUDA lowering: one typed-FFI call of triton_kernel_call_ffi per
    # kernel (jaxlib registers that name for the FFI; a typed call of the
    # legacy name fails at compile time), every array an operand, each
    # written one aliased to a result, the zlib-compressed kernel call in
    # the `opaque` attribute, and the memref descriptors (0, buffer, 0,
    # sizes, row-major strides)
    monkeypatch.delenv("DIFFGPU_JAX_KERNEL_CALL", raising=False)
    text, calls = _lower_for_cuda(cuda_lowering)
    lines = _custom_calls(text, "triton_kernel_call_ffi")
    assert len(lines) == 2 and not _custom_calls(text, "triton_kernel_call")
    fwd, rev = sorted(lines, key=len)
    for line in lines:  # a dictionary backend config makes XLA call it typed
        opaque = re.search(r'mhlo.backend_config = \{opaque = "([^"]*)"\}', line)
        assert opaque, line
    assert 'opaque = "x\\9C' in fwd                         # a zlib stream
    assert fwd.count("output_operand_alias<") == 1           # y
    assert rev.count("output_operand_alias<") == 5           # y, dy, dx, dw, db
    assert re.search(r"-> \(tensor<5x4xf64>, tensor<5x4xf64>, tensor<5x3xf64>, "
                     r"tensor<3x4xf64>, tensor<4xf64>\)", rev)
    (kernel, (g0, g1, g2, params)), = [c for c in calls if c[0][0] == "dense_tanh"][:1]
    assert kernel[1] == 2 and (g0, g1, g2) == (1, 4, 1)     # 64 threads = 2 warps
    y = [(0, "i64"), ("array",), (0, "i64"), (5, "i64"), (4, "i64"), (4, "i64"), (1, "i64")]
    assert params[:7] == y
    assert len(params) == 4 * 7 - 2                           # b is 1-D


def test_gpu_lowering_legacy_form(monkeypatch, cuda_lowering):
    # a plugin without the FFI registration (or DIFFGPU_JAX_KERNEL_CALL=
    # legacy) gets the status-returning call of triton_kernel_call: the
    # compressed kernel call is the backend config string itself
    monkeypatch.delenv("DIFFGPU_JAX_KERNEL_CALL", raising=False)
    text, _ = _lower_for_cuda(cuda_lowering, registrations=())
    lines = _custom_calls(text, "triton_kernel_call")
    assert len(lines) == 2 and not _custom_calls(text, "triton_kernel_call_ffi")
    for line in lines:
        assert "api_version = 2" in line and 'backend_config = "x\\9C' in line
        assert "mhlo.backend_config" not in line
    assert sorted(line.count("output_operand_alias<") for line in lines) == [1, 5]
    monkeypatch.setenv("DIFFGPU_JAX_KERNEL_CALL", "legacy")
    text, _ = _lower_for_cuda(cuda_lowering)
    assert len(_custom_calls(text, "triton_kernel_call")) == 2


def test_gpu_lowering_clear_errors(monkeypatch, cuda_lowering):
    monkeypatch.setenv("DIFFGPU_JAX_KERNEL_CALL", "ffi")
    with pytest.raises(dg.LaunchError, match="does not register triton_kernel_call_ffi"):
        _lower_for_cuda(cuda_lowering, registrations=())
    monkeypatch.setenv("DIFFGPU_JAX_KERNEL_CALL", "typed")
    with pytest.raises(dg.LaunchError, match="expected one of ffi, legacy"):
        _lower_for_cuda(cuda_lowering)
    monkeypatch.delenv("DIFFGPU_JAX_KERNEL_CALL")
    with pytest.raises(dg.LaunchError, match="registers neither"):
        _lower_for_cuda(cuda_lowering, registrations=(), legacy=False)


def test_kernel_call_library_missing_is_a_launch_error(monkeypatch):
    # a jaxlib whose CUDA plugin did not load: gpu_triton has no kernel call
    import sys
    import types as pytypes

    from diffgpu.bridges import jax_kernel_call

    monkeypatch.setitem(sys.modules, "jax._src.lib.gpu_triton", pytypes.ModuleType("gpu_triton"))
    monkeypatch.setattr(sys.modules["jax._src.lib"], "gpu_triton",
                        sys.modules["jax._src.lib.gpu_triton"], raising=False)
    with pytest.raises(dg.LaunchError, match="CUDA plugin did not load"):
        jax_kernel_call.library()

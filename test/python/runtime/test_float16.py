"""float16 (and bfloat16, ml_dtypes' numpy dtype) arrays on the CPU: the seven
computations of bench/peer_cases.py with their float32 arrays in float16
(sumsq's one-element accumulator stays float32), launch and dg.vjp against
float64 references of the rounded inputs, within float16 rounding; loads
extend to float32, stores round to nearest even; 16-bit arrays through
dg.autodiff, dg.jvp, dg.gradcheck, shared arrays, atomics, the type specs of
dg.compile, and the errors for 16-bit scalars."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import diffgpu as dg

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))), "bench"))
import peer_cases as PC  # noqa: E402

N = 4096
SEVEN = ("square", "saxpy", "softplus", "stencil", "loop16", "sumsq", "gather")
ULP16 = 2.0 ** -10  # float16's spacing at 1 (relative ulp)
#: float16 roundings an output element may carry: one, at its store. A
#: gradient added once per load of its element (stencil: 3 neighbours, gather:
#: REUSE indices, loop16's p: once per step) is accumulated in float32 and
#: rounded once (docs/language.md, 16-bit floats)
ROUNDINGS: dict = {}


def to16(case, host, dtype=np.float16):
    """The case's float32 arrays in `dtype`, but sumsq's accumulator."""
    return {p: (v.astype(dtype) if isinstance(v, np.ndarray) and v.dtype == np.float32
                and not (case.name == "sumsq" and p == "out") else v)
            for p, v in host.items()}


def _err(got, want, idx):
    got = np.asarray(got, np.float64).reshape(-1)
    want = np.asarray(want, np.float64).reshape(-1)
    if idx is not None:
        got = got[idx]
    return float(np.max(np.abs(got - want)) / max(1.0, float(np.max(np.abs(want)))))


@pytest.fixture(scope="module")
def kernels():
    return PC.kernels()


@pytest.mark.parametrize("name", SEVEN)
def test_peer_case_in_float16(name, kernels):
    case = next(c for c in PC.cases(N) if c.name == name)
    rng = np.random.default_rng(7)
    host = to16(case, case.make(rng))
    h64 = {p: v.astype(np.float64) if isinstance(v, np.ndarray) and v.dtype.kind == "f" else v
           for p, v in host.items()}
    s = PC.sample(N)
    launch = kernels[case.kernel][(N + 255) // 256, 256]
    args = [host[p] for p in case.params]
    launch(*args)
    out = host[case.out]
    assert out.dtype == (np.float32 if name == "sumsq" else np.float16)
    tol = ULP16 if name != "sumsq" else 1e-5  # sumsq: float32 atomics
    for p, (want, idx) in case.primal_ref(h64, s).items():
        assert _err(host[p], want, idx) <= tol, p
    # dg.vjp: gradients in the inputs' dtype, against the float64 reference
    g = (rng.standard_normal(out.shape)).astype(out.dtype)
    fresh = to16(case, case.make(np.random.default_rng(7)))
    grads = dg.vjp(launch, *[fresh[p] for p in case.params], cotangents={case.out: g})
    refs = case.grad_ref(h64, g.astype(np.float64), s)
    for p, (want, idx) in refs.items():
        got = grads[p]
        if isinstance(host[p], np.ndarray):
            assert got.dtype == host[p].dtype, p
        gtol = 1e-4 if p == "a" else ROUNDINGS.get((name, p), 1) * ULP16
        assert _err(got, want, idx) <= gtol, (p, _err(got, want, idx))


def test_store_rounds_to_nearest_even_and_load_extends():
    @dg.kernel
    def copy_scaled(y16, x32, y32, x16):
        i = dg.global_id()
        y16[i] = x32[i]          # rounds to nearest even
        y32[i] = x16[i] * 1.0    # exact: every float16 is a float32
    # halfway cases between neighbours of float16: 1 + 2^-11 ties to 1, 1 + 3 * 2^-11 to 1 + 2^-9
    x32 = np.array([1 + 2.0 ** -11, 1 + 3 * 2.0 ** -11, -(1 + 2.0 ** -11), 65520.0, 1e-8],
                   np.float32)
    y16 = np.zeros(5, np.float16)
    x16 = np.array([1.5, -2.0 ** -24, 65504.0, 0.1, -0.0], np.float16)
    y32 = np.zeros(5, np.float32)
    copy_scaled[1, 5](y16, x32, y32, x16)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(y16, x32.astype(np.float16))  # numpy: nearest even
    assert y16[0] == 1.0 and y16[1] == 1 + 2.0 ** -9 and np.isinf(y16[3])
    np.testing.assert_array_equal(y32, x16.astype(np.float32))


def test_autodiff_jvp_gradcheck_shared_and_atomics_float16():
    @dg.kernel
    def f(y, x, w):
        s = dg.shared_array(64, np.float16)
        t = dg.thread_id()
        i = dg.global_id()
        s[t] = x[i] * w[0]
        dg.syncthreads()
        y[i] = dg.sin(s[(t + 1) % 64]) * x[i]
        dg.atomic_add(w, 1, x[i] * x[i])
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, 128).astype(np.float16)
    w = np.array([0.5, 0.0], np.float16)
    dx, dw = np.zeros_like(x), np.zeros_like(w)
    dy = rng.uniform(-1, 1, 128).astype(np.float16)
    dg.autodiff(f[2, 64], dg.Duplicated(np.zeros(128, np.float16), dy.copy()),
                dg.Duplicated(x, dx), dg.Duplicated(w.copy(), dw))
    # float64 reference of the same program
    x64, d64 = x.astype(np.float64), dy.astype(np.float64)
    dx64, dw64 = np.zeros(128), np.zeros(2)
    dg.autodiff(f[2, 64], dg.Duplicated(np.zeros(128), d64.copy()), dg.Duplicated(x64, dx64),
                dg.Duplicated(w.astype(np.float64), dw64))
    assert dx.dtype == np.float16
    np.testing.assert_allclose(dx, dx64, rtol=4 * ULP16, atol=4 * ULP16)
    np.testing.assert_allclose(dw[0], dw64[0], rtol=128 * ULP16)
    t = dg.jvp(f[2, 64], np.zeros(128, np.float16), x, w.copy(),
               tangents={"x": np.ones(128, np.float16), "w": np.zeros(2, np.float16)})
    assert t["y"].dtype == np.float16
    # dg.gradcheck of 16-bit arrays runs its float64 copies (hostdiff/gradcheck.py):
    # the kernel's derivative, not the float16 rounding, is what it checks
    loop16 = PC.kernels()["loop16"]
    assert dg.gradcheck(loop16[1, 128], dg.Duplicated(np.zeros(128, np.float16), dy.copy()),
                        dg.Duplicated(x, dx), dg.Duplicated(x[::-1].copy(), dx.copy()))


def test_bfloat16_arrays():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    bf16 = ml_dtypes.bfloat16
    kernels = PC.kernels()
    x = np.linspace(-3, 3, 256).astype(bf16)
    y = np.zeros(256, bf16)
    kernels["softplus"][1, 256](y, x)
    want = np.log1p(np.exp(x.astype(np.float64)))
    assert _err(y, want, None) <= 2.0 ** -7  # bfloat16: 8 bits of mantissa
    g = dg.vjp(kernels["square"][1, 256], np.zeros(256, bf16), x,
               cotangents={"y": np.ones(256, bf16)})
    assert g["x"].dtype == bf16 and _err(g["x"], 2 * x.astype(np.float64), None) <= 2.0 ** -7


def test_16_bit_scalars_and_type_specs():
    @dg.kernel
    def scale(y, a):
        y[0] = a
    with pytest.raises(dg.LaunchError, match="float16 scalars are not supported"):
        scale[1, 1](np.zeros(1, np.float32), np.float16(1.0))
    ck = dg.compile(scale, ["float16[:]", "float32"], target="host")
    y = np.zeros(1, np.float16)
    ck[1, 1](y, np.float32(0.25))
    assert y[0] == 0.25
    with pytest.raises(ValueError, match="for arrays only"):
        dg.compile(scale, ["float16[:]", "float16"], target="host")


def test_vector_atomics_and_refused_atomics_on_float16():
    @dg.kernel
    def vec_add(A, out):
        i = dg.global_id()
        dg.atomic_add(out, 0, dg.load_vec3(A, i))
        A[i, 1] += 1

    @dg.kernel
    def amax(A, x):
        i = dg.global_id()
        dg.atomic_max(A, 0, x[i])
    a = np.full((4, 3), 0.5, np.float16)
    out = np.zeros((1, 3), np.float16)
    vec_add[1, 4](a, out)
    np.testing.assert_array_equal(out, [[2.0, 2.0, 2.0]])
    np.testing.assert_array_equal(a[:, 1], 1.5)
    with pytest.raises(dg.CompileError, match="atomic_max\\(\\) on a float16 array is not "
                                              "supported"):
        amax[1, 4](np.zeros(1, np.float16), np.ones(4, np.float16))


def test_gradcheck_compares_the_16_bit_program(monkeypatch):
    """gradcheck_half: the float16 program's J^T D and J V against the float64
    program's, within HALF_ULPS float16 roundings; with no rounding allowed
    the float16 results, which are rounded, must fail it."""
    from diffgpu.hostdiff import gradcheck_half
    kernels = PC.kernels()
    x = np.linspace(-2, 2, 64).astype(np.float16)
    acts = (dg.Duplicated(np.zeros(64, np.float16), np.zeros(64, np.float16)),
            dg.Duplicated(x, np.zeros(64, np.float16)))
    assert dg.gradcheck(kernels["softplus"][1, 64], *acts)
    monkeypatch.setattr(gradcheck_half, "HALF_ULPS", 0)
    with pytest.raises(dg.DiffgpuError, match="with its 16-bit arrays: dx differs from the "
                                              "float64 program's"):
        dg.gradcheck(kernels["softplus"][1, 64], *acts)


def test_float16_bundle_and_separate_programs(tmp_path):
    kernels = PC.kernels()
    square = kernels["square"]
    ck16 = dg.compile(square, ["float16[:]", "float16[:]"], target="host")
    ck90 = dg.compile(square, ["float16[:]", "float16[:]"], target="sm_90")
    assert "ld.global" in ck90.payload["ptx"] and ".b16" in ck90.payload["ptx"]
    path = dg.save_bundle(str(tmp_path / "half.dgb"), [ck16, ck90])
    loaded = dg.load_bundle(path)
    x = np.linspace(-2, 2, 16).astype(np.float16)
    y = np.zeros(16, np.float16)
    loaded["square"][1, 16](y, x)
    np.testing.assert_array_equal(y, (x.astype(np.float32) ** 2).astype(np.float16))
    # float16 and float32 arguments select different programs (the cache key's types)
    y32 = np.zeros(16, np.float32)
    square[1, 16](y32, x.astype(np.float32))
    square[1, 16](y, x)
    dtypes = {t[0].dtype for t, *_ in square._programs}
    assert {"float16", "float32"} <= dtypes

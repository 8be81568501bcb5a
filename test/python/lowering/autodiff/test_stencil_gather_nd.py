"""`dg.vjp` of 2-D, 3-D and flattened affine stencils through the gathered
`grad` kind (lowering/autodiff/functional/gather.py): every gradient element
written once (new buffers are NaN-filled here: an element left unwritten
fails), no atomic in the PTX; equal to the generic program (the switch
DIFFGPU_STENCIL off: zero fill and scatter atomics) and to finite
differences, in float32 and float64, for launches that cover the input and
launches that do not (a valid convolution's threads cover its output only;
a grid smaller than the array makes each thread walk several elements)."""
from __future__ import annotations

import re

import numpy as np
import pytest

import diffgpu as dg
import kernels_stencil2d as S

RNG = np.random.default_rng(23)


@dg.kernel
def wave(y, x):  # nonlinear 2-D stencil: products of neighbours and a sine
    i = dg.global_id(0)
    j = dg.global_id(1)
    if i >= 1 and i < x.shape[0] - 1 and j < x.shape[1] - 2:
        y[i, j] = x[i - 1, j] * x[i + 1, j + 2] + dg.sin(x[i, j + 1])


@dg.kernel
def conv_t(y, x, w):  # coalesced: j (the fast index) from dimension 0, i from 1
    j = dg.global_id(0)
    i = dg.global_id(1)
    if i < y.shape[0] and j < y.shape[1]:
        acc = 0.0
        for a in range(3):
            for b in range(3):
                acc += w[a, b] * x[i + a, j + b]
        y[i, j] = acc


@dg.kernel
def looped(y, x, n):  # a runtime-length loop: the reverse needs a tape stack
    i = dg.global_id(0)
    j = dg.global_id(1)
    if i >= 1 and i < x.shape[0] and j < x.shape[1]:
        acc = 0.0
        for k in range(n):
            acc = acc * dg.sin(acc) + x[i - 1, j] * x[i, j]
        y[i, j] = acc


@dg.kernel
def looped1d(y, x, n):  # the 1-D gather (transpose.py) has the same limit
    i = dg.global_id(0)
    if i >= 1 and i < len(x) - 1:
        acc = 0.0
        for k in range(n):
            acc += x[i - 1] * x[i + 1]
        y[i] = acc


@dg.kernel
def two_in(y, a, b):  # two stencil inputs, each gathered
    i = dg.global_id(0)
    j = dg.global_id(1)
    if i >= 1 and i < a.shape[0] and j < a.shape[1] - 1:
        y[i, j] = a[i - 1, j] * b[i, j + 1] + a[i, j]


@dg.kernel
def accumulate(y, x):  # y is read too: an in-out, not `cot`
    i = dg.global_id(0)
    j = dg.global_id(1)
    if i >= 1 and i < x.shape[0] and j < x.shape[1]:
        y[i, j] = y[i, j] + x[i - 1, j] * 2.0


@dg.kernel
def long_taps(y, x):  # 40 taps: the derivative keeps the loop (not unrolled)
    i = dg.global_id(0)
    if i < len(y):
        acc = 0.0
        for a in range(40):
            acc += x[i + a]
        y[i] = acc


def _case(name, dtype):
    r = lambda *s: RNG.standard_normal(s).astype(dtype)  # noqa: E731
    if name == "conv2d":  # 5x5 valid: threads over the 17 x 15 output only
        x, w = r(21, 19), r(5, 5)
        return S.conv2d[(3, 2), (8, 8)], [np.zeros((17, 15), dtype), x, w], "x"
    if name == "conv2d_small_grid":  # 8 x 8 threads for a 28 x 20 output
        x, w = r(32, 24), r(5, 5)
        return S.conv2d[(2, 2), (4, 4)], [np.zeros((28, 20), dtype), x, w], "x"
    if name == "blur3":
        x = r(13, 11)
        return S.blur3[(2, 2), (8, 8)], [np.zeros_like(x), x], "x"
    if name == "laplace3d":
        x = r(7, 6, 9)
        return S.laplace3d[(2, 2, 3), (4, 4, 4)], [np.zeros_like(x), x], "x"
    if name == "flat5":  # x[i - W], x[i + W] with W a runtime value
        x = r(9 * 8)
        return S.flat5[(3,), (32,)], [np.zeros_like(x), x, 9], "x"
    if name == "flat_conv3":  # x[i + a * W + b] in loops; output shorter than x
        x = r(9 * 8)
        return S.flat_conv3[(2,), (16,)], [np.zeros(9 * 8 - 20, dtype), x, 9], "x"
    if name == "conv_t":
        x, w = r(19, 23), r(3, 3)
        return conv_t[(3, 2), (8, 16)], [np.zeros((17, 21), dtype), x, w], "x"
    if name == "wave":
        x = r(12, 14)
        return wave[(2, 2), (8, 8)], [np.zeros_like(x), x], "x"
    raise KeyError(name)


CASES = ["conv2d", "conv2d_small_grid", "blur3", "laplace3d", "flat5", "flat_conv3", "wave",
         "conv_t"]


def _vjp(launch, args, seed):
    return dg.vjp(launch, *[a.copy() if isinstance(a, np.ndarray) else a for a in args],
                  cotangents={"y": seed})


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", CASES)
def test_gathered_equals_generic(kinds, monkeypatch, name, dtype):
    launch, args, stencil = _case(name, dtype)
    seed = RNG.standard_normal(args[0].shape).astype(dtype)
    got = _vjp(launch, args, seed)
    assert kinds[-1][launch.kernel.arg_names.index(stencil)] == "grad"
    monkeypatch.setenv("DIFFGPU_STENCIL", "0")  # a new kernel object: nothing remembered
    generic = dg.kernel(launch.kernel.py_func)[launch.grid, launch.block]
    want = _vjp(generic, args, seed)
    assert kinds[-1][launch.kernel.arg_names.index(stencil)] == "dup"
    tol = dict(rtol=1e-12, atol=1e-12) if dtype == np.float64 else dict(rtol=2e-5, atol=2e-5)
    for k in want:
        assert not np.isnan(got[k]).any()
        np.testing.assert_allclose(got[k], want[k], **tol)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", CASES)
def test_gathered_matches_finite_differences(name, dtype):
    """<vjp(dy), v> equals the central difference of <dy, y(x + t v)> (in
    float64; the float32 program's gradient against the float64 one's)."""
    launch, args, stencil = _case(name, np.float64)
    seed = RNG.standard_normal(args[0].shape)
    pos = launch.kernel.arg_names.index(stencil)
    x = args[pos]
    v = RNG.standard_normal(x.shape)

    def f(t):
        a = [b.copy() if isinstance(b, np.ndarray) else b for b in args]
        a[pos] = x + t * v
        launch(*a)
        return float((seed * a[0]).sum())

    eps = 1e-5
    fd = (f(eps) - f(-eps)) / (2 * eps)
    cast = [b.astype(dtype) if isinstance(b, np.ndarray) else b for b in args]
    g = _vjp(launch, cast, seed.astype(dtype))[stencil]
    assert g.dtype == dtype
    tol = 1e-6 if dtype == np.float64 else 1e-3
    assert abs(float((g.astype(np.float64) * v).sum()) - fd) <= tol * max(1.0, abs(fd))


def test_conv2d_gradients_analytic():
    """A valid convolution's image gradient reaches the last rows and columns
    of x, which no thread's global id names."""
    launch, args, _ = _case("conv2d", np.float64)
    y, x, w = args
    dy = RNG.standard_normal(y.shape)
    g = _vjp(launch, args, dy)
    dx = np.zeros_like(x)
    for a in range(5):
        for b in range(5):
            dx[a:a + 17, b:b + 15] += w[a, b] * dy
    dw = np.array([[(dy * x[a:a + 17, b:b + 15]).sum() for b in range(5)] for a in range(5)])
    np.testing.assert_allclose(g["x"], dx, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(g["w"], dw, rtol=1e-12, atol=1e-12)


def test_long_loop_keeps_the_scatter(kinds):
    """40 taps: the derivative keeps its loop (autodiff unrolls at most 32
    trips), the index holds a loop variable, so x keeps the generic form."""
    x = RNG.standard_normal(100)
    seed = RNG.standard_normal(61)
    g = _vjp(long_taps[(2,), (32,)], [np.zeros(61), x], seed)
    assert kinds[-1] == ["cot", "dup"]
    want = np.zeros_like(x)
    for a in range(40):
        want[a:a + 61] += seed
    np.testing.assert_allclose(g["x"], want, rtol=1e-12)


def test_access_fact_names_the_dimensions():
    y, x, w = np.zeros((4, 4)), np.zeros((8, 8)), np.zeros((5, 5))
    facts = dg.functional.access(S.conv2d[(1, 1), (4, 4)], y, x, w)
    assert facts == {"y": "output", "x": "input", "w": "input"}
    from diffgpu.hostdiff.plan import access_facts
    from diffgpu.runtime.args import infer_signature
    sig = infer_signature([y, x, w], S.conv2d.arg_names, "conv2d")
    f = access_facts(S.conv2d, sig.types)
    assert f[1]["stencil_dims"] == [0, 1] and f[1]["stencil"] is None
    assert f[2]["stencil_dims"] is None  # w: loaded at constant indices only


def _has_nvptx():
    from diffgpu.driver.compiler import has_nvptx
    return has_nvptx()


def _counts(kernel, types, kinds):
    from diffgpu.driver.launch import get_program
    ptx = get_program(kernel, types, "sm_90", ("reverse", kinds)).payload["ptx"]
    return {k: len(re.findall(p, ptx)) for k, p in (
        ("atomics", r"\b(atom|red)\.global"), ("shuffles", r"\bshfl\."),
        ("stores", r"\bst\.global\."), ("barriers", r"\bbar\.sync"))}


@pytest.mark.skipif(not _has_nvptx(), reason="MLIR bindings without NVPTX")
def test_conv2d_image_gradient_ptx_has_no_atomics():
    """The image gradient alone (w held constant): no atomic, no shuffle, no
    barrier, one store (dx[p]); the generic form has one atomic per tap."""
    from diffgpu.types import ArrayType
    t = (ArrayType("float32", 2),) * 3
    gathered = _counts(S.conv2d, t, ("cot", "grad", "const"))
    assert gathered == {"atomics": 0, "shuffles": 0, "stores": 1, "barriers": 0}
    generic = _counts(S.conv2d, t, ("dup", "dup", "const"))
    assert generic["atomics"] >= 25


@pytest.mark.skipif(not _has_nvptx(), reason="MLIR bindings without NVPTX")
@pytest.mark.parametrize("kernel,rank", [(S.blur3, 2), (S.laplace3d, 3)])
def test_written_out_stencils_ptx_has_no_atomics(kernel, rank):
    from diffgpu.types import ArrayType
    t = (ArrayType("float32", rank),) * 2
    assert _counts(kernel, t, ("cot", "grad"))["atomics"] == 0
    assert _counts(kernel, t, ("cot", "dup"))["atomics"] > 0


def test_vjp_wrt_x_uses_the_gather_and_no_filter_gradient(kinds):
    launch, args, _ = _case("conv2d", np.float32)
    seed = RNG.standard_normal(args[0].shape).astype(np.float32)
    g = dg.vjp(launch, *args, cotangents={"y": seed}, wrt=["x"])
    assert kinds[-1] == ["cot", "grad", "const"] and set(g) == {"x"}


def test_in_out_output_keeps_the_scatter(kinds):
    """y read and written: its cotangent is not `cot`, so the replays could
    observe a write: x keeps Enzyme's convention, and the result is right."""
    x, y0 = RNG.standard_normal((9, 7)), RNG.standard_normal((9, 7))
    seed = RNG.standard_normal((9, 7))
    g = dg.vjp(accumulate[(2, 1), (8, 8)], y0.copy(), x, cotangents={"y": seed})
    assert kinds[-1][1] == "dup"
    want = np.zeros_like(x)
    want[:-1] = 2.0 * seed[1:]
    np.testing.assert_allclose(g["x"], want, rtol=1e-12)


def test_more_than_one_block_along_z_keeps_the_scatter(kinds):
    """The index names dimensions 0 and 1; two blocks along z give two
    threads the same element: no gather (which thread's cotangent counts
    is then the launch's race, as in Enzyme's convention)."""
    x = RNG.standard_normal((13, 11))
    seed = RNG.standard_normal((13, 11))
    g = dg.vjp(S.blur3[(2, 2, 2), (8, 8, 1)], np.zeros_like(x), x, cotangents={"y": seed})
    assert kinds[-1][1] == "dup"
    assert np.isfinite(g["x"]).all()


def test_runtime_loop_keeps_the_scatter(kinds):
    """A loop the derivative keeps (a runtime trip count) needs a tape stack
    in the reverse sweep (on a GPU: memref.cast and device malloc, which a
    replay cannot hold): x keeps the generic form, on every target."""
    x = RNG.standard_normal((9, 7)) * 0.5
    seed = RNG.standard_normal((9, 7))
    dg.vjp(looped[(2, 1), (8, 8)], np.zeros_like(x), x, 3, cotangents={"y": seed})
    assert kinds[-1] == ["cot", "dup", "const"]
    from diffgpu.hostdiff.plan import access_facts
    from diffgpu.runtime.args import infer_signature
    sig = infer_signature([np.zeros_like(x), x, 3], looped.arg_names, "looped")
    assert access_facts(looped, sig.types)[1]["stencil_dims"] is None


@pytest.mark.skipif(not _has_nvptx(), reason="MLIR bindings without NVPTX")
def test_runtime_loop_1d_compiles_for_the_gpu(kinds):
    """The access analysis no longer picks the 1-D gather here: forced, its
    sm_90 compile fails (the GPU tape's ops cannot be replayed); the
    generic derivative compiles and is right."""
    x = RNG.standard_normal(40)
    seed = RNG.standard_normal(40)
    g = dg.vjp(looped1d[2, 32], np.zeros_like(x), x, 2, cotangents={"y": seed})
    assert kinds[-1] == ["cot", "dup", "const"]
    want = np.zeros_like(x)
    want[:-2] += 2 * seed[1:-1] * x[2:]
    want[2:] += 2 * seed[1:-1] * x[:-2]
    np.testing.assert_allclose(g["x"], want, rtol=1e-12)
    from diffgpu.driver.launch import get_program
    from diffgpu.types import ArrayType, ScalarType
    t = (ArrayType("float64", 1),) * 2 + (ScalarType("int64"),)
    assert ".entry" in get_program(looped1d, t, "sm_90",
                                   ("reverse", ("cot", "dup", "const"))).payload["ptx"]
    with pytest.raises(dg.CompileError, match="'grad' but its loads"):
        get_program(looped1d, t, "sm_90", ("reverse", ("cot", "grad", "const")))


def test_two_stencil_inputs_each_gathered_once(kinds, monkeypatch):
    """Each input's gather replays the body without the other's walk (which
    only writes the other gradient): two walks of two loops in the IR, and
    both gradients equal the generic program's."""
    a, b = RNG.standard_normal((9, 7)), RNG.standard_normal((9, 7))
    seed = RNG.standard_normal((9, 7))
    got = dg.vjp(two_in[(2, 1), (8, 8)], np.zeros_like(a), a, b, cotangents={"y": seed})
    assert kinds[-1] == ["cot", "grad", "grad"]
    from diffgpu.driver import compiler
    from diffgpu.driver.launch import build_module
    from diffgpu.types import ArrayType
    src = build_module(two_in, (ArrayType("float64", 2),) * 3, "host",
                       ("reverse", ("cot", "grad", "grad")))
    text = compiler.compile(src.text, "host", "autodiff").text
    assert text.count("scf.for") == 4
    monkeypatch.setenv("DIFFGPU_STENCIL", "0")
    generic = dg.kernel(two_in.py_func)[(2, 1), (8, 8)]
    want = dg.vjp(generic, np.zeros_like(a), a, b, cotangents={"y": seed})
    for k in ("a", "b"):
        np.testing.assert_allclose(got[k], want[k], rtol=1e-12, atol=1e-12)

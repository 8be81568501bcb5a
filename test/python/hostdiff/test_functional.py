"""dg.vjp / dg.jvp on the CPU: analytic gradients, finite differences, the
read/write roles, aliasing rules, and errors."""
from __future__ import annotations

import numpy as np
import pytest

import diffgpu as dg
from diffgpu.functional import access
from kernels_elementwise import gather, saxpy, square, stencil, sumsq  # noqa: E402  (defined once)

RNG = np.random.default_rng(7)


@dg.kernel
def inplace_square(A):
    i = dg.global_id(0)
    if i < len(A):
        A[i] = A[i] * A[i]


@dg.kernel
def add(o, x, y):
    i = dg.global_id(0)
    if i < len(o):
        o[i] = x[i] + 3.0 * y[i]


@dg.kernel
def loop(y, x, p, n):
    i = dg.global_id(0)
    if i < len(x):
        s = x[i]
        for k in range(n):
            s = s + 0.1 * dg.sin(s) * p[i]
        y[i] = s


def f32(n):
    return RNG.standard_normal(n).astype(np.float32)


def test_roles_from_the_analysis():
    x, y = f32(8), np.zeros(8, np.float32)
    assert access(square[1, 32], y, x) == {"y": "output", "x": "input"}
    assert access(saxpy[1, 32], y, 2.0, x, x.copy()) == {
        "o": "output", "a": "scalar", "x": "input", "y": "input"}
    assert access(inplace_square[1, 32], x) == {"A": "inout"}
    assert access(sumsq[1, 32], np.zeros(1, np.float32), x) == {"out": "inout", "x": "input"}
    idx = np.zeros(8, np.int32)
    assert access(gather[1, 32], y, x, idx) == {"y": "output", "x": "input", "idx": "const"}


def test_square_vjp_jvp_and_untouched_arrays():
    x, y, g = f32(50), np.full(50, 7.0, np.float32), f32(50)
    g0 = g.copy()
    grads = dg.vjp(square[2, 32], y, x, cotangents={"y": g})
    assert list(grads) == ["x"]
    np.testing.assert_allclose(grads["x"], 2 * x * g, rtol=1e-6)
    assert np.array_equal(g, g0)             # cotangent untouched
    assert np.all(y == 7.0)                  # outputs not written by default
    tans = dg.jvp(square[2, 32], y, x, tangents={"x": g})
    np.testing.assert_allclose(tans["y"], 2 * x * g, rtol=1e-6)
    assert np.array_equal(g, g0) and np.all(y == 7.0)
    dg.vjp(square[2, 32], y, x, cotangents={"y": g}, outputs=True)
    np.testing.assert_allclose(y, x * x, rtol=1e-6)


def test_saxpy_with_scalar():
    x, y, o, g = f32(40), f32(40), np.zeros(40, np.float32), f32(40)
    grads = dg.vjp(saxpy[2, 32], o, 1.5, x, y, cotangents={"o": g})
    assert set(grads) == {"a", "x", "y"}
    assert isinstance(grads["a"], float)
    assert grads["a"] == pytest.approx(float(np.dot(x.astype(np.float64), g)), rel=1e-5)
    np.testing.assert_allclose(grads["x"], 1.5 * g, rtol=1e-6)
    np.testing.assert_allclose(grads["y"], g, rtol=1e-6)
    tx, ty = f32(40), f32(40)
    tans = dg.jvp(saxpy[2, 32], o, 1.5, x, y, tangents={"a": 0.5, "x": tx, "y": ty})
    np.testing.assert_allclose(tans["o"], 0.5 * x + 1.5 * tx + ty, rtol=1e-5, atol=1e-6)


def test_stencil():
    n = 70
    x, y, g = f32(n), np.zeros(n, np.float32), f32(n)
    xbar = dg.vjp(stencil[3, 32], y, x, cotangents={"y": g})["x"]
    want = np.zeros(n)
    for i in range(1, n - 1):
        want[i - 1] += 0.25 * g[i]
        want[i] += 0.5 * g[i]
        want[i + 1] += 0.25 * g[i]
    np.testing.assert_allclose(xbar, want, rtol=1e-5, atol=1e-6)


def test_inplace_kernel_follows_the_inout_rule():
    a, g = f32(33), f32(33)
    a0 = a.copy()
    grads = dg.vjp(inplace_square[2, 32], a, cotangents={"A": g})
    np.testing.assert_allclose(grads["A"], 2 * a0 * g, rtol=1e-6)  # wrt the initial A
    assert np.array_equal(a, a0)
    tans = dg.jvp(inplace_square[2, 32], a, tangents={"A": g})
    np.testing.assert_allclose(tans["A"], 2 * a0 * g, rtol=1e-6)   # of the final A
    dg.jvp(inplace_square[2, 32], a, tangents={"A": g}, outputs=True)
    np.testing.assert_allclose(a, a0 * a0, rtol=1e-6)


def test_same_array_twice_is_one_variable():
    a, o, g = f32(20), np.zeros(20, np.float32), f32(20)
    grads = dg.vjp(add[1, 32], o, a, a, cotangents={"o": g})
    np.testing.assert_allclose(grads["x"], 4.0 * g, rtol=1e-6)   # d(a + 3a)/da
    assert grads["x"] is grads["y"]
    # the same array as output and input: square in place through two names
    b = f32(20)
    b0 = b.copy()
    grads = dg.vjp(square[1, 32], b, b, cotangents={"y": g})
    np.testing.assert_allclose(grads["x"], 2 * b0 * g, rtol=1e-6)
    assert np.array_equal(b, b0)
    tans = dg.jvp(square[1, 32], b, b, tangents={"x": g})
    np.testing.assert_allclose(tans["y"], 2 * b0 * g, rtol=1e-6)


def _fd_dot(launch, args, out_pos, wrt, v, g, eps=1e-6):
    """<g, (F(x + eps v) - F(x - eps v)) / 2 eps> in float64."""
    def run(sign):
        a = [x.copy() if isinstance(x, np.ndarray) else x for x in args]
        a[wrt] = a[wrt] + sign * eps * v
        launch(*a)
        return a[out_pos]
    return float(np.dot(g, (run(1) - run(-1)) / (2 * eps)))


def test_loop_kernel_against_finite_differences():
    n = 45
    x, p = RNG.standard_normal(n), RNG.standard_normal(n)
    y, g = np.zeros(n), RNG.standard_normal(n)
    launch = loop[2, 32]
    grads = dg.vjp(launch, y, x, p, 7, cotangents={"y": g})
    tans = {}
    for k, name in ((1, "x"), (2, "p")):
        v = RNG.standard_normal(n)
        fd = _fd_dot(launch, [y, x, p, 7], 0, k, v, g)
        assert float(np.dot(grads[name], v)) == pytest.approx(fd, rel=1e-6)
        tans[name] = v
    jv = dg.jvp(launch, y, x, p, 7, tangents=tans)["y"]
    fd = (_fd_dot(launch, [y, x, p, 7], 0, 1, tans["x"], g)
          + _fd_dot(launch, [y, x, p, 7], 0, 2, tans["p"], g))
    assert float(np.dot(g, jv)) == pytest.approx(fd, rel=1e-6)


def test_reduction_with_atomic_add():
    x, out, g = f32(100), np.zeros(1, np.float32), np.array([0.5], np.float32)
    grads = dg.vjp(sumsq[4, 32], out, x, cotangents={"out": g})
    np.testing.assert_allclose(grads["x"], 2 * x * 0.5, rtol=1e-6)
    np.testing.assert_allclose(grads["out"], g)        # out_final = out_initial + sum
    assert out[0] == 0.0
    tans = dg.jvp(sumsq[4, 32], out, x, tangents={"out": np.zeros(1, np.float32), "x": x})
    assert tans["out"][0] == pytest.approx(float(np.sum(2.0 * x.astype(np.float64) ** 2)),
                                           rel=1e-5)


def test_gather_scatters_the_gradient():
    x, idx = f32(10), RNG.integers(0, 10, 64).astype(np.int32)
    y, g = np.zeros(64, np.float32), f32(64)
    grads = dg.vjp(gather[2, 32], y, x, idx, cotangents={"y": g})
    np.testing.assert_allclose(grads["x"], np.bincount(idx, weights=g, minlength=10),
                               rtol=1e-5, atol=1e-6)
    assert set(grads) == {"x"}


@pytest.mark.parametrize("kwargs, match", [
    ({"cotangents": {"z": None}}, "'z', which is not a parameter of square"),
    ({"cotangents": {}}, "missing cotangent for 'y'"),
    ({"cotangents": {"y": np.ones(8, np.float32), "x": np.ones(8, np.float32)}},
     "cotangents for 'x', an input of square .never written."),
    ({"cotangents": {"y": np.ones(3, np.float32)}}, r"has shape \(3,\), the argument \(8,\)"),
    ({"cotangents": {"y": np.ones(8, np.float64)}}, "has type float64"),
    ({"cotangents": [1]}, "takes a dict"),
])
def test_vjp_errors(kwargs, match):
    x, y = f32(8), np.zeros(8, np.float32)
    with pytest.raises(dg.LaunchError, match=match):
        dg.vjp(square[1, 32], y, x, **kwargs)


def test_jvp_errors_and_bad_calls():
    x, y = f32(8), np.zeros(8, np.float32)
    with pytest.raises(dg.LaunchError, match="missing tangent for 'x'"):
        dg.jvp(square[1, 32], y, x, tangents={})
    with pytest.raises(dg.LaunchError, match="tangents for 'y', an output of square"):
        dg.jvp(square[1, 32], y, x, tangents={"x": x, "y": y})
    with pytest.raises(dg.LaunchError, match="missing tangent for 'a'"):
        dg.jvp(saxpy[1, 32], y, 2.0, x, x.copy(), tangents={"x": x, "y": x})
    with pytest.raises(dg.LaunchError, match=r"dg.vjp\(square\[grid, block\]"):
        dg.vjp(square, y, x, cotangents={"y": y})
    with pytest.raises(dg.LaunchError, match="takes 2 arguments"):
        dg.vjp(square[1, 32], y, cotangents={"y": y})
    big = f32(16)
    with pytest.raises(dg.LaunchError, match="overlap in memory without being the same"):
        dg.vjp(square[1, 32], big[:8], big[4:12], cotangents={"y": y})


def _reverse_kinds(kernel):
    return [s.split("[reverse ")[1].rstrip("]") for s in kernel.signatures if "[reverse" in s]


def test_functional_kinds_where_proven_enzyme_convention_elsewhere():
    @dg.kernel
    def sq(y, x):
        i = dg.global_id(0)
        if i < len(x):
            y[i] = x[i] * x[i]

    x, y, g = f32(64), np.zeros(64, np.float32), f32(64)
    np.testing.assert_allclose(dg.vjp(sq[2, 32], y, x, cotangents={"y": g})["x"],
                               2 * x * g, rtol=1e-6)
    assert _reverse_kinds(sq) == ["cot, grad"]
    # two blocks along dimension 1 run every index twice: y is written twice,
    # so its cotangent must be consumed (Enzyme's convention), once
    grads = dg.vjp(sq[(2, 2), (32, 1)], y, x, cotangents={"y": g})
    np.testing.assert_allclose(grads["x"], 2 * x * g, rtol=1e-6)
    assert "dup, dup" in _reverse_kinds(sq)
    assert np.all(y == 0)


def test_partial_launch_leaves_zero_gradients(monkeypatch):
    _nan_empty(monkeypatch)
    x, y, g = f32(50), np.zeros(50, np.float32), f32(50)
    xbar = dg.vjp(square[1, 32], y, x, cotangents={"y": g})["x"]  # 32 of 50 threads
    np.testing.assert_allclose(xbar[:32], 2 * x[:32] * g[:32], rtol=1e-6)
    assert np.all(xbar[32:] == 0)


def test_cotangent_that_is_an_argument_is_read_from_a_copy():
    x, y = f32(40), np.zeros(40, np.float32)
    x0 = x.copy()
    grads = dg.vjp(square[2, 32], y, x, cotangents={"y": x}, outputs=True)
    np.testing.assert_allclose(grads["x"], 2 * x0 * x0, rtol=1e-6)
    assert np.array_equal(x, x0)
    np.testing.assert_allclose(y, x0 * x0, rtol=1e-6)


def test_inplace_vjp_with_outputs():
    a, g = f32(33), f32(33)
    a0 = a.copy()
    grads = dg.vjp(inplace_square[2, 32], a, cotangents={"A": g}, outputs=True)
    np.testing.assert_allclose(grads["A"], 2 * a0 * g, rtol=1e-6)
    np.testing.assert_allclose(a, a0 * a0, rtol=1e-6)


def test_accumulated_array_passes_its_cotangent_through():
    @dg.kernel
    def total(out, x):
        i = dg.global_id(0)
        if i < len(x):
            dg.atomic_add(out, 0, x[i] * x[i])

    x, out, g = f32(70), np.full(1, 5.0, np.float32), np.array([0.25], np.float32)
    grads = dg.vjp(total[3, 32], out, x, cotangents={"out": g})
    np.testing.assert_allclose(grads["x"], 0.5 * x, rtol=1e-6)
    np.testing.assert_allclose(grads["out"], g)
    assert grads["out"] is not g and out[0] == 5.0
    assert _reverse_kinds(total) == ["cot, grad"]   # no primal sum, no copy
    dg.vjp(total[3, 32], out, x, cotangents={"out": g}, outputs=True)
    assert out[0] == pytest.approx(5.0 + float(np.sum(x.astype(np.float64) ** 2)), rel=1e-5)


@dg.kernel
def mul2d(c, a, b):
    i = dg.global_id(0)
    j = dg.global_id(1)
    if i < c.shape[0] and j < c.shape[1]:
        c[i, j] = a[i, j] * dg.sin(b[i, j])


@pytest.mark.parametrize("grid", [(2, 3), (1, 2)])  # covering, and reaching part of it
def test_2d_kernel_matches_enzyme_convention(grid, monkeypatch):
    _nan_empty(monkeypatch)
    a, b = RNG.standard_normal((20, 12)), RNG.standard_normal((20, 12))
    c, g = np.zeros((20, 12)), RNG.standard_normal((20, 12))
    launch = mul2d[grid, (16, 8)]
    grads = dg.vjp(launch, c, a, b, cotangents={"c": g})
    assert "cot, grad, grad" in _reverse_kinds(mul2d)
    da, db, dc = np.zeros_like(a), np.zeros_like(b), g.copy()
    dg.autodiff(launch, dg.Duplicated(c.copy(), dc), dg.Duplicated(a, da), dg.Duplicated(b, db))
    np.testing.assert_array_equal(grads["a"], da)   # the same arithmetic, bit for bit
    np.testing.assert_array_equal(grads["b"], db)
    reach = np.zeros((20, 12), bool)
    reach[:grid[0] * 16, :grid[1] * 8] = True
    np.testing.assert_allclose(grads["a"], np.where(reach, np.sin(b) * g, 0.0), rtol=1e-12)


@pytest.mark.parametrize("name", ["square", "saxpy", "loop", "sumsq"])
def test_functional_kinds_equal_enzyme_convention(name):
    n = 77
    x, p, g = RNG.standard_normal(n), RNG.standard_normal(n), RNG.standard_normal(n)
    k, args, out = {
        "square": (square, [np.zeros(n), x], "y"),
        "saxpy": (saxpy, [np.zeros(n), 0.5, x, p], "o"),
        "loop": (loop, [np.zeros(n), x, p, 5], "y"),
        "sumsq": (sumsq, [np.zeros(1), x], "out"),
    }[name]
    if name == "sumsq":
        g = np.array([0.3])
    launch = k[3, 32]
    grads = dg.vjp(launch, *args, cotangents={out: g})
    assert "cot" in _reverse_kinds(k)[-1] and "grad" in _reverse_kinds(k)[-1]
    acts, shadows = [], {}
    for pname, a in zip(k.arg_names, args):
        if isinstance(a, np.ndarray):
            shadows[pname] = g.copy() if pname == out else np.zeros_like(a)
            acts.append(dg.Duplicated(a.copy(), shadows[pname]))
        else:
            acts.append(dg.Active(a) if isinstance(a, float) else a)
    active = dg.autodiff(launch, *acts)
    for pname, want in shadows.items():
        if pname != out:
            np.testing.assert_array_equal(grads[pname], want)
    if name == "saxpy":
        assert grads["a"] == pytest.approx(float(active[0]), rel=1e-12)


class _FakeCuda:
    """Only `__cuda_array_interface__`: byte ranges of device arrays."""

    def __init__(self, ptr, shape, strides=None):
        self.__cuda_array_interface__ = {"data": (ptr, False), "shape": shape,
                                         "typestr": "<f4", "strides": strides, "version": 3}


def test_device_layouts_and_overlap():
    from diffgpu.hostdiff import buffers as M

    a = _FakeCuda(4096, (8,))
    assert M.layout(a) == (4096, (8,), (4,), "<f4")
    assert M.byte_range(a) == (4096, 4128)
    assert M.overlap(a, _FakeCuda(4124, (2,)))             # shares the last element
    assert not M.overlap(a, _FakeCuda(4128, (2,)))         # right after it
    assert M.byte_range(_FakeCuda(4096, (4,), (-8,))) == (4072, 4100)  # negative stride
    assert M.byte_range(_FakeCuda(4096, (0, 3))) == (4096, 4096)     # empty


def _has_nvptx():
    from diffgpu.driver.compiler import has_nvptx
    return has_nvptx()


@pytest.mark.skipif(not _has_nvptx(), reason="MLIR bindings without NVPTX")
def test_square_vjp_moves_jax_bytes_in_the_ptx():
    """y = x*x: the cot/grad kernel reads x and ybar and writes xbar, with
    or without the launch's no-alias facts (the Enzyme-convention kernel
    also reads xbar, writes y and ybar, and keeps an atomic)."""
    import re

    from diffgpu.driver.launch import get_program
    from diffgpu.runtime.specialize import Facts
    from diffgpu.types import ArrayType

    @dg.kernel
    def sq32(y, x):
        i = dg.global_id(0)
        if i < len(x):
            v = x[i]
            y[i] = v * v

    types = (ArrayType("float32", 1),) * 2

    def count(diff, facts=None):
        ptx = get_program(sq32, types, "sm_90", diff, facts).payload["ptx"]
        return tuple(len(re.findall(p, ptx)) for p in (r"ld\.global", r"st\.global", r"atom\."))

    assert count(("reverse", ("cot", "grad"))) == (2, 1, 0)
    facts = Facts(noalias=True, contiguous=(True,) * 4, unit_dims=(1, 2))
    assert count(("reverse", ("cot", "grad")), facts) == (2, 1, 0)
    loads, stores, atomics = count(("reverse", ("dup", "dup")))
    assert loads >= 3 and stores >= 2 and atomics >= 1


def test_strided_views():
    big, gbig = f32(120), f32(120)
    x, g, y = big[::3], gbig[1::3], np.zeros(40, np.float32)[::-1]
    grads = dg.vjp(square[2, 32], y, x, cotangents={"y": g})
    np.testing.assert_allclose(grads["x"], 2 * x * g, rtol=1e-6)
    tans = dg.jvp(square[2, 32], y, x, tangents={"x": g})
    np.testing.assert_allclose(tans["y"], 2 * x * g, rtol=1e-6)


def _nan_empty(monkeypatch):
    """Uninitialised gradient buffers full of NaN: an element the kernel does
    not write shows."""
    from diffgpu.hostdiff import buffers

    def empty_like(a):
        out = buffers.zeros_like(a)
        out[...] = np.nan
        return out
    monkeypatch.setattr(buffers, "empty_like", empty_like)


def test_diagonal_reads_leave_the_rest_of_the_gradient_zero(monkeypatch):
    _nan_empty(monkeypatch)

    @dg.kernel
    def diag(y, x):
        i = dg.global_id(0)
        if i < len(y):
            y[i] = 3.0 * x[i, i]

    x, y, g = RNG.standard_normal((6, 6)), np.zeros(6), RNG.standard_normal(6)
    xbar = dg.vjp(diag[1, 8], y, x, cotangents={"y": g})["x"]
    np.testing.assert_array_equal(xbar, np.diag(3.0 * g))

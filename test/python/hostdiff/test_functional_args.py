"""dg.vjp / dg.jvp arguments: integers, dg.Const and wrt=, kernels calling
dg.autodiff / dg.fwddiff, misplaced seeds, keyword types, `dg.functional`."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import diffgpu as dg
from diffgpu.errors import ArgumentTypeError, NoDerivativeError
from diffgpu.driver.launch import STATS
from kernels_elementwise import gather, saxpy, square, sumsq  # noqa: E402  (defined once)

RNG = np.random.default_rng(11)


def f32(n):
    return RNG.standard_normal(n).astype(np.float32)


def _diffs(kernel, mode: str) -> list:
    """The activity kinds of the derivative programs `kernel` has run."""
    return [key[2][1] for key in kernel._programs if key[2] and key[2][0] == mode]


def _autodiff_ir(kernel, types, diff) -> str:
    from diffgpu.driver import compiler
    from diffgpu.driver.launch import build_module

    src = build_module(kernel, types, "host", diff=diff)
    return compiler.compile(src.text, "host", "autodiff").text


# -- integers: no silent missing key ------------------------------------------

def test_int_scalar_and_int_array_say_why_they_have_no_gradient():
    x, o, g = f32(40), np.zeros(40, np.float32), f32(40)
    grads = dg.vjp(saxpy[2, 32], o, 2, x, x.copy(), cotangents={"o": g})
    assert set(grads) == {"x", "y"}
    with pytest.raises(NoDerivativeError, match=r"'a', an integer scalar \(int 2\).*pass 2\.0"):
        grads["a"]
    with pytest.raises(KeyError):  # still a KeyError for code that catches one
        grads["a"]
    with pytest.raises(NoDerivativeError, match="'o', an output of saxpy"):
        grads["o"]
    idx = RNG.integers(0, 10, 64).astype(np.int32)
    grads = dg.vjp(gather[2, 32], np.zeros(64, np.float32), f32(10), idx,
                   cotangents={"y": f32(64)})
    with pytest.raises(NoDerivativeError, match="'idx', an int32 array: integer arrays"):
        grads["idx"]
    tans = dg.jvp(square[2, 32], o, x, tangents={"x": g})
    with pytest.raises(NoDerivativeError, match="no tangent for 'x', an input of square"):
        tans["x"]


def test_wrt_naming_an_integer_is_an_error_naming_it():
    x, o, g = f32(8), np.zeros(8, np.float32), f32(8)
    with pytest.raises(dg.LaunchError, match=r"wrt= names 'a', an integer scalar \(int 2\)"):
        dg.vjp(saxpy[1, 32], o, 2, x, x.copy(), cotangents={"o": g}, wrt=["a", "x"])
    idx = np.zeros(8, np.int32)
    with pytest.raises(dg.LaunchError, match="wrt= names 'idx', an int32 array"):
        dg.vjp(gather[1, 32], o, x, idx, cotangents={"y": g}, wrt=["idx"])


# -- dg.Const and wrt= ----------------------------------------------------------

def test_const_scalar_gets_no_gradient_kernel_code():
    x, y, o, g = f32(70), f32(70), np.zeros(70, np.float32), f32(70)
    plain = dg.vjp(saxpy[3, 32], o, 1.5, x, y, cotangents={"o": g})
    held = dg.vjp(saxpy[3, 32], o, dg.Const(1.5), x, y, cotangents={"o": g})
    assert set(held) == {"x", "y"}
    np.testing.assert_array_equal(held["x"], plain["x"])
    np.testing.assert_array_equal(held["y"], plain["y"])
    with pytest.raises(NoDerivativeError, match=r"'a', held constant \(dg.Const\)"):
        held["a"]
    kinds = _diffs(saxpy, "reverse")
    assert ("cot", "active", "grad", "grad") in kinds and ("cot", "const", "grad", "grad") in kinds
    # the derivative kernel of the held call has no gradient code for `a`:
    # no slot add (an atomic), one product fewer (x * obar for abar)
    from diffgpu.types import ArrayType, ScalarType
    a, s = ArrayType("float32", 1), ScalarType("float64")
    types = (a, s, a, a)
    active = _autodiff_ir(saxpy, types, ("reverse", ("cot", "active", "grad", "grad")))
    const = _autodiff_ir(saxpy, types, ("reverse", ("cot", "const", "grad", "grad")))
    assert "diffgpu.active_slots" in active and "diffgpu.active_slots" not in const
    assert "atomic" in active and "atomic" not in const
    assert const.count("arith.mulf") == active.count("arith.mulf") - 1


def test_wrt_holds_the_others_and_selects_the_results():
    x, y, o, g = f32(70), f32(70), np.zeros(70, np.float32), f32(70)
    grads = dg.vjp(saxpy[3, 32], o, 1.5, x, y, cotangents={"o": g}, wrt=["x"])
    assert list(grads) == ["x"]
    np.testing.assert_allclose(grads["x"], 1.5 * g, rtol=1e-6)
    assert ("cot", "const", "grad", "const") in _diffs(saxpy, "reverse")
    with pytest.raises(NoDerivativeError, match=r"'y', held constant \(not named in wrt=\)"):
        grads["y"]
    # an in-out array is still differentiated (its cotangent flows), not returned
    out, gout = np.zeros(1, np.float32), np.array([0.5], np.float32)
    grads = dg.vjp(sumsq[3, 32], out, x, cotangents={"out": gout}, wrt=["x"])
    assert list(grads) == ["x"]
    np.testing.assert_allclose(grads["x"], x, rtol=1e-6)
    with pytest.raises(NoDerivativeError, match="'out', not named in wrt="):
        grads["out"]


def test_const_array_and_jvp():
    x, y, o, g = f32(40), f32(40), np.zeros(40, np.float32), f32(40)
    grads = dg.vjp(saxpy[2, 32], o, 1.5, dg.Const(x), y, cotangents={"o": g})
    assert set(grads) == {"a", "y"}
    assert grads["a"] == pytest.approx(float(np.dot(x.astype(np.float64), g)), rel=1e-5)
    assert ("cot", "active", "const", "grad") in _diffs(saxpy, "reverse")
    # jvp: a held input needs no tangent, and gets none in the kernel
    tans = dg.jvp(saxpy[2, 32], o, dg.Const(1.5), x, dg.Const(y), tangents={"x": g})
    np.testing.assert_allclose(tans["o"], 1.5 * g, rtol=1e-6)
    assert ("dup", "const", "dup", "const") in _diffs(saxpy, "forward")
    tans = dg.jvp(saxpy[2, 32], o, 1.5, x, y, tangents={"a": 1.0}, wrt=["a"])
    np.testing.assert_allclose(tans["o"], x, rtol=1e-6)
    with pytest.raises(dg.LaunchError, match=r"tangents for 'x', held constant \(dg.Const\)"):
        dg.jvp(saxpy[2, 32], o, 1.5, dg.Const(x), y, tangents={"a": 1.0, "x": g, "y": g})
    assert dg.functional.access(saxpy[2, 32], o, dg.Const(1.5), x, y) == {
        "o": "output", "a": "const", "x": "input", "y": "input"}


def test_const_is_part_of_the_replay_key():
    x, y, o, g = f32(40), f32(40), np.zeros(40, np.float32), f32(40)
    first = STATS["vjp_reuse"]
    for _ in range(2):
        assert set(dg.vjp(saxpy[2, 32], o, dg.Const(1.5), x, y, cotangents={"o": g})) == {"x", "y"}
    assert STATS["vjp_reuse"] == first + 1
    assert set(dg.vjp(saxpy[2, 32], o, 1.5, x, y, cotangents={"o": g})) == {"a", "x", "y"}
    assert set(dg.vjp(saxpy[2, 32], o, 1.5, x, y, cotangents={"o": g}, wrt=["y"])) == {"y"}


def test_what_cannot_be_held_constant():
    x, y, g = f32(8), np.zeros(8, np.float32), f32(8)
    with pytest.raises(dg.LaunchError, match="dg.Const for 'y', an output of square"):
        dg.vjp(square[1, 32], dg.Const(y), x, cotangents={"y": g})
    with pytest.raises(dg.LaunchError, match="'x' is held constant .* same array as 'y'"):
        dg.vjp(square[1, 32], x, dg.Const(x), cotangents={"y": g})
    with pytest.raises(dg.LaunchError, match=r"'x'\) is Duplicated\(...\); dg.vjp takes plain"):
        dg.vjp(square[1, 32], y, dg.Duplicated(x, g), cotangents={"y": g})
    with pytest.raises(dg.LaunchError, match="wrt= names 'y', an output of square"):
        dg.vjp(square[1, 32], y, x, cotangents={"y": g}, wrt=["y"])
    with pytest.raises(dg.LaunchError, match="wrt= names 'z', which is not a parameter"):
        dg.vjp(square[1, 32], y, x, cotangents={"y": g}, wrt=["z"])
    with pytest.raises(ArgumentTypeError, match="wrt= takes a list of parameter names"):
        dg.vjp(square[1, 32], y, x, cotangents={"y": g}, wrt="x")


# -- kernels that call dg.autodiff / dg.fwddiff -----------------------------------

@dg.func
def _sq(y, x, i):
    y[i] = x[i] * x[i]


@dg.kernel
def grad_sq(y, dy, x, dx):
    i = dg.global_id(0)
    if i < len(x):
        dg.autodiff(_sq, dg.Duplicated(y, dy), dg.Duplicated(x, dx), i)


@dg.kernel
def tangent_sq(y, ty, x, tx):
    i = dg.global_id(0)
    if i < len(x):
        dg.fwddiff(_sq, dg.Duplicated(y, ty), dg.Duplicated(x, tx), i)


def test_in_kernel_autodiff_keeps_read_only_arrays_inputs():
    n = 40
    x, y, dy, dx = f32(n), np.zeros(n, np.float32), f32(n), f32(n)
    # reverse mode accumulates into dx and consumes dy: both read and written
    assert dg.functional.access(grad_sq[2, 32], y, dy, x, dx) == {
        "y": "output", "dy": "inout", "x": "input", "dx": "inout"}
    yb, dyb, dxb = f32(n), f32(n), f32(n)
    grads = dg.vjp(grad_sq[2, 32], y, dy, x, dx, cotangents={"y": yb, "dy": dyb, "dx": dxb})
    # y = x^2, dx' = dx + 2 x dy, dy' = 0
    np.testing.assert_allclose(grads["x"], 2 * x * yb + 2 * dy * dxb, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(grads["dy"], 2 * x * dxb, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(grads["dx"], dxb, rtol=1e-6)
    # forward mode reads a tangent where the callee reads its primal
    assert dg.functional.access(tangent_sq[2, 32], y, dy, x, dx) == {
        "y": "output", "ty": "output", "x": "input", "tx": "input"}
    tx, ttx = f32(n), f32(n)
    tans = dg.jvp(tangent_sq[2, 32], y, dy, x, dx, tangents={"x": tx, "tx": ttx})
    np.testing.assert_allclose(tans["y"], 2 * x * tx, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(tans["ty"], 2 * tx * dx + 2 * x * ttx, rtol=1e-5, atol=1e-6)


# -- misplaced seeds are named before missing ones ---------------------------------

def test_seed_for_the_wrong_role_is_named_not_the_missing_one():
    x, y, g = f32(8), np.zeros(8, np.float32), f32(8)
    with pytest.raises(dg.LaunchError, match=r"cotangents for 'x', an input of square "
                       r"\(never written\), not an output: .* \(y\)$"):
        dg.vjp(square[1, 32], y, x, cotangents={"x": g})
    with pytest.raises(dg.LaunchError, match=r"tangents for 'y', an output of square "
                       r"\(never read\), not an input: .* \(x\)$"):
        dg.jvp(square[1, 32], y, x, tangents={"y": g})
    with pytest.raises(dg.LaunchError, match="cotangent for 'a', a scalar input"):
        dg.vjp(saxpy[1, 32], y, 2.0, x, x.copy(), cotangents={"a": 1.0})


# -- keyword types ---------------------------------------------------------------

@pytest.mark.parametrize("bad", ["yes", 1, None])
def test_outputs_takes_a_bool(bad):
    x, y, g = f32(8), np.zeros(8, np.float32), f32(8)
    for call in (lambda: dg.vjp(square[1, 32], y, x, cotangents={"y": g}, outputs=bad),
                 lambda: dg.jvp(square[1, 32], y, x, tangents={"x": g}, outputs=bad)):
        with pytest.raises(ArgumentTypeError, match="outputs= takes True or False"):
            call()
    assert np.all(y == 0)
    dg.vjp(square[1, 32], y, x, cotangents={"y": g}, outputs=np.bool_(True))
    np.testing.assert_allclose(y, x * x, rtol=1e-6)


@pytest.mark.parametrize("bad", ["1", True, b"1", [1.0]])
def test_scalar_tangent_must_be_a_number(bad):
    x, o = f32(8), np.zeros(8, np.float32)
    with pytest.raises(ArgumentTypeError, match="tangent of 'a' must be a real number"):
        dg.jvp(saxpy[1, 32], o, 2.0, x, x.copy(), tangents={"a": bad, "x": x, "y": x})
    assert isinstance(ArgumentTypeError("t"), TypeError)
    tans = dg.jvp(saxpy[1, 32], o, 2.0, x, x.copy(), tangents={"a": np.float32(1), "x": x,
                                                                "y": x})
    np.testing.assert_allclose(tans["o"], x + 2.0 * x + x, rtol=1e-6)


# -- dg.functional right after `import diffgpu` -------------------------------------

def test_dg_functional_without_importing_the_submodule():
    code = ("import diffgpu as dg, sys\n"
            "assert 'diffgpu.functional' not in sys.modules\n"
            "print(sorted(dg.functional.__all__))\n"
            "assert callable(dg.functional.access) and callable(dg.vjp)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ))
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["['access',", "'jvp',", "'vjp']"]

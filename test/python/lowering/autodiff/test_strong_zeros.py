"""Strong zeros: an adjoint (or tangent) that is exactly zero contributes
exactly zero, even through a partial that is infinite or NaN at the point
(rules/partials.py `Singular`).

- The reproducer from NVIDIA Warp's `integrate_particles`: the speed
  `m = sqrt(v . v)` is used only under `if m > v_max`, a branch not taken;
  at v = 0 the partial 0.5 / m is infinite, and the zero adjoint of `m`
  times it gave NaN in `dg.vjp` and `dg.autodiff` (not in `dg.jvp`). The
  gradient is the identity (vjp, autodiff, jvp; float32 and float64); with
  `DIFFGPU_STRONG_ZEROS=0` the NaN comes back (the test can fail).
- Each singular op, used only in a branch not taken, at its singular point:
  its gradient is exactly 0, not NaN (and NaN with the switch off).
- The guarded rules agree with finite differences at regular points, with
  the branch taken (float32 and float64).
- The switch is part of the cache key; `set_switch` rejects unknown names.
"""
from __future__ import annotations

import numpy as np
import pytest

import diffgpu as dg
from diffgpu import switches
from diffgpu.runtime.store import cache_key


@dg.kernel
def integrate(v, vmax):
    i = dg.global_id(0)
    if i < len(v) // 3:
        vx = v[3 * i]
        vy = v[3 * i + 1]
        vz = v[3 * i + 2]
        m = dg.sqrt(vx * vx + vy * vy + vz * vz)
        if m > vmax:
            s = vmax / m
            v[3 * i] = vx * s
            v[3 * i + 1] = vy * s
            v[3 * i + 2] = vz * s


@dg.kernel
def integrate_grad(v, dv, vmax):
    dg.autodiff(integrate, dg.Duplicated(v, dv), vmax)


def _fresh(*kernels):
    for k in kernels:
        k._programs.clear()


@pytest.fixture
def strong(monkeypatch):
    """Set the switch for the kernels compiled in the test (fresh programs)."""
    def set_(on):
        monkeypatch.setenv(switches.STRONG_ZEROS, "1" if on else "0")
        _fresh(integrate, integrate_grad, *SINGULAR.values())
    yield set_
    _fresh(integrate, integrate_grad, *SINGULAR.values())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_integrate_particles_at_rest_has_the_identity_gradient(dtype, strong):
    strong(True)
    v = np.zeros(6, dtype)
    cot = np.arange(1, 7).astype(dtype)
    g = dg.vjp(integrate[1, 2], v, 10.0, cotangents={"v": cot})
    np.testing.assert_array_equal(g["v"], cot)
    assert g["vmax"] == 0.0
    t = dg.jvp(integrate[1, 2], v, 10.0, tangents={"v": cot, "vmax": 0.0})
    np.testing.assert_array_equal(t["v"], cot)
    dv = cot.copy()
    integrate_grad[1, 2](v.copy(), dv, 10.0)
    np.testing.assert_array_equal(dv, cot)


def test_without_strong_zeros_the_nan_comes_back(strong):
    strong(False)
    v = np.zeros(3, np.float32)
    g = dg.vjp(integrate[1, 1], v, 10.0, cotangents={"v": np.ones(3, np.float32)})
    assert np.isnan(g["v"]).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_integrate_particles_taken_branch_matches_finite_differences(dtype, strong):
    strong(True)
    rng = np.random.default_rng(1)
    v = rng.uniform(-2, 2, 6).astype(dtype)  # |v| about 2: clamped to 1 below
    acts = [dg.Duplicated(v, np.zeros_like(v)), 1.0]
    eps = 1e-3 if dtype == np.float32 else 1e-6
    tol = 2e-2 if dtype == np.float32 else 1e-6
    assert dg.gradcheck(integrate[1, 2], *acts, eps=eps, atol=tol, rtol=tol)


# -- each singular op, its result used only in a branch not taken -------------
def _unary(name):
    fn = getattr(dg, name)

    @dg.kernel
    def k(out, x, flag):
        i = dg.global_id(0)
        if i < len(x):
            t = fn(x[i])
            if flag > 0.0:
                out[i] = t
    return k


@dg.kernel
def untaken_div(out, x, y, flag):
    i = dg.global_id(0)
    if i < len(x):
        t = x[i] / y[i]
        if flag > 0.0:
            out[i] = t


@dg.kernel
def untaken_pow(out, x, y, flag):
    i = dg.global_id(0)
    if i < len(x):
        t = dg.pow(x[i], y[i])
        if flag > 0.0:
            out[i] = t


@dg.kernel
def untaken_atan2(out, x, y, flag):
    i = dg.global_id(0)
    if i < len(x):
        t = dg.atan2(x[i], y[i])
        if flag > 0.0:
            out[i] = t


UNARY = {"sqrt": 0.0, "rsqrt": 0.0, "cbrt": 0.0, "log": 0.0, "log2": 0.0, "log10": 0.0,
         "log1p": -1.0, "asin": 1.0, "acos": 1.0, "acosh": 1.0, "atanh": 1.0,
         "erfinv": 1.0, "erfcinv": 0.0}
#: name -> (x, y) at the singular point
BINARY = {"div": (1.0, 0.0), "pow": (0.0, 0.5), "atan2": (0.0, 0.0)}
SINGULAR = {**{n: _unary(n) for n in UNARY},
            "div": untaken_div, "pow": untaken_pow, "atan2": untaken_atan2}


def _grads(name, dtype):
    if name in UNARY:
        x = np.full(2, UNARY[name], dtype)
        g = dg.vjp(SINGULAR[name][1, 2], np.zeros(2, dtype), x, 0.0,
                   cotangents={"out": np.ones(2, dtype)})
        return [g["x"]]
    xv, yv = BINARY[name]
    x, y = np.full(2, xv, dtype), np.full(2, yv, dtype)
    g = dg.vjp(SINGULAR[name][1, 2], np.zeros(2, dtype), x, y, 0.0,
               cotangents={"out": np.ones(2, dtype)})
    return [g["x"], g["y"]]


@pytest.mark.parametrize("name", list(SINGULAR))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_singular_op_in_an_untaken_branch_gives_zero(name, dtype, strong):
    strong(True)
    for g in _grads(name, dtype):
        np.testing.assert_array_equal(g, 0.0)


@pytest.mark.parametrize("name", ["sqrt", "log", "div", "atan2"])
def test_singular_op_without_strong_zeros_gives_nan(name, strong):
    strong(False)
    assert any(np.isnan(g).any() for g in _grads(name, np.float32))


#: regular points (inside each domain) for the taken branch
REGULAR = {"sqrt": (0.5, 2.0), "rsqrt": (0.5, 2.0), "cbrt": (0.3, 2.0), "log": (0.5, 2.0),
           "log2": (0.5, 2.0), "log10": (0.5, 2.0), "log1p": (-0.5, 2.0),
           "asin": (-0.8, 0.8), "acos": (-0.8, 0.8), "acosh": (1.2, 3.0),
           "atanh": (-0.8, 0.8), "erfinv": (-0.8, 0.8), "erfcinv": (0.2, 1.8)}


@pytest.mark.parametrize("name", list(SINGULAR))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_guarded_rules_match_finite_differences(name, dtype, strong):
    strong(True)
    rng = np.random.default_rng(abs(hash(name)) % 1000)
    eps = 1e-3 if dtype == np.float32 else 1e-6
    tol = 2e-2 if dtype == np.float32 else 1e-5
    out = np.zeros(4, dtype)
    if name in UNARY:
        lo, hi = REGULAR[name]
        x = rng.uniform(lo, hi, 4).astype(dtype)
        acts = [dg.Duplicated(out, np.zeros_like(out)), dg.Duplicated(x, np.zeros_like(x)), 1.0]
    else:
        x = rng.uniform(0.5, 2.0, 4).astype(dtype)
        y = rng.uniform(0.5, 2.0, 4).astype(dtype)
        acts = [dg.Duplicated(out, np.zeros_like(out)), dg.Duplicated(x, np.zeros_like(x)),
                dg.Duplicated(y, np.zeros_like(y)), 1.0]
    assert dg.gradcheck(SINGULAR[name][1, 4], *acts, eps=eps, atol=tol, rtol=tol)


def test_the_switch_is_part_of_the_cache_key(monkeypatch):
    from diffgpu.types import ArrayType

    types = (ArrayType("float32", 1), ArrayType("float32", 1), ArrayType("float64", 0))
    monkeypatch.setenv(switches.STRONG_ZEROS, "0")
    off = cache_key.cache_key(integrate_grad, types, "host")
    monkeypatch.delenv(switches.STRONG_ZEROS)
    on = cache_key.cache_key(integrate_grad, types, "host")
    assert on != off


def test_set_switch(monkeypatch):
    monkeypatch.setenv(switches.STRONG_ZEROS, "1")
    switches.set_switch(switches.STRONG_ZEROS, False)
    assert not switches.on(switches.STRONG_ZEROS)
    switches.set_switch(switches.STRONG_ZEROS, True)
    assert switches.on(switches.STRONG_ZEROS)
    with pytest.raises(switches.SwitchError, match="unknown switch 'DIFFGPU_NOPE'"):
        switches.set_switch("DIFFGPU_NOPE", True)
    assert isinstance(switches.SwitchError("x"), dg.DiffgpuError)

"""`dg.vjp` / `dg.jvp` replay the plan of an earlier call with the same key
(python/diffgpu/hostdiff/replay.py): same results, fresh result arrays every call,
a new plan when anything in the key changes, errors exactly as planned."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import diffgpu as dg
from diffgpu.driver.launch import STATS

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "bench"))
import launch_overhead as LO  # noqa: E402  (the CuPy stand-in)
import vjp_overhead as VO  # noqa: E402  (its allocations)
from kernels_elementwise import saxpy, square  # noqa: E402,F401  (defined once)

RNG = np.random.default_rng(7)


@dg.kernel
def rows(y, x):
    i = dg.global_id(0)
    j = dg.global_id(1)
    if i < x.shape[0]:
        if j < x.shape[1]:
            y[i, j] = x[i, j] * x[i, j] + float(j)


@dg.kernel
def inplace(a):
    i = dg.global_id(0)
    if i < len(a):
        a[i] = a[i] * a[i]


def f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def counts():
    return STATS["vjp_reuse"], STATS["vjp_plan"]


def since(before):
    now = counts()
    return now[0] - before[0], now[1] - before[1]


def test_repeated_vjp_reuses_the_plan_with_fresh_results():
    y, x, ybar = np.zeros(64, np.float32), f32(64), f32(64)
    before = counts()
    results = [dg.vjp(square[1, 64], y, x, cotangents={"y": ybar}) for _ in range(4)]
    assert since(before) == (3, 1)
    want = 2 * x * ybar
    for r in results:
        np.testing.assert_allclose(r["x"], want, rtol=1e-6)
    assert len({id(r["x"]) for r in results}) == 4
    assert not any(np.shares_memory(a["x"], b["x"])
                   for k, a in enumerate(results) for b in results[k + 1:])
    assert y.tolist() == [0.0] * 64  # outputs untouched, replay or not


def test_first_result_survives_the_next_call():
    x, ybar = f32(32), f32(32)
    y = np.zeros(32, np.float32)
    first = dg.vjp(square[1, 32], y, x, cotangents={"y": ybar})["x"]
    kept = first.copy()
    x2 = x  # the same key: the plan is replayed, with other cotangent values
    ybar[:] = 1.0
    second = dg.vjp(square[1, 32], y, x2, cotangents={"y": ybar})["x"]
    np.testing.assert_array_equal(first, kept)
    np.testing.assert_allclose(second, 2 * x, rtol=1e-6)


def test_active_scalar_and_jvp_replayed():
    o, x, y, obar = np.zeros(48, np.float32), f32(48), f32(48), f32(48)
    before = counts()
    gs = [dg.vjp(saxpy[1, 64], o, 2.0, x, y, cotangents={"o": obar}) for _ in range(3)]
    for g in gs:
        assert isinstance(g["a"], float)
        assert g["a"] == pytest.approx(float(np.dot(x.astype(np.float64), obar)), rel=1e-5)
        np.testing.assert_allclose(g["x"], 2.0 * obar, rtol=1e-6)
        np.testing.assert_array_equal(g["y"], obar)
    xdot, ydot = f32(48), f32(48)
    ts = [dg.jvp(saxpy[1, 64], o, 2.0, x, y, tangents={"a": 0.5, "x": xdot, "y": ydot})
          for _ in range(3)]
    for t in ts:
        np.testing.assert_allclose(t["o"], 2.0 * xdot + 0.5 * x + ydot, rtol=1e-5, atol=1e-6)
    assert ts[0]["o"] is not ts[1]["o"]
    assert since(before) == (4, 2)


def test_outputs_grid_and_cotangent_layout_plan_again():
    y, x, ybar = np.zeros(64, np.float32), f32(64), f32(64)
    dg.vjp(square[1, 64], y, x, cotangents={"y": ybar})
    before = counts()
    g = dg.vjp(square[1, 64], y, x, cotangents={"y": ybar}, outputs=True)
    np.testing.assert_allclose(y, x * x, rtol=1e-6)  # outputs=True: another plan
    assert since(before) == (0, 1)
    before = counts()
    g2 = dg.vjp(square[2, 32], y, x, cotangents={"y": ybar})  # another grid
    assert since(before) == (0, 1)
    np.testing.assert_allclose(g2["x"], g["x"], rtol=1e-6)
    before = counts()
    other = np.empty(128, np.float32)[::2]  # another cotangent layout: strided
    other[:] = ybar
    g3 = dg.vjp(square[1, 64], y, x, cotangents={"y": other})
    assert since(before) == (0, 1)
    np.testing.assert_allclose(g3["x"], g["x"], rtol=1e-6)
    before = counts()
    dg.vjp(square[1, 64], y, x, cotangents={"y": other})
    assert since(before) == (1, 0)


def test_reshape_in_place_plans_again():
    x, ybar = f32(4, 6), f32(4, 6)
    y = np.zeros((4, 6), np.float32)
    for _ in range(2):
        g = dg.vjp(rows[(4, 8), 1], y, x, cotangents={"y": ybar})
    np.testing.assert_allclose(g["x"], 2 * x * ybar, rtol=1e-6)
    before = counts()
    x.shape, y.shape, ybar.shape = (6, 4), (6, 4), (6, 4)
    g = dg.vjp(rows[(8, 8), 1], y, x, cotangents={"y": ybar})
    assert since(before) == (0, 1)
    np.testing.assert_allclose(g["x"], 2 * x * ybar, rtol=1e-6)


def test_in_place_kernel_and_same_array_twice_replayed():
    a, abar = f32(32), f32(32)
    for _ in range(3):
        g = dg.vjp(inplace[1, 32], a, cotangents={"a": abar})
        np.testing.assert_allclose(g["a"], 2 * a * abar, rtol=1e-6)
    b = f32(32)
    for _ in range(3):  # square(b, b): in place, one variable
        g = dg.vjp(square[1, 32], b, b, cotangents={"x": abar})
        np.testing.assert_allclose(g["y"], 2 * b * abar, rtol=1e-6)
        assert g["x"] is g["y"]


def test_errors_after_a_kept_plan_are_those_of_planning():
    y, x, ybar = np.zeros(16, np.float32), f32(16), f32(16)
    for _ in range(2):
        dg.vjp(square[1, 16], y, x, cotangents={"y": ybar})
    with pytest.raises(dg.LaunchError, match="has shape"):
        dg.vjp(square[1, 16], y, x, cotangents={"y": f32(8)})
    with pytest.raises(dg.LaunchError, match="not a parameter"):
        dg.vjp(square[1, 16], y, x, cotangents={"y": ybar, "z": ybar})
    with pytest.raises(dg.LaunchError, match="overlap"):
        dg.vjp(square[1, 16], x[:8], x[4:12], cotangents={"y": ybar[:8]})
    y.flags.writeable = False  # the key changes: the full checks run again
    with pytest.raises(dg.LaunchError):
        dg.vjp(square[1, 16], y, x, cotangents={"y": ybar}, outputs=True)


# ---------------------------------------------------------------------------
# device arrays (the CuPy stand-in): the kept packed arguments get the fresh
# buffers' pointers
# ---------------------------------------------------------------------------

@pytest.fixture
def standin(monkeypatch):
    from diffgpu.runtime import gpu
    VO.install_standin()
    monkeypatch.setattr(gpu, "_chips", {0: "sm_90", 1: "sm_90"})
    launched = []

    class Function:
        def __call__(self, grid, block, args):
            launched.append(tuple(int(v) for v in args))

    class RawModule:
        def __init__(self, path=None, code=None):
            pass

        def get_function(self, name):
            return Function()

    sys.modules["cupy"].RawModule = RawModule
    yield launched
    sys.modules.pop("cupy", None)


@dg.kernel
def dev_square(y, x):  # its own kernel: the stand-in's functions stay with its programs
    i = dg.global_id(0)
    if i < len(x):
        y[i] = x[i] * x[i]


def test_device_replay_packs_the_fresh_pointers(standin):
    launched = standin
    y, x, ybar = (LO.StandinArray(f32(256)) for _ in range(3))
    dg.vjp(dev_square[1, 256], y, ybar, cotangents={"y": x})  # the device type joins keys
    dev_square.__dict__.pop("_moved", None)  # (its plan for these layouts: the next call plans)
    del launched[:]
    before = counts()
    grads = [dg.vjp(dev_square[1, 256], y, x, cotangents={"y": ybar})["x"] for _ in range(4)]
    assert since(before) == (3, 1)
    assert len(launched) == 4
    assert len({g.data.ptr for g in grads}) == 4  # fresh every call
    for g, args in zip(grads, launched):
        assert g.data.ptr in args  # the gradient the kernel wrote is the one returned
        assert x.data.ptr in args and ybar.data.ptr in args
    # calls 3 and 4 (kept values, pointers replaced) differ only in the gradient
    diff = [k for k in range(len(launched[2])) if launched[2][k] != launched[3][k]]
    assert diff
    assert {launched[2][k] for k in diff} == {grads[2].data.ptr}
    assert {launched[3][k] for k in diff} == {grads[3].data.ptr}
    for c in (0, 1):  # planned, then packed from the arrays: the same values
        assert launched[c] == tuple(grads[c].data.ptr if k in diff else v
                                    for k, v in enumerate(launched[2]))


@dg.kernel
def dev_saxpy(o, a, x, y):
    i = dg.global_id(0)
    if i < len(x):
        o[i] = a * x[i] + y[i]


def test_device_replay_gives_each_call_its_own_slots(standin):
    """An Active scalar's slot array is new (zeroed) every call and is the
    one packed into that call's launch; its gradient a 0-d device array."""
    launched = standin
    o, x, y, obar = (LO.StandinArray(f32(256)) for _ in range(4))
    dg.vjp(dev_saxpy[1, 256], o, 2.0, obar, y, cotangents={"o": x})  # the type joins keys
    dev_saxpy.__dict__.pop("_moved", None)  # (its plan for these layouts: the next call plans)
    made = []
    cp = sys.modules["cupy"]
    zeros = cp.zeros
    cp.zeros = lambda *a, **k: made.append(zeros(*a, **k)) or made[-1]
    del launched[:]
    before = counts()
    gs = [dg.vjp(dev_saxpy[1, 256], o, 2.0, x, y, cotangents={"o": obar}) for _ in range(4)]
    assert since(before) == (3, 1)
    slots = [s for s in made if s.shape == (256,)]
    assert len(slots) == 4 and len({s.data.ptr for s in slots}) == 4
    for g, s, args in zip(gs, slots, launched):
        assert s.data.ptr in args and g["x"].data.ptr in args and g["y"].data.ptr in args
        assert isinstance(g["a"], LO.StandinArray) and g["a"].shape == ()
        assert g["a"].dtype == np.float64  # a Python float: a float64 scalar


def test_device_replay_on_another_gpu_selects_it(standin):
    """Arrays on GPU 1 while GPU 0 is current: every call (planned or
    replayed) allocates and launches inside GPU 1's scope."""
    entered = []

    class Dev(LO._Dev):
        def __init__(self, i=0):
            self.i = i

        def __enter__(self):
            entered.append(self.i)
            return self

    sys.modules["cupy"].cuda.Device = Dev

    def on1(h):
        a = LO.StandinArray(h)
        a.device = LO._Dev()
        a.device.id = 1
        return a
    y, x, ybar = (on1(f32(256)) for _ in range(3))
    dg.vjp(dev_square[1, 256], y, ybar, cotangents={"y": x})  # the type joins keys
    dev_square.__dict__.pop("_moved", None)  # (its plan for these layouts: the next call plans)
    before = counts()
    for _ in range(3):
        del entered[:]
        g = dg.vjp(dev_square[1, 256], y, x, cotangents={"y": ybar})
        assert entered and set(entered) == {1}
    assert since(before) == (2, 1)
    assert g["x"].data.ptr in standin[-1]


def test_scalar_tangent_in_a_mutable_array_is_read_every_call():
    """A scalar tangent passed as a 0-d numpy array is read by value: such a
    call is never replayed (the key holds only the array's address)."""
    o, x, y = np.zeros(16, np.float32), f32(16), f32(16)
    xdot, ydot = np.zeros(16, np.float32), np.zeros(16, np.float32)
    adot = np.array(1.0)
    for v in (1.0, 3.0):
        adot[()] = v
        t = dg.jvp(saxpy[1, 16], o, 2.0, x, y, tangents={"a": adot, "x": xdot, "y": ydot})
        np.testing.assert_allclose(t["o"], v * x, rtol=1e-6)
    before = counts()
    for v in (1.0, 3.0):  # immutable scalars: in the key by value
        t = dg.jvp(saxpy[1, 16], o, 2.0, x, y, tangents={"a": v, "x": xdot, "y": ydot})
        np.testing.assert_allclose(t["o"], v * x, rtol=1e-6)
    assert since(before) == (0, 2)
    t = dg.jvp(saxpy[1, 16], o, 2.0, x, y, tangents={"a": 1.0, "x": xdot, "y": ydot})
    assert since(before) == (1, 2)

"""Host-level `dg.autodiff` / `dg.fwddiff` replay the recipe of an earlier
call with the same key (python/diffgpu/hostdiff/diff.py `_call_key`, replay.py):
the same semantics every call (accumulating shadows accumulate again,
consumed adjoints are consumed again), fresh Active slots per call, the
full checks again when anything in the key changes, errors as before."""
from __future__ import annotations

import sys

import numpy as np
import pytest

import diffgpu as dg
from diffgpu.driver.launch import STATS
from racecheck_kernels import checked, halve
# the CuPy stand-in fixture and the kernels, defined once
from test_vjp_fastpath import LO, rows, saxpy, square, standin  # noqa: F401

RNG = np.random.default_rng(11)
D, DN, A = dg.Duplicated, dg.DuplicatedNoNeed, dg.Active


def f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def counts():
    return STATS["autodiff_reuse"], STATS["autodiff_plan"]


def since(before):
    now = counts()
    return now[0] - before[0], now[1] - before[1]


def test_repeated_autodiff_replays_and_accumulates_each_call():
    x, y, dx = f32(64), np.zeros(64, np.float32), np.zeros(64, np.float32)
    ybar, dy = f32(64), np.zeros(64, np.float32)
    before = counts()
    for k in range(1, 5):
        dy[:] = ybar  # in place: the key stays the same
        assert dg.autodiff(square[1, 64], D(y, dy), D(x, dx)) == ()
        np.testing.assert_allclose(dx, k * 2 * x * ybar, rtol=1e-5)  # accumulates again
        assert dy.tolist() == [0.0] * 64  # the adjoint of y consumed again
        np.testing.assert_allclose(y, x * x, rtol=1e-6)  # the primal written
    assert since(before) == (3, 1)


def test_active_scalar_replayed_with_fresh_slots():
    o, x, y = np.zeros(48, np.float32), f32(48), f32(48)
    obar, dx, dy = f32(48), np.zeros(48, np.float32), np.zeros(48, np.float32)
    do = np.empty(48, np.float32)
    before = counts()
    gs = []
    for k in range(1, 4):
        do[:] = obar
        gs.append(dg.autodiff(saxpy[1, 64], D(o, do), A(np.float32(2.0)), D(x, dx), D(y, dy)))
        np.testing.assert_allclose(dx, k * 2.0 * obar, rtol=1e-5)
        np.testing.assert_allclose(dy, k * obar, rtol=1e-5)
    assert since(before) == (2, 1)
    want = np.float32(np.dot(x.astype(np.float64), obar))
    for g in gs:  # each call sums its own zeroed slots: nothing carried over
        assert len(g) == 1 and type(g[0]) is np.float32
        assert g[0] == gs[0][0] and g[0] == pytest.approx(want, rel=1e-5)
    before = counts()
    dg.autodiff(saxpy[1, 64], D(o, do), A(np.float32(3.0)), D(x, dx), D(y, dy))
    assert since(before) == (0, 1)  # a scalar's value is in the key


def test_fwddiff_replayed_and_scalar_tangent_by_value():
    o, x, y = np.zeros(32, np.float32), f32(32), f32(32)
    do, xd, yd = np.zeros(32, np.float32), f32(32), f32(32)
    before = counts()
    for _ in range(3):
        assert dg.fwddiff(saxpy[1, 32], D(o, do), D(2.0, 0.5), D(x, xd), D(y, yd)) is None
        np.testing.assert_allclose(do, 2.0 * xd + 0.5 * x + yd, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(o, 2.0 * x + y, rtol=1e-6)
    assert since(before) == (2, 1)
    dg.fwddiff(saxpy[1, 32], D(o, do), D(2.0, 0.0), D(x, xd), D(y, yd))
    np.testing.assert_allclose(do, 2.0 * xd + yd, rtol=1e-5, atol=1e-6)
    dg.fwddiff(saxpy[1, 32], D(o, do), D(2.0, -0.0), D(x, xd), D(y, yd))
    assert since(before) == (2, 3)  # 0.0 then -0.0: two keys


def test_kind_grid_and_mode_plan_again():
    x, y, dx, dy = f32(64), np.zeros(64, np.float32), np.zeros(64, np.float32), f32(64)
    dg.autodiff(square[1, 64], D(y, dy), D(x, dx))
    before = counts()
    dg.autodiff(square[1, 64], DN(y, dy), D(x, dx))  # another kind
    dg.autodiff(square[1, 64], D(y, dy), dg.Const(x))
    dg.autodiff(square[2, 32], D(y, dy), D(x, dx))  # another grid
    dg.fwddiff(square[1, 64], D(y, dy), D(x, dx))  # another mode
    assert since(before) == (0, 4)
    before = counts()
    dg.autodiff(square[1, 64], D(y, dy), x)  # a plain value is Const: the same key
    assert since(before) == (1, 0)


def test_reshape_and_writeable_flip_check_again():
    x, dx, dy = f32(4, 6), np.zeros((4, 6), np.float32), np.ones((4, 6), np.float32)
    y = np.zeros((4, 6), np.float32)
    for _ in range(2):
        dg.autodiff(rows[(8, 8), 1], D(y, dy), D(x, dx))
    before = counts()
    x.shape, y.shape, dx.shape, dy.shape = (6, 4), (6, 4), (6, 4), (6, 4)
    dx[:], dy[:] = 0.0, 1.0
    dg.autodiff(rows[(8, 8), 1], D(y, dy), D(x, dx))
    assert since(before) == (0, 1)
    np.testing.assert_allclose(dx, 2 * x, rtol=1e-6)  # the new layout's gradient
    np.testing.assert_allclose(y, x * x + np.arange(4, dtype=np.float32), rtol=1e-6)
    before = counts()
    y.flags.writeable = False  # the key changes: the full checks refuse it
    with pytest.raises(dg.LaunchError, match="read-only"):
        dg.autodiff(rows[(8, 8), 1], D(y, dy), D(x, dx))
    y.flags.writeable = True
    dg.autodiff(rows[(8, 8), 1], D(y, dy), D(x, dx))
    assert since(before) == (1, 0)  # flipped back: the kept recipe again


def test_errors_after_a_kept_recipe_are_those_of_the_checks():
    x, y, dx, dy = f32(16), np.zeros(16, np.float32), np.zeros(16, np.float32), f32(16)
    for _ in range(2):
        dg.autodiff(square[1, 16], D(y, dy), D(x, dx))
    with pytest.raises(dg.LaunchError, match="has shape"):
        dg.autodiff(square[1, 16], D(y, dy), D(x, f32(8)))
    with pytest.raises(dg.LaunchError, match="shares memory"):
        dg.autodiff(square[1, 16], D(y, y), D(x, dx))
    with pytest.raises(dg.LaunchError, match="takes 2 arguments"):
        dg.autodiff(square[1, 16], D(y, dy))
    with pytest.raises(dg.LaunchError, match="nested activity"):
        dg.autodiff(square[1, 16], D(y, dy), D(D(x, dx), dx))
    with pytest.raises(dg.LaunchError, match="Active is reverse mode only"):
        dg.fwddiff(saxpy[1, 16], D(y, dy), A(2.0), D(x, dx), D(x, dx))


def test_race_check_switch_is_in_the_key():
    x, y, dx = np.ones(8), np.zeros(4), np.zeros(8)
    for _ in range(2):  # unchecked: the race goes unnoticed
        dg.autodiff(halve[2, 4], D(x, dx), D(y, np.ones(4)))
    dy = np.ones(4)
    for _ in range(3):  # checked: its own recipe, replayed, the race reported each time
        err = checked(lambda: dg.autodiff(halve[2, 4], D(x, dx), D(y, dy)))
        assert err is not None and "reverse-mode derivative" in str(err)


# ---------------------------------------------------------------------------
# device arrays (the CuPy stand-in of test_vjp_fastpath.py)
# ---------------------------------------------------------------------------

@dg.kernel
def dev_saxpy(o, a, x, y):  # its own kernel: the stand-in's functions stay with its programs
    i = dg.global_id(0)
    if i < len(x):
        o[i] = a * x[i] + y[i]


def test_device_replay_packs_fresh_slots_and_the_callers_shadows(standin):
    launched = standin
    o, x, y, do, dx, dy = (LO.StandinArray(f32(256)) for _ in range(6))
    dg.autodiff(dev_saxpy[1, 256], D(do, o), A(2.0), D(x, dx), D(y, dy))  # the type joins keys
    dev_saxpy.__dict__.pop("_moved", None)  # (its recipe for these layouts: the next plans)
    del launched[:]
    made = []
    cp = sys.modules["cupy"]
    zeros = cp.zeros
    cp.zeros = lambda *a, **k: made.append(zeros(*a, **k)) or made[-1]
    before = counts()
    gs = [dg.autodiff(dev_saxpy[1, 256], D(o, do), A(2.0), D(x, dx), D(y, dy))
          for _ in range(4)]
    assert since(before) == (3, 1)
    slots = [s for s in made if s.shape == (256,)]
    assert len(slots) == 4 and len({s.data.ptr for s in slots}) == 4  # fresh every call
    mine = {a.data.ptr for a in (o, x, y, do, dx, dy)}
    for g, s, args in zip(gs, slots, launched):
        assert s.data.ptr in args and mine <= set(args)
        assert len(g) == 1 and isinstance(g[0], LO.StandinArray) and g[0].shape == ()
        assert g[0].dtype == np.float64  # a Python float: a float64 scalar
    # calls 3 and 4 (kept values, the slots' pointers put in) differ only there
    diff = [k for k in range(len(launched[2])) if launched[2][k] != launched[3][k]]
    assert diff and {launched[3][k] for k in diff} == {slots[3].data.ptr}
    assert launched[1] == tuple(slots[1].data.ptr if k in diff else v
                                for k, v in enumerate(launched[2]))


def test_device_fwddiff_replayed(standin):
    launched = standin
    o, x, y, do, xd, yd = (LO.StandinArray(f32(256)) for _ in range(6))
    dg.fwddiff(dev_saxpy[1, 256], D(do, o), D(2.0, 1.0), D(x, xd), D(y, yd))  # joins keys
    dev_saxpy.__dict__.pop("_moved", None)  # (its recipe for these layouts: the next plans)
    del launched[:]
    before = counts()
    for _ in range(4):
        dg.fwddiff(dev_saxpy[1, 256], D(o, do), D(2.0, 1.0), D(x, xd), D(y, yd))
    assert since(before) == (3, 1)
    assert len(launched) == 4 and len(set(launched)) == 1  # nothing fresh: the same values
    before = counts()
    moved = STATS["autodiff_moved"]
    dg.fwddiff(dev_saxpy[2, 128], D(o, do), D(2.0, 1.0), D(x, xd), D(y, yd))  # another grid
    dg.fwddiff(dev_saxpy[1, 256], D(o, do), D(2.0, 1.0), dg.Const(x), D(y, yd))  # kind
    assert since(before) == (0, 2)
    # other pointers, the same layouts and aliasing: the recipe found by layout
    dg.fwddiff(dev_saxpy[1, 256], D(o, do), D(2.0, 1.0), D(x, yd), D(y, xd))
    assert since(before) == (0, 2) and STATS["autodiff_moved"] == moved + 1
    assert launched[-1] != launched[0]
    assert {x.data.ptr, yd.data.ptr, y.data.ptr, xd.data.ptr} <= set(launched[-1])
    dg.fwddiff(dev_saxpy[1, 256], D(o, do), D(2.0, 1.0), D(x, xd), D(y, yd))
    assert since(before) == (1, 2) and launched[-1] == launched[0]

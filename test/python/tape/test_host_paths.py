"""The host paths of the tape's reverse steps and of chained `dg.vjp` calls
on new arrays: a plan kept per layout (no pointers in its key), replayed
with every pointer put in (hostdiff/replay.py `Recipe.run_moved`), and
what makes it plan again: shapes, dtypes, aliasing, geometry, scalars, a
pointer breaking an alignment fact the kept program assumes."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import diffgpu as dg
from diffgpu.runtime import fastpath
from diffgpu.runtime.fastpath import STATS

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "bench"))
import tape_programs as P  # noqa: E402

RNG = np.random.default_rng(11)


@dg.kernel
def mul(y, x, w):
    i = dg.global_id(0)
    if i < len(x):
        y[i] = x[i] * w[i]


@dg.kernel
def push(x, v, f, dt):
    i = dg.global_id(0)
    if i < len(x):
        v[i] = v[i] + dt * f[i]
        x[i] = x[i] + dt * v[i]


def f32(n, dtype=np.float32):
    return RNG.standard_normal(n).astype(dtype)


def counts():
    return STATS["vjp_plan"], STATS["vjp_moved"], STATS["vjp_reuse"]


def since(before):
    return tuple(b - a for a, b in zip(before, counts()))


def test_moved_key_classes_and_overlaps():
    a = np.zeros(64, np.float32)
    b = np.zeros(64, np.float32)

    def mk(*vals):
        return fastpath.moved_key([(vals, fastpath.launch_key(vals, (1, 1, 1), (64, 1, 1)))])
    k1, k2 = mk(a, b, a), mk(b, a, b)
    assert k1 == k2  # the same aliasing elsewhere
    assert mk(a, b, b) != k1  # other aliasing
    assert mk(a, a, a) != k1
    assert mk(a[:32], a[32:]) is not None  # views sharing no byte
    assert mk(a[:33], a[32:]) is None  # a byte shared: no key
    assert mk(a[::2], a[1::2]) is None  # interleaved: ranges overlap, no key
    assert mk(a[:0], a[:0].copy()) is not None  # empty arrays cover no byte
    assert mk(a, 2.0) != mk(a, 3.0)  # scalars by value
    assert mk(a, np.zeros(64, np.float64)) != mk(a, b)  # dtype
    assert mk(a.reshape(8, 8), b) != mk(a, b)  # shape
    # classes span the pairs: a seed that is an argument's array
    args, seeds = (a, b), (b,)
    got = fastpath.moved_key([(args, fastpath.launch_key(args, (1, 1, 1), (64, 1, 1))),
                              (seeds, fastpath.launch_key(seeds, (), ()))])
    other = (np.zeros(64, np.float32),)
    fresh = fastpath.moved_key([(args, fastpath.launch_key(args, (1, 1, 1), (64, 1, 1))),
                                (other, fastpath.launch_key(other, (), ()))])
    assert got != fresh


def test_vjp_on_new_arrays_replays_the_layout_plan():
    x, w, ybar = f32(64), f32(64), f32(64)
    y = np.zeros(64, np.float32)
    before = counts()
    first = dg.vjp(mul[2, 32], y, x, w, cotangents={"y": ybar})
    assert since(before) == (1, 0, 0)
    outs = []
    for _ in range(3):  # new memory each call, the same layouts
        x2, w2, b2 = x.copy(), w.copy(), ybar.copy()
        outs.append((dg.vjp(mul[2, 32], np.zeros(64, np.float32), x2, w2,
                            cotangents={"y": b2}), x2, w2))
    assert since(before) == (1, 3, 0)
    for r, x2, w2 in outs:
        np.testing.assert_array_equal(r["x"], first["x"])
        np.testing.assert_array_equal(r["w"], first["w"])
        assert not np.shares_memory(r["x"], first["x"]) and not np.shares_memory(r["x"], x2)
    np.testing.assert_allclose(first["x"], w * ybar, rtol=1e-6)


def test_vjp_alternating_array_sets_each_get_their_own_pointers():
    """Two sets of arrays, each passed again and again: every call computes
    on its own arrays (a plan found by layout keeps no pointers of a call)."""
    sets = [(np.zeros(64, np.float32), f32(64), f32(64), f32(64)) for _ in range(2)]
    for _ in range(3):
        for y, x, w, b in sets:
            r = dg.vjp(mul[2, 32], y, x, w, cotangents={"y": b})
            np.testing.assert_allclose(r["x"], w * b, rtol=1e-6)
            np.testing.assert_allclose(r["w"], x * b, rtol=1e-6)
            gx, gw = np.zeros(64, np.float32), np.zeros(64, np.float32)
            a = dg.autodiff(mul[2, 32], dg.Duplicated(y, b.copy()), dg.Duplicated(x, gx),
                            dg.Duplicated(w, gw))
            assert a == ()
            np.testing.assert_allclose(gx, w * b, rtol=1e-6)
            np.testing.assert_allclose(gw, x * b, rtol=1e-6)


def test_new_layout_dtype_geometry_or_aliasing_plans_again():
    x, w, ybar = f32(64), f32(64), f32(64)
    dg.vjp(mul[2, 32], np.zeros(64, np.float32), x, w, cotangents={"y": ybar})
    before = counts()
    dg.vjp(mul[1, 64], np.zeros(64, np.float32), x.copy(), w.copy(),
           cotangents={"y": ybar.copy()})  # geometry
    assert since(before) == (1, 0, 0)
    before = counts()
    dg.vjp(mul[2, 32], np.zeros(48, np.float32), f32(48), f32(48),
           cotangents={"y": f32(48)})  # shapes
    assert since(before) == (1, 0, 0)
    before = counts()
    d = dg.vjp(mul[2, 32], np.zeros(64), x.astype(np.float64), w.astype(np.float64),
               cotangents={"y": ybar.astype(np.float64)})  # dtypes
    assert since(before) == (1, 0, 0)
    np.testing.assert_allclose(d["x"], w * ybar, rtol=1e-6)
    before = counts()
    s = x.copy()  # x and w the same array: one alias group
    g = dg.vjp(mul[2, 32], np.zeros(64, np.float32), s, s, cotangents={"y": ybar.copy()})
    assert since(before) == (1, 0, 0)
    np.testing.assert_allclose(g["x"], 2 * x * ybar, rtol=1e-5)
    before = counts()
    s2 = w.copy()  # the same aliasing, new memory: moved
    g2 = dg.vjp(mul[2, 32], np.zeros(64, np.float32), s2, s2, cotangents={"y": ybar.copy()})
    assert since(before) == (0, 1, 0)
    np.testing.assert_allclose(g2["x"], 2 * w * ybar, rtol=1e-5)
    before = counts()
    a = f32(130)  # overlapping views: no pointer-free key, checked every call
    for _ in range(2):
        a = a.copy()
        with pytest.raises(dg.LaunchError, match="overlap"):
            dg.vjp(mul[2, 32], np.zeros(64, np.float32), a[:64], a[1:65],
                   cotangents={"y": ybar})
    assert since(before) == (0, 0, 0)


def test_jvp_on_new_arrays_replays_the_layout_plan():
    x, w = f32(64), f32(64)
    xd, wd = f32(64), f32(64)
    first = dg.jvp(mul[2, 32], np.zeros(64, np.float32), x, w, tangents={"x": xd, "w": wd})
    before = counts()
    again = dg.jvp(mul[2, 32], np.zeros(64, np.float32), x.copy(), w.copy(),
                   tangents={"x": xd.copy(), "w": wd.copy()})
    assert since(before) == (0, 1, 0)
    np.testing.assert_array_equal(again["y"], first["y"])
    np.testing.assert_allclose(first["y"], xd * w + x * wd, rtol=1e-5, atol=1e-6)


def _push_program(x, v, f, dts, loss):
    for dt in dts:
        push[2, 32](x, v, f, dt)
    P.sq_loss[2, 32](x, loss)


def _by_hand(x0, v0, f, dts):
    """dL/dx0, dL/dv0, dL/df of the push program, one dg.vjp per step."""
    x, v, states = x0.copy(), v0.copy(), []
    for dt in dts:
        states.append((x.copy(), v.copy()))
        push[2, 32](x, v, f, dt)
    gx, gv, gf = 2 * x, np.zeros_like(x), np.zeros_like(x)
    for (xs, vs), dt in reversed(list(zip(states, dts))):
        r = dg.vjp(push[2, 32], xs, vs, f, dg.Const(dt), cotangents={"x": gx, "v": gv})
        gx, gv, gf = r["x"], r["v"], gf + r["f"]
    return gx, gv, gf


def test_tape_reverse_plans_once_per_layout_and_repacks_new_scalars():
    """One plan per recorded layout; the reverse replays it with the step's
    pointers, packed again only when a scalar differs from the last step's."""
    for k in (push, P.sq_loss):
        k.__dict__.pop("_tape_plans", None)
    x0, v0, f = f32(64), f32(64), f32(64)
    # packs: push's steps after its planned one (one dt: packed once; six:
    # every step), and in the second tape sq_loss's replayed step
    for dts, packs in (([np.float32(0.01)] * 6, 1),
                       ([np.float32(0.01 * (1 + t)) for t in range(6)], 6 + 1)):
        x, v, loss = x0.copy(), v0.copy(), np.zeros(1, np.float32)
        with dg.Tape() as tape:
            _push_program(x, v, f, dts, loss)
        before = STATS["moved_pack"]
        gx, gv, gf = tape.gradient(loss, wrt=[x, v, f])
        assert len(push.__dict__["_tape_plans"]) == 1
        assert STATS["moved_pack"] - before == packs
        want = _by_hand(x0, v0, f, dts)
        for g, r in zip((gx, gv, gf), want):
            np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------
# device arrays (bench/launch_overhead.py's CuPy stand-in, programs for
# sm_90 that do nothing): the pointers the launch gets, the alignment fact
# ---------------------------------------------------------------------------

@pytest.fixture
def standin(monkeypatch):
    import launch_overhead as LO
    import vjp_overhead as VO
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
    yield LO.StandinArray, launched
    sys.modules.pop("cupy", None)


@dg.kernel
def dev_mul(y, x, w):  # its own kernel: the stand-in's functions stay with its programs
    i = dg.global_id(0)
    if i < len(x):
        y[i] = x[i] * w[i]


def _unaligned(n):
    """A float32 array of n elements whose data pointer is not 16-aligned."""
    base = np.zeros(n + 4, np.float32)
    for k in range(4):
        if (base[k:].__array_interface__["data"][0]) % 16:
            return base[k:k + n]
    raise AssertionError("no unaligned offset")


def test_device_moved_call_packs_its_pointers_and_checks_alignment(standin):
    S, launched = standin
    arrs = lambda: [S(f32(256)) for _ in range(4)]  # noqa: E731
    y, x, w, b = arrs()
    dg.vjp(dev_mul[1, 256], y, x, w, cotangents={"y": b})  # the device type joins keys
    dev_mul.__dict__.pop("_moved", None)
    before = counts()
    dg.vjp(dev_mul[1, 256], *arrs()[:3], cotangents={"y": S(f32(256))})
    assert since(before) == (1, 0, 0)
    ref = STATS["moved_refacted"]
    del launched[:]
    y, x, w, b = arrs()
    g = dg.vjp(dev_mul[1, 256], y, x, w, cotangents={"y": b})
    assert since(before) == (1, 1, 0) and STATS["moved_refacted"] == ref
    assert {x.data.ptr, w.data.ptr, b.data.ptr, g["x"].data.ptr, g["w"].data.ptr} \
        <= set(launched[-1])
    rec = dev_mul.__dict__["_moved"]
    assert len(rec) == 1
    facts = next(iter(rec.values())).facts
    assert facts is not None and any(facts.aligned)  # the kept program assumes alignment
    odd = S(_unaligned(256))
    g = dg.vjp(dev_mul[1, 256], S(f32(256)), odd, S(f32(256)), cotangents={"y": S(f32(256))})
    assert since(before) == (1, 2, 0)
    assert STATS["moved_refacted"] == ref + 1  # its program selected for its facts
    assert odd.data.ptr in launched[-1] and g["x"].data.ptr in launched[-1]
    assert next(iter(rec.values())).facts is facts  # the kept program stays


# ---------------------------------------------------------------------------
# recording: the arguments' buffers and views kept per kernel and launch key
# ---------------------------------------------------------------------------

def _steps(x, v, f, T, view=lambda a: a):
    for _ in range(T):
        push[2, 32](view(x), view(v), view(f), np.float32(0.01))


def test_recording_binds_each_launch_key_once():
    x, v, f = f32(64), f32(64), f32(64)
    with dg.Tape() as tape:
        _steps(x, v, f, 5)
        loss = np.zeros(1, np.float32)
        P.sq_loss[2, 32](x, loss)
    assert len(tape.operations) == 6
    assert len(tape._bound) == 2  # push's key and sq_loss's
    assert len(tape.reg.buffers) == 4


def test_new_view_objects_and_reshapes_of_the_same_memory():
    """A new view object each launch (the same key) and reversed views of
    the same memory (another key: bound again) record the same program as
    plain arrays."""
    x0, v0, f = f32(64), f32(64), f32(64)
    grads = []
    for view in (lambda a: a, lambda a: a[:]):
        x, v, loss = x0.copy(), v0.copy(), np.zeros(1, np.float32)
        with dg.Tape() as tape:
            _steps(x, v, f, 3, view)
            P.sq_loss[2, 32](x, loss)
        grads.append(tape.gradient(loss, wrt=[x, v, f]))
        assert len(tape._bound) == 2 and len(tape.reg.buffers) == 4
    for g, r in zip(*grads):
        np.testing.assert_array_equal(g, r)
    x, v, loss = x0.copy(), v0.copy(), np.zeros(1, np.float32)
    with dg.Tape() as tape:
        _steps(x, v, f, 2)
        _steps(x, v, f, 1, lambda a: a[::-1])  # the same memory, another layout
        P.sq_loss[2, 32](x, loss)
    assert len(tape.reg.buffers) == 4 and len(tape._bound) == 3
    for g, r in zip(tape.gradient(loss, wrt=[x, v, f]), grads[0]):
        np.testing.assert_array_equal(g, r)


@pytest.mark.parametrize("at", [1, 3])
def test_a_change_behind_the_tape_is_caught_with_the_kept_binding(at):
    """A numpy write between two launches of the same key (the binding is
    kept from the first) is still found at the next launch (host arrays:
    fingerprints at every use)."""
    x, v, f = f32(64), f32(64), f32(64)
    with pytest.raises(dg.TapeError, match="'v' of push was changed after #.* push.*found at"):
        with dg.Tape() as tape:
            _steps(x, v, f, at)
            v[3] += 1.0  # not recorded
            _steps(x, v, f, 1)
    assert tape.broken is not None
    with pytest.raises(dg.TapeError, match="cannot be used"):
        tape.gradient(x, wrt=[x], cotangents=[x])


def test_a_replayed_reverse_step_with_another_scalar_checks_the_heap(monkeypatch):
    """The tape's layout key holds no scalar values: a step replayed with
    another trip count is checked against the heap like a planned one."""
    from diffgpu.runtime import launch_checks as LC
    from kernels_loop_tapes import scan_written

    rng = np.random.default_rng(5)
    a, x = rng.uniform(-1, 1, (64, 301)), rng.uniform(-1, 1, 64)
    loss = np.zeros(1)
    for n_first, n_last in ((100, 100), (300, 100)):
        with dg.Tape() as tape:
            scan_written[1, 64](a, x, n_first)
            scan_written[1, 64](a, x, n_last)  # reversed first: planned
            P.sq_loss[1, 64](x, loss)
        monkeypatch.setenv(LC.HEAP_ENV, str(64 * 1024))
        if n_first == 100:
            tape.gradient(loss, wrt=[x])
        else:
            with pytest.raises(dg.LaunchError, match="tape of 300 words"):
                tape.gradient(loss, wrt=[x])
        monkeypatch.delenv(LC.HEAP_ENV)


def test_a_replayed_reverse_step_under_the_race_checker_runs_its_checked_program():
    """The tape's layout key does not hold the race checker's switch: a step
    replayed with it turned on selects the race-checked program."""
    x0, v0, f = f32(64), f32(64), f32(64)
    grads = []
    for check in (False, True):
        x, v, loss = x0.copy(), v0.copy(), np.zeros(1, np.float32)
        with dg.Tape() as tape:
            _steps(x, v, f, 3)
            P.sq_loss[2, 32](x, loss)
        before = STATS["moved_refacted"]
        with dg.racecheck(check):
            grads.append(tape.gradient(loss, wrt=[x, v, f]))
        assert STATS["moved_refacted"] - before == (4 if check else 0)  # 3 push, 1 sq_loss
    assert any("racecheck" in k for k in push._programs)
    for g, r in zip(*grads):
        np.testing.assert_array_equal(g, r)


def test_recording_new_arrays_of_known_layouts_analyses_once(monkeypatch):
    """A program launching on new arrays each step (or a tape of fresh
    inputs) finds its launches' roles by the layouts: plan.Call runs once
    per kernel and layout and aliasing; other aliasing is analysed again."""
    from diffgpu.hostdiff import plan

    made = []
    real = plan.Call.__init__

    def counting(self, *a, **k):
        made.append(a[0].kernel.name)
        real(self, *a, **k)
    monkeypatch.setattr(plan.Call, "__init__", counting)
    push.__dict__.pop("_tape_roles", None)
    f = f32(64)
    x0, v0 = f32(64), f32(64)
    x, v = x0.copy(), v0.copy()
    states = []
    with dg.Tape() as tape:
        for _ in range(4):
            x2, v2 = np.empty_like(x), np.empty_like(v)
            dg.copy(x2, x)
            dg.copy(v2, v)
            push[2, 32](x2, v2, f, np.float32(0.01))
            states.append((x2, v2))
            x, v = x2, v2
        loss = np.zeros(1, np.float32)
        P.sq_loss[2, 32](x, loss)
    assert made.count("push") == 1
    s = f32(64)
    with dg.Tape():
        push[2, 32](s, s, f, np.float32(0.01))  # x and v one array: other groups
    assert made.count("push") == 2
    x, v, ref_loss = x0.copy(), v0.copy(), np.zeros(1, np.float32)
    with dg.Tape() as ref:  # the same program in place
        _steps(x, v, f, 4)
        P.sq_loss[2, 32](x, ref_loss)
    np.testing.assert_allclose(tape.gradient(loss, wrt=f), ref.gradient(ref_loss, wrt=f),
                               rtol=1e-6)


def test_a_moved_call_repeated_is_a_plain_replay():
    """The pointers of a call found by its layouts, passed again: the
    pointer-keyed replay (its own copy of the recipe, its own packing)."""
    y, x, w, b = np.zeros(64, np.float32), f32(64), f32(64), f32(64)
    dg.vjp(mul[2, 32], y, x, w, cotangents={"y": b})
    y2, x2, w2, b2 = np.zeros(64, np.float32), f32(64), f32(64), f32(64)
    before = counts()
    rs = [dg.vjp(mul[2, 32], y2, x2, w2, cotangents={"y": b2}) for _ in range(3)]
    assert since(before) == (0, 1, 2)
    for r in rs:
        np.testing.assert_allclose(r["x"], w2 * b2, rtol=1e-6)
    a = dg.vjp(mul[2, 32], y, x, w, cotangents={"y": b})  # the first arrays: their own
    np.testing.assert_allclose(a["x"], w * b, rtol=1e-6)
    assert since(before) == (0, 1, 3)
    def adjoint(y, x, w, by, gx, gw):
        by[...], gx[...], gw[...] = b2, 0.0, 0.0
        dg.autodiff(mul[2, 32], dg.Duplicated(y, by), dg.Duplicated(x, gx),
                    dg.Duplicated(w, gw))
        np.testing.assert_allclose(gx, w * b2, rtol=1e-6)
    adjoint(y, x, w, *(np.zeros(64, np.float32) for _ in range(3)))  # planned (or moved)
    before = STATS["autodiff_reuse"], STATS["autodiff_moved"]
    shadows = [np.zeros(64, np.float32) for _ in range(3)]
    for _ in range(3):
        adjoint(y2, x2, w2, *shadows)
    assert (STATS["autodiff_reuse"] - before[0], STATS["autodiff_moved"] - before[1]) == (2, 1)

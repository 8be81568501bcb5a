"""dg.Tape on multi-launch programs (tape_programs.py): gradients against
float64 central differences, in float64 and float32; checkpointed tapes
(Revolve) bitwise equal to the tape that keeps every version."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
import tape_programs as P  # noqa: E402


def _grads(tape, a, name):
    return tape.gradient(a["loss"], wrt=[a[w] for w in P.WRT[name]])


@pytest.mark.parametrize("name", sorted(P.PROGRAMS))
def test_gradient_matches_finite_differences(name):
    inputs = P.make(name)
    tape, a = P.taped(name, inputs)
    grads = _grads(tape, a, name)
    for w, g in zip(P.WRT[name], grads):
        fd = P.finite_differences(name, inputs, w)
        assert g.dtype == inputs[w].dtype and g.shape == inputs[w].shape
        np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-7, err_msg=f"{name}: d/d{w}")
        assert np.abs(fd).max() > 0 or name == "time_scalars", f"{name}: {w} unused"


@pytest.mark.parametrize("name", sorted(P.PROGRAMS))
def test_checkpointing_is_bitwise_equal(name):
    inputs = P.make(name, seed=3)
    tape, a = P.taped(name, inputs)
    ref = _grads(tape, a, name)
    n = len(tape.operations)
    for k in (1, 2, 3, max(1, n // 4)):
        t2, a2 = P.taped(name, inputs, checkpoints=k)
        for w in a:
            np.testing.assert_array_equal(a2[w], a[w])  # the same forward
        got = _grads(t2, a2, name)
        for w, g, r in zip(P.WRT[name], got, ref):
            assert np.array_equal(g, r), f"{name}, checkpoints={k}: d/d{w} differs"
        assert t2.stats["peak_states"] <= k
        assert t2.stats["snapshots"] == 0


@pytest.mark.parametrize("name", ["heat_pingpong", "mass_spring", "copies", "views",
                                  "partial_outputs"])
def test_float32(name):
    inputs = P.make(name, dtype=np.float32, seed=1)
    tape, a = P.taped(name, inputs)
    grads = _grads(tape, a, name)
    inputs64 = {k: v.astype(np.float64) if v.dtype == np.float32 else v
                for k, v in inputs.items()}
    for w, g in zip(P.WRT[name], grads):
        assert g.dtype == np.float32
        fd = P.finite_differences(name, inputs64, w)
        np.testing.assert_allclose(g, fd, rtol=2e-3, atol=2e-4, err_msg=f"{name}: d/d{w}")


def test_memory_limit_picks_the_states_that_fit():
    inputs = P.make("mass_spring", seed=2)
    tape, a = P.taped("mass_spring", inputs)
    ref = _grads(tape, a, "mass_spring")
    state = sum(inputs[k].nbytes for k in ("x", "v", "f", "loss"))  # what it writes
    t2, a2 = P.taped("mass_spring", inputs, memory_limit=3 * state + 7)
    assert t2.stats["state_bytes"] == state and t2.checkpoints == 3
    for g, r in zip(_grads(t2, a2, "mass_spring"), ref):
        assert np.array_equal(g, r)
    assert t2.stats["peak_states"] <= 3


def test_gradient_again_is_fresh_and_leaves_arrays_alone():
    inputs = P.make("heat_inplace")
    tape, a = P.taped("heat_inplace", inputs)
    after = {k: v.copy() for k, v in a.items()}
    g1 = _grads(tape, a, "heat_inplace")
    g2 = _grads(tape, a, "heat_inplace")
    for x, y in zip(g1, g2):
        assert np.array_equal(x, y) and x is not y
    for k in a:
        np.testing.assert_array_equal(a[k], after[k])


def test_explicit_cotangents_and_untouched_wrt():
    inputs = P.make("shared_inputs")
    a = {k: v.copy() for k, v in inputs.items()}
    with P.dg.Tape() as tape:
        P.pair[1, P.B](a["y1"], a["y2"], a["x"], a["w"])
    dy1 = np.linspace(-1, 1, 12)
    dy2 = np.linspace(2, 3, 12)
    seeds = (dy1.copy(), dy2.copy())
    other = np.ones(3)
    gx, gw, go = tape.gradient([a["y1"], a["y2"]], wrt=[a["x"], a["w"], other],
                               cotangents=list(seeds))
    x, w = inputs["x"], inputs["w"]
    np.testing.assert_allclose(gx, np.cos(x) * w * dy1 + 2 * x * dy2)
    np.testing.assert_allclose(gw, np.sin(x) * dy1 + dy2)
    assert np.array_equal(go, np.zeros(3))
    assert np.array_equal(seeds[0], dy1) and np.array_equal(seeds[1], dy2)
    single = tape.gradient([a["y1"], a["y2"]], wrt=a["x"], cotangents=[dy1, dy2])
    assert np.array_equal(single, gx)

"""The checkpointing schedule (hostdiff/tape/revolve.py): optimal numbers of
recomputed steps (Griewank's bound, checked against a brute-force search),
at most the given number of states, every step reversed once in order; and a
taped program of many steps held to it."""
from __future__ import annotations

import math
import os
import sys
from functools import lru_cache

import numpy as np
import pytest

import diffgpu as dg
from diffgpu.hostdiff.tape import revolve

sys.path.insert(0, os.path.dirname(__file__))
import tape_programs as P  # noqa: E402


@lru_cache(maxsize=None)
def _best(n, c):
    """The fewest forward steps, by trying every split."""
    if n <= 1:
        return 0
    if c <= 1:
        return n * (n - 1) // 2
    return min(m + _best(n - m, c - 1) + _best(m, c) for m in range(1, n))


@pytest.mark.parametrize("c", [1, 2, 3, 4, 6])
def test_schedule_is_optimal_and_keeps_at_most_c_states(c):
    for n in range(1, 70):
        acts = revolve.schedule(n, c)
        k = revolve.counts(acts)
        assert k["advanced"] == _best(n, c) == revolve.forward_steps(n, c), (n, c)
        assert k["peak"] <= c and k["reversed"] == n
        assert [a[1] for a in acts if a[0] == "reverse"] == list(range(n - 1, -1, -1))


def _simulate(acts, n):
    """Replay the actions on step indices: every reverse sees its own state."""
    work, slots = 0, {0: 0}
    for a in acts:
        if a[0] == "advance":
            assert work == a[1]
            work = a[2]
        elif a[0] == "store":
            slots[a[1]] = work
        elif a[0] == "restore":
            work = slots[a[1]]
        elif a[0] == "free":
            del slots[a[1]]
        else:
            state = slots[a[2]] if a[2] is not None else work
            assert state == a[1], a
    return slots


@pytest.mark.parametrize("n, c", [(1000, 32), (1000, 10), (1000, 2), (257, 5), (64, 8)])
def test_long_schedules(n, c):
    acts = revolve.schedule(n, c)
    assert _simulate(acts, n) == {0: 0}
    k = revolve.counts(acts)
    assert k["peak"] <= c
    r = revolve.repetitions(n, c)
    assert k["advanced"] <= r * n  # each step recomputed at most r times
    if c >= math.log2(n):
        assert k["advanced"] <= n * math.ceil(math.log2(n))  # O(T log T)


def test_sqrt_states_for_a_thousand_steps():
    """2 sqrt(T) states reverse T = 1000 steps recomputing each at most twice."""
    k = revolve.counts(revolve.schedule(1000, int(2 * math.sqrt(1000))))
    assert k["peak"] <= 63 and k["advanced"] <= 2 * 1000


def test_tape_counts_follow_the_schedule():
    for k in (P.spring_force, P.integrate, P.sq_loss):
        k.__dict__.pop("_tape_plans", None)  # other tests' layouts
    a = P.make("mass_spring", n=8)
    inputs = {k: v.copy() for k, v in a.items()}
    with dg.Tape(checkpoints=4) as tape:
        x, v, f, k = a["x"], a["v"], a["f"], a["k"]
        for _ in range(40):
            P.spring_force[1, P.B](f, x, k)
            P.integrate[1, P.B](x, v, f, 0.01)
        P.sq_loss[1, P.B](x, a["loss"])
    T = len(tape.operations)
    assert T == 81
    g = tape.gradient(a["loss"], wrt=[a["x"], a["k"]])
    s = tape.stats
    assert s["recomputed"] == revolve.forward_steps(T, 4)
    assert s["peak_states"] <= 4 and s["snapshots"] == 0
    assert s["state_bytes"] == 3 * 8 * 8 + 8  # x, v, f and the loss
    b = {k: v.copy() for k, v in inputs.items()}
    with dg.Tape() as full:
        x, v, f, k = b["x"], b["v"], b["f"], b["k"]
        for _ in range(40):
            P.spring_force[1, P.B](f, x, k)
            P.integrate[1, P.B](x, v, f, 0.01)
        P.sq_loss[1, P.B](x, b["loss"])
    ref = full.gradient(b["loss"], wrt=[b["x"], b["k"]])
    assert all(np.array_equal(p, q) for p, q in zip(g, ref))
    # the full tape copies x, v, f before each overwrite: O(T) states' worth
    assert full.stats["snapshots"] >= 2 * 40
    # each kernel's reverse is planned once for the 40 steps (one layout each)
    for k in (P.spring_force, P.integrate, P.sq_loss):
        assert len(k.__dict__["_tape_plans"]) == 1


def test_visualize_writes_dot(tmp_path):
    inputs = P.make("copies")
    tape, a = P.taped("copies", inputs)
    out = tape.visualize(str(tmp_path / "prog.dot"))
    text = open(out).read()
    assert text.startswith("digraph tape {")
    assert '"#0 dg.copy' in text and "#1 nonlin_inplace" in text
    assert text.count('fillcolor="orange"') == tape.stats["snapshots"] > 0
    assert "copied: #1 nonlin_inplace overwrites it" in text
    # .svg / .png / .pdf with and without GraphViz's dot: test_tape_visualize.py
    t2, _ = P.taped("copies", inputs, checkpoints=2)
    assert "checkpointing: 2 states" in open(t2.visualize(str(tmp_path / "c.dot"))).read()


def test_device_fingerprint_sees_every_change():
    """The GPU's fingerprint (arrays.device_fingerprint), computed here with
    numpy as its array module: equal for equal bytes, different after any
    one-element change, a swap of two elements or a change of the tail
    bytes of an odd-sized buffer."""
    from diffgpu.hostdiff.tape.arrays import device_fingerprint

    rng = np.random.default_rng(0)
    for dtype, n in ((np.float32, 1001), (np.float64, 64), (np.int8, 7), (np.float32, 1)):
        a = rng.standard_normal(n).astype(dtype)
        base = device_fingerprint(a, np)
        assert device_fingerprint(a.copy(), np) == base
        for k in {0, n // 2, n - 1}:
            b = a.copy()
            b[k] = b[k] + 1 if dtype != np.int8 else b[k] ^ 1
            assert device_fingerprint(b, np) != base, (dtype, n, k)
        if n > 1:
            c = a.copy()
            c[0], c[-1] = a[-1], a[0]
            if not np.array_equal(c, a):
                assert device_fingerprint(c, np) != base

"""What the tape's reverse costs, counted: per recorded step the same
`dg.vjp` replays as the gradient chained by hand (bench/tape.py `by_hand`)
and no more adds, zero fills or copies than the analysis needs (write-once
adjoints: tape/reverse.py), and per recorded step a fixed number of device
operations in a captured graph (counted on a CuPy stand-in).

The programs are bench/tape.py's: `heat` (a ping-pong 3-point stencil:
per step one launch writing its output whole from the other array) and
`spring` (per step a force launch writing `f` whole, then an in-place
integration of x and v). Counts per step are taken as the difference of
two step counts, so setup (the seed, the loss, the start copy) cancels.
"""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import diffgpu as dg
from diffgpu.runtime.fastpath import STATS

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "bench"))
import standin_devices  # noqa: E402
import tape as TB  # noqa: E402  (bench/tape.py: the programs, the hand chain)

N = 256  # one block of bench/tape.py's 256 threads


def _vjp_calls():
    return STATS["vjp_plan"] + STATS["vjp_moved"] + STATS["vjp_reuse"]


def _numpy_counts(name, steps):
    """(tape.stats after gradient(), the hand chain's dg.vjp calls)."""
    a = TB.inputs(name, N, np)
    tape, wrt = TB.taped(name, a, steps)
    got = tape.gradient(a["loss"], wrt=wrt)
    TB.check_reference(f"{name} tape", got, TB.reference(name, TB.inputs(name, N, np), steps))
    before = _vjp_calls()
    TB.by_hand(name, TB.inputs(name, N, np), steps, np)
    return tape.stats, _vjp_calls() - before


def _reverse_counts(name):
    """steps -> the reverse's counters of `name` with that many steps and
    the hand chain's dg.vjp calls."""
    def counts(steps):
        s, hand = _numpy_counts(name, steps)
        return {"vjps": s["vjps"], "hand vjps": hand, "adds": s["adds"], "zeros": s["zeros"],
                "copies": s["copies"]}
    return counts


def _per_step(fn, t1, t2):
    """fn(steps) -> dict of counts; the counts per step (exact integers),
    after a first call (which plans: its allocations are once per layout)."""
    fn(t1)
    c1, c2 = fn(t1), fn(t2)
    out = {}
    for k in c2:
        d = c2[k] - c1[k]
        assert d % (t2 - t1) == 0, (k, c1[k], c2[k])
        out[k] = d // (t2 - t1)
    return out


def test_heat_reverse_is_one_vjp_per_step_and_nothing_else():
    """Each step's output is written whole: its adjoint is dropped after its
    reverse, and the next step's gradient (a fresh array) is adopted as the
    other array's adjoint: no add, no zero fill, no copy."""
    per = _per_step(_reverse_counts("heat"), 4, 8)
    assert per == {"vjps": 1, "hand vjps": 1, "adds": 0, "zeros": 0, "copies": 0}
    s, _ = _numpy_counts("heat", 8)
    assert (s["adds"], s["zeros"], s["copies"]) == (0, 0, 0)  # not even at the ends


def test_spring_reverse_adds_only_what_two_readers_of_one_array_need():
    """Per step: integrate's vjp (its in-out x and v: the adjoints passed as
    the shadows themselves, updated in place; two copies of the primal
    versions, which the derivative kernel overwrites), the force's vjp (f's
    adjoint consumed, then dropped: integrate's gradient of f is adopted next
    step), and two adds: x's gradient from the force into x's live adjoint,
    and k's into its running sum. The hand chain makes the same two adds
    (`gx + r["x"]`, `gk += r["k"]`) and four copies (it copies its
    cotangents too)."""
    per = _per_step(_reverse_counts("spring"), 3, 6)
    assert per == {"vjps": 2, "hand vjps": 2, "adds": 2, "zeros": 0, "copies": 2}
    s, _ = _numpy_counts("spring", 6)
    assert s["zeros"] == 1  # v's adjoint at the last step: v's final value is not a loss
    assert s["adds"] == 2 * 6 - 1  # k's first gradient is adopted


def test_counts_accumulate_over_gradient_calls():
    a = TB.inputs("heat", N, np)
    tape, wrt = TB.taped("heat", a, 4)
    g1 = tape.gradient(a["loss"], wrt=wrt)
    v1 = tape.stats["vjps"]
    g2 = tape.gradient(a["loss"], wrt=wrt)
    assert tape.stats["vjps"] == 2 * v1 == 2 * 5
    assert all(np.array_equal(p, q) for p, q in zip(g1, g2))  # nothing consumed for good


def test_checkpointed_reverse_makes_the_same_reverse_operations():
    """Revolve reverses each step once, the same way: the reverse counts
    equal the tape that keeps every version (the recomputed steps are
    forward launches, counted in `recomputed`), and so do the results."""
    for name, steps in (("heat", 8), ("spring", 6)):
        a, b = TB.inputs(name, N, np), TB.inputs(name, N, np)
        full, fw = TB.taped(name, a, steps)
        ckpt, cw = TB.taped(name, b, steps, checkpoints=3)
        ref, got = full.gradient(a["loss"], wrt=fw), ckpt.gradient(b["loss"], wrt=cw)
        assert all(np.array_equal(p, q) for p, q in zip(ref, got)), name
        for k in ("vjps", "adds", "zeros", "copies"):
            assert ckpt.stats[k] == full.stats[k], (name, k)
        assert ckpt.stats["recomputed"] > 0


# ---------------------------------------------------------------------------
# device operations on the CuPy stand-in: the reverse, and a captured graph
# ---------------------------------------------------------------------------

@pytest.fixture
def devices(monkeypatch):
    dev = standin_devices.install(monkeypatch)
    yield dev
    sys.modules.pop("cupy", None)


def _standin_inputs(dev, name):
    return {k: dev.array(v) for k, v in TB.inputs(name, N, np).items()}


def _device_counts(dev, name, steps):
    """Device operations of tape.gradient, of the hand chain (forward and
    reverse), and of a captured graph (forward and reverse: its nodes)."""
    a = _standin_inputs(dev, name)
    tape, wrt = TB.taped(name, a, steps)
    at = dev.snapshot()
    tape.gradient(a["loss"], wrt=wrt)
    out = {"reverse": dev.ops(at), "reverse alloc": dev.counts["alloc"] - at["alloc"]}
    at = dev.snapshot()
    TB.by_hand(name, _standin_inputs(dev, name), steps, dev.cp)
    out["hand"] = dev.ops(at)
    graph = tape.capture(a["loss"], wrt=wrt)
    graph.launch()  # eager, then captured
    assert dev.captured is not None and graph.graph is not None
    for k in standin_devices.KINDS + ("alloc",):
        out[f"graph {k}"] = dev.captured[k]
    at = dev.snapshot()
    graph.launch()  # one graph launch: no device operation of its own
    out["relaunch"] = dev.ops(at)
    return out


def test_device_operations_per_step_on_the_standin(devices):
    """Per heat step a captured graph holds 3 nodes (the forward launch, the
    copy of the version it overwrites, the reverse launch: as the hand
    chain, which copies the same state); per spring step 11 (forward: 2
    launches, 3 version copies; reverse: 2 launches, 2 primal copies, 2
    adds) against the hand chain's 13. Before write-once adjoints they were
    5 and 17 (a zero fill and an add per heat step; a zero fill, two copies
    of set adjoints and an extra add per spring step, two copies more in the
    vjp)."""
    heat = _per_step(lambda t: _device_counts(devices, "heat", t), 2, 4)
    assert heat["reverse"] == 1
    # no allocation per step: a step's gradient is written into the adjoint the
    # step after it dropped (Adjoints.free), in the reverse and in the graph
    assert heat["reverse alloc"] == heat["graph alloc"] == 0
    assert (heat["graph kernel"], heat["graph copy"], heat["graph add"],
            heat["graph memset"]) == (2, 1, 0, 0)
    assert heat["hand"] == 3
    spring = _per_step(lambda t: _device_counts(devices, "spring", t), 2, 4)
    assert spring["reverse"] == 6
    assert spring["reverse alloc"] == spring["graph alloc"] == 0  # (the copies too)
    assert (spring["graph kernel"], spring["graph copy"], spring["graph add"],
            spring["graph memset"]) == (4, 5, 2, 0)
    assert spring["hand"] == 13
    assert spring["relaunch"] == heat["relaunch"] == 0


def test_host_and_device_tapes_of_one_layout_plan_apart(devices):
    """A kernel's reverse steps are kept per layout and device: a tape on
    device arrays laid out as an earlier host tape's gets its own plans (a
    host program replayed on device pointers would read host memory there),
    and every one of its vjps is a device launch."""
    TB.lap_step.__dict__.pop("_tape_plans", None)
    a = TB.inputs("heat", N, np)
    tape, wrt = TB.taped("heat", a, 4)
    tape.gradient(a["loss"], wrt=wrt)
    assert len(TB.lap_step.__dict__["_tape_plans"]) == 1  # both directions: one layout
    d = _standin_inputs(devices, "heat")
    tape, wrt = TB.taped("heat", d, 4)
    at = devices.snapshot()
    tape.gradient(d["loss"], wrt=wrt)
    assert len(TB.lap_step.__dict__["_tape_plans"]) == 2
    assert devices.counts["kernel"] - at["kernel"] == tape.stats["vjps"] == 5


def test_scratch_copies_of_versions(devices):
    """An in-out version copied into a step's scratch: one device-to-device
    cudaMemcpyAsync for contiguous arrays of one layout (counted as a copy,
    no allocation), CuPy's copy otherwise; numpy's copy on the host."""
    from diffgpu.hostdiff.tape.reverse import _copier

    rng = np.random.default_rng(3)
    src = devices.array(rng.standard_normal((8, 16)))
    dst = devices.array(np.zeros((8, 16)))
    at = devices.snapshot()
    _copier(dst, src)(dst, src)
    assert np.array_equal(dst._h, src._h)
    assert devices.counts["copy"] - at["copy"] == 1 and devices.counts["alloc"] == at["alloc"]
    fortran = devices.array(np.zeros((8, 16)))
    fortran._h = np.asfortranarray(fortran._h)  # another layout: an assignment
    fortran.strides = fortran._h.strides
    _copier(fortran, src)(fortran, src)
    assert np.array_equal(fortran._h, src._h)
    a, b = rng.standard_normal(5), np.zeros(5)
    _copier(b, a)(b, a)
    assert np.array_equal(a, b)

#!/usr/bin/env python3
"""The tape's reverse, per recorded operation: diffgpu's host time and the
device operations it makes, on a counting CuPy stand-in (no GPU needed).

    python bench/tape_reverse.py            # here: the table below
    python bench/tape_reverse.py --rounds 31

The programs of bench/tape.py (`spring`: force then in-place integration,
`heat`: ping-pong 3-point steps) on 256 float32 (one block), on
test/python/tape/standin_devices.py's stand-in: numpy memory posing as
CuPy arrays, kernels compiled for sm_90 that do nothing, every device
operation counted (kernel launches, adds, copies, zero fills). So the time
is diffgpu's own Python work (process time: other work on a shared machine
inflates it less than wall time), and the counts are what a GPU would run.

| column          | what                                                          |
|-----------------|---------------------------------------------------------------|
| reverse us/op   | `tape.gradient` of a new tape, per recorded operation (min and median of rounds) |
| calls/op        | Python function calls (`sys.setprofile`'s call and c_call events) of one such `gradient()` per recorded operation: the host work, counted (load does not change it) |
| rec calls       | the same for the recording of that tape (`with dg.Tape()` and the program): work moved between the recording and the reverse shows in the sum |
| rev ops/op      | device operations of that `gradient()` per recorded operation  |
| graph nodes/op  | operations a `tape.capture()` records (forward and reverse) per recorded operation |
| hand ops/op     | device operations of bench/tape.py's hand chain (forward and reverse, its states copied by hand) per recorded operation |

`bench/tape_reverse.log` has the table before and after the write-once
adjoints and the per-layout reverse steps (tape/reverse.py).
"""
from __future__ import annotations

import os
import sys
import tempfile
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "bench"))
sys.path.insert(0, os.path.join(REPO, "test", "python", "tape"))
import tape as TB  # noqa: E402  (bench/tape.py: the programs, bootstraps the imports)

N = 256
STEPS = {"spring": 50, "heat": 100}


class _Patch:
    """monkeypatch's setattr, for installing the stand-in outside pytest."""

    def setattr(self, obj, name, value, raising=True):
        setattr(obj, name, value)


def program(dev, name, rounds) -> dict:
    import standin_devices

    steps = STEPS[name]

    def fresh():
        return {k: dev.array(v) for k, v in TB.inputs(name, N, np).items()}

    a = fresh()
    tape, wrt = TB.taped(name, a, steps)
    tape.gradient(a["loss"], wrt=wrt)  # plans and programs, untimed
    T = len(tape.operations)
    tapes = []
    for _ in range(rounds):
        b = fresh()
        t, w = TB.taped(name, b, steps)
        tapes.append((t, b["loss"], w))
    times, ops = [], []
    for t, loss, w in tapes:
        at = dev.snapshot()
        t0 = time.process_time()
        t.gradient(loss, wrt=w)
        times.append((time.process_time() - t0) / T * 1e6)
        ops.append(dev.ops(at))
    times.sort()
    b = fresh()
    calls = [0]

    def count(frame, event, arg):
        if event in ("call", "c_call"):
            calls[0] += 1
    sys.setprofile(count)
    try:
        t, w = TB.taped(name, b, steps)
    finally:
        sys.setprofile(None)
    recording, calls[0] = calls[0], 0
    sys.setprofile(count)
    try:
        t.gradient(b["loss"], wrt=w)
    finally:
        sys.setprofile(None)
    graph = tape.capture(a["loss"], wrt=wrt)
    graph.launch()  # eager, then captured: dev.captured
    nodes = sum(dev.captured[k] for k in standin_devices.KINDS)
    at = dev.snapshot()
    TB.by_hand(name, fresh(), steps, dev.cp)
    hand = dev.ops(at)
    return {"ops": T, "min": times[0], "median": times[len(times) // 2], "calls": calls[0] / T,
            "rec calls": recording / T,
            "rev": ops[0] / T, "nodes": nodes / T, "hand": hand / T}


def main(argv=None) -> int:
    import argparse
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=15)
    args = p.parse_args(argv)
    import standin_devices
    os.environ.setdefault("DIFFGPU_CACHE_DIR", tempfile.mkdtemp(prefix="dg-tape-rev-"))
    dev = standin_devices.install(_Patch())
    rows = [(name, program(dev, name, args.rounds)) for name in STEPS]
    print(f"tape reverse on the CuPy stand-in ({N} float32; diffgpu's Python, process time, "
          f"{args.rounds} rounds; device operations counted)")
    print(f"  {'program':8} {'ops':>5} {'reverse us/op':>18} {'calls/op':>9} {'rec calls':>9} "
          f"{'rev ops/op':>11} {'graph nodes/op':>15} {'hand ops/op':>12}")
    for name, r in rows:
        print(f"  {name:8} {r['ops']:5d} {r['min']:8.1f} (med {r['median']:5.1f}) "
              f"{r['calls']:9.1f} {r['rec calls']:9.1f} {r['rev']:11.2f} {r['nodes']:15.2f} "
              f"{r['hand']:12.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

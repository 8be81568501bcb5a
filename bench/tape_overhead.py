#!/usr/bin/env python3
"""Host time of dg.Tape and of chained dg.vjp per launch, on the CPU, next to
a plain launch of the same kernels.

    python bench/tape_overhead.py            # here: numpy arrays, the kernels run
    python bench/tape_overhead.py --standin  # here: a CuPy stand-in, kernels do nothing
    python bench/tape_overhead.py --prepare DIR   # here: bench/tape.py --prepare's programs
    python bench/tape_overhead.py --run DIR       # GPU: host time per recorded launch

The programs of bench/tape.py (`spring`: force then in-place integration,
`heat`: ping-pong 3-point steps) on tiny arrays (256 float32: one block of
256 threads), so the kernels' own time is a few microseconds and the rest
is the host path. Per program, in microseconds of the process's CPU time
(median of rounds; other work on a shared machine does not inflate it):

| row            | what is timed                                                   |
|----------------|-----------------------------------------------------------------|
| launch         | a plain launch of the program's kernels (per launch)            |
| recorded       | the same launches inside `with dg.Tape()` (check="auto": fingerprints at each use on the host; and check="end") |
| reverse        | `tape.gradient` per recorded operation                          |
| vjp same       | `dg.vjp` of the step kernel on the same arrays again (a replay of its key) |
| vjp new        | `dg.vjp` of the step kernel on new arrays each call, the same layouts (the hand chain's case) |
| F+B tape / vjp | the whole forward and reverse per operation: the tape, and bench/tape.py's hand chain of dg.vjp (the states copied by hand) |

`--standin` times the device path's Python work (spring: plain launch,
recorded launch with the device default check="end", reverse step, dg.vjp
on the same and on new arrays) on bench/launch_overhead.py's CuPy stand-in,
whose kernels do nothing and whose copies are host copies. The recorded
launch is also given apart: 'stand-in copies' (the stand-in's pool
allocations and cudaMemcpyAsync calls the recording made, logged in one
recording and made again alone, at their sizes and offsets) and 'own'
(the rest: diffgpu's Python). What is left on a GPU is 'own' plus CuPy's
own launches, allocations and copies.

`--prepare DIR` (here; bench/tape.py's) and `--run DIR` (on the GPU): the
host time per recorded launch at bench/tape.py's sizes (wall clock, the
recording loop divided by its launches; the end of recording timed apart)
next to a plain launch, with the copies, their pool allocations and the
fingerprint read backs a recording makes counted (in one more, untimed).

`bench/tape_overhead.log` has these tables before and after the
layout-keyed replays (hostdiff/replay.py `Recipe.run_moved`, docs/tape.md
"Host time"), before and after the recording's plans and raw copies, and
before and after the copies carved from the tape's chunks with the latest
two launch keys kept per kernel, and before and after the hook's own
bookkeeping cut (no list of readers per version, no constructor call per
Op or Version: bytecodes and calls per launch counted in diffgpu's code).
"""
from __future__ import annotations

import os
import sys
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "bench"))
import tape as TB  # noqa: E402  (bench/tape.py: the programs, bootstraps the imports)

import diffgpu as dg  # noqa: E402
from diffgpu.runtime.fastpath import STATS  # noqa: E402

N = 256
STEPS = {"spring": 50, "heat": 100}


def _median_us(fn, per: int, rounds: int = 7) -> float:
    """CPU microseconds of `fn()` divided by `per`, median of `rounds`
    (after one untimed call)."""
    fn()
    times = []
    for _ in range(rounds):
        t = time.process_time()
        fn()
        times.append((time.process_time() - t) / per * 1e6)
    times.sort()
    return times[len(times) // 2]


def _step_vjp(name, a):
    """(the step kernel's dg.vjp on arrays `a`, a maker of new arrays like them)."""
    g, c = TB.grid(N), np.float32(0.25)
    rng = np.random.default_rng(1)
    if name == "spring":
        def call(x, v, f, gx, gv):
            return dg.vjp(TB.integrate[g, TB.B], x, v, f, dg.Const(np.float32(0.01)),
                          cotangents={"x": gx, "v": gv})
        n = 5
    else:
        def call(dst, src, gd):
            return dg.vjp(TB.lap_step[g, TB.B], dst, src, dg.Const(c), cotangents={"dst": gd})
        n = 3
    return call, lambda: [rng.standard_normal(N).astype(np.float32) for _ in range(n)]


def program(name) -> dict:
    steps = STEPS[name]
    a = TB.inputs(name, N, np)
    TB.forward(name, a, steps)
    with dg.Tape() as tape:  # plans and programs, untimed
        TB.forward(name, a, steps)
    tape.gradient(a["loss"], wrt=[a[w] for w in (("u0", "w") if name == "heat" else ("x0", "k"))])
    T = len(tape.operations)
    out = {"ops": T}
    out["launch"] = _median_us(lambda: TB.forward(name, a, steps), T)
    for check in ("auto", "end"):
        def rec():
            with dg.Tape(check=check):
                TB.forward(name, a, steps)
        out[f"recorded {check}"] = _median_us(rec, T)
    tapes = []

    def make():
        b = TB.inputs(name, N, np)
        with dg.Tape() as t:
            wrt = TB.forward(name, b, steps)
        tapes.append((t, b["loss"], [b[w] for w in wrt]))
    for _ in range(8):
        make()
    it = iter(tapes)

    def grad():
        t, loss, wrt = next(it)
        t.gradient(loss, wrt=wrt)
    out["reverse"] = _median_us(grad, T)
    call, fresh = _step_vjp(name, a)
    same = fresh()
    out["vjp same"] = _median_us(lambda: [call(*same) for _ in range(50)], 50)
    sets = [[fresh() for _ in range(50)] for _ in range(8)]
    its = iter(sets)
    before = STATS["vjp_plan"], STATS["vjp_moved"]
    out["vjp new"] = _median_us(lambda: [call(*s) for s in next(its)], 50)
    out["vjp new plans"] = (STATS["vjp_plan"] - before[0], STATS["vjp_moved"] - before[1])

    def tape_fb():
        b = TB.inputs(name, N, np)
        t, wrt = TB.taped(name, b, steps)
        t.gradient(b["loss"], wrt=wrt)
    out["F+B tape"] = _median_us(tape_fb, T, rounds=5)
    out["F+B vjp"] = _median_us(lambda: TB.by_hand(name, TB.inputs(name, N, np), steps, np),
                                T, rounds=5)
    return out


# ---------------------------------------------------------------------------
# --standin: device arrays of bench/launch_overhead.py's CuPy stand-in
# ---------------------------------------------------------------------------

def install_standin():
    """vjp_overhead's stand-in (kernels that do nothing, arrays on host
    memory posing as CuPy's), with what the tape calls of CuPy besides:
    copies, zeros, adds and assignments on the stand-in's memory, and its
    fingerprints (a crc32 of that memory instead of the GPU's hash), and
    the raw copies of snapshots (`cupy.cuda.alloc`: host bytes;
    `runtime.memcpyAsync`: a memmove)."""
    import ctypes
    import zlib

    import launch_overhead as LO
    import vjp_overhead as VO
    VO.install_standin()
    cp = sys.modules["cupy"]
    S = LO.StandinArray

    class Flags(LO._Flags):
        def __init__(self, h):
            self.c_contiguous, self.f_contiguous = h.flags.c_contiguous, h.flags.f_contiguous
    init = S.__init__

    def __init__(self, host, dtype=None, memptr=None, strides=None):
        if memptr is not None:  # cupy.ndarray(shape, dtype, memptr, strides): over a copy
            host = np.ndarray(host, dtype, buffer=memptr.host, strides=strides)
        init(self, host)
        self.flags = Flags(host)

    def iadd(self, o):
        with np.errstate(all="ignore"):  # the kernels do nothing: any values
            self._h += o._h if isinstance(o, S) else o
        return self

    def setitem(self, k, o):
        self._h[k] = o._h if isinstance(o, S) else o
    S.__init__, S.base, S.__iadd__, S.__setitem__ = __init__, None, iadd, setitem
    S.__getitem__ = lambda self, k: S(self._h[k])
    cp.ndarray = S
    cp.asarray = lambda a: a if isinstance(a, S) else S(np.asarray(a))
    cp.array = lambda a, copy=True, order="K": S(np.array(a._h if isinstance(a, S) else a,
                                                          copy=True, order=order))
    cp.zeros_like = lambda a: S(np.zeros_like(a._h))
    cp.empty_like = lambda a: S(np.empty_like(a._h))
    cp.ones = lambda shape, dtype=np.float64: S(np.ones(shape, dtype))
    from diffgpu.runtime.fastpath import host_pointer

    class Memory:  # cupy.cuda.alloc's MemoryPointer: host bytes here
        __slots__ = ("host", "ptr", "__weakref__")

        def __init__(self, n):  # (256-byte aligned, as CUDA's allocations are)
            raw = np.empty((n or 1) + 256, np.uint8)
            at = -host_pointer(raw) % 256
            self.host = raw[at:at + (n or 1)]
            self.ptr = host_pointer(raw) + at

        def __add__(self, offset):  # a pointer into the same allocation (keeping it)
            m = Memory.__new__(Memory)
            m.host, m.ptr = self.host[offset:], self.ptr + offset
            return m
    cp.cuda.alloc = Memory
    cp.cuda.runtime.memcpyAsync = lambda dst, src, n, kind, stream: ctypes.memmove(dst, src, n)
    from diffgpu.hostdiff.tape import arrays
    arrays.device_fingerprints = lambda roots, _cp: [
        (zlib.crc32(r._h.ravel(order="K").view(np.uint8)), r.nbytes) for r in roots]
    from diffgpu.runtime import gpu
    gpu._chips = {0: "sm_90"}
    return S


def _bytecodes(fn) -> int:
    """Python bytecodes `fn()` runs (benchlib.count_work)."""
    from benchlib import count_work
    return count_work(fn)[0]


def standin() -> None:
    import tempfile

    S = install_standin()
    os.environ.setdefault("DIFFGPU_CACHE_DIR", tempfile.mkdtemp(prefix="dg-tape-"))
    rng = np.random.default_rng(0)
    mk = lambda: S(rng.standard_normal(N).astype(np.float32))  # noqa: E731
    g, dt, T = TB.grid(N), np.float32(0.01), 50
    x, v, f, k, loss = mk(), mk(), mk(), mk(), S(np.zeros(1, np.float32))

    def steps_n(n):
        for _ in range(n):
            TB.spring_force[g, TB.B](f, x, k)
            TB.integrate[g, TB.B](x, v, f, dt)

    def steps():
        steps_n(T)

    def rec():
        with dg.Tape() as t:  # check="auto": "end" for device arrays
            steps()
            TB.sq_loss[g, TB.B](x, loss)
        return t
    t0 = rec()
    t0.gradient(loss, wrt=[k])
    # (21 rounds: these are the rows compared before and after on a shared machine)
    out = {"launch": _median_us(steps, 2 * T, 21), "recorded": _median_us(rec, 2 * T + 1, 21)}
    # the stand-in's own part of that: the copies' calls of CuPy a recording
    # makes (pool allocations of their sizes, cudaMemcpyAsync into them at their
    # offsets), logged in one recording, then made again alone and timed
    cp, snaps = sys.modules["cupy"], t0.stats["snapshots"]
    alloc, memcpy = cp.cuda.alloc, cp.cuda.runtime.memcpyAsync
    log = []

    def logged_alloc(n):
        m = alloc(n)
        log.append(("alloc", n, m.ptr))
        return m

    def logged_memcpy(dst, src, n, kind, stream):
        log.append(("memcpy", n, dst))
        return memcpy(dst, src, n, kind, stream)
    cp.cuda.alloc, cp.cuda.runtime.memcpyAsync = logged_alloc, logged_memcpy
    rec()
    cp.cuda.alloc, cp.cuda.runtime.memcpyAsync = alloc, memcpy
    calls, spans, replay = {"alloc": 0, "memcpy": 0}, [], []
    for what, n, ptr in log:  # each copy: (its allocation's index, its offset there)
        calls[what] += 1
        if what == "alloc":
            spans.append((ptr, n))
            replay.append(("alloc", n, 0))
        else:
            j = next(j for j, (lo, m) in enumerate(spans) if lo <= ptr < lo + max(m, 1))
            replay.append(("memcpy", n, (j, ptr - spans[j][0])))

    def copies():
        mems = []
        for what, n, at in replay:
            if what == "alloc":
                mems.append(alloc(n))
            else:
                memcpy(mems[at[0]].ptr + at[1], x.data.ptr, n, 3,
                       cp.cuda.get_current_stream().ptr)
    out["stand-in copies"] = _median_us(copies, 2 * T + 1, 21)
    out["own"] = out["recorded"] - out["stand-in copies"]
    tapes = [rec() for _ in range(8)]
    it = iter(tapes)
    out["reverse"] = _median_us(lambda: next(it).gradient(loss, wrt=[k]), 2 * T + 1)

    def call(x, v, f, gx, gv):
        return dg.vjp(TB.integrate[g, TB.B], x, v, f, dg.Const(dt),
                      cotangents={"x": gx, "v": gv})
    same = [mk() for _ in range(5)]
    out["vjp same"] = _median_us(lambda: [call(*same) for _ in range(50)], 50)
    sets = iter([[[mk() for _ in range(5)] for _ in range(50)] for _ in range(8)])
    out["vjp new"] = _median_us(lambda: [call(*s) for s in next(sets)], 50)
    # the same, counted: Python bytecodes per launch of the loop (marginal: 30
    # steps less 10), inside a tape whose plans exist and outside: no noise
    with dg.Tape():
        steps_n(3)
        rec_ops = _bytecodes(lambda: steps_n(30)) - _bytecodes(lambda: steps_n(10))
    plain_ops = _bytecodes(lambda: steps_n(30)) - _bytecodes(lambda: steps_n(10))
    print(f"Python bytecodes per launch of the loop (stand-in included): plain "
          f"{plain_ops / 40:.0f}, recorded {rec_ops / 40:.0f}")
    print(f"CuPy stand-in (kernels do nothing; diffgpu's own Python work per launch, us, "
          f"process time), spring, {N} float32; recorded: {snaps} copies in "
          f"{2 * T + 1} launches ({calls['alloc']} pool allocations, {calls['memcpy']} "
          "cudaMemcpyAsync), 'stand-in copies' those calls' time, 'own' the rest:")
    print("  " + "".join(f" {c:>15}" for c in out))
    print("  " + "".join(f" {v:15.1f}" for v in out.values()))


# ---------------------------------------------------------------------------
# --prepare DIR here, --run DIR on the GPU: bench/tape.py's programs at its sizes
# ---------------------------------------------------------------------------

def gpu_run(path: str) -> None:
    """Host time per recorded launch on the GPU (wall clock, the recording
    loop divided by its launches; the end of recording, whose fingerprints
    wait for the GPU, timed apart) next to a plain launch of the same
    program, with the CUDA calls the tape makes counted in one more
    recording (untimed: the counting wrappers stay out of the timed ones):
    copies (cudaMemcpyAsync), pool allocations for them, fingerprint read
    backs."""
    sys.modules["mlir"] = None  # the GPU machine has no MLIR: prove it
    os.environ["DIFFGPU_CACHE_DIR"] = os.path.join(os.path.abspath(path), "cache")
    import cupy as cp

    from diffgpu.hostdiff.tape import device as D
    sync = cp.cuda.runtime.deviceSynchronize
    counts = {"copies": 0, "allocs": 0, "readbacks": 0}

    def counting(name, fn):
        def call(*a):
            counts[name] += 1
            return fn(*a)
        return call
    print("GPU host time per launch, us (wall clock, median of 5 recordings; the "
          "recording loop / its launches; 'seal': the end of recording, ms)")
    print(f"  {'program':8} {'ops':>5} {'launch':>8} {'recorded':>9} {'seal ms':>8} "
          f"{'copies':>7} {'allocs':>7} {'readbacks':>9}")
    for name, (n, steps) in TB.SIZES.items():
        a = TB.inputs(name, n, cp)
        for _ in range(2):  # programs, pools, roles
            with dg.Tape():
                TB.forward(name, a, steps)
        sync()
        rec, seal = [], []
        for _ in range(5):
            t = dg.Tape(check="end")
            t0 = time.perf_counter()
            with t:
                TB.forward(name, a, steps)
                t1 = time.perf_counter()
            t2 = time.perf_counter()
            ops = len(t.operations)
            rec.append((t1 - t0) / ops * 1e6)
            seal.append((t2 - t1) * 1e3)
            del t
            sync()
        plain = []
        for _ in range(5):
            t0 = time.perf_counter()
            TB.forward(name, a, steps)
            plain.append((time.perf_counter() - t0) / ops * 1e6)
            sync()
        counts.update(copies=0, allocs=0, readbacks=0)
        real = cp.cuda.alloc, cp.cuda.runtime.memcpyAsync, D.fingerprints
        cp.cuda.alloc, cp.cuda.runtime.memcpyAsync, D.fingerprints = (
            counting("allocs", real[0]), counting("copies", real[1]),
            counting("readbacks", real[2]))
        try:
            with dg.Tape(check="end"):
                TB.forward(name, a, steps)
        finally:
            cp.cuda.alloc, cp.cuda.runtime.memcpyAsync, D.fingerprints = real
        sync()
        med = lambda v: sorted(v)[len(v) // 2]  # noqa: E731
        print(f"  {name:8} {ops:5d} {med(plain):8.1f} {med(rec):9.1f} {med(seal):8.2f} "
              f"{counts['copies']:7d} {counts['allocs']:7d} {counts['readbacks']:9d}")


def main() -> int:
    if "--standin" in sys.argv[1:]:
        standin()
        return 0
    if "--prepare" in sys.argv[1:]:
        TB.prepare(sys.argv[sys.argv.index("--prepare") + 1])
        return 0
    if "--run" in sys.argv[1:]:
        gpu_run(sys.argv[sys.argv.index("--run") + 1])
        return 0
    rows = [(name, program(name)) for name in STEPS]
    print(f"CPU host time per launch, us (process time, median; numpy, {N} float32, "
          "the kernels run)")
    cols = ("launch", "recorded auto", "recorded end", "reverse", "vjp same", "vjp new",
            "F+B tape", "F+B vjp")
    print(f"  {'program':8} {'ops':>5}" + "".join(f" {c:>13}" for c in cols) + "  tape/vjp")
    for name, r in rows:
        print(f"  {name:8} {r['ops']:5d}" + "".join(f" {r[c]:13.1f}" for c in cols)
              + f"  {r['F+B tape'] / r['F+B vjp']:8.2f}")
    for name, r in rows:
        p, m = r["vjp new plans"]
        print(f"  {name}: 'vjp new' calls planned {p}, replayed by layout {m} (of {8 * 50})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

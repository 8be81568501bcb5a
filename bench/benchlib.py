"""What the GPU benches share: the device timer, the command line of the
benches compiled here and run on the GPU (`--prepare DIR` / `--run DIR`),
and that of the launch-cost benches (`--standin` too)."""
from __future__ import annotations

import argparse
import contextlib
import os


def cupy_ms(fn, reps: int = 20, rounds: int = 7) -> float:
    """Device time of one `fn()` in ms: `reps` back-to-back calls between two
    CUDA events, the median of `rounds` (after one warm-up call)."""
    import cupy as cp

    fn()
    cp.cuda.runtime.deviceSynchronize()
    times = []
    for _ in range(rounds):
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        for _ in range(reps):
            fn()
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop) / reps)
    times.sort()
    return times[len(times) // 2]


def standin_prepare_run(doc: str, standin, prepare, run, prefix: str, argv=None) -> int:
    """The command line of a launch-cost bench: `--standin` (with a cache
    directory of its own, removed afterwards, unless DIFFGPU_CACHE_DIR is
    set), `--prepare DIR` or `--run DIR`."""
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--standin", action="store_true")
    g.add_argument("--prepare", metavar="DIR")
    g.add_argument("--run", metavar="DIR")
    a = p.parse_args(argv)
    if a.standin:
        if "DIFFGPU_CACHE_DIR" in os.environ:
            standin()
        else:
            import tempfile
            with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
                os.environ["DIFFGPU_CACHE_DIR"] = tmp
                standin()
    elif a.prepare:
        prepare(a.prepare)
    else:
        run(a.run)
    return 0


def prepare_run(doc: str, prepare, run, argv=None, metavar: str = "DIR", cpu_smoke=None,
                **sizes) -> int:
    """The command line of a bench compiled here and run on the GPU:
    `--prepare DIR [--chip sm_XX]` calls `prepare(DIR, chip=..., **sizes)`,
    each size settable as `--<name> N` (integers, defaults as given), and
    returns its status (0 for None); `--run
    DIR` returns `run(DIR)`; with `cpu_smoke` given, `--cpu-smoke` returns
    `cpu_smoke()`."""
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    g = p.add_mutually_exclusive_group(required=True)
    if cpu_smoke is not None:
        g.add_argument("--cpu-smoke", action="store_true")
    g.add_argument("--prepare", metavar=metavar)
    g.add_argument("--run", metavar=metavar)
    p.add_argument("--chip", default="sm_90", help="GPU target for --prepare (default sm_90)")
    for name, default in sizes.items():
        p.add_argument(f"--{name}", type=int, default=default)
    a = p.parse_args(argv)
    if getattr(a, "cpu_smoke", False):
        return cpu_smoke()
    if a.prepare:  # (a prepare that returns a status is heard)
        return prepare(a.prepare, chip=a.chip, **{name: getattr(a, name) for name in sizes}) or 0
    return run(a.run)


@contextlib.contextmanager
def recorded_programs():
    """Inside, every program lookup of the runtime (`launch.get_program`) is
    recorded: yields the list that gets (kernel, types, diff, facts) of each,
    so that a bench can rebuild exactly the programs a call selected."""
    import diffgpu.driver.launch as L

    seen, real = [], L.get_program

    def recording(defn, types, target, diff=None, facts=None):
        seen.append((defn, types, diff, facts))
        return real(defn, types, target, diff, facts)

    L.get_program = recording
    try:
        yield seen
    finally:
        L.get_program = real


def count_work(fn, under: str | None = None) -> tuple[int, int]:
    """(Python bytecodes, Python calls) that `fn()` runs (sys.settrace's
    opcode and call events), only in code from files under the directory
    `under` when it is given."""
    import sys
    n = [0, 0]

    def tracer(frame, event, arg):
        if under is not None and not frame.f_code.co_filename.startswith(under):
            return None
        frame.f_trace_opcodes = True
        if event == "opcode":
            n[0] += 1
        elif event == "call":
            n[1] += 1
        return tracer
    sys.settrace(tracer)
    try:
        fn()
    finally:
        sys.settrace(None)
    return n[0], n[1]

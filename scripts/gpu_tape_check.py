#!/usr/bin/env python3
"""Check dg.Tape on a real GPU, from a cache compiled here.

    # here (MLIR, no GPU): run every program of test/python/tape/tape_programs.py
    # with the tape on the CPU (float64 and float32), keep the gradients, and
    # compile for the chip every program those launches and reverses select
    python scripts/gpu_tape_check.py --prepare DIR [--chip sm_90]

    # on the GPU machine (numpy + CuPy, no MLIR): the same programs on CuPy
    # arrays: the tape's gradients against the CPU's, the checkpointed tape
    # against the tape, a captured CUDA graph (launched three times) against
    # the tape, check="launch" catching a CuPy write inside the tape
    python scripts/gpu_tape_check.py --run DIR

The per-launch GPU cases of scripts/gpu_cases/ are single launches; a tape is
a program of many, so it has this script. `--run` prints a table and exits 1
on any mismatch or error; it never imports MLIR (it blocks the import).
"""
from __future__ import annotations

import argparse
import os
import sys
import traceback

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if __name__ == "__main__" and "--run" in sys.argv:
    sys.modules["mlir"] = None  # the GPU run must not need MLIR: prove it
sys.path.insert(0, os.path.join(REPO, "scripts"))
import repo_imports  # noqa: E402

repo_imports.bootstrap()
sys.path.insert(0, os.path.join(REPO, "test", "python", "tape"))
sys.path.insert(0, os.path.join(REPO, "bench"))

import numpy as np  # noqa: E402

import diffgpu as dg  # noqa: E402
import tape_programs as P  # noqa: E402

DTYPES = {"f64": np.float64, "f32": np.float32}
TOL = {"f64": (1e-9, 1e-12), "f32": (2e-4, 1e-6)}


def _cases():
    for name in sorted(P.PROGRAMS):
        for tag in DTYPES:
            yield name, tag


def _grads(tape, a, name):
    return tape.gradient(a["loss"], wrt=[a[w] for w in P.WRT[name]])


def prepare(directory: str, chip: str) -> int:
    from tape import compile_programs  # bench/tape.py

    os.makedirs(directory, exist_ok=True)
    os.environ["DIFFGPU_CACHE_DIR"] = os.path.join(os.path.abspath(directory), "cache")
    expected = {}

    def run():
        for name, tag in _cases():
            inputs = P.make(name, dtype=DTYPES[tag])
            tape, a = P.taped(name, inputs)
            for w, g in zip(P.WRT[name], _grads(tape, a, name)):
                expected[f"{name}/{tag}/{w}"] = g
            t2, a2 = P.taped(name, inputs, checkpoints=2)
            _grads(t2, a2, name)
    def run16():  # the same programs on float16 and bfloat16 numpy arrays
        for name in HALF_PROGRAMS:
            for dtype in (np.float16, BF16) if BF16 is not None else (np.float16,):
                inputs = _half(P.make(name, dtype=np.float32), dtype)
                for opts in ({}, {"checkpoints": 2}):
                    tape, a = P.taped(name, inputs, **opts)
                    _grads(tape, a, name)

    def both():
        run()
        run16()
    count = compile_programs(both, chip)
    np.savez(os.path.join(directory, "expected.npz"), **expected)
    print(f"prepared {len(expected)} gradients of {len(P.PROGRAMS)} programs, {count} programs "
          f"for {chip} in {directory}")
    return 0


#: programs run on torch float16 / bfloat16 tensors, captured too (not `solver`:
#: its iteration count is the host's, not replayed; not `views`: torch views of
#: one tensor are refused)
HALF_PROGRAMS = ("heat_inplace", "heat_pingpong", "mass_spring", "contact", "optimiser",
                 "shared_inputs", "copies", "partial_outputs", "indexed", "time_scalars")
#: max |16-bit tape - float32 tape| / max(1, max |float32|): float16 runs here within 5e-3
HALF_TOL = {"float16": 2e-2, "bfloat16": 8e-2}
try:
    import ml_dtypes
    BF16 = ml_dtypes.bfloat16
except ImportError:  # (the GPU machine's torch rows need it; --prepare too)
    BF16 = None


def _half(inputs, dtype):
    return {k: v.astype(dtype) if v.dtype.kind == "f" else v for k, v in inputs.items()}


def _on_gpu(inputs, cp):
    return {k: cp.asarray(v) for k, v in inputs.items()}


def _check(got, want, tag):
    rtol, atol = TOL[tag]
    scale = max(float(np.abs(want).max()), 1.0)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol * scale)


def _replay(tape, a, name, restart, check, times=3) -> None:
    """Capture `tape` (program `name` on arrays `a`) and launch the graph
    `times` times, `restart()` first each time; `check(gradient, k)` each
    gradient (k: its index in P.WRT[name])."""
    graph = tape.capture(a["loss"], wrt=[a[w] for w in P.WRT[name]])
    for _ in range(times):
        restart()
        got = graph.launch()
        graph.synchronize()
        for k, g in enumerate(got):
            check(g, k)


def _attempt(rows, label, body) -> int:
    """Run `body(status)` (it appends what passed to `status`); a failure
    is reported in the row, and the run goes on. 1 if it failed."""
    status, bad = [], 0
    try:
        body(status)
    except Exception as e:  # noqa: BLE001  (reported, the run goes on)
        bad = 1
        status.append(f"FAIL {type(e).__name__}: {str(e)[:160]}")
        traceback.print_exc()
    rows.append((label, ", ".join(status)))
    return bad


def run(directory: str) -> int:
    os.environ["DIFFGPU_CACHE_DIR"] = os.path.join(os.path.abspath(directory), "cache")
    import cupy as cp

    expected = dict(np.load(os.path.join(directory, "expected.npz")))
    rows, bad = [], 0
    for name, tag in _cases():
        def body(status, name=name, tag=tag):
            inputs = _on_gpu(P.make(name, dtype=DTYPES[tag]), cp)
            a = {k: v.copy() for k, v in inputs.items()}
            with dg.Tape() as tape:
                P.PROGRAMS[name](a)
            grads = [cp.asnumpy(g) for g in _grads(tape, a, name)]
            for w, g in zip(P.WRT[name], grads):
                _check(g, expected[f"{name}/{tag}/{w}"], tag)
            status.append("tape")
            b = {k: v.copy() for k, v in inputs.items()}
            with dg.Tape(checkpoints=2) as t2:
                P.PROGRAMS[name](b)
            for g, r in zip(_grads(t2, b, name), grads):
                _check(cp.asnumpy(g), r, tag)
            status.append("ckpt")
            if name not in ("solver",):  # its iteration count is the host's: not replayed
                def restart():  # the start of the program, in place
                    for k, v in inputs.items():
                        a[k][...] = v
                _replay(tape, a, name, restart,
                        lambda g, k: _check(cp.asnumpy(g), grads[k], tag))
                status.append("graph")
        bad += _attempt(rows, f"{name} {tag}", body)
    b, r = _torch_rows(expected)
    bad += b
    rows += r
    try:  # a CuPy write inside a tape, caught with check="launch"
        x = cp.linspace(0.5, 1.5, 12)
        y, loss = cp.zeros(12), cp.zeros(1)
        try:
            with dg.Tape(check="launch"):
                P.nonlin_inplace[1, P.B](x, cp.ones(12))
                x[3] = 5.0
                P.sq_loss[1, P.B](x, loss)
            bad += 1
            rows.append(("check=launch", "FAIL: the CuPy write went unnoticed"))
        except dg.TapeError as e:
            rows.append(("check=launch", f"caught: {str(e)[:80]}"))
    except Exception as e:  # noqa: BLE001
        bad += 1
        rows.append(("check=launch", f"FAIL {type(e).__name__}: {e}"))
    b, r = _torch_half_rows(expected)
    bad += b
    rows += r
    b, r = _fingerprint_rows(cp)
    bad += b
    rows += r
    for n, s in rows:
        print(f"  {n:28} {s}")
    print(f"{len(rows) - bad} passed, {bad} failed")
    return 1 if bad else 0


def _torch_rows(expected) -> tuple[int, list]:
    """The same programs on torch CUDA tensors (float64 and float32): the
    tape's and the checkpointed tape's gradients against the CPU's; but
    `views`, whose torch views of one tensor the tape sees as overlapping
    arrays (each is its own CuPy array, tape/arrays.py): refused. (bad, rows)"""
    try:
        import torch
    except ImportError:
        print("torch rows skipped: torch is not installed")
        return 0, []
    if not torch.cuda.is_available():
        print("torch rows skipped: torch has no CUDA device")
        return 0, []
    rows, bad = [], 0
    for name, tag in _cases():
        status = []
        try:
            inputs = {k: torch.tensor(v, device="cuda")
                      for k, v in P.make(name, dtype=DTYPES[tag]).items()}
            if name == "views":  # torch views of one tensor: separate arrays to the tape
                try:
                    with dg.Tape():
                        P.PROGRAMS[name]({k: v.clone() for k, v in inputs.items()})
                    raise AssertionError("the overlapping torch views were taped")
                except dg.TapeError as e:
                    assert "overlaps" in str(e), e
                    status.append("refused (TapeError: overlapping views)")
                rows.append((f"torch {name} {tag}", ", ".join(status)))
                continue
            for opts in ({}, {"checkpoints": 2}):
                a = {k: v.clone() for k, v in inputs.items()}
                with dg.Tape(**opts) as tape:
                    P.PROGRAMS[name](a)
                for w, g in zip(P.WRT[name], _grads(tape, a, name)):
                    _check(_numpy(g), expected[f"{name}/{tag}/{w}"], tag)
                status.append("ckpt" if opts else "tape")
        except Exception as e:  # noqa: BLE001  (reported, the run goes on)
            bad += 1
            status.append(f"FAIL {type(e).__name__}: {str(e)[:160]}")
            traceback.print_exc()
        rows.append((f"torch {name} {tag}", ", ".join(status)))
    return bad, rows


def _torch_half_rows(expected) -> tuple[int, list]:
    """HALF_PROGRAMS on torch float16 and bfloat16 CUDA tensors: the tape's
    and the checkpointed tape's gradients against the float32 tape's (of the
    same values before rounding to 16 bits), within HALF_TOL, and captured
    (a CUDA graph, launched twice). (bad, rows)"""
    try:
        import torch
    except ImportError:
        return 0, []
    if not torch.cuda.is_available():
        return 0, []
    rows, bad = [], 0
    for dtype in ("float16", "bfloat16"):
        for name in HALF_PROGRAMS:
            def body(status, name=name, dtype=dtype):
                tdt = getattr(torch, dtype)
                base = P.make(name, dtype=np.float32)
                inputs = {k: torch.tensor(v, device="cuda").to(tdt) if v.dtype.kind == "f"
                          else torch.tensor(v, device="cuda") for k, v in base.items()}

                def check(g, k):
                    _check_half(g, expected[f"{name}/f32/{P.WRT[name][k]}"], dtype, torch)
                for opts in ({}, {"checkpoints": 2}):
                    a = {k: v.clone() for k, v in inputs.items()}
                    with dg.Tape(**opts) as tape:
                        P.PROGRAMS[name](a)
                    for k, g in enumerate(_grads(tape, a, name)):
                        check(g, k)
                    status.append("ckpt" if opts else "tape")
                a = {k: v.clone() for k, v in inputs.items()}
                with dg.Tape() as tape:
                    P.PROGRAMS[name](a)
                _replay(tape, a, name, lambda: [a[k].copy_(v) for k, v in inputs.items()],
                        check, times=2)
                status.append("graph")
            bad += _attempt(rows, f"torch {name} {dtype}", body)
    return bad, rows


def _check_half(g, want, dtype, torch):
    if isinstance(g, torch.Tensor):
        assert str(g.dtype) == f"torch.{dtype}", g.dtype
        got = g.float().cpu().numpy()
    else:  # CuPy (float16)
        assert g.dtype.name == dtype, g.dtype
        got = g.get().astype(np.float32)
    err = float(np.max(np.abs(got - want))) if want.size else 0.0
    assert err <= HALF_TOL[dtype] * max(1.0, float(np.max(np.abs(want)))), (dtype, err)


def _fingerprint_rows(cp) -> tuple[int, list]:
    """The tape's fingerprint kernel (hostdiff/tape/device.py) against its
    numpy reference, on buffers of odd sizes at unaligned addresses, all of
    them in one call (one read back); a changed byte changes it. (bad, rows)"""
    from diffgpu.hostdiff.tape import device as D

    def body(status):
        rng = np.random.default_rng(5)
        host = rng.integers(0, 256, (1 << 20) + 64, dtype=np.uint8)
        dev = cp.asarray(host)
        cases = [(off, n) for off in (0, 1, 2, 4) for n in (0, 1, 3, 4, 7, 4004, (1 << 20) + 3)]
        got = D.fingerprints([(dev.data.ptr + o, n) for o, n in cases], cp)
        for (o, n), g in zip(cases, got):
            assert g == D.reference(host[o:o + n]), (o, n, g, D.reference(host[o:o + n]))
        for o, n in cases:
            if n:
                k = int(rng.integers(0, n))
                dev[o + k] ^= 1
                changed = D.fingerprints([(dev.data.ptr + o, n)], cp)[0]
                dev[o + k] ^= 1
                assert changed != D.reference(host[o:o + n]), (o, n, k)
        status.append(f"equals the reference on {len(cases)} buffers; a flipped bit "
                      "changes it")
    rows: list = []
    return _attempt(rows, "fingerprint kernel", body), rows


def _numpy(g):
    """A gradient (CuPy array, torch tensor, 0-d) as numpy."""
    if hasattr(g, "detach"):
        return g.detach().cpu().numpy()
    return g.get() if hasattr(g, "get") else np.asarray(g)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--prepare", metavar="DIR")
    g.add_argument("--run", metavar="DIR")
    p.add_argument("--chip", default="sm_90")
    a = p.parse_args(argv)
    return prepare(a.prepare, a.chip) if a.prepare else run(a.run)


if __name__ == "__main__":
    sys.exit(main())

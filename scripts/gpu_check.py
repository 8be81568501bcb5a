#!/usr/bin/env python3
"""Check diffgpu's PTX on a real GPU, from a cache compiled elsewhere.

Two steps, two machines:

    # here (MLIR, no GPU): compile every case for sm_90 into DIR (a cache
    # plus manifest.json and inputs/expected results as .npz)
    python scripts/gpu_check.py --prepare .gpucache [--chip sm_90]
    # or only the cases of some scripts/gpu_cases modules (a smaller check)
    python scripts/gpu_check.py --prepare .gpucache_vb --modules vector_builtins

    # on the GPU machine (numpy + CuPy, no MLIR, no pip): run every case from
    # the cache on CuPy arrays and compare; then the pytest GPU tests, which
    # read the same cache
    python scripts/gpu_check.py --run .gpucache
    python -m pytest test/python/api/test_gpu.py

Cases (gpu_check_cases.py): its kernels (the seed example, elementwise, strided 2-D,
atomics, shared memory + barriers, host-level reverse and forward mode),
every case of test/python/kernels_corpus.py in float32 and float64 (expected:
its numpy reference), the differentiated shared-memory/barrier/atomic kernels
of test/python/diff_corpus_gpu.py (launch, reverse, forward; small blocks
and blocks of two warps), dg.gradcheck on CuPy arrays, an AOT bundle, and the
signatures test/python/api/test_gpu.py launches. Expected results of the other
cases are the CPU's. `--run` prints a table and a summary and exits 1 on any
mismatch or error. It never imports MLIR (it blocks the import to prove it);
arguments and results travel through files as gpu_check_io.py writes them.
Prepare and run from the same sources: entries are keyed by the compiler's
sources too (if they differ, --run falls back to the keys stored at prepare
time and says so).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

if __name__ == "__main__" and "--run" in sys.argv:
    sys.modules["mlir"] = None  # the GPU run must not need MLIR: prove it
sys.path.insert(0, os.path.join(REPO, "scripts"))
import repo_imports  # noqa: E402

repo_imports.bootstrap()

import gpu_check_specialize as SPEC  # noqa: E402

import numpy as np  # noqa: E402

import diffgpu as dg  # noqa: E402
from diffgpu.runtime.store import cache  # noqa: E402
from gpu_check_cases import (all_cases, atomics_cases, axpy,  # noqa: E402,F401
                             gradient_cases, sq, test_module, topic_cases,
                             topic_modules)
from gpu_check_io import (compare, decode_args, diff_of, encode_args,  # noqa: E402
                          only_cases, results, run_case, signature_of, to_device)


# ---------------------------------------------------------------------------
# prepare / run
# ---------------------------------------------------------------------------

def _copies(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def _prepare_case(directory, chip, k, name, kernel, grid, block, mode, make, ref) -> dict:
    from diffgpu.driver.launch import get_program
    rec = {"name": name, "kernel": kernel.name, "grid": grid, "block": block, "mode": mode}
    try:
        args = make(np.random.default_rng(k))
        arrays = {}
        rec["args"] = encode_args(args, arrays, "in")
        types = signature_of(kernel, args)
        rec["signature"] = ", ".join(str(t) for t in types)
        diff = diff_of(mode, args)
        rec["key"] = cache.cache_key(kernel, types, chip, diff)
        get_program(kernel, types, chip, diff)          # PTX into the cache
        if mode == "launch":  # and the program specialised for the launch's facts
            rec["facts"] = SPEC.launch_programs(kernel, grid, block, args, chip)
        elif mode in ("reverse", "forward", "vjp", "overflow"):  # likewise for dg.autodiff / fwddiff / vjp
            SPEC.diff_programs(run_case, kernel, grid, block, mode, args, chip)
        elif mode == "generic":  # switch off: a grid beyond 65535 in y / z keeps its fold
            from diffgpu.runtime import specialize
            old, specialize.ENABLED = specialize.ENABLED, False
            try:
                rec["facts"] = SPEC.launch_programs(kernel, grid, block, args, chip)
            finally:
                specialize.ENABLED = old
        if ref is not None:  # expected: the numpy reference
            expect = _copies(args)
            ref(*expect)
            want = results(expect, None)
            try:  # and how the CPU fares against it, for the record
                run_case(kernel, grid, block, mode, args)
                _, ok = compare(results(args, None), want)
                note = "cpu ok" if ok else "cpu MISMATCHES the reference"
            except Exception as exc:
                note = f"cpu failed: {type(exc).__name__}"
        else:  # expected: the CPU result
            want = results(args, run_case(kernel, grid, block, mode, args))
            note = "cpu result"
        for j, r in enumerate(want):
            arrays[f"out{j}"] = r
        rec["outputs"], rec["note"] = len(want), note
        np.savez(os.path.join(directory, f"case{k}.npz"), **arrays)
        rec["file"] = f"case{k}.npz"
    except Exception as exc:
        rec["error"] = f"{type(exc).__name__}: {exc}"
    return rec


def _isolated(fn, fallback: dict) -> dict:
    """fn() in a forked child: MLIR aborts on some inputs, and one case must
    not take the whole preparation down. Returns fn's dict (JSON)."""
    if not hasattr(os, "fork"):
        return fn()
    sys.stdout.flush()
    sys.stderr.flush()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.close(r)
        try:
            data = json.dumps(fn()).encode()
        except BaseException as exc:  # noqa: BLE001 - reported to the parent
            data = json.dumps(dict(fallback, error=f"{type(exc).__name__}: {exc}")).encode()
        with os.fdopen(w, "wb") as f:
            f.write(data)
        os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        data = f.read()
    _, status = os.waitpid(pid, 0)
    if data:
        return json.loads(data)
    why = (f"signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status)
           else f"exit status {os.WEXITSTATUS(status)}")
    return dict(fallback, error=f"compiler crashed ({why}) preparing this case")


def preload_compiler() -> None:
    """Import MLIR and the compiler here, before the forked children that
    prepare the cases: each child then starts with them loaded instead of
    importing them again (about a second each). No MLIR context is made, so
    every child still compiles from scratch."""
    import diffgpu._mlir  # noqa: F401
    import diffgpu.driver.compiler  # noqa: F401
    import diffgpu.frontend.lowerer  # noqa: F401
    import diffgpu.frontend.module  # noqa: F401
    import diffgpu.driver.launch  # noqa: F401
    import diffgpu.lowering.autodiff.generate  # noqa: F401
    import diffgpu.lowering.autodiff.reverse  # noqa: F401
    import diffgpu.lowering.gpu.ptx  # noqa: F401
    import diffgpu.runtime.cpu  # noqa: F401
    import diffgpu.runtime.gpu  # noqa: F401
    import mlir.dialects.nvvm  # noqa: F401
    from diffgpu.lowering.passes import load_all
    load_all()  # every pass module


def _start(directory: str, chip: str, **fields) -> dict:
    """Make `directory`, its cache the compile's, and the manifest's head."""
    os.makedirs(directory, exist_ok=True)
    preload_compiler()
    os.environ["DIFFGPU_CACHE_DIR"] = os.path.join(os.path.abspath(directory), "cache")
    return {"chip": chip, "fingerprint": cache.compiler_fingerprint(), **fields, "cases": []}


def _prepare_cases(directory: str, chip: str, cases, manifest: dict) -> int:
    """Prepare `cases` into `directory` (each in a forked child), their records
    appended to the manifest's; the number that failed."""
    failed = 0
    for k, case in enumerate(cases):
        rec = _isolated(lambda: _prepare_case(directory, chip, k, *case),
                        {"name": case[0], "kernel": case[1].name})
        if "error" in rec:
            failed += 1
            print(f"FAILED    {rec['name']:36s} {rec['error'].splitlines()[0][:150]}")
        else:
            print(f"prepared  {rec['name']:36s} {rec['signature']:40s} {rec['note']}")
        manifest["cases"].append(rec)
    return failed


def _write_manifest(directory: str, manifest: dict) -> None:
    with open(os.path.join(directory, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)


def prepare(directory: str, chip: str) -> int:
    manifest = _start(directory, chip)
    failed = _prepare_cases(directory, chip, all_cases(), manifest)
    try:  # dg.gradcheck on CuPy arrays: its float64 primal, reverse and forward
        manifest["gradcheck"] = _prepare_gradcheck(chip)
        print(f"prepared  {'gradcheck sq':36s} float64 primal, reverse, forward")
    except Exception as exc:
        failed += 1
        print(f"FAILED    gradcheck sq: {type(exc).__name__}: {exc}")
    try:  # the signatures test/python/api/test_gpu.py launches
        test_module("test_gpu.py", "test_gpu").prepare(chip)
        print(f"prepared  {'test/python/api/test_gpu.py':36s} its kernels' signatures")
    except Exception as exc:
        failed += 1
        print(f"FAILED    test_gpu.py signatures: {type(exc).__name__}: {exc}")
    try:  # an AOT bundle too: dg.compile + save_bundle, loaded by --run
        c = dg.compile(axpy, ("float32[:]", "float32[:]", "float32"), target=chip)
        dg.save_bundle(os.path.join(directory, "bundle.dgb"), [c])
        manifest["bundle"] = "bundle.dgb"
        print(f"prepared  {'bundle axpy':36s} {c.signature}")
    except Exception as exc:
        failed += 1
        print(f"FAILED    bundle axpy: {type(exc).__name__}: {exc}")
    _write_manifest(directory, manifest)
    print(f"\n{len(manifest['cases']) - failed} cases prepared for {chip} in {directory}"
          f"{f', {failed} failed to prepare' if failed else ''}")
    return 1 if failed else 0



def module_cases(names: list[str]) -> list:
    """The cases of the scripts/gpu_cases modules `names` (file names without
    .py), in the order given (gpu_check_cases.topic_cases); an unknown name is a
    ValueError naming the modules there are."""
    there = topic_modules()
    unknown = [n for n in names if n not in there]
    if unknown or not names:
        what = ", ".join(unknown) if unknown else "named"
        raise ValueError(f"--modules: no scripts/gpu_cases module {what}; there are "
                         f"{', '.join(there)}")
    return topic_cases(names)


def prepare_modules(directory: str, chip: str, names: list[str]) -> int:
    """--prepare with --modules: only the cases of those scripts/gpu_cases
    modules (no gradcheck, test_gpu.py or bundle rows); the manifest lists the
    modules. `--run` of the directory runs them as it runs the whole set."""
    try:
        chosen = module_cases(names)
    except ValueError as exc:
        print(f"gpu_check: {exc}", file=sys.stderr)
        return 2
    manifest = _start(directory, chip, modules=names)
    failed = _prepare_cases(directory, chip, chosen, manifest)
    _write_manifest(directory, manifest)
    print(f"\n{len(manifest['cases']) - failed} cases of {', '.join(names)} prepared for "
          f"{chip} in {directory}{f', {failed} failed to prepare' if failed else ''}")
    return 1 if failed else 0

def _preload(kernel, types, chip, diff, key):
    """Use the entry stored at prepare time even if the compiler sources
    changed since (its key then differs from the one computed now)."""
    from diffgpu.driver.launch import Program
    from diffgpu.driver.launch import STATS
    mem_key = (tuple(types), chip, diff)
    payload = cache.load(key)
    if payload is not None and mem_key not in kernel._programs:
        kernel._programs[mem_key] = Program(payload)
        STATS["preloaded"] += 1


def run(directory: str, only: str | None = None) -> int:
    """`only`: a JSON file listing the indices of the cases to run (a part of the
    check: their inputs alone travel to the GPU machine; gpu_check_io.only_cases
    reads it, a list or a part's part.json); the gradcheck and bundle
    rows run with the part that holds case 0."""
    import cupy
    os.environ["DIFFGPU_CACHE_DIR"] = os.path.join(os.path.abspath(directory), "cache")
    with open(os.path.join(directory, "manifest.json")) as f:
        manifest = json.load(f)
    chip = manifest["chip"]
    dev = cupy.cuda.Device()
    here = f"sm_{dev.compute_capability}"
    print(f"GPU {dev.id}: {here}; cache compiled for {chip}")
    stale = manifest["fingerprint"] != cache.compiler_fingerprint() or here != chip
    if stale:
        print("note: compiler sources or chip differ from --prepare; using the stored "
              "cache keys")
    cases = {c[0]: c[1:5] for c in all_cases()}
    rows, bad = [], 0
    chosen = None
    if only:
        try:
            chosen = only_cases(only, len(manifest["cases"]))
        except ValueError as exc:
            print(f"gpu_check: {exc}", file=sys.stderr)
            return 2
        print(f"part: {len(chosen)} of the {len(manifest['cases'])} cases")
    for k, rec in enumerate(manifest["cases"]):
        if chosen is not None and k not in chosen:
            continue
        name = rec["name"]
        if "error" in rec or name not in cases:
            rows.append((name, rec.get("signature", "?"), "-", "-", "SKIP (not prepared)"))
            bad += 1
            continue
        kernel, grid, block, mode = cases[name]
        print(f"running {name}", file=sys.stderr, flush=True)
        try:
            data = np.load(os.path.join(directory, rec["file"]))
            args = decode_args(rec["args"], data, to_device(cupy))
            diff = diff_of(mode, args)
            types = signature_of(kernel, args)
            if stale:
                _preload(kernel, types, here, diff, rec["key"])
            t0 = time.perf_counter()
            grads = run_case(kernel, tuple(grid) if isinstance(grid, list) else grid,
                             tuple(block) if isinstance(block, list) else block, mode, args)
            cupy.cuda.get_current_stream().synchronize()
            ms = (time.perf_counter() - t0) * 1e3
            got = results(args, grads)
            want = [data[f"out{j}"] for j in range(rec["outputs"])]
            err, ok = compare(got, want)
            rows.append((name, rec["signature"], f"{ms:.2f}", f"{err:.2e}",
                         "ok" if ok else "MISMATCH"))
            bad += not ok
        except Exception as exc:
            bad += 1
            msg = f"{type(exc).__name__}: {exc}".splitlines()[0][:70]
            rows.append((name, rec.get("signature", "?"), "-", "-", f"ERROR {msg}"))
            if os.environ.get("DIFFGPU_DEBUG"):
                traceback.print_exc()
    if manifest.get("gradcheck") and (chosen is None or 0 in chosen):
        row = _run_gradcheck(cupy, manifest["gradcheck"], here, stale)
        rows.append(row)
        bad += row[-1] != "ok"
    if manifest.get("bundle") and (chosen is None or 0 in chosen):
        row = _run_bundle(cupy, os.path.join(directory, manifest["bundle"]))
        rows.append(row)
        bad += row[-1] != "ok"
    _table(rows)
    from diffgpu.driver.launch import STATS
    print(f"\nprograms: {STATS['disk_hit']} loaded from the cache, {STATS['preloaded']} by "
          f"stored key, {STATS['compile']} compiled; {STATS['generic_fallback']} specialised "
          "launches fell back to the generic program (not prepared)")
    print(f"{len(rows) - bad}/{len(rows)} cases match the CPU results"
          + ("" if "mlir" not in sys.modules or sys.modules["mlir"] is None
             else " (WARNING: mlir was imported)"))
    return 1 if bad else 0


_GRADCHECK_PROGRAMS = (None, ("reverse", ("dup", "dup", "active")),
                       ("forward", ("dup", "dup", "dup")))


def _gradcheck_types():
    from diffgpu.types import ArrayType, ScalarType
    return (ArrayType("float64", 1), ArrayType("float64", 1), ScalarType("float64"))


def _prepare_gradcheck(chip) -> list:
    from diffgpu.driver.launch import get_program
    keys = []
    for diff in _GRADCHECK_PROGRAMS:
        get_program(sq, _gradcheck_types(), chip, diff)
        keys.append(cache.cache_key(sq, _gradcheck_types(), chip, diff))
    return keys


def _run_gradcheck(cupy, keys, here, stale):
    """dg.gradcheck of sq on CuPy float32 arrays (checked in float64)."""
    try:
        if stale:
            for diff, key in zip(_GRADCHECK_PROGRAMS, keys):
                _preload(sq, _gradcheck_types(), here, diff, key)
        rng = np.random.default_rng(5)
        x = cupy.asarray(rng.standard_normal(20).astype(np.float32))
        y = cupy.zeros(20, cupy.float32)
        t0 = time.perf_counter()
        ok = dg.gradcheck(sq[1, 32], dg.Duplicated(y, cupy.zeros_like(y)),
                          dg.Duplicated(x, cupy.zeros_like(x)), dg.Active(0.7))
        ms = (time.perf_counter() - t0) * 1e3
        return ("gradcheck sq (full Jacobian)", "float64[:], float64[:], float64",
                f"{ms:.2f}", "-", "ok" if ok is True else "MISMATCH")
    except Exception as exc:
        if os.environ.get("DIFFGPU_DEBUG"):
            traceback.print_exc()
        msg = f"{type(exc).__name__}: {exc}".splitlines()[0][:70]
        return ("gradcheck sq", "?", "-", "-", f"ERROR {msg}")


def _run_bundle(cupy, path):
    """Load the AOT bundle and launch it on CuPy arrays (a reversed view too)."""
    try:
        b = dg.load_bundle(path)
        rng = np.random.default_rng(7)
        A, B = rng.standard_normal((2, 3000)).astype(np.float32)
        want = A[::-1] + np.float32(0.25) * B
        dA = cupy.asarray(A)[::-1]          # negative strides on the device
        t0 = time.perf_counter()
        b["axpy"][24, 128](dA, cupy.asarray(B), np.float32(0.25))
        cupy.cuda.get_current_stream().synchronize()
        ms = (time.perf_counter() - t0) * 1e3
        err, ok = compare([dA.get()], [want])
        return ("bundle axpy (reversed view)", "float32[:], float32[:], float32",
                f"{ms:.2f}", f"{err:.2e}", "ok" if ok else "MISMATCH")
    except Exception as exc:
        if os.environ.get("DIFFGPU_DEBUG"):
            traceback.print_exc()
        msg = f"{type(exc).__name__}: {exc}".splitlines()[0][:70]
        return ("bundle axpy", "?", "-", "-", f"ERROR {msg}")


def _table(rows):
    head = ("case", "signature", "ms", "max |err|", "status")
    widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
    line = "  ".join(h.ljust(w) for h, w in zip(head, widths))
    print(line + "\n" + "-" * len(line))
    for r in rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--prepare", metavar="DIR", help="compile the cases into DIR (needs MLIR)")
    g.add_argument("--run", metavar="DIR", help="run the cases from DIR on the GPU")
    p.add_argument("--chip", default="sm_90", help="GPU target for --prepare (default sm_90)")
    p.add_argument("--only", metavar="JSON", help="with --run: a file listing the indices "
                   "of the cases to run (one part of the check)")
    p.add_argument("--modules", metavar="NAME[,NAME]", help="with --prepare: only the cases "
                   "of these scripts/gpu_cases modules (default: every case)")
    a = p.parse_args(argv)
    if a.modules is not None and not a.prepare:
        p.error("--modules goes with --prepare")
    if a.prepare and a.modules is not None:
        return prepare_modules(a.prepare, a.chip, [n for n in a.modules.split(",") if n])
    if a.prepare:
        return prepare(a.prepare, a.chip)
    return run(a.run, a.only)


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Check diffgpu's PTX on a real GPU, from a cache compiled elsewhere.

Two steps, two machines:

    # here (MLIR, no GPU): compile every case for sm_90 into DIR (a cache
    # plus manifest.json and inputs/expected results as .npz)
    python scripts/gpu_check.py --prepare .gpucache [--chip sm_90]

    # on the GPU machine (numpy + CuPy, no MLIR, no pip): run every case from
    # the cache on CuPy arrays and compare; then the pytest GPU tests, which
    # read the same cache
    python scripts/gpu_check.py --run .gpucache
    python -m pytest test/python/test_gpu.py

Cases: the kernels below (the seed example, elementwise, strided 2-D,
atomics, shared memory + barriers, host-level reverse and forward mode),
every case of test/python/kernels_corpus.py in float32 and float64 (expected:
its numpy reference), the differentiated shared-memory/barrier/atomic kernels
of test/python/diff_corpus_gpu.py (launch, reverse, forward; small blocks
and blocks of two warps), dg.gradcheck on CuPy arrays, an AOT bundle, and the
signatures test/python/test_gpu.py launches. Expected results of the other
cases are the CPU's. `--run` prints a table and a summary and exits 1 on any
mismatch or error. It never imports MLIR (it blocks the import to prove it).
Prepare and run from the same sources: entries are keyed by the compiler's
sources too (if they differ, --run falls back to the keys stored at prepare
time and says so).
"""
from __future__ import annotations

import argparse
import importlib.util
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
from diffgpu.runtime import cache  # noqa: E402

# ---------------------------------------------------------------------------
# kernels
# ---------------------------------------------------------------------------


sys.path.insert(0, os.path.join(REPO, "test", "python"))
from kernels_seed import axpy  # noqa: E402  (the seed kernels, defined once)
from kernels_seed import df as seed_df  # noqa: E402
from kernels_seed import f as seed_f  # noqa: E402


@dg.kernel
def add2d(C, A, B):
    i = dg.global_id(0)
    j = dg.global_id(1)
    if i < C.shape[0]:
        if j < C.shape[1]:
            C[i, j] = A[i, j] * B[i, j] + 1.0


@dg.kernel
def total(out, x):
    i = dg.global_id(0)
    if i < len(x):
        dg.atomic_add(out, 0, x[i])


@dg.kernel
def block_sum(out, x):
    s = dg.shared_array(64, np.float32)
    t = dg.thread_id(0)
    i = dg.global_id(0)
    s[t] = 0.0
    if i < len(x):
        s[t] = x[i]
    dg.syncthreads()
    if t == 0:
        acc = 0.0
        for k in range(64):
            acc += s[k]
        out[dg.block_id(0)] = acc


@dg.kernel
def sq(y, x, a):
    i = dg.global_id(0)
    if i < len(x):
        y[i] = a * dg.sin(x[i]) * x[i]


# ---------------------------------------------------------------------------
# cases: (name, kernel, grid, block, mode, args(rng)); mode "launch",
# "reverse" or "forward"; args are values or activities
# ---------------------------------------------------------------------------

def _f32(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def builtin_cases():
    n = 1000
    return [
        ("seed f", seed_f, 1, 1, "launch", lambda r: [np.full(1, 3.0, np.float32)]),
        ("seed df", seed_df, 1, 1, "launch",
         lambda r: [np.full(1, 3.0, np.float32), np.ones(1, np.float32)]),
        ("axpy f32", axpy, 8, 128, "launch", lambda r: [_f32(r, n), _f32(r, n), np.float32(0.5)]),
        ("axpy f64 strided", axpy, 4, 128, "launch",
         lambda r: [r.standard_normal(2 * n)[::2], r.standard_normal(n), 1.5]),
        ("axpy i32", axpy, 8, 128, "launch",
         lambda r: [np.arange(n, dtype=np.int32), np.ones(n, np.int32), np.int32(3)]),
        ("add2d transposed", add2d, (4, 4), (16, 16), "launch",
         lambda r: [np.zeros((50, 40), np.float32), _f32(r, 40, 50).T, _f32(r, 50, 40)]),
        ("atomic total", total, 8, 128, "launch",
         lambda r: [np.zeros(1, np.float64), np.ones(n, np.float64)]),
        ("atomic total coarsened x16 + tail", total, 16, 128, "launch",
         lambda r: [np.zeros(1, np.float32), _f32(r, n)]),
        ("shared block_sum", block_sum, 16, 64, "launch",
         lambda r: [np.zeros(16, np.float32), np.arange(n, dtype=np.float32) % 7]),
        ("reverse sq", sq, 8, 128, "reverse",
         lambda r: [dg.Duplicated(np.zeros(n, np.float32), _f32(r, n)),
                    dg.Duplicated(_f32(r, n), np.zeros(n, np.float32)),
                    dg.Active(np.float32(1.5))]),
        ("forward sq", sq, 8, 128, "forward",
         lambda r: [dg.Duplicated(np.zeros(n, np.float64), np.zeros(n, np.float64)),
                    dg.Duplicated(r.standard_normal(n), r.standard_normal(n)), dg.Const(0.5)]),
    ]


def _test_module(filename: str, name: str):
    """Import test/python/<filename> as module `name` (None if missing)."""
    path = os.path.join(REPO, "test", "python", filename)
    if not os.path.exists(path):
        return None
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def corpus_cases():
    """Cases of test/python/kernels_corpus.py (`CASES` of `Case`: name,
    kernel, make(dtype, xp), ref(*numpy args), grid, block), in float32 and
    float64; their expected results come from the numpy reference `ref`."""
    mod = _test_module("kernels_corpus.py", "kernels_corpus")
    if mod is None:
        return []
    out = []
    for c in getattr(mod, "CASES", []):
        for dt in (np.float32, np.float64):
            out.append((f"corpus {c.name} {np.dtype(dt).name}", c.kernel, c.grid, c.block,
                        "launch", lambda r, c=c, dt=dt: c.make(dt, np), c.ref))
    return out


def diff_corpus_cases():
    """Cases of test/python/diff_corpus_gpu.py (`gpu_cases()`: kernels with
    shared memory, barriers and atomics; launch, reverse and forward mode,
    float32 and float64); expected: the numpy reference (launch) or the CPU."""
    mod = _test_module("diff_corpus_gpu.py", "diff_corpus_gpu")
    if mod is None:
        return []
    return mod.gpu_cases() + mod.load_variant(64, 16).gpu_cases()  # and 2-warp blocks


def atomics_cases():
    """Cases of test/python/test_atomics.py (`gpu_cases()`): atomic adds summed
    per block and per warp (2^26-term float32 sums, partial warps, early
    return, nested guards, integer counts, 3-D blocks, an Active scalar's
    gradient) and of test/python/test_stencil_adjoint.py (stencil gradients
    gathered per block), and of test/python/test_higher_order.py (second- and
    third-order derivatives); expected: a numpy reference or the CPU. The 2^26
    sums' "max |err|" over the sum (about 7.3e7) is their relative error."""
    out = []
    for filename in ("test_atomics.py", "test_stencil_adjoint.py", "test_higher_order.py"):
        mod = _test_module(filename, filename[:-3] + "_cases")
        if mod is not None:
            out += mod.gpu_cases()
    return out


def gradient_cases():
    """The gradient corpus of test/python/test_gradients.py (`CASES`: kernel,
    grid, block, args(), activity kinds), each in reverse mode (random
    adjoints in the shadows, gradients of Active scalars returned) and in
    forward mode (random tangents); expected results: the CPU's."""
    mod = _test_module("test_gradients.py", "test_gradients_corpus")
    if mod is None:
        return []
    out = []
    for name, (kernel, grid, block, make, kinds) in getattr(mod, "CASES", {}).items():
        for mode in ("reverse", "forward"):
            out.append((f"grad {name} {mode}", kernel, grid, block, mode,
                        lambda r, make=make, kinds=kinds, mode=mode: _activities(
                            make(), kinds, mode, r), None))
    return out


def _activities(args, kinds, mode, rng):
    """Wrap args per activity kind; shadows/tangents random (zero for the
    forward tangents of outputs is not needed: random is the general case)."""
    out = []
    for a, kind in zip(args, kinds):
        is_array = isinstance(a, np.ndarray)
        if kind == "dup" and is_array and a.dtype.kind == "f":
            out.append(dg.Duplicated(a, rng.standard_normal(a.shape).astype(a.dtype)))
        elif kind in ("dup", "active") and not is_array and mode == "forward":
            out.append(dg.Duplicated(a, float(rng.standard_normal())))
        elif kind == "active" and mode == "reverse":
            out.append(dg.Active(a))
        else:
            out.append(a if is_array else dg.Const(a))
    return out


# ---------------------------------------------------------------------------
# arguments <-> files
# ---------------------------------------------------------------------------

def encode_args(args, arrays: dict, prefix: str) -> list:
    """JSON description of args; arrays go into `arrays` (saved as .npz)."""
    from diffgpu.activities import Activity
    out = []
    for i, a in enumerate(args):
        same = [j for j in range(i) if isinstance(a, np.ndarray) and args[j] is a]
        if same:  # the same array object again (in-place launches)
            out.append({"same_as": same[0]})
        elif isinstance(a, Activity):
            rec = {"activity": type(a).__name__, "value": _enc(a.value, arrays, f"{prefix}{i}v")}
            if a.shadow is not None:
                rec["shadow"] = _enc(a.shadow, arrays, f"{prefix}{i}s")
            out.append(rec)
        else:
            out.append(_enc(a, arrays, f"{prefix}{i}"))
    return out


def _enc(x, arrays, key):
    if isinstance(x, np.ndarray):
        arrays[key] = x.copy()  # the inputs, before any run changes them
        return {"array": key, "strides": list(x.strides), "shape": list(x.shape)}
    dtype = type(x).__name__ if isinstance(x, np.generic) else (
        "int" if isinstance(x, int) else "float")
    return {"scalar": float(x) if dtype != "int" and "int" not in dtype else int(x),
            "dtype": dtype}


def decode_args(desc, arrays, to_device):
    out = []
    for rec in desc:
        if "same_as" in rec:
            out.append(out[rec["same_as"]])
        elif "activity" in rec:
            cls = getattr(dg, rec["activity"])
            v = _dec(rec["value"], arrays, to_device)
            out.append(cls(v, _dec(rec["shadow"], arrays, to_device)) if "shadow" in rec
                       else cls(v))
        else:
            out.append(_dec(rec, arrays, to_device))
    return out


def _dec(rec, arrays, to_device):
    if "array" in rec:
        a = arrays[rec["array"]]
        return to_device(_restride(a, rec["strides"]))
    dtype = rec["dtype"]
    if dtype == "int":
        return int(rec["scalar"])
    if dtype == "float":
        return float(rec["scalar"])
    return getattr(np, dtype)(rec["scalar"])


def _restride(a, strides):
    """The same values laid out with the original strides (views stay views)."""
    strides = tuple(strides)
    if a.strides == strides or a.size == 0:
        return a.copy()
    if all(s > 0 for s in strides):
        span = sum(s * (n - 1) for s, n in zip(strides, a.shape)) // a.itemsize + 1
        base = np.zeros(span, a.dtype)
        view = np.lib.stride_tricks.as_strided(base, a.shape, strides)
        view[...] = a
        return view
    return a.copy()


def results(args, grads):
    """Every array after the run (primals, shadows) and the gradients."""
    from diffgpu.activities import Activity
    out = []
    for a in args:
        vals = [a.value, a.shadow] if isinstance(a, Activity) else [a]
        out += [np.asarray(_host(v)) for v in vals if v is not None and hasattr(v, "shape")]
    out += [np.asarray(float(g)) for g in grads or ()]
    return out


def _host(x):
    return x if isinstance(x, np.ndarray) or not hasattr(x, "get") else x.get()


def run_case(kernel, grid, block, mode, args):
    if mode == "launch":
        kernel[grid, block](*args)
        return None
    if mode == "generic":  # specialisation off (gpu_check_specialize.py)
        SPEC.run_generic(kernel, grid, block, args)
        return None
    if mode == "reverse":
        return dg.autodiff(kernel[grid, block], *args)
    dg.fwddiff(kernel[grid, block], *args)
    return None


def signature_of(kernel, args):
    from diffgpu.activities import Activity
    from diffgpu.runtime.args import arg_type
    prims = [a.value if isinstance(a, Activity) else a for a in args]
    return tuple(arg_type(p, kernel.arg_names[i])[0] for i, p in enumerate(prims))


def diff_of(mode, args):
    from diffgpu.activities import Activity
    if mode in ("launch", "generic"):
        return None
    return (mode, tuple(a.kind if isinstance(a, Activity) else "const" for a in args))


# ---------------------------------------------------------------------------
# prepare / run
# ---------------------------------------------------------------------------

def all_cases():
    """(name, kernel, grid, block, mode, make(rng), ref or None) of every case."""
    return ([c + (None,) for c in builtin_cases()] + corpus_cases() + gradient_cases()
            + diff_corpus_cases() + SPEC.cases() + atomics_cases())


def _copies(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def _prepare_case(directory, chip, k, name, kernel, grid, block, mode, make, ref) -> dict:
    from diffgpu.launch import get_program
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
        elif mode in ("reverse", "forward"):  # likewise for dg.autodiff / dg.fwddiff
            SPEC.diff_programs(run_case, kernel, grid, block, mode, args, chip)
        if ref is not None:  # expected: the numpy reference
            expect = _copies(args)
            ref(*expect)
            want = results(expect, None)
            try:  # and how the CPU fares against it, for the record
                run_case(kernel, grid, block, mode, args)
                _, ok = _compare(results(args, None), want)
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


def prepare(directory: str, chip: str) -> int:
    os.makedirs(directory, exist_ok=True)
    os.environ["DIFFGPU_CACHE_DIR"] = os.path.join(os.path.abspath(directory), "cache")
    manifest = {"chip": chip, "fingerprint": cache.compiler_fingerprint(), "cases": []}
    failed = 0
    for k, case in enumerate(all_cases()):
        rec = _isolated(lambda: _prepare_case(directory, chip, k, *case),
                        {"name": case[0], "kernel": case[1].name})
        if "error" in rec:
            failed += 1
            print(f"FAILED    {rec['name']:36s} {rec['error'].splitlines()[0][:150]}")
        else:
            print(f"prepared  {rec['name']:36s} {rec['signature']:40s} {rec['note']}")
        manifest["cases"].append(rec)
    try:  # dg.gradcheck on CuPy arrays: its float64 primal, reverse and forward
        manifest["gradcheck"] = _prepare_gradcheck(chip)
        print(f"prepared  {'gradcheck sq':36s} float64 primal, reverse, forward")
    except Exception as exc:
        failed += 1
        print(f"FAILED    gradcheck sq: {type(exc).__name__}: {exc}")
    try:  # the signatures test/python/test_gpu.py launches
        _test_module("test_gpu.py", "test_gpu").prepare(chip)
        print(f"prepared  {'test/python/test_gpu.py':36s} its kernels' signatures")
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
    with open(os.path.join(directory, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    print(f"\n{len(manifest['cases']) - failed} cases prepared for {chip} in {directory}"
          f"{f', {failed} failed to prepare' if failed else ''}")
    return 1 if failed else 0


def _preload(kernel, types, chip, diff, key):
    """Use the entry stored at prepare time even if the compiler sources
    changed since (its key then differs from the one computed now)."""
    from diffgpu.launch import Program
    from diffgpu.launch import STATS
    mem_key = (tuple(types), chip, diff)
    payload = cache.load(key)
    if payload is not None and mem_key not in kernel._programs:
        kernel._programs[mem_key] = Program(payload)
        STATS["preloaded"] += 1


def run(directory: str) -> int:
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
    for rec in manifest["cases"]:
        name = rec["name"]
        if "error" in rec or name not in cases:
            rows.append((name, rec.get("signature", "?"), "-", "-", "SKIP (not prepared)"))
            bad += 1
            continue
        kernel, grid, block, mode = cases[name]
        print(f"running {name}", file=sys.stderr, flush=True)
        try:
            data = np.load(os.path.join(directory, rec["file"]))
            args = decode_args(rec["args"], data, _to_device(cupy))
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
            err, ok = _compare(got, want)
            rows.append((name, rec["signature"], f"{ms:.2f}", f"{err:.2e}",
                         "ok" if ok else "MISMATCH"))
            bad += not ok
        except Exception as exc:
            bad += 1
            msg = f"{type(exc).__name__}: {exc}".splitlines()[0][:70]
            rows.append((name, rec.get("signature", "?"), "-", "-", f"ERROR {msg}"))
            if os.environ.get("DIFFGPU_DEBUG"):
                traceback.print_exc()
    if manifest.get("gradcheck"):
        row = _run_gradcheck(cupy, manifest["gradcheck"], here, stale)
        rows.append(row)
        bad += row[-1] != "ok"
    if manifest.get("bundle"):
        row = _run_bundle(cupy, os.path.join(directory, manifest["bundle"]))
        rows.append(row)
        bad += row[-1] != "ok"
    _table(rows)
    from diffgpu.launch import STATS
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
    from diffgpu.launch import get_program
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
        err, ok = _compare([dA.get()], [want])
        return ("bundle axpy (reversed view)", "float32[:], float32[:], float32",
                f"{ms:.2f}", f"{err:.2e}", "ok" if ok else "MISMATCH")
    except Exception as exc:
        if os.environ.get("DIFFGPU_DEBUG"):
            traceback.print_exc()
        msg = f"{type(exc).__name__}: {exc}".splitlines()[0][:70]
        return ("bundle axpy", "?", "-", "-", f"ERROR {msg}")


def _to_device(cupy):
    """numpy -> CuPy with the same strides (positive strides; others copied)."""
    def conv(a):
        if a.flags.c_contiguous or a.size == 0 or any(s <= 0 for s in a.strides):
            return cupy.asarray(np.ascontiguousarray(a))
        span = sum(s * (n - 1) for s, n in zip(a.strides, a.shape)) // a.itemsize + 1
        base = cupy.zeros(span, a.dtype)
        view = cupy.ndarray(a.shape, a.dtype, memptr=base.data, strides=a.strides)
        view[...] = cupy.asarray(np.ascontiguousarray(a))
        return view
    return conv


def _compare(got, want):
    if len(got) != len(want):
        return float("inf"), False
    worst, ok = 0.0, True
    for g, w in zip(got, want):
        g, w = np.asarray(g, np.float64), np.asarray(w, np.float64)
        if g.shape != w.shape:
            return float("inf"), False
        if g.size:
            err = float(np.max(np.abs(g - w)))
            worst = max(worst, err)
            ok &= bool(np.allclose(g, w, rtol=1e-4, atol=1e-5))
    return worst, ok


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
    a = p.parse_args(argv)
    if a.prepare:
        return prepare(a.prepare, a.chip)
    return run(a.run)


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Vector reductions against scalar atomics: row-gather gradients and a row scatter-add.

    python bench/vector_red.py --prepare bench/.cache/vector_red   # here (no GPU)
    python bench/vector_red.py --run bench/.cache/vector_red       # GPU: numpy + CuPy (+ JAX, torch)

The reverse mode of a row gather `out[i, d] = T[idx[i], d]` (an embedding
lookup: bench kernels in test/python/kernels_rows.py) adds each cotangent
row into a row of T's shadow: D adjacent atomic adds per thread, which sm_90
can do as `red.global.add.v4.f32` (lowering/reduce/vector_red.py). `--prepare`
records the program `dg.vjp` selects for each case (M = 2^22 lookups into
R = 2^16 rows, blocks of 256) and builds it twice from the same launch
facts, with `DIFFGPU_VECTOR_RED` on and off. `scatter4` is the primal
`scatter_rows4` (four `dg.atomic_add` per lookup); `misaligned` adds into a
view that starts one float into its buffer, so its vector program tests
the alignment at run time and takes the scalar fallback.

`--run` (no MLIR) checks every program's result against float64 numpy
(`np.add.at`) and times it with CUDA events (device time, median of
rounds): vector against scalar. Then the user-level comparison: `dg.vjp`
of each row gather (its programs from the prepared cache), JAX (`jax.vjp`
of `T[idx]`, jitted) and PyTorch (`autograd.grad` of `T[idx]`), in one
process, on the same data, each checked against numpy first, all timed by
one wall-clock timer around back-to-back calls and a device sync.
"""
from __future__ import annotations

import os
import pickle
import re
import sys
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "scripts")); import repo_imports; repo_imports.bootstrap()  # noqa: E402,E702,I001
sys.path.insert(0, os.path.join(REPO, "bench"))
sys.path.insert(0, os.path.join(REPO, "test", "python"))
from benchlib import cupy_ms, prepare_run, recorded_programs  # noqa: E402

ROWS, LOOKUPS, BLOCK = 1 << 16, 1 << 22, 256
FILE = "vector_red.pkl"
#: (label, width, misaligned, primal)
CASES = [("rows2 vjp", 2, False, False), ("rows4 vjp", 4, False, False),
         ("rows8 vjp", 8, False, False), ("scatter4 primal", 4, False, True),
         ("scatter4 misaligned", 4, True, True)]


def _inputs(width, rows=ROWS, m=LOOKUPS):
    rng = np.random.default_rng(width)
    table = rng.standard_normal(rows * width).astype(np.float32)
    idx = rng.integers(0, rows, m).astype(np.int32)
    g = rng.standard_normal(m * width).astype(np.float32)
    return table, idx, g


def _target(xp, size, misaligned):
    """A zeroed float32 array of `size`; `misaligned`: a view one float into its buffer."""
    base = xp.zeros(size + 1, np.float32)
    return base[1:] if misaligned else base[:-1]


def _call(label, width, misaligned, primal, xp, rows, m):
    """The diffgpu call of a case, on arrays of module `xp`."""
    import diffgpu as dg
    from kernels_rows import GATHERS, scatter_rows4

    table, idx, g = (xp.asarray(a) for a in _inputs(width, rows, m))
    grid = (m + BLOCK - 1) // BLOCK
    if primal:
        out = _target(xp, rows * 4, misaligned)
        return scatter_rows4, lambda: scatter_rows4[grid, BLOCK](out, idx, g)
    k = GATHERS[width]
    out = xp.zeros(m * width, np.float32)
    return k, lambda: dg.vjp(k[grid, BLOCK], table, idx, out, cotangents={"out": g})


def _ptx_counts(ptx: str) -> str:
    words = {"red.v4": r"\bred\.global\.add\.v4\.f32", "red.v2": r"\bred\.global\.add\.v2\.f32",
             "atom": r"\batom\.global\.add\.f32"}
    return " ".join(f"{k}={len(re.findall(v, ptx))}" for k, v in words.items())


def prepare(path: str, chip: str = "sm_90", rows: int = ROWS, lookups: int = LOOKUPS) -> None:
    m = lookups
    os.environ["DIFFGPU_CACHE_DIR"] = os.path.join(os.path.abspath(path), "cache")
    import diffgpu.driver.launch as L
    from diffgpu.interop import compile_only

    out = []
    with recorded_programs() as seen:
        with compile_only(chip):
            for label, width, misaligned, primal in CASES:
                del seen[:]
                kernel, call = _call(label, width, misaligned, primal, np, rows, m)
                call()
                defn, types, diff, facts = [s for s in seen if s[0] is kernel
                                            and s[3] is not None][-1]
                for variant, switch in (("vector", "1"), ("scalar", "0")):
                    os.environ["DIFFGPU_VECTOR_RED"] = switch
                    try:
                        payload, _ = L.build_payload(defn, types, chip, diff, facts)
                    finally:
                        os.environ.pop("DIFFGPU_VECTOR_RED")
                    out.append({"case": label, "variant": variant, "payload": payload,
                                "width": width, "misaligned": misaligned, "primal": primal})
                    print(f"{label:22} {variant:7} {_ptx_counts(payload['ptx'])}  "
                          f"args {payload['arg_names']}  [{facts.key()}]", flush=True)
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, FILE), "wb") as fh:
        pickle.dump({"chip": chip, "rows": rows, "m": m, "block": BLOCK, "programs": out}, fh)
    print(f"{len(out)} programs for {chip} stored in {path}")


def wall_ms(fn, sync, reps: int = 20, rounds: int = 7) -> float:
    """The one timer of the peer comparison: wall clock of `reps`
    back-to-back calls and a device sync, median of `rounds`."""
    fn()
    sync()
    ts = []
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(reps):
            fn()
        sync()
        ts.append((time.perf_counter() - t) * 1e3 / reps)
    return sorted(ts)[len(ts) // 2]


def _expected(width, rows, m):
    table, idx, g = _inputs(width, rows, m)
    want = np.zeros((rows, width))
    np.add.at(want, idx, g.reshape(m, width).astype(np.float64))
    return table, idx, g, want.ravel()


def _program_run(row, rows, m, cp):
    """(launch, result array, error vs numpy) of one prepared program."""
    from diffgpu.driver.launch import Program

    prog = Program(row["payload"])
    width, primal = row["width"], row["primal"]
    table, idx, g, want = _expected(width, rows, m)
    grad = _target(cp, table.size, row["misaligned"])  # shadow(T), or the primal's out
    d = {"T": cp.asarray(table), "shadow(T)": grad, "idx": cp.asarray(idx), "x": cp.asarray(g),
         "out": grad if primal else cp.zeros(m * width, np.float32),
         "shadow(out)": cp.asarray(g)}
    args = [d[k] for k in row["payload"]["arg_names"]]
    grid = ((m + BLOCK - 1) // BLOCK // prog.coarsen, 1, 1)

    def launch():
        if not primal:
            d["shadow(out)"][...] = d["x"]  # the reverse sweep consumes the cotangent
        prog.gpu.launch(args, prog.flat_types, grid, (BLOCK, 1, 1))

    launch()
    cp.cuda.runtime.deviceSynchronize()
    got = cp.asnumpy(grad).astype(np.float64)
    err = float(np.linalg.norm(got - want) / np.linalg.norm(want))

    def timed():
        grad.fill(0)
        launch()
    return timed, err


def _peers(width, rows, m, cp, cache):
    """{name: (call, sync, result)} of the row-gather gradient: diffgpu's
    `dg.vjp` (programs from the prepared cache), JAX and PyTorch."""
    table, idx, g = _inputs(width, rows, m)
    out = {}
    os.environ["DIFFGPU_CACHE_DIR"] = cache
    import diffgpu as dg
    from kernels_rows import GATHERS

    k = GATHERS[width][(m + BLOCK - 1) // BLOCK, BLOCK]
    ct, ci, cg, co = cp.asarray(table), cp.asarray(idx), cp.asarray(g), \
        cp.zeros(m * width, np.float32)

    def vjp():
        return dg.vjp(k, ct, ci, co, cotangents={"out": cg})["T"]
    out["diffgpu dg.vjp"] = (vjp, cp.cuda.runtime.deviceSynchronize,
                             lambda: cp.asnumpy(vjp()))
    try:
        os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
        import jax
        import jax.numpy as jnp
        jt, ji, jg = jnp.asarray(table.reshape(rows, width)), jnp.asarray(idx), \
            jnp.asarray(g.reshape(m, width))
        f = jax.jit(lambda t, i, gg: jax.vjp(lambda tt: tt[i], t)[1](gg)[0])
        out["JAX"] = (lambda: f(jt, ji, jg), lambda: jax.block_until_ready(f(jt, ji, jg)),
                      lambda: np.asarray(f(jt, ji, jg)))
    except Exception as exc:  # noqa: BLE001 - a missing peer is reported, not fatal
        print(f"JAX unavailable: {exc}")
    try:
        import torch
        tt = torch.tensor(table.reshape(rows, width), device="cuda", requires_grad=True)
        ti = torch.tensor(idx, device="cuda", dtype=torch.int64)
        tg = torch.tensor(g.reshape(m, width), device="cuda")

        def tgrad():
            return torch.autograd.grad(tt[ti], tt, tg)[0]
        out["PyTorch"] = (tgrad, torch.cuda.synchronize, lambda: tgrad().cpu().numpy())
    except Exception as exc:  # noqa: BLE001
        print(f"PyTorch unavailable: {exc}")
    return out


def run(path: str) -> int:
    sys.modules["mlir"] = None  # the GPU machine has no MLIR: prove it
    import cupy as cp

    with open(os.path.join(path, FILE), "rb") as fh:
        data = pickle.load(fh)
    rows, m = data["rows"], data["m"]
    bad, lines, wall = 0, [], {}
    for row in data["programs"]:
        timed, err = _program_run(row, rows, m, cp)
        if err > 1e-5:
            bad += 1
            print(f"WRONG: {row['case']} {row['variant']}: relative error {err:.2e}")
        lines.append((row["case"], row["variant"], cupy_ms(timed) * 1e3, err))
    cache = os.path.join(os.path.abspath(path), "cache")
    for width in (2, 4, 8):
        want = _expected(width, rows, m)[3]
        for name, (fn, sync, result) in _peers(width, rows, m, cp, cache).items():
            err = float(np.linalg.norm(np.asarray(result(), np.float64).ravel() - want)
                        / np.linalg.norm(want))
            if err > 1e-5:
                bad += 1
                print(f"WRONG: {name} rows{width}: relative error {err:.2e}")
            wall[(width, name)] = (wall_ms(fn, sync) * 1e3, err)
    dev = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    print(f"\n{dev}: {m} lookups of float32 rows in a {rows}-row table, blocks of {BLOCK}")
    print("programs, device time (CUDA events; includes zeroing the gradient and, for the")
    print("gradients, restoring the cotangent the reverse sweep consumes):")
    print(f"{'case':22} {'variant':7} {'device us':>10}  error vs float64 numpy")
    for case, variant, dt, err in lines:
        print(f"{case:22} {variant:7} {dt:10.1f}  {err:.1e}")
    print("\nrow-gather gradient per call, one wall-clock timer, same data (us; error):")
    names = sorted({k[1] for k in wall})
    print(f"{'D':>3} " + " ".join(f"{n:>24}" for n in names))
    for width in (2, 4, 8):
        cells = [wall.get((width, n)) for n in names]
        print(f"{width:3d} " + " ".join(f"{c[0]:14.1f} ({c[1]:.0e})" if c else f"{'-':>24}"
                                        for c in cells))
    print(f"\n{bad} wrong results")
    return 1 if bad else 0


def main(argv=None) -> int:
    return prepare_run(__doc__, prepare, run, argv, rows=ROWS, lookups=LOOKUPS)


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Variants of the reduction and stencil programs, each timed on its own.

    python bench/reduce_variants.py --prepare bench/.cache/reduce   # here (no GPU)
    python bench/reduce_variants.py --run bench/.cache/reduce       # GPU: numpy + CuPy only

Which choice of the compiler costs the sum of squares' and the stencil's
Enzyme-convention gradients (`dg.autodiff` with Duplicated arrays, as
bench/peers.py's FB_autodiff) their time? `--prepare` records the programs
the runtime selects for the bench kernels (bench/peer_cases.py) at N
elements in blocks of 256, then builds each again from the same launch facts
with one choice changed, straight through the compiler (launch.build_payload:
nothing enters the program cache):

- `sumsq` primal and `sumsq` dup/dup gradient: coarsened by 16 (the
  runtime's choice for a grid divisible by 16) or by 4 (`grid_div16` off),
  each with the cross-block float64 finish (lowering/reduce/grid_sum.py) or with
  the per-block float32 add at the target (`grid_sum.ENABLED` off);
- `stencil` dup/dup gradient: 32-bit index arithmetic (`index32`, the
  runtime's choice) or 64-bit;
- each program with the finish once more with its fences made
  release-only in the PTX text (`... rel`, `_release_fences`).

It prints per program the atomics, fences and vector loads of its PTX.
`--run` loads every program with the runtime's GpuProgram (no MLIR), checks
its result against float64 numpy, then times back-to-back launches of it
(CUDA events, median of rounds) and prints one table of device times.
"""
from __future__ import annotations

import dataclasses
import os
import pickle
import re
import sys

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "scripts")); import repo_imports; repo_imports.bootstrap()  # noqa: E402,E702,I001
sys.path.insert(0, os.path.join(REPO, "bench"))
from benchlib import cupy_ms, prepare_run, recorded_programs  # noqa: E402

N = 1 << 26
BLOCK = 256
FILE = "variants.pkl"


def _calls(kernels, n, xp):
    """(label, kernel, call) of the launches whose programs are varied."""
    import diffgpu as dg
    grid = (n + BLOCK - 1) // BLOCK
    x = xp.asarray(np.random.default_rng(0).standard_normal(n).astype(np.float32))
    out, dout = xp.zeros(1, np.float32), xp.ones(1, np.float32)
    y, dy = xp.zeros(n, np.float32), xp.ones(n, np.float32)
    ss, st = kernels["sumsq"], kernels["stencil"]
    return [
        ("sumsq P", ss, lambda: ss[grid, BLOCK](out, x)),
        ("sumsq dup_dup", ss, lambda: dg.autodiff(
            ss[grid, BLOCK], dg.Duplicated(out, dout), dg.Duplicated(x, xp.zeros_like(x)))),
        ("sumsq vjp", ss, lambda: dg.vjp(ss[grid, BLOCK], out, x, cotangents={"out": dout})),
        ("stencil dup_dup", st, lambda: dg.autodiff(
            st[grid, BLOCK], dg.Duplicated(y, dy), dg.Duplicated(x, xp.zeros_like(x)))),
    ]


def _variants(label, facts):
    """(variant name, facts, finish on) of one recorded program."""
    if label.startswith("sumsq"):
        x4 = dataclasses.replace(facts, grid_div16=False)
        return [("x16 finish", facts, True), ("x16 no-finish", facts, False),
                ("x4 finish", x4, True), ("x4 no-finish", x4, False)]
    return [("index32", facts, True),
            ("index64", dataclasses.replace(facts, index32=False), True)]


def _ptx_counts(ptx: str, entry: str) -> str:
    body = ptx[ptx.index(f".entry {entry}"):]
    words = {"atom": r"\batom\.global", "red": r"\bred\.global", "fence": r"\bfence\.",
             "ld.v4": r"\bld\.global(?:\.nc)?\.v4", ".local": r"\.local\b",
             "mul.wide": r"\bmul\.wide"}
    return " ".join(f"{k}={len(re.findall(v, body))}" for k, v in words.items())


def _release_fences(payload) -> dict:
    """The payload with its PTX's `fence.acq_rel.gpu` made `fence.release.gpu`
    (PTX 8.6, sm_90). LLVM prints every `llvm.fence` of the finish as
    acq_rel, which ptxas assembles as MEMBAR.ALL.GPU, ERRBAR and CCTL.IVALL
    (the SM's L1 invalidated: the acquire half) and then keeps the scratch
    adds as ATOMG; `fence.release.gpu` is MEMBAR and ERRBAR only, and the
    adds whose result is unused become REDG. The finish reads the scratch
    only with atomics (at the L2), so the release half is what orders it;
    this variant times what the acquire half costs per block."""
    ptx = payload["ptx"].replace("fence.acq_rel.gpu", "fence.release.gpu")
    ptx = re.sub(r"^\.version (\d+)\.(\d+)$",
                 lambda m: m.group(0) if (int(m.group(1)), int(m.group(2))) >= (8, 6)
                 else ".version 8.6", ptx, count=1, flags=re.M)
    return dict(payload, ptx=ptx)


def prepare(path: str, chip: str = "sm_90", n: int = N) -> None:
    os.environ["DIFFGPU_CACHE_DIR"] = os.path.join(os.path.abspath(path), "cache")
    import peer_cases as PC

    import diffgpu.driver.launch as L
    from diffgpu.interop import compile_only
    from diffgpu.lowering.reduce import grid_sum

    kernels = PC.kernels()
    rows = []
    with recorded_programs() as seen:
        with compile_only(chip):
            for label, kernel, call in _calls(kernels, n, np):
                del seen[:]
                call()
                (found,) = [s for s in seen if s[0] is kernel and s[3] is not None
                            and (s[2] is None) == label.endswith(" P")]
                defn, types, diff, facts = found
                for name, f, finish in _variants(label, facts):
                    grid_sum.ENABLED = finish
                    try:
                        payload, _ = L.build_payload(defn, types, chip, diff, f)
                    finally:
                        grid_sum.ENABLED = True
                    more = [(name, payload)]
                    if finish and "fence.acq_rel.gpu" in payload["ptx"]:
                        more.append((name + " rel", _release_fences(payload)))
                    for name, payload in more:
                        rows.append({"case": label, "variant": name, "payload": payload,
                                     "facts": f.key()})
                        print(f"{label:16} {name:18} coarsen={payload.get('coarsen') or 1:<3} "
                              f"{_ptx_counts(payload['ptx'], payload['entry'])}  [{f.key()}]",
                              flush=True)
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, FILE), "wb") as fh:
        pickle.dump({"chip": chip, "n": n, "block": BLOCK, "rows": rows}, fh)
    print(f"{len(rows)} programs for {chip} (N = {n}) stored in {path}")


def _time(fn) -> float:
    return cupy_ms(fn) * 1e3  # us (bench/benchlib.py)


def _arrays(case, n, cp):
    """Host inputs, device arguments by entry name, and the check of the
    first launch (returns the relative errors by output name)."""
    x = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    d = {"x": cp.asarray(x), "shadow(x)": cp.zeros(n, np.float32)}
    if case.startswith("sumsq"):
        d["out"], d["shadow(out)"] = cp.zeros(1, np.float32), cp.full(1, 0.5, np.float32)
        want = {"out": np.array([np.dot(x.astype(np.float64), x)])}
        if case.endswith("dup_dup"):
            want["shadow(x)"] = 2 * x.astype(np.float64) * 0.5
        elif case.endswith("vjp"):  # out's writes are dropped: only the gradient
            want = {"shadow(x)": 2 * x.astype(np.float64) * 0.5}
    else:
        g = np.random.default_rng(2).standard_normal(n).astype(np.float32)
        d["y"], d["shadow(y)"] = cp.zeros(n, np.float32), cp.asarray(g)
        x64, g64 = x.astype(np.float64), g.astype(np.float64)
        y = np.zeros(n)
        y[1:-1] = 0.25 * x64[:-2] + 0.5 * x64[1:-1] + 0.25 * x64[2:]
        dx = np.zeros(n)
        dx[:-2] += 0.25 * g64[1:-1]
        dx[1:-1] += 0.5 * g64[1:-1]
        dx[2:] += 0.25 * g64[1:-1]
        want = {"y": y, "shadow(x)": dx}
    return d, want


def run(path: str) -> int:
    sys.modules["mlir"] = None  # the GPU machine has no MLIR: prove it
    import cupy as cp

    from diffgpu.driver.launch import Program

    with open(os.path.join(path, FILE), "rb") as fh:
        data = pickle.load(fh)
    n, block = data["n"], data["block"]
    grid = (n + block - 1) // block
    bad, rows = 0, []
    for row in data["rows"]:
        prog = Program(row["payload"])
        names = row["payload"]["arg_names"]
        d, want = _arrays(row["case"], n, cp)
        args = [d[k] for k in names]
        g = (grid // prog.coarsen, 1, 1)

        def launch(prog=prog, args=args, g=g):
            prog.gpu.launch(args, prog.flat_types, g, (block, 1, 1))
        launch()
        cp.cuda.runtime.deviceSynchronize()
        errs = []
        for k, w in want.items():
            got = cp.asnumpy(d[k]).astype(np.float64)
            err = float(np.linalg.norm(got - w) / max(np.linalg.norm(w), 1e-30))
            errs.append(f"{k} {err:.1e}")
            if err > 1e-5:
                bad += 1
                print(f"WRONG: {row['case']} {row['variant']}: {k} relative error {err:.2e}")
        rows.append((row["case"], row["variant"], prog.coarsen, _time(launch), ", ".join(errs)))
    dev = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    print(f"device time per launch, N = {n} float32, blocks of {block}, {dev}")
    print(f"{'case':16} {'variant':18} {'coarsen':>7} {'us':>9}  checked vs float64 numpy")
    for case, variant, c, t, errs in rows:
        print(f"{case:16} {variant:18} {c:7d} {t:9.1f}  {errs}")
    print(f"{bad} wrong results")
    return 1 if bad else 0


def main(argv=None) -> int:
    return prepare_run(__doc__, prepare, run, argv, n=N)


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""diffgpu against PyTorch eager, torch.compile and JAX on 10 computations
(the layer norm in two diffgpu forms), primal (P) and forward + backward
(FB), same data, same device timer.

Two steps, two machines (the GPU machine has no MLIR):

    python bench/peers.py --prepare bench/.cache      # here: compile for sm_90, no GPU
    python bench/peers.py --run bench/.cache          # on the GPU: time, table, JSON
    python bench/peers.py --run bench/.cache --cpu-smoke   # here: the --run logic on
                                                           # numpy, tiny N, no peers' GPU

Per computation (bench/peer_cases.py): diffgpu P (the kernel), FB (`dg.vjp`:
new gradient arrays, cotangent untouched) and FB_autodiff (host-level
`dg.autodiff` with Enzyme's convention: shadows accumulate, the cotangent is
consumed, the primal is written); PyTorch eager (`autograd.grad`),
torch.compile (compiled forward, its AOT backward) and JAX (`jit(f)`,
`jit(vjp)` with the cotangent as an input). Every diffgpu result is compared
with float64 numpy before it is timed. Times: median over rounds of
back-to-back calls between CUDA events (JAX: wall clock around the same
calls, ended by block_until_ready). Floors: the bytes each computation must
move over the copy bandwidth measured by a device-to-device copy.
Writes docs/gpu/peers-h200.json (and peers-h200.png with matplotlib), or
peers-h200.json/.png in $OUT when that is set (--json/--png override).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import pickle
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if __name__ == "__main__" and "--run" in sys.argv and "--cpu-smoke" not in sys.argv:
    sys.modules["mlir"] = None  # the GPU run must not need MLIR: prove it
sys.path.insert(0, os.path.join(REPO, "scripts"))
sys.path.insert(0, os.path.join(REPO, "bench"))
import repo_imports  # noqa: E402

repo_imports.bootstrap()

import numpy as np  # noqa: E402

import diffgpu as dg  # noqa: E402
import peer_cases as PC  # noqa: E402
from peer_backends import PEERS, Device, Host, add4_args, launch_cost  # noqa: E402

N = 1 << 26
SMOKE_N = 1 << 12
#: when and from which commit --prepare compiled the programs (read by preload)
PREPARED: dict = {}
BLOCK = 256
JSON_OUT = os.path.join(REPO, "docs", "gpu", "peers-h200.json")
PNG_OUT = os.path.join(REPO, "docs", "gpu", "peers-h200.png")
TOL = 1e-4       # elementwise: max |err| / max(1, max |ref|)
TOL_SUM = 1e-3   # reductions (float32 accumulation order)


# ---------------------------------------------------------------------------
# the diffgpu calls of one case (shared by --prepare and --run)
# ---------------------------------------------------------------------------

def grid_for(n):
    return (n + BLOCK - 1) // BLOCK


def dg_args(case, arrs):
    return [arrs[p] for p in case.params]


def autodiff_acts(case, args, shadows):
    """Activities of the Enzyme-convention gradient: Duplicated float arrays,
    Active float scalars, Const integer arrays."""
    acts = []
    for p, a in zip(case.params, args):
        if isinstance(a, float):
            acts.append(dg.Active(a))
        elif np.dtype(a.dtype).kind == "f":
            acts.append(dg.Duplicated(a, shadows[p]))
        else:
            acts.append(dg.Const(a))
    return acts


def diffgpu_calls(case, kernels, arrs, g, n, xp):
    """The three diffgpu calls of a case, as --run makes them: (primal,
    vjp, autodiff, activities of the autodiff call, its shadows)."""
    grid, block = case.geometry(n) if case.geometry else (grid_for(n), BLOCK)
    launch = kernels[case.kernel][grid, block]
    args = dg_args(case, arrs)
    cot = {case.out: g}
    shadows = {p: xp.zeros_like(arrs[p]) for p in case.params
               if not isinstance(arrs[p], float) and np.dtype(arrs[p].dtype).kind == "f"}
    shadows[case.out] = g.copy()
    acts = autodiff_acts(case, args, shadows)
    return (lambda: launch(*args), lambda: dg.vjp(launch, *args, cotangents=cot),
            lambda: dg.autodiff(launch, *acts), acts, shadows)


def prepare(directory: str, chip: str, n: int, only=None) -> None:
    """Compile every program --run needs for `chip`: the same calls on numpy
    arrays of the same shapes inside `diffgpu.interop.compile_only(chip)`
    (the launch path's target is `chip`, nothing runs). The programs (and the
    read/write facts of dg.vjp) are stored with the keys the runtime looks
    them up by."""
    from diffgpu.hostdiff import plan
    from diffgpu.interop import compile_only

    kernels = PC.kernels()
    rng = np.random.default_rng(0)
    with compile_only(chip):
        for case in PC.cases(n):
            if only and case.name not in only:
                continue
            arrs = case.make(rng)
            g = np.ones_like(arrs[case.out])
            t0 = time.perf_counter()
            for call in diffgpu_calls(case, kernels, arrs, g, n, np)[:3]:
                call()
            print(f"{case.name}: compiled in {time.perf_counter() - t0:.1f} s", flush=True)
        kernels["add4"][4, 256](*add4_args(np))
    os.makedirs(directory, exist_ok=True)
    entries = []
    for name, k in kernels.items():
        for key, prog in k._programs.items():
            entries.append(("program", name, key, prog.payload))
        for types, facts in plan._ACCESS.get(k, {}).items():
            entries.append(("access", name, types, facts))
    with open(os.path.join(directory, "programs.pkl"), "wb") as f:
        pickle.dump({"chip": chip, "n": n, "entries": entries,
                     "prepared": f"{time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}, "
                                 f"{_head()}"}, f)
    print(f"{len(entries)} programs and analyses for {chip} (N = {n}) stored in {directory}")


def _head() -> str:
    """The checkout's commit (and whether it has local changes), for the log."""
    import subprocess
    try:
        head = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", REPO, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "commit unknown"
    return f"commit {head or 'unknown'}" + (" + local changes" if dirty else "")


def preload(directory: str, here: str) -> int:
    """Put the prepared programs into the kernels' tables (no cache keys, no
    compiler sources involved); a chip other than the prepared one is used
    under its own name (same PTX: it runs if the chip can run it)."""
    from diffgpu.hostdiff import plan
    from diffgpu.driver.launch import Program

    with open(os.path.join(directory, "programs.pkl"), "rb") as f:
        data = pickle.load(f)
    if "prepared" in data:
        PREPARED["at"] = data["prepared"]
    kernels = PC.kernels()
    count = 0
    for kind, name, key, value in data["entries"]:
        k = kernels[name]
        if kind == "access":
            plan._ACCESS.setdefault(k, {})[key] = value
        else:
            types, target, diff = key[0], key[1], key[2]
            if target != data["chip"]:
                continue
            k._programs[(types, here) + tuple(key[2:])] = Program(value)
            assert diff is None or isinstance(diff, tuple)
        count += 1
    return kernels, count


# ---------------------------------------------------------------------------
def _err(got, want, idx):
    got = np.asarray(got, np.float64).reshape(-1) if np.ndim(got) else np.array([got], float)
    want = np.asarray(want, np.float64).reshape(-1)
    if idx is not None:
        got = got[idx]
    return float(np.max(np.abs(got - want)) / max(1.0, float(np.max(np.abs(want)))))


# ---------------------------------------------------------------------------
# one case
# ---------------------------------------------------------------------------

def run_case(be, case, kernels, n, rng, notes, deadline=math.inf):
    """(timings {impl: {P, FB, ...}}, errors {what: (max rel error, tolerance)})
    of one case; a failing stage is a note and a missing entry, not a crash."""
    host = case.make(rng)
    h64 = {p: (v.astype(np.float64) if isinstance(v, np.ndarray) and v.dtype.kind == "f"
               else v) for p, v in host.items()}
    g_host = PC._f32(rng, int(np.prod(host[case.out].shape)))
    g_host = g_host.reshape(host[case.out].shape)
    arrs = {p: be.to(v) for p, v in host.items()}
    g = be.to(g_host)
    s = PC.sample(n)
    primal, vjp, autodiff, acts, shadows = diffgpu_calls(case, kernels, arrs, g, n, be.xp)
    args = dg_args(case, arrs)
    res = {"diffgpu": {}}
    errors = {}
    refs = case.grad_ref(h64, g_host.astype(np.float64), s)

    def tol(name, idx):
        return TOL_SUM if (idx is None or name == "a" or case.name == "sumsq") else TOL

    def check_primal():
        primal()
        be.sync()
        for name, (want, idx) in case.primal_ref(h64, s).items():
            errors[f"P {name}"] = (_err(be.get(arrs[name]), want, idx), tol(name, idx))
        if case.name == "sumsq":
            arrs["out"].fill(0)

    def check_vjp():  # outputs not written, cotangent untouched
        g_before = be.get(g).copy()
        grads = vjp()
        be.sync()
        for name, (want, idx) in refs.items():
            errors[f"FB {name}"] = (_err(be.get(grads[name]), want, idx), tol(name, idx))
        if not np.array_equal(be.get(g), g_before):
            errors["FB cotangent untouched"] = (1.0, 0.0)

    def check_autodiff():  # Enzyme convention on fresh shadows: dy = g consumed
        active = autodiff()
        be.sync()
        got = dict(shadows)
        got.update(zip([p for p, a in zip(case.params, args) if isinstance(a, float)], active))
        for name, (want, idx) in refs.items():
            errors[f"FB_autodiff {name}"] = (_err(be.get(got[name]), want, idx),
                                             tol(name, idx))

    for what, check, fn in (("P", check_primal, primal), ("FB", check_vjp, vjp),
                            ("FB_autodiff", check_autodiff, autodiff)):
        try:
            check()  # every result is compared before it is timed
            res["diffgpu"][what] = be.time(fn)
        except Exception as exc:
            errors[f"{what} raised"] = (math.inf, 0.0)
            notes.add(f"diffgpu {case.name} {what}: {type(exc).__name__}: "
                      f"{str(exc).splitlines()[0][:160] if str(exc) else ''}")

    for peer, fn in PEERS:
        if peer == "torch_compile" and time.perf_counter() > deadline:
            notes.add("torch_compile: later cases (time budget spent; --budget)")
            continue
        try:
            res[peer] = fn(be, case, host, g_host)
            values = res[peer].pop("values", None) or {}
            for name, (want, idx) in {**case.primal_ref(h64, s), **refs}.items():
                if name in values:  # the peers' results checked as diffgpu's are
                    errors[f"{peer} {name}"] = (_err(values[name], want, idx), tol(name, idx))
        except Exception as exc:  # a peer missing or failing: a note, not a crash
            notes.add(f"{peer}: {type(exc).__name__}: {str(exc).splitlines()[0][:100]}"
                      if str(exc) else f"{peer}: {type(exc).__name__}")
    return res, errors


# ---------------------------------------------------------------------------
def print_table(dev, n, copy_gbps, results, floors):
    print(f"\n{dev}, N = {n} float32 elements, block {BLOCK}; copy bandwidth "
          f"{copy_gbps:.0f} GB/s; times in ms (median of rounds)")
    head = (f"{'case':12} {'impl':14} {'P':>8} {'FB':>8} {'FB_autodiff':>11} "
            f"{'P/floor':>8} {'FB/floor':>8} {'FB/best peer':>12}")
    print(head)
    print("-" * len(head))
    for name, res in results.items():
        fl = floors[name]
        peers = [v["FB"] for k, v in res.items() if k != "diffgpu" and "FB" in v]
        best = min(peers) if peers else math.nan
        print(f"{name:12} {'floor':14} {fl['P']:8.3f} {fl['FB']:8.3f}")
        for impl, v in res.items():
            p, fb, ad = (v.get(k, math.nan) for k in ("P", "FB", "FB_autodiff"))
            print(f"{'':12} {impl:14} {p:8.3f} {fb:8.3f} "
                  f"{(f'{ad:11.3f}' if impl == 'diffgpu' else ' ' * 11)} "
                  f"{p / fl['P']:8.2f} {fb / fl['FB']:8.2f} {fb / best:12.2f}")


def print_targets(results, floors, cost):
    """The issue's targets, met or missed, from this run's numbers."""
    rows = []

    def best_peer(res):
        fbs = [v["FB"] for k, v in res.items() if k != "diffgpu" and "FB" in v]
        return min(fbs) if fbs else math.nan

    for c in ("square", "saxpy", "softplus", "loop16"):
        if c in results:
            fb, best = results[c]["diffgpu"].get("FB", math.nan), best_peer(results[c])
            rows.append((f"{c}: dg.vjp FB <= best peer FB", fb / best <= 1.0,
                         f"{fb:.3f} / {best:.3f} ms"))
    for c in ("square", "saxpy", "softplus"):
        if c in results:
            ad = results[c]["diffgpu"].get("FB_autodiff", math.nan)
            own = floors[c]["FB_autodiff"]  # its own traffic: Enzyme's convention
            rows.append((f"{c}: FB_autodiff <= 1.25x its own floor", ad / own <= 1.25,
                         f"{ad / own:.2f}x"))
            p = results[c]["diffgpu"].get("P", math.nan)
            rows.append((f"{c}: primal >= 90% of copy bandwidth", floors[c]["P"] / p >= 0.9,
                         f"{100 * floors[c]['P'] / p:.0f}%"))
    if "diffgpu" in cost:
        rows.append(("launch <= 15 us (cached 4-array kernel)", cost["diffgpu"] <= 15.0,
                     f"{cost['diffgpu']:.1f} us"))
    print("\ntargets:")
    for what, ok, val in rows:
        print(f"  {'met   ' if ok else 'MISSED'} {what}: {val}")


def chart(path, results):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing: no chart")
        return
    names = list(results)
    impls = ["diffgpu", "torch_eager", "torch_compile", "jax"]
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.5))
    for ax, what in zip(axes, ("P", "FB")):
        w = 0.2
        for j, impl in enumerate(impls):
            ys = [results[c].get(impl, {}).get(what, math.nan) for c in names]
            ax.bar([i + (j - 1.5) * w for i in range(len(names))], ys, w, label=impl)
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels(names)
        ax.set_yscale("log")
        ax.set_ylabel("ms (log)")
        ax.set_title("primal" if what == "P" else "forward + backward")
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"chart written to {path}")


def run(directory: str, smoke: bool, json_out: str, png_out: str, only=None,
        budget=300.0) -> int:
    start = time.perf_counter()
    be = Host() if smoke else Device()
    here = "host" if smoke else be.chip
    n = SMOKE_N if smoke else N
    kernels = PC.kernels()
    if directory and os.path.exists(os.path.join(directory, "programs.pkl")):
        kernels, count = preload(directory, here)
        print(f"{count} prepared programs and analyses loaded from {directory} "
              f"(prepared {PREPARED.get('at', 'at an unrecorded time')})")
    elif not smoke:
        print(f"no prepared programs in {directory}: run --prepare first")
        return 2
    rng = np.random.default_rng(0)
    src = be.xp.asarray(PC._f32(rng, n))
    dst = be.xp.empty_like(src)
    t_copy = be.time(lambda: dst.__setitem__(slice(None), src))
    copy_gbps = 2 * 4 * n / t_copy / 1e6
    results, floors, notes, bad, report = {}, {}, set(), 0, {}
    for case in PC.cases(n):
        if only and case.name not in only:
            continue
        t0 = time.perf_counter()
        res, errors = run_case(be, case, kernels, n, rng, notes, start + budget)
        floors[case.name] = {k: w * 4 * n / copy_gbps / 1e6
                             for k, w in zip(("P", "FB", "FB_autodiff"), case.words)}
        results[case.name] = res
        txt = ", ".join(f"{k} {e:.1e}" + ("" if e <= t else " MISMATCH")
                        for k, (e, t) in errors.items())
        bad += sum(e > t for e, t in errors.values())
        report[case.name] = {k: e for k, (e, _) in errors.items()}
        print(f"{case.name}: max error vs float64 numpy: {txt} "
              f"({time.perf_counter() - t0:.1f} s)", flush=True)
    print_table(be.name, n, copy_gbps, results, floors)
    cost = launch_cost(be, kernels)
    print("\nhost time per launch of a cached 4-array kernel, us: " +
          ", ".join(f"{k} {v:.1f}" for k, v in cost.items()))
    print_targets(results, floors, cost)
    for note in sorted(notes):
        print(f"note: skipped {note}")
    from diffgpu.driver.launch import STATS
    print(f"programs: {dict(STATS)}; mlir imported: "
          f"{sys.modules.get('mlir') is not None}")
    doc = {"device": be.name, "N": n, "copy_GBps": copy_gbps,
           "launch_us": cost, "max_rel_error": report,
           "cases": {c: dict(results[c], floor=floors[c]) for c in results}}
    os.makedirs(os.path.dirname(os.path.abspath(json_out)), exist_ok=True)
    with open(json_out, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"results written to {json_out}")
    chart(png_out, results)
    if bad:
        print(f"{bad} result(s) differ from float64 numpy beyond tolerance")
    return 1 if bad else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--prepare", metavar="DIR")
    g.add_argument("--run", metavar="DIR")
    ap.add_argument("--chip", default="sm_90")
    ap.add_argument("--cpu-smoke", action="store_true",
                    help="run on numpy with a tiny N (tests the --run logic)")
    ap.add_argument("--json", default=None)
    ap.add_argument("--png", default=None)
    ap.add_argument("--cases", default=None, help="comma-separated subset")
    ap.add_argument("--budget", type=float, default=300.0,
                    help="seconds after which torch.compile is skipped for later cases")
    a = ap.parse_args(argv)
    # the disk cache of this run lives next to the prepared programs
    os.environ["DIFFGPU_CACHE_DIR"] = os.path.join(os.path.abspath(a.prepare or a.run), "cache")
    only = set(a.cases.split(",")) if a.cases else None
    if a.prepare:
        prepare(a.prepare, "host" if a.cpu_smoke else a.chip, SMOKE_N if a.cpu_smoke else N,
                only)
        return 0
    smoke = a.cpu_smoke
    # on a lent GPU machine only $OUT comes back: the results go there when it is set
    out_dir = a.run if smoke else os.environ.get("OUT")
    stem = "peers-smoke" if smoke else "peers-h200"
    json_out = a.json or (os.path.join(out_dir, stem + ".json") if out_dir else JSON_OUT)
    png_out = a.png or (os.path.join(out_dir, stem + ".png") if out_dir else PNG_OUT)
    return run(a.run, smoke, json_out, png_out, only, a.budget)


if __name__ == "__main__":
    sys.exit(main())

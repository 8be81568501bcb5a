"""float16 vs float32: the seven elementwise computations of bench/peer_cases.py
(square, saxpy, softplus, stencil, loop16, sumsq, gather), kernel (P) and
dg.vjp (FB), with their float32 arrays in float16 (sumsq's one-element
accumulator stays float32), against float64 references of the rounded inputs.

    # here (MLIR, no GPU): compile both dtypes' programs for sm_90 into DIR
    python bench/float16.py --prepare bench/.hcache [--chip sm_90] [--n N]
    # on the GPU machine (numpy + CuPy, no MLIR): time and check them
    python bench/float16.py --run bench/.hcache
    # anywhere: the same checks on the CPU at a small size (no timing claims)
    python bench/float16.py --cpu-smoke
    # here: the global loads and stores of each program's PTX, both dtypes
    python bench/float16.py --ptx [--n N] > bench/float16_ptx.log

Prints one row per computation: P and FB times in float32 and float16 (ms,
CUDA events, benchlib.cupy_ms), the ratio float16 / float32 (target <= 0.55
for these bandwidth-bound kernels: half the bytes), and the float16 errors
(max |err| / max(1, max |ref|)) against their tolerance: one float16 rounding
per stored element, gradients included (they are accumulated in float32 --
registers, or a float32 scratch with float32 atomics for gather -- and
rounded once: docs/language.md, 16-bit floats). Exits 1 on any error above
its tolerance. --ptx ends with the count of 16-bit atomics in the dg.vjp
programs (0: every gradient add is float32).
"""
from __future__ import annotations

import math
import os
import pickle
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if __name__ == "__main__" and "--run" in sys.argv:
    sys.modules["mlir"] = None  # the GPU run must not need MLIR: prove it
sys.path.insert(0, os.path.join(REPO, "scripts"))
sys.path.insert(0, os.path.join(REPO, "bench"))
import repo_imports  # noqa: E402

repo_imports.bootstrap()

import numpy as np  # noqa: E402

import diffgpu as dg  # noqa: E402
import peer_cases as PC  # noqa: E402
from benchlib import cupy_ms  # noqa: E402,F401  (the device timer, through Device.time)
from peer_backends import Device, Host  # noqa: E402

N = 1 << 26
SMOKE_N = 1 << 12
BLOCK = 256
SEVEN = ("square", "saxpy", "softplus", "stencil", "loop16", "sumsq", "gather")
DTYPES = (np.float32, np.float16)
ULP16 = 2.0 ** -10
TOL32 = 1e-4
#: float16 roundings a result element may carry beyond the one of its store
#: (none: gradients are accumulated in float32 and rounded once)
ROUNDINGS: dict = {}


def convert(case, host, dtype):
    """The case's float32 arrays in `dtype`, but sumsq's accumulator."""
    return {p: (v.astype(dtype) if isinstance(v, np.ndarray) and v.dtype == np.float32
                and not (case.name == "sumsq" and p == "out") else v)
            for p, v in host.items()}


def tolerance(case, name, dtype):
    if name == "a" or case.name == "sumsq" and name == "out":
        return 1e-3  # float32 / float64 sums of n terms
    if dtype == np.float32:
        return TOL32
    return ROUNDINGS.get((case.name, name), 1) * ULP16


def _err(got, want, idx):
    got = np.asarray(got, np.float64).reshape(-1) if np.ndim(got) else np.array([got], float)
    want = np.asarray(want, np.float64).reshape(-1)
    if idx is not None:
        got = got[idx]
    return float(np.max(np.abs(got - want)) / max(1.0, float(np.max(np.abs(want)))))


def _launcher(case, kernels, arrs):
    n = len(arrs["idx"]) if case.name == "gather" else len(arrs["x"])
    return kernels[case.kernel][(n + BLOCK - 1) // BLOCK, BLOCK]


def case_calls(case, kernels, arrs, g):
    launch = _launcher(case, kernels, arrs)
    args = [arrs[p] for p in case.params]
    return (lambda: launch(*args),
            lambda: dg.vjp(launch, *args, cotangents={case.out: g}))


def seven(n):
    return [c for c in PC.cases(n) if c.name in SEVEN]


def run_case(be, case, kernels, dtype, rng):
    """({"P": ms, "FB": ms}, {what: (error, tolerance)}) of one case in `dtype`."""
    host = convert(case, case.make(rng), dtype)
    h64 = {p: (v.astype(np.float64) if isinstance(v, np.ndarray) and v.dtype.kind == "f"
               else v) for p, v in host.items()}
    out = host[case.out]
    g_host = rng.standard_normal(out.shape).astype(out.dtype)
    arrs = {p: be.to(v) for p, v in host.items()}
    primal, vjp = case_calls(case, kernels, arrs, be.to(g_host))
    n = len(host["idx"]) if case.name == "gather" else len(host["x"])
    s = PC.sample(n)
    errors, times = {}, {}
    primal()
    be.sync()
    for name, (want, idx) in case.primal_ref(h64, s).items():
        errors[f"P {name}"] = (_err(be.get(arrs[name]), want, idx),
                               tolerance(case, name, dtype))
    grads = vjp()
    be.sync()
    for name, (want, idx) in case.grad_ref(h64, g_host.astype(np.float64), s).items():
        errors[f"FB {name}"] = (_err(be.get(grads[name]), want, idx),
                                tolerance(case, name, dtype))
    if case.name == "sumsq":
        arrs["out"].fill(0)
    times["P"] = be.time(primal)
    times["FB"] = be.time(vjp)
    return times, errors


def run(be, kernels, n, quick=False) -> int:
    rng = np.random.default_rng(0)
    print(f"device: {be.name}; N = {n} elements; times in ms "
          f"(P: the kernel, FB: dg.vjp); ratio = float16 / float32")
    head = (f"{'case':10s} {'P f32':>8s} {'P f16':>8s} {'ratio':>6s} {'FB f32':>8s} "
            f"{'FB f16':>8s} {'ratio':>6s}  worst f16 error / tolerance")
    print(head)
    print("-" * len(head))
    bad = []
    for case in seven(n):
        res = {}
        for dt in DTYPES:
            try:
                res[dt] = run_case(be, case, kernels, dt, rng)
            except Exception as exc:  # a failing stage is a row, not a crash
                bad.append(f"{case.name} {np.dtype(dt).name}: {type(exc).__name__}: "
                           f"{str(exc).splitlines()[0][:120] if str(exc) else ''}")
                res[dt] = ({}, {})
        t32, t16 = res[np.float32][0], res[np.float16][0]
        cells = []
        for what in ("P", "FB"):
            a, b = t32.get(what, math.nan), t16.get(what, math.nan)
            cells += [f"{a:8.3f}", f"{b:8.3f}", f"{b / a if a else math.nan:6.2f}"]
        worst = ""
        for dt in DTYPES:
            for what, (err, tol) in res[dt][1].items():
                if not err <= tol:
                    bad.append(f"{case.name} {np.dtype(dt).name} {what}: error {err:.2e} > "
                               f"tolerance {tol:.2e}")
        e16 = res[np.float16][1]
        if e16:
            what, (err, tol) = max(e16.items(), key=lambda kv: kv[1][0] / kv[1][1])
            worst = f"{what} {err:.1e} / {tol:.1e}"
        print(f"{case.name:10s} {' '.join(cells)}  {worst}")
    for line in bad:
        print("FAIL:", line)
    print(f"{'all results within tolerance' if not bad else f'{len(bad)} failures'}")
    return 1 if bad else 0


# ---------------------------------------------------------------------------
# prepare here, run there (the programs travel as bench/peers.py's do)
# ---------------------------------------------------------------------------

def prepare(directory: str, chip: str, n: int) -> None:
    """Compile every program --run needs for `chip` (both dtypes), with the
    same calls on numpy arrays inside `diffgpu.interop.compile_only(chip)`."""
    from diffgpu.hostdiff import plan
    from diffgpu.interop import compile_only

    kernels = PC.kernels()
    rng = np.random.default_rng(0)
    with compile_only(chip):
        for case in seven(n):
            for dt in DTYPES:
                arrs = convert(case, case.make(rng), dt)
                g = np.ones_like(arrs[case.out])
                t0 = time.perf_counter()
                for call in case_calls(case, kernels, arrs, g):
                    call()
                print(f"{case.name} {np.dtype(dt).name}: compiled in "
                      f"{time.perf_counter() - t0:.1f} s", flush=True)
    os.makedirs(directory, exist_ok=True)
    entries = []
    for name, k in kernels.items():
        for key, prog in k._programs.items():
            entries.append(("program", name, key, prog.payload))
        for types, facts in plan._ACCESS.get(k, {}).items():
            entries.append(("access", name, types, facts))
    with open(os.path.join(directory, "programs.pkl"), "wb") as f:
        pickle.dump({"chip": chip, "n": n, "entries": entries,
                     "prepared": time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}, f)
    print(f"{len(entries)} programs and analyses for {chip} (N = {n}) stored in {directory}")


def preload(directory: str, here: str):
    """The prepared programs put into the kernels' tables (as bench/peers.py)."""
    from diffgpu.driver.launch import Program
    from diffgpu.hostdiff import plan

    with open(os.path.join(directory, "programs.pkl"), "rb") as f:
        data = pickle.load(f)
    kernels = PC.kernels()
    for kind, name, key, value in data["entries"]:
        k = kernels[name]
        if kind == "access":
            plan._ACCESS.setdefault(k, {})[key] = value
        elif key[1] == data["chip"]:
            k._programs[(key[0], here) + tuple(key[2:])] = Program(value)
    print(f"programs prepared {data.get('prepared', '?')} for {data['chip']}")
    return kernels, data["n"]


def ptx_report(chip: str, n: int) -> None:
    """The global memory instructions of each program (P: the kernel, FB: the
    dg.vjp derivative) in float32 and float16, from the PTX --prepare makes
    (no GPU): packed 16-bit accesses show as ld.global.nc.v2.b32 / .v4.b16."""
    import re
    from diffgpu.interop import compile_only

    kernels = PC.kernels()
    rng = np.random.default_rng(0)
    print(f"PTX for {chip}, N = {n}: global loads / stores / atomics per program")
    half_atomics = 0
    for case in seven(n):
        for dt in DTYPES:
            k = kernels[case.kernel]
            before = set(k._programs)
            with compile_only(chip):
                arrs = convert(case, case.make(rng), dt)
                for call in case_calls(case, kernels, arrs, np.ones_like(arrs[case.out])):
                    call()
            for key in sorted(set(k._programs) - before, key=lambda key: key[2] is not None):
                ptx = k._programs[key].payload.get("ptx") or ""
                ops = re.findall(r"\b((?:ld|st)\.global[.a-z0-9]*|(?:atom|red)\.[.a-z0-9]+)", ptx)
                counts = {}
                for op in ops:
                    counts[op] = counts.get(op, 0) + 1
                what = "P " if key[2] is None else "FB"
                if what == "FB":  # atom/red .f16, .bf16 (.noftz, x2 forms too)
                    half_atomics += sum(c for op, c in counts.items() if op.startswith(
                        ("atom.", "red.")) and re.search(r"\.b?f16", op))
                print(f"  {case.name:9s} {np.dtype(dt).name:8s} {what} "
                      + ", ".join(f"{op} x{c}" for op, c in sorted(counts.items())))
    print(f"16-bit atomics (.f16 / .bf16) in the FB programs: {half_atomics}")


def main(argv=None) -> int:
    import argparse
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--prepare", metavar="DIR")
    g.add_argument("--run", metavar="DIR")
    g.add_argument("--cpu-smoke", action="store_true")
    g.add_argument("--ptx", action="store_true", help="print the global memory instructions "
                   "of each program's PTX (compiled here, no GPU)")
    p.add_argument("--chip", default="sm_90")
    p.add_argument("--n", type=int, default=N)
    a = p.parse_args(argv)
    if a.prepare:
        prepare(a.prepare, a.chip, a.n)
        return 0
    if a.cpu_smoke:
        return run(Host(), PC.kernels(), SMOKE_N)
    if a.ptx:
        ptx_report(a.chip, a.n)
        return 0
    be = Device()
    kernels, n = preload(a.run, be.chip)
    return run(be, kernels, n)


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""AOT bundles against JIT launches on bench/peers.py's seven computations:
the primal kernel (P) and an in-kernel `dg.autodiff` F+B kernel (Enzyme's
convention: shadows accumulate, the output's shadow is consumed), each
launched from a bundle made by `dg.compile(..., grid=, block=,
example_args=)` (its launch-specialised variants, docs/aot.md) and from the
JIT path; `dg.vjp` (FB) is timed on the JIT path only (bundles hold plain
kernels). Same data, same device timer as peers.py (bench/peer_backends.py,
bench/benchlib.py).

    python bench/bundles.py --prepare bench/.bundles     # here: compile for sm_90, no GPU
    python bench/bundles.py --run bench/.bundles         # on the GPU: check, time, table
    python bench/bundles.py --prepare /tmp/b --chip host --n 4096   # the CPU smoke test:
    python bench/bundles.py --run /tmp/b --cpu-smoke                # the --run logic on numpy

Every bundle result is compared bitwise with the JIT launch's (same
program, same data; the reverse of `gather`, whose float atomics add in a
different order on every run, within the sums' tolerance instead) and with float64 numpy before it is timed. The target:
each bundle time within 1.1x of the JIT's.
"""
from __future__ import annotations

import argparse
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
from peer_backends import Device, Host  # noqa: E402
from peers import BLOCK, N, TOL, TOL_SUM, _err, _head, dg_args, grid_for  # noqa: E402

#: cases whose reverse adds with float atomics (no fixed order: not bitwise repeatable)
ATOMIC_REVERSE = ("gather",)

BUNDLE = "bundle.dgb"
TARGET = 1.1
#: the seven computations (bench/peer_cases.py may hold more)
SEVEN = ("square", "saxpy", "softplus", "stencil", "loop16", "sumsq", "gather")


def cases(n: int) -> list:
    return [c for c in PC.cases(n) if c.name in SEVEN]


def fb_kernels(K):
    """The in-kernel F+B kernel of each case: `dg.autodiff` of its primal,
    float arrays Duplicated (shadow right after), scalars and indices Const."""
    square, saxpy, softplus = K["square"], K["saxpy"], K["softplus"]
    stencil, loop16, sumsq, gather = K["stencil"], K["loop16"], K["sumsq"], K["gather"]

    @dg.kernel
    def square_fb(y, dy, x, dx):
        dg.autodiff(square, dg.Duplicated(y, dy), dg.Duplicated(x, dx))

    @dg.kernel
    def saxpy_fb(o, do, a, x, dx, y, dy):
        dg.autodiff(saxpy, dg.Duplicated(o, do), dg.Const(a), dg.Duplicated(x, dx),
                    dg.Duplicated(y, dy))

    @dg.kernel
    def softplus_fb(y, dy, x, dx):
        dg.autodiff(softplus, dg.Duplicated(y, dy), dg.Duplicated(x, dx))

    @dg.kernel
    def stencil_fb(y, dy, x, dx):
        dg.autodiff(stencil, dg.Duplicated(y, dy), dg.Duplicated(x, dx))

    @dg.kernel
    def loop16_fb(y, dy, x, dx, p, dp):
        dg.autodiff(loop16, dg.Duplicated(y, dy), dg.Duplicated(x, dx), dg.Duplicated(p, dp))

    @dg.kernel
    def sumsq_fb(out, dout, x, dx):
        dg.autodiff(sumsq, dg.Duplicated(out, dout), dg.Duplicated(x, dx))

    @dg.kernel
    def gather_fb(y, dy, x, dx, idx):
        dg.autodiff(gather, dg.Duplicated(y, dy), dg.Duplicated(x, dx), dg.Const(idx))

    return {k.name[:-3]: k for k in (square_fb, saxpy_fb, softplus_fb, stencil_fb, loop16_fb,
                                     sumsq_fb, gather_fb)}


def _shadowed(a) -> bool:
    """A float array (numpy or CuPy): Duplicated in the F+B kernel."""
    return not isinstance(a, (float, int)) and np.dtype(a.dtype).kind == "f"


def fb_args(case, arrs, g, xp):
    """(arguments of the F+B kernel, its shadows by parameter name) on fresh
    shadows: zero, the output's the cotangent `g`."""
    shadows, out = {}, []
    for p in case.params:
        out.append(arrs[p])
        if _shadowed(arrs[p]):
            shadows[p] = g.copy() if p == case.out else xp.zeros_like(arrs[p])
            out.append(shadows[p])
    return out, shadows


def _launch_grid(n):
    return grid_for(n)


# ---------------------------------------------------------------------------
# --prepare: the JIT programs (as peers.py prepares them) and the bundle
# ---------------------------------------------------------------------------

def prepare(directory: str, chip: str, n: int) -> None:
    from diffgpu.hostdiff import plan
    from diffgpu.interop import compile_only

    K = PC.kernels()
    FB = fb_kernels(K)
    rng = np.random.default_rng(0)
    compiled = []
    for case in cases(n):
        arrs = case.make(rng)
        g = np.ones_like(arrs[case.out])
        args = dg_args(case, arrs)
        fargs, _ = fb_args(case, arrs, g, np)
        grid = _launch_grid(n)
        t0 = time.perf_counter()
        with compile_only(chip) if chip != "host" else _nothing():  # the JIT's programs
            K[case.name][grid, BLOCK](*args)                          # (host: they run)
            dg.vjp(K[case.name][grid, BLOCK], *args, cotangents={case.out: g})
            FB[case.name][grid, BLOCK](*fargs)
        for k, a in ((K[case.name], args), (FB[case.name], fargs)):
            sig = tuple(str(t) for t in _types(k, a))
            compiled.append(dg.compile(k, sig, target=chip, grid=grid, block=BLOCK,
                                       example_args=[a]))
        print(f"{case.name}: compiled in {time.perf_counter() - t0:.1f} s "
              f"({len(compiled[-2].variants)} + {len(compiled[-1].variants)} variants)",
              flush=True)
    os.makedirs(directory, exist_ok=True)
    dg.save_bundle(os.path.join(directory, BUNDLE), compiled)
    entries = []
    for name, k in list(K.items()) + [(k.name, k) for k in FB.values()]:
        for key, prog in k._programs.items():
            entries.append(("program", name, key, prog.payload))
        for types, facts in plan._ACCESS.get(k, {}).items():
            entries.append(("access", name, types, facts))
    with open(os.path.join(directory, "programs.pkl"), "wb") as f:
        pickle.dump({"chip": chip, "n": n, "entries": entries,
                     "prepared": f"{time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}, "
                                 f"{_head()}"}, f)
    print(f"bundle ({len(compiled)} kernels) and {len(entries)} JIT programs and analyses for "
          f"{chip} (N = {n}) stored in {directory}")


def _nothing():
    import contextlib
    return contextlib.nullcontext()


def _types(kernel, args):
    from diffgpu.runtime.args import infer_signature
    return infer_signature(args, kernel.arg_names, kernel.name).types


def preload(directory: str, here: str):
    """The kernels with the prepared JIT programs in their tables (as
    peers.py's preload), the chip they were prepared for, N, and when."""
    from diffgpu.driver.launch import Program
    from diffgpu.hostdiff import plan

    with open(os.path.join(directory, "programs.pkl"), "rb") as f:
        data = pickle.load(f)
    K = PC.kernels()
    FB = fb_kernels(K)
    byname = dict(K, **{k.name: k for k in FB.values()})
    for kind, name, key, value in data["entries"]:
        k = byname[name]
        if kind == "access":
            plan._ACCESS.setdefault(k, {})[key] = value
        elif key[1] == data["chip"]:
            k._programs[(key[0], here) + tuple(key[2:])] = Program(value)
    return K, FB, data


# ---------------------------------------------------------------------------
# --run
# ---------------------------------------------------------------------------

def _same(be, a, b) -> bool:
    return np.array_equal(be.get(a), be.get(b))


def run_case(be, case, K, FB, bundle, n, rng, notes):
    """{column: ms} of one case and its check results {what: ok}."""
    host = case.make(rng)
    h64 = {p: (v.astype(np.float64) if isinstance(v, np.ndarray) and v.dtype.kind == "f"
               else v) for p, v in host.items()}
    g_host = PC._f32(rng, int(np.prod(host[case.out].shape))).reshape(host[case.out].shape)
    s = PC.sample(n)
    grid = _launch_grid(n)
    fresh = lambda: {p: be.to(v) for p, v in host.items()}  # noqa: E731
    checks, res = {}, {}

    def tol(name, idx):
        return TOL_SUM if (idx is None or name == "a" or case.name == "sumsq") else TOL

    # P: bundle and JIT on the same inputs, bitwise; then against float64 numpy
    jit_a, bun_a = fresh(), fresh()
    jit_p, bun_p = K[case.name][grid, BLOCK], bundle[case.name][grid, BLOCK]
    jit_p(*dg_args(case, jit_a))
    bun_p(*dg_args(case, bun_a))
    be.sync()
    checks["P bitwise"] = all(_same(be, jit_a[p], bun_a[p]) for p in case.params
                              if not isinstance(host[p], float))
    for name, (want, idx) in case.primal_ref(h64, s).items():
        checks[f"P {name}"] = _err(be.get(bun_a[name]), want, idx) <= tol(name, idx)
    # F+B in the kernel, on fresh shadows (the output's shadow is consumed)
    g = be.to(g_host)
    jit_f, jit_sh = fb_args(case, fresh(), g, be.xp)
    bun_f, bun_sh = fb_args(case, fresh(), g, be.xp)
    FB[case.name][grid, BLOCK](*jit_f)
    bundle[FB[case.name].name][grid, BLOCK](*bun_f)
    be.sync()
    if case.name in ATOMIC_REVERSE:  # float atomics: the order of the adds varies per run
        checks["FB_autodiff vs JIT"] = all(
            _err(be.get(bun_sh[p]), be.get(jit_sh[p]).astype(np.float64), None) <= TOL_SUM
            for p in jit_sh)
    else:
        checks["FB_autodiff bitwise"] = all(_same(be, jit_sh[p], bun_sh[p]) for p in jit_sh)
    for name, (want, idx) in case.grad_ref(h64, g_host.astype(np.float64), s).items():
        if name in bun_sh:  # scalars are Const here
            checks[f"FB_autodiff {name}"] = _err(be.get(bun_sh[name]), want, idx) <= \
                tol(name, idx)
    args = dg_args(case, jit_a)
    timed = {"P jit": lambda: jit_p(*args), "P bundle": lambda: bun_p(*args),
             "FB jit (dg.vjp)": lambda: dg.vjp(jit_p, *args, cotangents={case.out: g}),
             "FB_autodiff jit": lambda: FB[case.name][grid, BLOCK](*jit_f),
             "FB_autodiff bundle": lambda: bundle[FB[case.name].name][grid, BLOCK](*bun_f)}
    for col, fn in timed.items():
        try:
            res[col] = be.time(fn)
        except Exception as exc:  # a failing stage: a note and a missing entry
            notes.add(f"{case.name} {col}: {type(exc).__name__}: {str(exc)[:120]}")
    return res, checks


def print_table(dev, n, results) -> int:
    cols = ["P jit", "P bundle", "FB jit (dg.vjp)", "FB_autodiff jit", "FB_autodiff bundle"]
    print(f"\n{dev}, N = {n} float32 elements, block {BLOCK}; times in ms (median of rounds)")
    print(f"{'case':9} " + " ".join(f"{c:>18}" for c in cols) + f" {'P ratio':>8} {'FB ratio':>8}")
    over = 0
    for name, r in results.items():
        cells = " ".join(f"{r[c]:>18.4f}" if c in r else f"{'-':>18}" for c in cols)
        ratios = []
        for a, b in (("P bundle", "P jit"), ("FB_autodiff bundle", "FB_autodiff jit")):
            if a in r and b in r:
                q = r[a] / r[b]
                over += q > TARGET
                ratios.append(f"{q:>7.2f}" + ("*" if q > TARGET else " "))
            else:
                ratios.append(f"{'-':>8}")
        print(f"{name:9} {cells} {' '.join(ratios)}")
    print(f"ratio = bundle / jit; * = beyond the {TARGET}x target ({over} of "
          f"{2 * len(results)})")
    return over


def run(directory: str, smoke: bool) -> int:
    from diffgpu.driver.launch import STATS

    be = Host() if smoke else Device()
    here = "host" if smoke else be.chip
    K, FB, data = preload(directory, here)
    n = data["n"]
    bundle = dg.load_bundle(os.path.join(directory, BUNDLE))
    print(f"prepared {data['prepared']} for {data['chip']} (N = {n}); running on {be.name}")
    rng = np.random.default_rng(0)
    results, notes, bad = {}, set(), 0
    for case in cases(n):
        res, checks = run_case(be, case, K, FB, bundle, n, rng, notes)
        results[case.name] = res
        failed = [k for k, ok in checks.items() if not ok]
        bad += len(failed)
        print(f"{case.name}: checks {'all passed' if not failed else 'FAILED: ' + ', '.join(failed)}"
              f" ({len(checks)})", flush=True)
    print_table(be.name, n, results)
    for note in sorted(notes):
        print(f"note: {note}")
    print(f"programs: {dict(STATS)}; mlir imported: {sys.modules.get('mlir') is not None}")
    if STATS["generic_fallback"]:
        print("note: some JIT launches ran the generic program (not prepared): the JIT times "
              "are not those of specialised programs")
    return 1 if bad else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--prepare", metavar="DIR")
    g.add_argument("--run", metavar="DIR")
    ap.add_argument("--chip", default="sm_90", help="target of --prepare: sm_XX or host")
    ap.add_argument("--n", type=int, default=N, help="elements per array (--prepare)")
    ap.add_argument("--cpu-smoke", action="store_true",
                    help="--run on numpy (a bundle prepared with --chip host)")
    a = ap.parse_args(argv)
    os.environ["DIFFGPU_CACHE_DIR"] = os.path.join(os.path.abspath(a.prepare or a.run), "cache")
    if a.prepare:
        prepare(a.prepare, a.chip, a.n)
        return 0
    return run(a.run, a.cpu_smoke)


if __name__ == "__main__":
    sys.exit(main())

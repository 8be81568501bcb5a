"""Gradient fuzzing: random kernels (fuzz_kernels.py) checked end to end on the CPU.

    python scripts/fuzz_gradients.py --n 500 --seed 0 [--shrink] [--verbose]

Each case is one random module (a `@dg.kernel` kk and its `@dg.func`s), run
in float64 and checked four ways:

1. primal: the CPU launch equals the same Python function run thread by
   thread on numpy scalars;
2. both differentiated launches also leave the primal result in the arrays;
3. forward mode J v equals central finite differences of the primal, element
   by element (the state is x, y, w and the scalar f; m and n are constants);
4. reverse mode, dot-product test: <J^T u, v> = <u, J v> (forward mode).

A finite-difference column that changes with the step (1e-6 vs 1e-7) means
the point sits on a jump of the function (a branch flipping); such a case is
counted as `nondiff` (check 3 means nothing there; check 4 still runs). Failures print a reproducer: the
module source and the inputs (with --shrink: statements removed while the
same check still fails). Exit status 1 when any case fails.
"""
from __future__ import annotations

import argparse
import ast
import contextlib
import importlib.util
import math
import os
import signal
import sys
import tempfile
import time
import types
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import repo_imports  # noqa: E402

repo_imports.bootstrap()

import diffgpu as dg  # noqa: E402
from fuzz_kernels import BLOCK, GRID, random_case  # noqa: E402

RTOL_PRIMAL, ATOL_PRIMAL = 1e-9, 1e-12
RTOL_FD, ATOL_FD = 1e-5, 1e-6
RTOL_DOT = 1e-9
EPS = 1e-6
CASE_SECONDS = 600  # generous: the machine may be busy


class Failure(Exception):
    def __init__(self, check, detail):
        super().__init__(f"{check}: {detail}")
        self.check, self.detail = check, detail


class NonDifferentiable(Exception):
    pass


@contextlib.contextmanager
def loaded(source: str, tag: str):
    """The generated module, imported from a file in a temporary directory
    (the frontend reads kernel sources from their file when it compiles);
    the directory is removed when the block ends, so compile inside it."""
    with tempfile.TemporaryDirectory(prefix="dgfuzz-") as d:
        path = os.path.join(d, f"fuzz_{tag}.py")
        with open(path, "w") as fh:
            fh.write(source)
        spec = importlib.util.spec_from_file_location(f"fuzz_{tag}", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        yield mod


def python_reference(mod, case):
    """The kernel's Python run thread by thread (None when Python raises)."""
    tid = [0]
    def atomic_add(arr, idx, v):  # threads run one by one: a plain add, old value back
        old = arr[idx]
        arr[idx] = old + v
        return old
    fake = types.SimpleNamespace(global_id=lambda axis=0: np.int64(tid[0]), tanh=np.tanh,
                                 erf=lambda v: np.float64(math.erf(v)), atomic_add=atomic_add)
    fake_mod = types.SimpleNamespace()
    glb = dict(mod.kk.py_func.__globals__, dg=fake)
    for name in case.funcs:  # funcs call each other through the fake globals
        py = getattr(mod, name).py_func
        setattr(fake_mod, name, types.FunctionType(py.__code__, glb))
        glb[name] = getattr(fake_mod, name)
    kk = types.FunctionType(mod.kk.py_func.__code__, glb)
    x, y, w = case.x.copy(), case.y.copy(), case.w.copy()
    try:
        with np.errstate(all="raise"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for tid[0] in range(GRID * BLOCK):
                kk(x, y, w, case.m.copy(), np.int64(case.n), np.float64(case.f))
    except (ZeroDivisionError, ValueError, OverflowError, FloatingPointError):
        return None
    return x, y, w


def _close(got, want, rtol, atol):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    bad = np.abs(got - want) > atol + rtol * np.abs(want)
    return not bad.any(), (int(np.argmax(bad)) if bad.any() else -1)


def _state(case, scale=0.0, v=None):
    x, y, w, f = case.x.copy(), case.y.copy(), case.w.copy(), case.f
    if v is not None:
        x, y, w, f = x + scale * v[0], y + scale * v[1], w + scale * v[2], f + scale * v[3]
    return x, y, w, f


def run_primal(kk, case, x, y, w, f):
    kk[GRID, BLOCK](x, y, w, case.m, case.n, f)
    return [x, y, w]


def check_case(case, tag=None) -> str:
    """Run the four checks on the case's module (imported as fuzz_<tag>);
    returns "ok", "skipped" or "nondiff"; raises Failure."""
    with loaded(case.source, tag or f"s{case.seed}") as mod:
        return _check_module(case, mod)


def _check_module(case, mod) -> str:
    kk = mod.kk
    ref = python_reference(mod, case)
    if ref is None:
        return "skipped"
    x, y, w, f = _state(case)
    try:
        out = run_primal(kk, case, x, y, w, f)
    except dg.CompileError as exc:
        raise Failure("compile", str(exc)) from None
    if not all(np.isfinite(a).all() for a in ref) or max(np.abs(a).max() for a in ref) > 1e6:
        return "skipped"
    for name, got, want in zip("xyw", out, ref):
        ok, k = _close(got, want, RTOL_PRIMAL, ATOL_PRIMAL)
        if not ok:
            raise Failure("primal", f"{name}[{k}] = {got[k]!r}, Python gives {want[k]!r}")

    rng = np.random.default_rng(case.seed + 7)
    v = [rng.standard_normal(6) for _ in range(3)] + [float(rng.standard_normal())]
    u = [rng.standard_normal(6) for _ in range(3)]

    # forward mode: J v, and the primal alongside
    x, y, w, f = _state(case)
    tv = [a.copy() for a in v[:3]]
    dg.fwddiff(kk[GRID, BLOCK], dg.Duplicated(x, tv[0]), dg.Duplicated(y, tv[1]),
               dg.Duplicated(w, tv[2]), dg.Const(case.m), dg.Const(case.n),
               dg.Duplicated(f, v[3]))
    for name, got, want in zip("xyw", (x, y, w), ref):
        ok, k = _close(got, want, RTOL_PRIMAL, ATOL_PRIMAL)
        if not ok:
            raise Failure("fwddiff-primal", f"{name}[{k}] = {got[k]!r} after dg.fwddiff, "
                          f"the plain launch gives {want[k]!r}")
    jv = tv

    # reverse mode: J^T u, and the primal alongside
    x, y, w, f = _state(case)
    su = [a.copy() for a in u]
    (df,) = dg.autodiff(kk[GRID, BLOCK], dg.Duplicated(x, su[0]), dg.Duplicated(y, su[1]),
                        dg.Duplicated(w, su[2]), dg.Const(case.m), dg.Const(case.n),
                        dg.Active(f))
    for name, got, want in zip("xyw", (x, y, w), ref):
        ok, k = _close(got, want, RTOL_PRIMAL, ATOL_PRIMAL)
        if not ok:
            raise Failure("autodiff-primal", f"{name}[{k}] = {got[k]!r} after dg.autodiff, "
                          f"the plain launch gives {want[k]!r}")

    # finite differences of the primal along v
    def fd(eps):
        plus = run_primal(kk, case, *_state(case, eps, v))
        minus = run_primal(kk, case, *_state(case, -eps, v))
        return [(p - q) / (2 * eps) for p, q in zip(plus, minus)]
    fd1 = fd(EPS)
    scale = 1.0 + max(float(np.abs(a).max()) for a in fd1)
    status = "ok"
    for name, got, want in zip("xyw", jv, fd1):
        ok, k = _close(got, want, RTOL_FD, ATOL_FD * scale)
        if not ok:
            fd2 = fd(EPS / 10)
            stable, _ = _close(fd1, fd2, 1e-4, 1e-5 * scale)
            if not stable:  # on a jump: FD means nothing, reverse = forward still holds
                status = "nondiff"
                break
            raise Failure("forward-vs-fd", f"(J v) of {name}[{k}]: forward mode gives "
                          f"{got[k]!r}, finite differences {want[k]!r}")

    lhs = sum(float(np.dot(a, b)) for a, b in zip(u, jv))
    rhs = sum(float(np.dot(a, b)) for a, b in zip(su, v[:3])) + float(df) * v[3]
    mag = sum(float(np.abs(a) @ np.abs(b)) for a, b in zip(u, jv)) + \
        sum(float(np.abs(a) @ np.abs(b)) for a, b in zip(su, v[:3])) + abs(df * v[3])
    if abs(lhs - rhs) > RTOL_DOT * (1.0 + mag):
        raise Failure("reverse-vs-forward", f"<J^T u, v> = {rhs!r} (reverse mode) but "
                      f"<u, J v> = {lhs!r} (forward mode)")
    return status


class CaseTimeout(Exception):
    pass


@contextlib.contextmanager
def time_limit(seconds):
    """A case that hangs (a loop that never ends) fails instead of stalling."""
    def expire(signum, frame):
        raise CaseTimeout(f"no result after {seconds} s")
    old = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


# shrinking -------------------------------------------------------------------
def _statement_lists(tree):
    for fn in tree.body:
        if isinstance(fn, ast.FunctionDef):
            for node in ast.walk(fn):
                for fld in ("body", "orelse"):
                    lst = getattr(node, fld, None)
                    if isinstance(lst, list) and lst and isinstance(lst[0], ast.stmt):
                        yield lst


def shrink(case, failure, budget=60):
    """Remove statements one at a time while the same check still fails."""
    best = case.source
    progress = True
    while progress and budget > 0:
        progress = False
        tree = ast.parse(best)
        spots = [(k, j) for k, lst in enumerate(_statement_lists(tree)) for j in range(len(lst))]
        for k, j in reversed(spots):
            if budget <= 0:
                break
            tree = ast.parse(best)
            lst = list(_statement_lists(tree))[k]
            if j >= len(lst):
                continue
            del lst[j]
            if not lst:
                lst.append(ast.Pass())
            cand = ast.unparse(tree) + "\n"
            budget -= 1
            try:
                trial = type(case)(**{**case.__dict__, "source": cand})
                with time_limit(120):  # a removed `t += 1` may make a loop endless
                    check_case(trial, f"s{case.seed}_{budget}")
            except Failure as f2:
                if f2.check == failure.check:
                    best, progress = cand, True
                    break
            except Exception:
                continue
    return best


def reproducer(case, failure, source) -> str:
    return (f"=== FAIL seed {case.seed}: {failure}\n--- kernel module ---\n{source}\n"
            f"--- inputs (launch kk[{GRID}, {BLOCK}](x, y, w, m, n, f)) ---\n"
            f"{case.inputs_repr()}\n")


def run(n, seed, do_shrink=False, verbose=False, out=sys.stdout, shrink_budget=60,
        hard=False):
    counts = {"ok": 0, "skipped": 0, "nondiff": 0, "failed": 0}
    failures = []
    for s in range(seed, seed + n):
        case = random_case(s, hard)
        try:
            with time_limit(CASE_SECONDS):
                res = check_case(case)
        except Failure as f:
            res = "failed"
            src = shrink(case, f, shrink_budget) if do_shrink else case.source
            failures.append((case, f))
            print(reproducer(case, f, src), file=out, flush=True)
        except Exception as exc:  # a crash of ours is a failure too
            res = "failed"
            f = Failure("crash", f"{type(exc).__name__}: {exc}")
            failures.append((case, f))
            print(reproducer(case, f, case.source), file=out, flush=True)
        counts[res] += 1
        if verbose:
            print(f"seed {s}: {res}", file=out, flush=True)
    return counts, failures


def run_quiet(job):
    """Worker entry (a process pool): job = (seeds, hard) -> (counts, printed
    reproducers)."""
    import io
    seeds, hard = job
    out = io.StringIO()
    counts, _ = run(len(seeds), seeds[0], out=out, hard=hard)
    return counts, out.getvalue()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100, help="number of cases")
    ap.add_argument("--seed", type=int, default=0, help="first seed")
    ap.add_argument("--shrink", action="store_true", help="minimize failing kernels")
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--hard", action="store_true", help="also piecewise functions, powf, "
                    "atomics, gathers (more cases land on jumps: nondiff)")
    a = ap.parse_args(argv)
    t0 = time.time()
    counts, failures = run(a.n, a.seed, a.shrink, a.verbose, hard=a.hard)
    print(f"{a.n} cases from seed {a.seed} in {time.time() - t0:.0f} s: "
          + ", ".join(f"{k} {v}" for k, v in counts.items()), flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

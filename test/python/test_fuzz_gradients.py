"""A fixed slice of the gradient fuzzer (scripts/fuzz_gradients.py): random
kernels with arithmetic, math calls, if/while/for with runtime bounds,
break/continue, early return (also inside loops), `and`/`or`, calls to
@dg.func and several writes to one element; each checked for CPU primal =
Python thread by thread, forward mode = finite differences, reverse mode =
forward mode (dot-product test). Plus tests that each check can fail."""
from __future__ import annotations

import concurrent.futures
import io
import multiprocessing

import numpy as np
import pytest

import fuzz_gradients as fz
from fuzz_kernels import random_case

SLICE = range(100)  # seeds; ~0.5 s each on an idle core
HARD_SLICE = range(20)  # --hard cases: piecewise functions, powf, atomics, gathers
WORKERS = 2


def test_fuzz_slice():
    seeds = list(SLICE)
    # contiguous seed ranges per job (fz.run takes a first seed and a count)
    chunks = [(seeds[k * len(seeds) // WORKERS:(k + 1) * len(seeds) // WORKERS], False)
              for k in range(WORKERS)] + [(list(HARD_SLICE), True)]
    total = {"ok": 0, "skipped": 0, "nondiff": 0, "failed": 0}
    reports = []
    # fresh processes (spawn): forking a process whose MLIR contexts run
    # threads is unsafe
    ctx = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(WORKERS, mp_context=ctx) as pool:
        for counts, text in pool.map(fz.run_quiet, chunks):
            for k, v in counts.items():
                total[k] += v
            reports.append(text)
    assert total["failed"] == 0, "\n".join(reports)
    n = len(seeds) + len(HARD_SLICE)
    assert sum(total.values()) == n
    assert total["ok"] >= 0.9 * n, total  # few cases skipped or on a jump


def test_generator_covers_the_constructs():
    text = "\n".join(random_case(s).source for s in SLICE)
    for construct in ("for j0 in range(", "while t0 <", "break", "continue", "return\n",
                      "@dg.func", " and ", " or ", "math.exp(", "y[i] = ", "w[i] += ",
                      "m[i]", "range(n", ", 0, -1)"):
        assert construct in text, construct
    # an early return inside a loop, in a kernel and in a func
    assert any(_return_in_loop(random_case(s).source) for s in SLICE)


def _return_in_loop(src):
    import ast
    tree = ast.parse(src)
    for loop in ast.walk(tree):
        if isinstance(loop, (ast.For, ast.While)):
            if any(isinstance(n, ast.Return) for n in ast.walk(loop)):
                return True
    return False


# --- the checks can fail --------------------------------------------------------
class _Perturbed:
    """dg with one differentiation mode scaled: a wrong derivative."""

    def __init__(self, dg, which):
        self._dg, self._which = dg, which

    def __getattr__(self, name):
        return getattr(self._dg, name)

    def fwddiff(self, launcher, *acts):
        out = self._dg.fwddiff(launcher, *acts)
        if self._which == "fwddiff":
            for a in acts:
                if isinstance(a, self._dg.Duplicated) and isinstance(a.shadow, np.ndarray):
                    a.shadow *= 1.001
        return out

    def autodiff(self, launcher, *acts):
        out = self._dg.autodiff(launcher, *acts)
        if self._which == "autodiff":
            for a in acts:
                if isinstance(a, self._dg.Duplicated) and isinstance(a.shadow, np.ndarray):
                    a.shadow *= 1.001
        return out


@pytest.mark.parametrize("which, check", [("fwddiff", "forward-vs-fd"),
                                          ("autodiff", "reverse-vs-forward")])
def test_wrong_derivatives_are_caught(monkeypatch, which, check):
    monkeypatch.setattr(fz, "dg", _Perturbed(fz.dg, which))
    with pytest.raises(fz.Failure) as info:
        fz.check_case(random_case(3))
    assert info.value.check == check


def test_wrong_primal_is_caught(monkeypatch):
    case = random_case(3)
    real = fz.python_reference

    def off_by_a_bit(mod, c):
        x, y, w = real(mod, c)
        return x, y + 1e-6, w
    monkeypatch.setattr(fz, "python_reference", off_by_a_bit)
    with pytest.raises(fz.Failure) as info:
        fz.check_case(case)
    assert info.value.check == "primal"


def test_failures_print_shrunk_reproducers(monkeypatch):
    monkeypatch.setattr(fz, "dg", _Perturbed(fz.dg, "autodiff"))
    out = io.StringIO()
    counts, failures = fz.run(1, 3, do_shrink=True, out=out, shrink_budget=4)
    assert counts["failed"] == 1
    text = out.getvalue()
    assert "=== FAIL seed 3: reverse-vs-forward" in text
    assert "def kk(x, y, w, m, n, f):" in text and "x = np.array([" in text
    shrunk = text.split("--- kernel module ---\n")[1].split("--- inputs")[0]
    assert shrunk.count("\n") < random_case(3).source.count("\n")

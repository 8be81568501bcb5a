"""A fixed slice of the gradient fuzzer (scripts/fuzz_gradients.py): random
kernels with arithmetic, math calls, if/while/for with runtime bounds,
break/continue, early return (also inside loops), `and`/`or`, calls to
@dg.func and several writes to one element; each checked for CPU primal =
Python thread by thread, forward mode = finite differences, reverse mode =
forward mode (dot-product test). Plus tests that each check can fail."""
from __future__ import annotations

import io
import tempfile

import numpy as np
import pytest

import fuzz_gradients as fz
from fuzz_kernels import random_case

SLICE = range(100)  # seeds; ~0.5 s each on an idle core
HARD_SLICE = range(20)  # --hard cases: piecewise functions, powf, atomics, gathers
#: the slices in jobs of CHUNK seeds (fz.run takes a first seed and a count), one
#: test each (5-10 s), so that `pytest -n auto` spreads them evenly over its
#: workers and none is left running alone at the end
CHUNK = 10
JOBS = [(list(SLICE)[k:k + CHUNK], False) for k in range(0, len(SLICE), CHUNK)] + [
    (list(HARD_SLICE)[k:k + CHUNK], True) for k in range(0, len(HARD_SLICE), CHUNK)]


@pytest.fixture(autouse=True)
def users_opt_level(monkeypatch):
    """The fuzz runs at the users' LLVM level, O2 (conftest.py sets O0 for the
    rest of the suite): its kernels are fresh per case, compiled here."""
    monkeypatch.setenv("DIFFGPU_OPT", "2")


@pytest.mark.parametrize("job", JOBS, ids=[f"{'hard' if h else 'seeds'}{s[0]}-{s[-1]}"
                                           for s, h in JOBS])
def test_fuzz_slice(job):
    """Every case of the job passes or is skipped / on a jump, and at least
    90% of each job's cases are checked (so at least 90% of the slice)."""
    counts, text = fz.run_quiet(job)
    assert counts["failed"] == 0, text
    assert sum(counts.values()) == len(job[0])
    assert counts["ok"] >= 0.9 * len(job[0]), counts  # few cases skipped or on a jump


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


@pytest.fixture(scope="module")
def case3():
    """random_case(3) and its module (fz.check_case's import of it), loaded
    once: the tests below alter what happens around the launches, not the
    kernels, so they share the compiled programs."""
    case = random_case(3)
    with fz.loaded(case.source, "s3_shared") as mod:
        yield case, mod


@pytest.mark.parametrize("which, check", [("fwddiff", "forward-vs-fd"),
                                          ("autodiff", "reverse-vs-forward")])
def test_wrong_derivatives_are_caught(monkeypatch, case3, which, check):
    monkeypatch.setattr(fz, "dg", _Perturbed(fz.dg, which))
    with pytest.raises(fz.Failure) as info:
        fz._check_module(*case3)
    assert info.value.check == check


def test_wrong_primal_is_caught(monkeypatch, case3):
    real = fz.python_reference

    def off_by_a_bit(mod, c):
        x, y, w = real(mod, c)
        return x, y + 1e-6, w
    monkeypatch.setattr(fz, "python_reference", off_by_a_bit)
    with pytest.raises(fz.Failure) as info:
        fz._check_module(*case3)
    assert info.value.check == "primal"


def test_failures_print_shrunk_reproducers(monkeypatch, tmp_path):
    monkeypatch.setattr(fz, "dg", _Perturbed(fz.dg, "autodiff"))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where the cases' modules go
    out = io.StringIO()
    counts, failures = fz.run(1, 3, do_shrink=True, out=out, shrink_budget=4)
    assert counts["failed"] == 1
    assert list(tmp_path.iterdir()) == []  # the case and each shrink trial cleaned up
    text = out.getvalue()
    assert "=== FAIL seed 3: reverse-vs-forward" in text
    assert "def kk(x, y, w, m, n, f):" in text and "x = np.array([" in text
    shrunk = text.split("--- kernel module ---\n")[1].split("--- inputs")[0]
    assert shrunk.count("\n") < random_case(3).source.count("\n")

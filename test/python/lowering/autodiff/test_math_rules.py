"""Every math function the frontend accepts has a reverse and a forward rule.

The list walked here is the frontend's own (`MATH_OPS` in
frontend/builtins_lower.py), so a new builtin without derivative rules, or
without an entry in `DOMAIN` below, fails this file. Each builtin is then
checked numerically through the whole stack: a kernel `Y[i] = f(X[i], ...)`
in float64, reverse and forward mode against finite differences
(dg.gradcheck), on points inside the function's smooth domain.
"""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import diffgpu as dg
from diffgpu.frontend.builtins_lower import MATH_OPS
from diffgpu.lowering.autodiff.rules import math as rules_math

N = 6

#: builtin -> (low, high) sample range of each argument (smooth points only)
DOMAIN = {
    "exp": [(-1, 1)], "exp2": [(-1, 1)], "expm1": [(-1, 1)],
    "log": [(0.5, 2)], "log2": [(0.5, 2)], "log10": [(0.5, 2)], "log1p": [(-0.5, 1)],
    "sin": [(-2, 2)], "cos": [(-2, 2)], "tan": [(-1, 1)],
    "asin": [(-0.8, 0.8)], "acos": [(-0.8, 0.8)], "atan": [(-2, 2)],
    "sinh": [(-1, 1)], "cosh": [(-1, 1)], "tanh": [(-1, 1)],
    "asinh": [(-2, 2)], "acosh": [(1.2, 3)], "atanh": [(-0.8, 0.8)],
    "sqrt": [(0.5, 2)], "rsqrt": [(0.5, 2)], "cbrt": [(0.3, 2)],
    "erf": [(-1.5, 1.5)], "erfc": [(-1.5, 1.5)],
    # piecewise constant: points away from the jumps (derivative 0)
    "floor": [(0.1, 0.9)], "ceil": [(0.1, 0.9)], "trunc": [(0.1, 0.9)],
    "fabs": [(0.2, 2)], "pow": [(0.5, 2), (-1.5, 1.5)],
    "atan2": [(-2, 2), (0.5, 2)], "copysign": [(0.2, 2), (-2, -0.2)],
    "fma": [(-2, 2), (-2, 2), (-2, 2)],
}


def _kernels(tmp_dir):
    """A module with one kernel `k_<name>`: Y[i] = dg.<name>(X0[i], ...) per
    builtin, written as source (each kernel names its builtin in its text)."""
    lines = ["import diffgpu as dg", ""]
    for name, dom in DOMAIN.items():
        xs = [f"X{j}" for j in range(len(dom))]
        call = ", ".join(f"{x}[i]" for x in xs)
        lines += ["@dg.kernel", f"def k_{name}({', '.join(xs)}, Y):",
                  "    i = dg.global_id(0)", "    if i < len(Y):",
                  f"        Y[i] = dg.{name}({call}) * 1.0", ""]
    path = tmp_dir / "math_rule_kernels.py"
    path.write_text("\n".join(lines))
    spec = importlib.util.spec_from_file_location("math_rule_kernels", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    return _kernels(tmp_path_factory.mktemp("math_rules"))


def test_every_builtin_has_rules():
    """Forward mode uses the same partials as reverse mode (forward.py)."""
    missing = sorted(n for n, op in MATH_OPS.items() if op not in rules_math.DERIVATIVES)
    assert not missing, f"math builtins without derivative rules: {missing}"
    assert sorted(set(MATH_OPS) - set(DOMAIN)) == [], \
        "add the new builtin's smooth sample range to DOMAIN"


@pytest.mark.parametrize("name", sorted(MATH_OPS))
def test_builtin_gradient(name, kernels):
    dom = DOMAIN[name]
    rng = np.random.default_rng(len(name))
    xs = [rng.uniform(lo, hi, N) for lo, hi in dom]
    k = getattr(kernels, f"k_{name}")
    acts = [dg.Duplicated(x, np.zeros(N)) for x in xs]
    acts.append(dg.Duplicated(np.zeros(N), np.zeros(N)))
    assert dg.gradcheck(k[1, N], *acts, eps=1e-6, atol=1e-6, rtol=1e-5)
    # the derivative is not identically zero, except for the step functions
    d = np.ones(N)
    shadows = [np.zeros(N) for _ in xs]
    dg.autodiff(k[1, N], *[dg.Duplicated(x.copy(), s) for x, s in zip(xs, shadows)],
                dg.Duplicated(np.zeros(N), d))
    flat = name in ("floor", "ceil", "trunc")
    assert (np.abs(shadows[0]).max() == 0.0) == flat

"""Compile work stays linear in kernel size: a flat sum of 1,000 terms and its
gradient compile on the host, and the generated code grows in proportion.

The checks count work (lines of LLVM-dialect text, barrier phases), never
seconds, so a loaded machine cannot make them flaky. bench/compile_scaling.py
prints the timings.
"""
import numpy as np

import diffgpu as dg
from diffgpu.runtime import cpu
from diffgpu.lowering.aggregate_atomics import MAX_BLOCK_SUMS

WIDTH = 16  # term i reads X[i % WIDTH]


def sum_kernels(tmp_path, coefs, name="k"):
    """`name`: Y[0] = X[0] * c0 + X[1] * c1 + ... (one flat sum), and its
    reverse-mode kernel."""
    terms = " + ".join(f"X[{i % WIDTH}] * {c!r}" for i, c in enumerate(coefs))
    src = f"def {name}(Y, X):\n    Y[0] = {terms}\n"
    path = tmp_path / f"{name}_{len(coefs)}.py"
    path.write_text(src)
    ns = {}
    exec(compile(src, str(path), "exec"), ns)
    k = dg.kernel(ns[name])

    @dg.kernel
    def grad(Y, dY, X, dX):
        dg.autodiff(k, dg.Duplicated(Y, dY), dg.Duplicated(X, dX))

    return k, grad


def arrays():
    x = np.random.default_rng(1).standard_normal(WIDTH)
    return np.zeros(1), np.array([0.75]), x, np.zeros(WIDTH)


def expected_dx(coefs, dy):
    dx = np.zeros(WIDTH)
    for i, c in enumerate(coefs):
        dx[i % WIDTH] += c
    return dx * dy


def test_500_term_sum_and_gradient_compile_in_linear_work(tmp_path):
    """Before MAX_BLOCK_SUMS, each of the gradient's adds to dX became a block
    sum with its own barrier and shared array; the host lowering made one phase
    function per barrier taking every shared array: 107,000 lines of LLVM for
    100 terms, and minutes of compile time for 300. 50 and 500 terms: ten
    times the terms must give about ten times the code (quadratic growth would
    give a hundred times), with the same number of phases."""
    lines, phases = {}, {}
    for n in (50, 500):
        coefs = [float(i + 1) for i in range(n)]
        k, grad = sum_kernels(tmp_path, coefs)
        y, dy, x, dx = arrays()
        k[1, 1](y, x)
        assert np.isclose(y[0], sum(c * x[i % WIDTH] for i, c in enumerate(coefs)),
                          rtol=1e-12)
        grad[1, 1](y, dy, x, dx)
        np.testing.assert_allclose(dx, expected_dx(coefs, 0.75), rtol=1e-12)
        text = llvm_text(grad)
        lines[n] = text.count("\n")
        phases[n] = text.count("llvm.func @grad__phase")
    assert lines[500] < 12 * lines[50], lines  # 10x the terms: about 10x the code
    assert phases[50] == phases[500] <= MAX_BLOCK_SUMS + 1, phases


def llvm_text(kernel) -> str:
    """The LLVM-dialect text of the one host program `kernel` has launched."""
    (program,) = kernel._programs.values()
    return program.host.llvm_text


def test_large_module_jits_at_o0_with_the_same_bits(tmp_path, monkeypatch):
    """Above LARGE_MODULE_LINES the JIT skips LLVM's super-linear O2 pipeline;
    the results are bit-identical to O2's (rounding-sensitive coefficients)."""
    coefs = [float(c) for c in np.random.default_rng(2).standard_normal(120) * 1e3]
    results = []
    monkeypatch.setenv("DIFFGPU_OPT", "2")  # the users' level (conftest.py sets 0)
    for limit in (10**9, 0):  # O2, then O0
        monkeypatch.setattr(cpu, "LARGE_MODULE_LINES", limit)
        monkeypatch.setenv("DIFFGPU_CACHE_DIR", str(tmp_path / f"cache{limit}"))
        k, grad = sum_kernels(tmp_path, coefs, name=f"k{limit}")
        y, dy, x, dx = arrays()
        k[1, 64](y, x)
        grad[1, 1](y, dy, x, dx)
        assert cpu.opt_level_for(llvm_text(grad), 2) == (2 if limit else 0)
        results.append((y.copy(), dx.copy()))
    (y2, dx2), (y0, dx0) = results
    assert y2.tobytes() == y0.tobytes() and dx2.tobytes() == dx0.tobytes()
    np.testing.assert_allclose(dx0, expected_dx(coefs, 0.75), rtol=1e-9)

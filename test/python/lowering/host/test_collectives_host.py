"""Collectives on the host target: misuse is a compile error at the user's
line, the race detector sees no race in their staging memory and reports
a collective that only some threads reach, atomic max/min/sub."""
import numpy as np
import pytest

import diffgpu as dg
import kernels_collectives as K
from diffgpu.errors import CompileError, DivergentBarrierError


def _line(kernel, text):
    import inspect
    src, start = inspect.getsourcelines(kernel.py_func if hasattr(kernel, "py_func") else kernel)
    return start + next(i for i, l in enumerate(src) if text in l)


def test_collective_under_thread_dependent_branch_is_a_compile_error():
    with pytest.raises(CompileError) as e:
        K.divergent_k[1, 32](np.zeros((1, 32)), np.zeros((1, 32)))
    msg = str(e.value)
    assert "dg.warp_sum under a condition that depends on the thread id" in msg
    assert "kernels_collectives.py:" in msg and "^" in msg


BAD = {
    "shfl_xor(v, 40)": "shfl_xor() mask must be in 0..31",
    "shfl_up(v, -1)": "shfl_up() offset must be in 0..31",
    "shfl_down(v, 1.5)": "shfl_down() offset must be an integer",
    "warp_sum(v > 0.0)": "warp_sum() takes a float or integer value",
    "block_scan(v, v)": "block_scan() takes 1 argument(s), got 2",
}


@pytest.mark.parametrize("call", sorted(BAD))
def test_bad_arguments(call, tmp_path):
    path = tmp_path / "bad_collective.py"
    path.write_text("import diffgpu as dg\n\n@dg.kernel\ndef k(X):\n    v = X[dg.thread_id(0)]\n"
                    f"    X[0] = dg.{call}\n")
    import importlib.util
    spec = importlib.util.spec_from_file_location("bad_collective", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with pytest.raises(CompileError) as e:
        mod.k[1, 32](np.zeros(32))
    assert BAD[call] in str(e.value) and "bad_collective.py:6:" in str(e.value)


def test_atomic_max_min_sub():
    X = np.random.RandomState(0).randn(200)
    M = np.array([-np.inf, np.inf, 1.0])
    K.atomics_k[4, 50](M, X)
    assert M[0] == X.max() and M[1] == X.min()
    np.testing.assert_allclose(M[2], 1.0 - X.sum())
    Mi = np.array([-5, 5, 0], np.int64)
    K.atomics_k[2, 32](Mi, np.arange(-30, 34, dtype=np.int64))
    assert list(Mi) == [33, -30, -sum(range(-30, 34))]


def test_atomic_sub_gradient():
    """atomic_sub is an atomic add of -v: dv = -dA[idx]."""
    X = np.linspace(0.5, 2.0, 12)
    dA = np.array([1.0, 2.0, 3.0])
    g = dg.vjp(K.atomic_sub_k[3, 4], np.zeros(3), X, cotangents={"A": dA})["X"]
    np.testing.assert_allclose(g, -dA[np.arange(12) % 3] * 2 * X)


def test_atomic_max_has_no_derivative():
    with pytest.raises(CompileError) as e:
        dg.vjp(K.atomics_k[1, 8], np.zeros(3), np.ones(8), cotangents={"M": np.ones(3)})
    assert "dg.atomic_max" in str(e.value) and "no derivative" in str(e.value)


@pytest.mark.parametrize("name", sorted(K.OPS))
def test_racecheck_sees_no_race_in_the_staging(name):
    X = K.reference("block_sum", np.ones((1, 96)))  # any values
    Y = np.zeros_like(X)
    with dg.racecheck():
        K.OPS[name][1, 96](X, Y)
    np.testing.assert_allclose(Y, K.reference(name, X), rtol=1e-12)
    with dg.racecheck():  # the derivative's collectives too
        dg.vjp(K.OPS[name][1, 96], X, np.zeros_like(X), cotangents={"Y": np.ones_like(X)})


def test_racecheck_reports_a_collective_only_some_threads_reach():
    X = np.ones((1, 64))
    X[0, :5] = -1.0
    with pytest.raises(DivergentBarrierError) as e:
        with dg.racecheck():
            K.data_divergent_k[1, 64](X, np.zeros_like(X))
    assert f"kernels_collectives.py:{_line(K.data_divergent_k, 'block_sum')}" in str(e.value)

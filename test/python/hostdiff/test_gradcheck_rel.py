"""dg.gradcheck's finite-difference step is relative to the inputs
(eps * max(1, |x|) per element), and GradcheckError is a DiffgpuError."""
import importlib

import numpy as np
import pytest

import diffgpu as dg

gc = importlib.import_module("diffgpu.hostdiff.gradcheck")  # dg.gradcheck is the function


@dg.kernel
def scale2(Y, X):
    i = dg.global_id(0)
    if i < len(X):
        Y[i] = 2.0 * X[i]


@dg.kernel
def cut(Y, X):  # int() has derivative 0: dY/dX is 1, finite differences see 2
    i = dg.global_id(0)
    if i < len(X):
        Y[i] = float(int(X[i])) + X[i]


def _acts(x):
    return dg.Duplicated(np.zeros_like(x), np.zeros_like(x)), dg.Duplicated(x, np.zeros_like(x))


@pytest.mark.parametrize("max_elements", [64, 0])  # full Jacobian / random directions
def test_outputs_near_1e9_pass(max_elements):
    # an absolute step of 1e-6 is below the spacing of float64 near 1e9
    # (1.2e-7 * 8): the differences would be rounding noise
    x = 1e9 * (1.0 + np.arange(4.0) / 7)
    assert dg.gradcheck(scale2[1, 4], *_acts(x), max_elements=max_elements)


def test_steps_are_relative_per_element(monkeypatch):
    calls = []
    real = gc._Problem.fd_jvp

    def spy(self, v, step):
        calls.append((v, step))
        return real(self, v, step)
    monkeypatch.setattr(gc._Problem, "fd_jvp", spy)
    x = np.array([0.25, -3.0, 2e9])
    dg.gradcheck(scale2[1, 4], *_acts(x), eps=1e-6)
    # one column per element of X = (Y, X), step eps * max(1, |x|) ...
    assert [step for _, step in calls[:6]] == pytest.approx([1e-6] * 4 + [3e-6, 2e3])
    # ... then the random direction twice (forward and reverse mode), step eps,
    # the direction scaled by max(1, |x|)
    rng = np.random.default_rng(0)
    r_y, r_x = rng.standard_normal(3), rng.standard_normal(3)
    for v, step in calls[6:]:
        assert step == 1e-6
        np.testing.assert_array_equal(v[0], r_y)  # Y is 0: scale 1
        np.testing.assert_array_equal(v[1], r_x * [1.0, 3.0, 2e9])
    assert len(calls) == 8


def test_a_mismatch_at_large_inputs_is_still_found():
    x = 1e9 * (1.0 + np.arange(4.0) / 7)
    with pytest.raises(dg.GradcheckError, match=r"dY\[0\] / dX\[0\] = 1\.0, finite differences "
                       r"give 2\.0"):
        dg.gradcheck(cut[1, 4], *_acts(x))


def test_gradcheck_error_is_a_diffgpu_error():
    assert issubclass(dg.GradcheckError, dg.DiffgpuError)
    assert issubclass(dg.GradcheckError, AssertionError)  # existing except clauses
    with pytest.raises(dg.DiffgpuError, match="finite differences give"):
        dg.gradcheck(cut[1, 4], *_acts(np.array([3.0 - 5e-7])))  # int() jumps at 3

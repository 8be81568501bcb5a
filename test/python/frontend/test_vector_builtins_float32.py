"""The float32 derivative code of the vector, matrix and quaternion builtins
and operators, checked against finite differences.

dg.gradcheck (test_vector_builtins.py's test_gradcheck_float32,
test_warp_vector_ports.py) copies float32 arrays to float64 and checks the
float64 program (hostdiff/gradcheck.py), so the programs diffgpu makes for
float32 vectors are never compared with a derivative there. Here every case
of test_vector_builtins.CASES runs dg.vjp (reverse mode) and dg.jvp (forward
mode) on float32 arrays, and the results are compared with central finite
differences of the float64 kernel, computed in float64 at the same point
(the float32 inputs, widened exactly).
"""
import numpy as np
import pytest

import diffgpu as dg
from test_vector_builtins import CASES, N, _kernel, _setup

NAMES = ("a", "b")  # the input parameters of kernel1 / kernel2 (after `out`)

# float64 central differences with an absolute step H (the inputs lie in
# [-1, 1], the matrices' diagonals in [1, 3]): truncation ~ H^2 |f'''| ~ 1e-12,
# rounding ~ 1e-16 / H ~ 1e-10, both far below the float32 tolerance.
H = 1e-6

# float32: one rounding is 2^-24 ~ 6e-8 relative. The derivatives here chain
# up to a few hundred roundings (inverse 44: 4x4 cofactors of 3x3
# determinants, a division, and their adjoints) through well conditioned
# inputs (matrices 2 I + U(-1, 1)). Measured, max |error| / max(1, max |ref|):
# at most 3e-7 for every case but inverse 44 forward (1.1e-6); 1e-5 leaves a
# margin of nine over the worst, while a wrong rule (a missing term, a wrong
# sign, a swapped operand) is off by a sizeable part of an entry.
TOL = 1e-5


def _point(name, seed):
    """The float32 inputs, float64 copies of the same values, the output shape."""
    _, ins, want = _setup(name, np.float64, seed)
    ins32 = [x.astype(np.float32) for x in ins]
    return ins32, [x.astype(np.float64) for x in ins32], want.shape


def _f64(name, ins, shape):
    out = np.zeros(shape)
    _kernel(name)[1, N](out, *ins)
    return out


def _jacobian(name, ins, shape):
    """d out / d inputs by central differences of the float64 kernel: one
    (out.size, x.size) matrix per input."""
    jac = []
    for k, x in enumerate(ins):
        cols = []
        for j in range(x.size):
            plus = [y.copy() for y in ins]
            minus = [y.copy() for y in ins]
            plus[k].reshape(-1)[j] += H
            minus[k].reshape(-1)[j] -= H
            cols.append(((_f64(name, plus, shape) - _f64(name, minus, shape)) / (2 * H))
                        .reshape(-1))
        jac.append(np.stack(cols, axis=1))
    return jac


def _close(got, want, what):
    assert got.dtype == np.float32, f"{what}: {got.dtype}, not the float32 program's"
    assert np.abs(want).max() > 1e-3, f"{what}: a zero reference checks nothing"
    err = np.abs(got.astype(np.float64) - want).max()
    assert err <= TOL * max(1.0, np.abs(want).max()), f"{what}: max |error| {err:.3g}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_vjp_float32_against_finite_differences(name):
    ins32, ins64, shape = _point(name, seed=3)
    rng = np.random.default_rng(4)
    ybar = rng.standard_normal(shape).astype(np.float32)
    names = NAMES[:len(ins32)]
    grads = dg.vjp(_kernel(name)[1, N], np.zeros(shape, np.float32), *ins32,
                   cotangents={"out": ybar})
    for x_name, x, jac in zip(names, ins64, _jacobian(name, ins64, shape)):
        want = (jac.T @ ybar.astype(np.float64).reshape(-1)).reshape(x.shape)
        _close(grads[x_name], want, f"{name}: gradient of {x_name}")


@pytest.mark.parametrize("name", sorted(CASES))
def test_jvp_float32_against_finite_differences(name):
    ins32, ins64, shape = _point(name, seed=5)
    rng = np.random.default_rng(6)
    tangents = [rng.standard_normal(x.shape).astype(np.float32) for x in ins32]
    names = NAMES[:len(ins32)]
    got = dg.jvp(_kernel(name)[1, N], np.zeros(shape, np.float32), *ins32,
                 tangents=dict(zip(names, tangents)))["out"]
    jac = _jacobian(name, ins64, shape)
    want = sum(j @ t.astype(np.float64).reshape(-1) for j, t in zip(jac, tangents))
    _close(got, want.reshape(shape), f"{name}: tangent of out")

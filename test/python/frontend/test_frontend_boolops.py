"""`and` / `or` on numbers follow Python: the value is the operand that decides
(`x and y` is y when x is true, else x; `x or y` is x when x is true, else y),
the right operand is evaluated only when needed, and gradients flow through
the operand chosen."""
from __future__ import annotations

import numpy as np
import pytest

import diffgpu as dg
from diffgpu.frontend import build_module
from diffgpu.lowering.common.targets import HOST_TARGET
from diffgpu.types import ArrayType, ScalarType


def values(X, Y, k):
    Y[0] = X[0] and X[1]
    Y[1] = X[2] or 1.0
    Y[2] = X[3] and X[1] or X[2]
    Y[3] = (X[0] > 0 and X[1] > 5) + 0.0
    s = X[2]
    Y[4] = s or 1.0
    Y[5] = k and X[0]          # int and float: the float, or 0
    Y[6] = X[3] or k           # float or int
    Y[7] = X[0] * (X[1] * 0.0 or X[2]) + (X[3] and 2.0)  # X[1] gets no gradient


k_values = dg.kernel(values)


@pytest.mark.parametrize("X, k", [
    ([2.0, 3.0, 0.25, 0.0], 0),
    ([2.0, 3.0, 0.0, 0.0], 4),
    ([0.0, -1.5, 0.25, 0.7], 1),
    ([-0.5, 6.0, 0.0, 0.0], 0),
])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_values_are_python_values(X, k, dtype):
    X = np.array(X, dtype)
    Y = np.zeros(8, dtype)
    want = np.zeros(8, dtype)
    values(X, want, k)
    k_values[1, 1](X, Y, k)
    np.testing.assert_allclose(Y, want, rtol=1e-6)
    assert Y.dtype == dtype


def test_issue_reproducers():
    X = np.array([2.0, 3.0], np.float32)
    Y = np.zeros(1, np.float32)

    @dg.kernel
    def k_and(X, Y):
        Y[0] = X[0] and X[1]

    @dg.kernel
    def k_or(X, Y, s):
        Y[0] = s or 1.0
    k_and[1, 1](X, Y)
    assert Y[0] == 3.0
    k_or[1, 1](X, Y, 0.25)
    assert Y[0] == 0.25


@pytest.mark.parametrize("X", [[2.0, 3.0, 0.25, 0.7], [2.0, 3.0, 0.0, 0.0],
                               [0.0, 0.5, 0.25, 0.7], [-1.5, 0.5, -0.25, 0.7]])
def test_gradients_flow_through_the_chosen_operand(X):
    X = np.array(X)
    dX = np.zeros(4)
    Y = np.zeros(8)
    dg.autodiff(k_values[1, 1], dg.Duplicated(X, dX), dg.Duplicated(Y, np.ones(8)), dg.Const(3))
    # d/dX of sum(Y), taken by hand from the Python semantics
    want = np.zeros(4)
    want[1 if X[0] else 0] += 1                       # Y0
    want[2] += 1 if X[2] else 0                       # Y1
    if X[3]:
        want[1 if X[1] else 3] += 1                   # Y2: (X3 and X1) or X2
    else:
        want[2] += 1 if not X[3] else 0
    want[2] += 1 if X[2] else 0                       # Y4
    want[0] += 1                                      # Y5: 3 and X0
    want[3] += 1 if X[3] else 0                       # Y6
    want[0] += X[2]                                   # Y7
    want[2] += X[0]
    want[3] += 0 if X[3] else 1                       # Y7: X[3] and 2.0 is X[3] when 0
    np.testing.assert_allclose(dX, want, rtol=1e-12)
    if X.all():  # finite differences: away from the jumps at zero
        dg.gradcheck(k_values[1, 1], dg.Duplicated(X, np.zeros(4)),
                     dg.Duplicated(np.zeros(8), np.zeros(8)), 3)


@dg.kernel
def k_guard(A, B, n):
    i = dg.global_id(0)
    B[i] = i < n and A[i] or -1.0   # A[i] is read only when i < n


def test_right_operand_is_short_circuited():
    A = np.array([0.5, 0.0, 2.0])
    B = np.zeros(5)
    k_guard[1, 5](A, B, 3)
    np.testing.assert_array_equal(B, [0.5, -1.0, 2.0, -1.0, -1.0])
    text = build_module(k_guard, (ArrayType("float64", 1), ArrayType("float64", 1),
                                  ScalarType("int64")), HOST_TARGET).text
    load = text.index("memref.load")
    assert text.rfind("scf.if", 0, load) != -1, "the load must sit under an scf.if"


@dg.kernel
def k_no_effects(X, Y, a, b):
    Y[0] = a and b


def test_pure_operands_use_select():
    text = build_module(k_no_effects, (ArrayType("float32", 1), ArrayType("float32", 1),
                                       ScalarType("float64"), ScalarType("float64")),
                        HOST_TARGET).text
    assert "arith.select" in text and "scf.if" not in text

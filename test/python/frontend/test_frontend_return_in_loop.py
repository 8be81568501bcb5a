"""`return` inside `for` and `while` loops, in kernels and `@dg.func`s.

A return in a loop raises a hidden flag that stops every loop around it; the
code after those loops runs under `scf.if not flag`. Values are checked
against the same Python function run thread by thread, gradients (reverse and
forward mode) against finite differences with dg.gradcheck.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import diffgpu as dg
from diffgpu.errors import CompileError


def first_big(x, n):
    s = 0.0
    for j in range(n):
        s = s + x[j] * x[j]
        if s > 1.5:
            return s * x[j]
    return -s


def nested(x, n):
    s = x[0]
    for j in range(n):
        k = 0
        while k < 3:
            s = s * 0.75 + x[j] * math.sin(s)
            if s > 1.0:
                return s, j
            k += 1
        s = s + 0.25
    return s * 2.0, -1


def while_return(x, n):
    s = 0.5
    j = 0
    while j < n:
        s = s + math.exp(-x[j] * s)
        j += 1
        if s > 2.0:
            break
        if x[j - 1] < -0.5:
            return s * s
    return s + 1.0


f_first_big, f_nested, f_while_return = dg.func(first_big), dg.func(nested), dg.func(while_return)


@dg.kernel
def k_funcs(X, Y, n):
    i = dg.global_id(0)
    if i >= 1:
        return
    a, b = f_nested(X, n)
    Y[0] = f_first_big(X, n)
    Y[1] = a + b
    Y[2] = f_while_return(X, n)


@dg.kernel
def k_kernel_return(X, Y, n):
    """A kernel whose threads stop inside a loop: Y keeps what was written."""
    i = dg.global_id(0)
    if i >= len(Y):
        return
    a = X[i]
    for j in range(n):
        Y[i] = Y[i] + a * X[j]
        for q in range(2):
            a = a * 0.5 + math.sin(X[(i + j + q) % len(X)])
            if a > 0.9:
                Y[i] = Y[i] * a
                return
    Y[i] = Y[i] - a


def _data(seed, n=6):
    rng = np.random.default_rng(seed)
    return rng.uniform(-1.2, 1.2, n)


@pytest.mark.parametrize("seed", range(6))
def test_func_values(seed):
    x = _data(seed)
    y = np.zeros(3)
    k_funcs[1, 1](x, y, 5)
    want = [first_big(x, 5), sum(nested(x, 5)), while_return(x, 5)]
    np.testing.assert_allclose(y, want, rtol=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_kernel_values(seed):
    x, y = _data(seed), _data(seed + 50)
    want = y.copy()
    for i in range(len(y)):  # thread by thread, the same Python
        a = x[i]
        for j in range(4):
            want[i] = want[i] + a * x[j]
            stop = False
            for q in range(2):
                a = a * 0.5 + math.sin(x[(i + j + q) % len(x)])
                if a > 0.9:
                    want[i] = want[i] * a
                    stop = True
                    break
            if stop:
                break
        else:
            want[i] = want[i] - a
    k_kernel_return[1, 8](x, y, 4)
    np.testing.assert_allclose(y, want, rtol=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_gradients(seed):
    """Reverse and forward mode against finite differences (inputs kept away
    from the thresholds, where the functions jump)."""
    x = _data(seed)
    dg.gradcheck(k_funcs[1, 1], dg.Duplicated(x, np.zeros(6)),
                 dg.Duplicated(np.zeros(3), np.zeros(3)), 5)
    dg.gradcheck(k_kernel_return[1, 8], dg.Duplicated(x, np.zeros(6)),
                 dg.Duplicated(_data(seed + 50), np.zeros(6)), 4)


def test_paths_taken():
    """The gradcheck data above reaches both the early and the final return."""
    seen = set()
    for seed in range(4):
        x = _data(seed)
        seen.add(first_big(x, 5) < 0)
        seen.add(nested(x, 5)[1] < 0)
    assert seen == {True, False}


@dg.func
def f_arity(x, n):
    for i in range(n):
        if x > i:
            return x
        while x < 0.0:
            return x, x
    return x


@dg.kernel
def k_arity(A, n):
    A[0] = f_arity(A[0], n)


def test_return_arity_mismatch_in_loop():
    with pytest.raises(CompileError) as info:
        k_arity[1, 1](np.zeros(2), 3)
    msg = str(info.value)
    assert "returns 2 value(s) here and 1 elsewhere in a loop" in msg
    assert "return x, x" in msg


def test_ir_is_structured():
    """The loop becomes an scf.while carrying the flag and the value; the code
    after it sits under an scf.if on the flag (no unstructured control flow)."""
    from diffgpu.frontend import build_module
    from diffgpu.lowering.common.targets import HOST_TARGET
    from diffgpu.types import ArrayType, ScalarType
    text = build_module(k_funcs, (ArrayType("float64", 1), ArrayType("float64", 1),
                                  ScalarType("int64")), HOST_TARGET).text
    body = text[text.index("func.func @first_big"):]
    body = body[:body.index("\n}")]
    assert "scf.while" in body and "scf.for" not in body
    head = [ln for ln in body.splitlines() if "scf.while" in ln][0]
    assert head.count(" = ") >= 3  # counter, s, the flag and the returned value
    after = body[body.index("scf.while"):]
    assert "scf.if" in after and "cf.br" not in text and "cf.cond_br" not in text

"""Unsupported or wrong Python in kernels: CompileError at the user's line.

Each case asserts the message names the construct, points at the right line
(number, source text, caret column) and does not mention our own files.
"""
import inspect
import math
import traceback

import numpy as np
import pytest

import diffgpu as dg
from diffgpu.errors import CompileError
from diffgpu.frontend import build_diff_module, build_module
from diffgpu.lowering.common.targets import HOST_TARGET
from diffgpu.types import ArrayType, ScalarType

A1 = ArrayType("float32", 1)
A2 = ArrayType("float32", 2)
I64 = ScalarType("int64")
F32 = ScalarType("float32")
G_INT = 3
G_ARRAY = np.zeros(3)


def helper(x):  # a plain Python function (not @dg.func)
    return x


@dg.kernel
def k_lambda(A):
    f = lambda x: x  # noqa: E731
    A[0] = 1.0


@dg.kernel
def k_listcomp(A):
    A[0] = [i for i in range(3)][0]


@dg.kernel
def k_try(A):
    try:
        A[0] = 1.0
    except Exception:
        pass


@dg.kernel
def k_with(A):
    with open("x"):
        A[0] = 1.0


@dg.kernel
def k_print(A):
    print(A[0])


@dg.kernel
def k_string(A):
    s = "hello"


@dg.kernel
def k_dict(A):
    d = {1: 2}


@dg.kernel
def k_list(A):
    A[0] = [1.0, 2.0][0]


@dg.kernel
def k_slice(A):
    A[0] = A[1:3]


@dg.kernel
def k_attr(A):
    A[0] = A.foo


@dg.kernel
def k_unknown_call(A):
    A[0] = helper(A[0])


@dg.kernel
def k_numpy_unsupported(A):
    A[0] = np.sum(A)


@dg.kernel
def k_global_store(A):
    G_INT[0] = A[0]


@dg.kernel
def k_builtin_arity(A):
    A[0] = dg.thread_id(0, 1)


@dg.kernel
def k_shared_dtype(A):
    s = dg.shared_array(16, np.complex64)


@dg.kernel
def k_shared_shape(A, n):
    s = dg.shared_array(n, np.float32)


@dg.kernel
def k_float_index(A):
    A[1.5] = 0.0


@dg.kernel
def k_scalar_store(A, x):
    x[0] = A[0]


@dg.func
def rec(x):
    return rec(x - 1.0)


@dg.kernel
def k_recursion(A):
    A[0] = rec(A[0])


@dg.kernel
def k_for_else(A, n):
    for i in range(n):
        A[i] = 0.0
    else:
        A[0] = 1.0


@dg.kernel
def k_global_stmt(A):
    global G_INT
    A[0] = 1.0


@dg.kernel
def k_one_branch(A, n):
    if n > 0:
        t = 1.0
    A[0] = t


@dg.kernel
def k_undefined(A):
    A[0] = not_defined_anywhere


@dg.kernel
def k_return_value(A):
    return A[0]


@dg.kernel
def k_float_range(A):
    for i in range(2.5):
        A[0] = 1.0


@dg.func
def sq(x):
    return x * x


@dg.kernel
def k_active_array(A, dA):
    dg.autodiff(sq, dg.Active(A))


@dg.kernel
def k_for_list(A):
    for x in A:
        A[0] = x


@dg.func
def bad_callee(x):
    return x.real


@dg.kernel
def k_error_in_callee(A):
    A[0] = bad_callee(A[0])


@dg.kernel
def k_is(A):
    A[0] = A[0] is None


@dg.kernel
def k_partial_index(A):
    A[0] = A[0][0]


@dg.kernel
def k_global_array(A):
    A[0] = G_ARRAY[0]


@dg.kernel
def k_kernel_arity(A):
    k_string(A, A)


@dg.kernel
def k_array_arith(A):
    A[0] = A * 2.0


@dg.kernel
def k_math_arity(A):
    A[0] = math.atan2(A[0])


@dg.kernel
def k_int_pow(A, n):
    A[0] = n ** n


@dg.kernel
def k_shadow_type(A, dA):
    dg.autodiff(k_attr, dg.Duplicated(A, 1.0))


# (kernel, arg types, marker of the offending line, text the caret points at, message)
CASES = [
    (k_lambda, (A1,), "lambda", "lambda", "lambda"),
    (k_listcomp, (A1,), "[i for", "[i for", "list comprehension"),
    (k_try, (A1,), "try:", "try", "try statement"),
    (k_with, (A1,), "with open", "with", "with statement"),
    (k_print, (A1,), "print(", "print", "print"),
    (k_string, (A1,), '"hello"', '"hello"', "strings are not supported"),
    (k_dict, (A1,), "{1: 2}", "{1: 2}", "dict literal"),
    (k_list, (A1,), "[1.0, 2.0]", "[1.0, 2.0]", "list literal"),
    (k_slice, (A1,), "A[1:3]", "A[1:3]", "slicing"),
    (k_attr, (A1,), "A.foo", "A.foo", "unknown attribute 'foo'"),
    (k_unknown_call, (A1,), "helper(", "helper(", "unknown Python function 'helper'"),
    (k_numpy_unsupported, (A1,), "np.sum", "np.sum", "unknown Python function 'np.sum'"),
    (k_global_store, (A1,), "G_INT[0] =", "G_INT[0]", "cannot assign into global 'G_INT'"),
    (k_builtin_arity, (A1,), "thread_id(0, 1)", "dg.thread_id", "thread_id() takes 0 to 1"),
    (k_shared_dtype, (A1,), "complex64", "np.complex64", "unsupported dtype"),
    (k_shared_shape, (A1, I64), "shared_array(n", "n,", "constant int"),
    (k_float_index, (A1,), "A[1.5]", "1.5", "array index must be an integer"),
    (k_scalar_store, (A1, F32), "x[0] =", "x[0]", "cannot store into 'x'"),
    (k_recursion, (A1,), "return rec(", "rec(x", "recursion is not supported"),
    (k_for_else, (A1, I64), "for i in", "for", "'for ... else' is not supported"),
    (k_global_stmt, (A1,), "global G_INT", "global", "global statement"),
    (k_one_branch, (A1, I64), "A[0] = t", "t", "'t' may be undefined"),
    (k_undefined, (A1,), "not_defined_anywhere", "not_defined", "'not_defined_anywhere' is not defined"),
    (k_return_value, (A1,), "return A[0]", "return", "kernel cannot return a value"),
    (k_float_range, (A1,), "range(2.5)", "2.5", "range() arguments must be integers"),
    (k_active_array, (A1, A1), "dg.Active(A)", "dg.Active(A)", "Active is for scalars"),
    (k_for_list, (A1,), "for x in A", "A:", "only 'for ... in range(...)'"),
    (k_error_in_callee, (A1,), "x.real", "x.real", "unknown attribute 'real'"),
    (k_is, (A1,), "is None", "A[0] is", "comparison 'Is' is not supported"),
    (k_partial_index, (A1,), "A[0][0]", "A[0][0]", "not subscriptable"),
    (k_global_array, (A1,), "G_ARRAY[0]", "G_ARRAY", "global array"),
    (k_kernel_arity, (A1,), "k_string(A, A)", "k_string", "k_string() takes 1 argument(s), got 2"),
    (k_array_arith, (A1,), "A * 2.0", "A * 2.0", "whole-array operations are not supported"),
    (k_math_arity, (A1,), "atan2(", "math.atan2", "atan2() takes 2 argument"),
    (k_int_pow, (A1, I64), "n ** n", "n ** n", "integer '**' needs a constant exponent"),
    (k_shadow_type, (A1, A1), "Duplicated(A, 1.0)", "dg.Duplicated", "shadow of argument 0"),
]


def _expected_position(defn, line_marker, caret_marker):
    """(line number, source line, 0-based caret column) of the offending code."""
    lines, start = inspect.getsourcelines(defn.py_func)
    for k, text in enumerate(lines):
        if line_marker in text and not text.lstrip().startswith(("def ", "@")):
            return start + k, text, text.index(caret_marker)
    raise AssertionError(f"marker {line_marker!r} not in {defn.name}")


@pytest.mark.parametrize("kernel, types, line_marker, caret_marker, message", CASES,
                         ids=[c[0].name for c in CASES])
def test_error_points_at_user_code(kernel, types, line_marker, caret_marker, message):
    with pytest.raises(CompileError) as info:
        build_module(kernel, types, HOST_TARGET)
    err = info.value
    text = str(err)
    where = kernel
    if kernel is k_error_in_callee:
        where = bad_callee
    elif kernel is k_recursion:
        where = rec
    line, src, col = _expected_position(where, line_marker, caret_marker)
    assert message in text, text
    assert err.line == line, text
    assert err.filename == __file__ and f"{__file__}:{line}:{col + 1}: error:" in text
    assert src.strip() in text
    indent = len(src) - len(src.lstrip())
    assert "\n    " + " " * (col - indent) + "^" in text, text
    assert "diffgpu/frontend" not in text
    assert err.__suppress_context__ and err.__cause__ is None
    assert "diffgpu/frontend" not in "".join(traceback.format_exception_only(err))


def test_at_least_twenty_cases():
    assert len(CASES) >= 20


def test_debug_env_keeps_internal_traceback(monkeypatch):
    monkeypatch.setenv("DIFFGPU_DEBUG", "1")
    with pytest.raises(CompileError) as info:
        build_module(k_lambda, (A1,), HOST_TARGET)
    assert info.value.__cause__ is not None
    assert "diffgpu/frontend" in "".join(traceback.format_exception(info.value.__cause__))


def test_wrong_launch_arity_is_compile_error():
    with pytest.raises(CompileError, match="takes 1 argument"):
        build_module(k_lambda, (A1, A1), HOST_TARGET)


@pytest.mark.parametrize("mode, kinds, types, message", [
    ("reverse", ("active",), (A1,), "Active is for scalars"),
    ("forward", ("dup", "active"), (A1, F32), "Active is for reverse mode"),
    ("reverse", ("dup", "dup"), (A1, F32), "a scalar is Active in reverse mode"),
    ("reverse", ("dup",), (A1, F32), "1 activities for 2 arguments"),
    ("reverse", ("dup", "active"), (A1, I64), "integer arguments are always Const"),
])
def test_bad_host_activities(mode, kinds, types, message):
    @dg.kernel
    def two(A, x):
        A[0] = x
    with pytest.raises(CompileError, match=message):
        build_diff_module(two, mode, kinds, types, HOST_TARGET)


def test_kernel_without_source_file():
    namespace = {"dg": dg}
    exec("@dg.kernel\ndef nosrc(A):\n    A[0] = 1.0\n", namespace)
    with pytest.raises(CompileError, match="cannot read the source of 'nosrc'"):
        build_module(namespace["nosrc"], (A1,), HOST_TARGET)

"""Gradients of Python kernels on the CPU, against finite differences
(the kernels: gradient_kernels.py).

Each kernel runs through the whole stack (frontend -> diffgpu-autodiff ->
host JIT). Reverse mode: the dot-product test <D, J V> = <J^T D, V>, J V by
central differences in float64 over random D and V; forward mode: J V
directly. float32 kernels are checked against the same kernel compiled for
float64 (types follow the arguments).
"""
from __future__ import annotations

import numpy as np
import pytest

import diffgpu as dg
from diffgpu.activities import Active, Const, Duplicated
from gradient_kernels import (
    k_elementwise, k_unary_mix, k_binary_mix, k_scalar_active, k_inplace, k_loop_runtime,
    k_loop_overwrite, k_loop_step, k_nested_loops, k_while, k_while_memory, k_branches,
    k_ternary, k_branch_in_loop, k_call_func, k_square_first, k_call_kernel, k_gather,
    k_scatter_atomic, k_matvec, k_softmax_rows, k_2d_inplace, k_3d, k_reverse_range,
    k_int_mix, k_early_return, k_2d_grid, k_expm_log1p, k_trig, k_inner_autodiff,
    k_inner_fwddiff, k_inner_dup_array, k_break_continue, k_while_break, k_nested_calls,
    k_call_writes, k_int_output, k_shared_tile, k_shared_accumulate)

N = 8


# ---------------------------------------------------------------------------
# Harness
# ---------------------------------------------------------------------------

def _copy(args):
    return [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]


def _run(kernel, grid, block, args):
    out = _copy(args)
    kernel[grid, block](*out)
    return out


def _is_diff(a, kind):
    return kind != "const" and (not isinstance(a, np.ndarray) or a.dtype.kind == "f")


def reverse_result(kernel, grid, block, args, kinds, D):
    vals = _copy(args)
    shadows = {k: np.array(D[k], copy=True) for k in D}
    acts = []
    for k, (a, kind) in enumerate(zip(vals, kinds)):
        if kind == "dup":
            acts.append(Duplicated(a, shadows[k]))
        elif kind == "active":
            acts.append(Active(a))
        else:
            acts.append(Const(a) if not isinstance(a, np.ndarray) else a)
    grads = dg.autodiff(kernel[grid, block], *acts)
    return vals, shadows, list(grads)


def dot_test(kernel, grid, block, args, kinds, seed=0, eps=1e-6, rtol=1e-6, atol=1e-8,
             forward=True):
    rng = np.random.default_rng(seed)
    diff = [k for k, (a, kind) in enumerate(zip(args, kinds)) if _is_diff(a, kind)]
    V = {k: rng.standard_normal(np.shape(args[k])) if isinstance(args[k], np.ndarray)
         else float(rng.standard_normal()) for k in diff}
    D = {k: rng.standard_normal(args[k].shape) for k in diff
         if isinstance(args[k], np.ndarray)}

    def shifted(sign):
        out = list(args)
        for k in diff:
            out[k] = args[k] + sign * eps * V[k]
        return _run(kernel, grid, block, out)

    plus, minus = shifted(1.0), shifted(-1.0)
    jv = {k: (plus[k] - minus[k]) / (2 * eps) for k in D}
    lhs = sum(float(np.sum(D[k] * jv[k])) for k in D)
    vals, shadows, grads = reverse_result(kernel, grid, block, args, kinds, D)
    ref = _run(kernel, grid, block, args)
    for k in range(len(args)):
        if isinstance(ref[k], np.ndarray):
            np.testing.assert_allclose(vals[k], ref[k], rtol=1e-13, atol=0,
                                       err_msg=f"primal result of argument {k}")
    g = iter(grads)
    rhs = 0.0
    for k in diff:
        rhs += float(np.sum(shadows[k] * V[k])) if k in D else float(next(g)) * V[k]
    assert abs(lhs - rhs) <= atol + rtol * max(abs(lhs), abs(rhs)), (lhs, rhs)
    if forward:
        fvals = _copy(args)
        tangents = {k: np.array(V[k], copy=True) if k in D else V[k] for k in diff}
        acts = [Duplicated(fvals[k], tangents[k]) if k in diff else
                (fvals[k] if isinstance(fvals[k], np.ndarray) else Const(fvals[k]))
                for k in range(len(args))]
        dg.fwddiff(kernel[grid, block], *acts)
        for k in D:
            np.testing.assert_allclose(fvals[k], ref[k], rtol=1e-13, atol=0)
            np.testing.assert_allclose(tangents[k], jv[k], rtol=1e-5, atol=1e-6,
                                       err_msg=f"forward tangent of argument {k}")
    return lhs, rhs


def u(lo, hi, shape=N, seed=1, dtype=np.float64):
    return np.random.default_rng(seed).uniform(lo, hi, shape).astype(dtype)


CASES = {
    "elementwise": (k_elementwise, 2, 4, lambda: [u(-1, 1), u(-1, 1, seed=2)], ["dup", "dup"]),
    "unary_mix": (k_unary_mix, 2, 4, lambda: [u(-1, 1), u(-1, 1, seed=2)], ["dup", "dup"]),
    "binary_mix": (k_binary_mix, 2, 4, lambda: [u(0.5, 1.5), u(0.6, 1.4, seed=2),
                                                u(-1, 1, seed=3)], ["dup"] * 3),
    "scalar_active": (k_scalar_active, 2, 4, lambda: [u(-1, 1), u(-1, 1, seed=2), 0.7, -1.3],
                      ["dup", "dup", "active", "active"]),
    "inplace": (k_inplace, 2, 4, lambda: [u(-1, 1)], ["dup"]),
    "loop_runtime": (k_loop_runtime, 2, 4, lambda: [u(-1, 1), u(-1, 1, seed=2),
                                                    u(-1, 1, seed=3), 5],
                     ["dup", "dup", "dup", "const"]),
    "loop_overwrite": (k_loop_overwrite, 2, 4, lambda: [u(-1, 1), u(-1, 1, seed=2), 6],
                       ["dup", "dup", "const"]),
    "loop_step": (k_loop_step, 2, 4, lambda: [u(-1, 1), u(-1, 1, seed=2), 7],
                  ["dup", "dup", "const"]),
    "nested_loops": (k_nested_loops, 2, 4, lambda: [u(-0.5, 0.5), u(-1, 1, seed=2), 4],
                     ["dup", "dup", "const"]),
    "while": (k_while, 2, 4, lambda: [u(1.2, 1.9), u(-1, 1, seed=2)], ["dup", "dup"]),
    "while_memory": (k_while_memory, 2, 4, lambda: [u(0.1, 0.5), u(0.5, 1.0, seed=2)],
                     ["dup", "dup"]),
    "branches": (k_branches, 2, 4, lambda: [np.array([-0.9, -0.7, -0.3, 0.1, 0.4, 0.6, 0.8, 1.2]),
                                            u(-1, 1, seed=2)], ["dup", "dup"]),
    "ternary": (k_ternary, 2, 4, lambda: [u(-1, 1), u(-1, 1, seed=2)], ["dup", "dup"]),
    "branch_in_loop": (k_branch_in_loop, 2, 4, lambda: [u(-1, 1), u(-1, 1, seed=2), 5],
                       ["dup", "dup", "const"]),
    "call_func": (k_call_func, 2, 4, lambda: [u(-1, 1), u(-1, 1, seed=2), u(-1, 1, seed=3)],
                  ["dup"] * 3),
    "call_kernel": (k_call_kernel, 1, 1, lambda: [np.array([1.3]), np.array([0.4])],
                    ["dup", "dup"]),
    "gather": (k_gather, 2, 4, lambda: [u(-1, 1), np.array([3, 3, 0, 7, 1, 1, 5, 2]),
                                        u(-1, 1, seed=2)], ["dup", "const", "dup"]),
    "scatter_atomic": (k_scatter_atomic, 2, 4, lambda: [u(-1, 1), np.array([0, 1, 0, 2, 2, 2, 3, 0]),
                                                        u(-1, 1, seed=2, shape=4)],
                       ["dup", "const", "dup"]),
    "matvec": (k_matvec, 2, 4, lambda: [u(-1, 1, shape=(N, 5)), u(-1, 1, shape=5, seed=2),
                                        u(-1, 1, seed=3)], ["dup"] * 3),
    "softmax_rows": (k_softmax_rows, 2, 4, lambda: [u(-2, 2, shape=(N, 6)),
                                                    u(0, 1, shape=(N, 6), seed=2)], ["dup", "dup"]),
    "2d_inplace": (k_2d_inplace, 2, 4, lambda: [u(-1, 1, shape=(N, 5))], ["dup"]),
    "3d": (k_3d, 2, 4, lambda: [u(-1, 1, shape=(N, 3, 2)), u(-1, 1, seed=2)], ["dup", "dup"]),
    "reverse_range": (k_reverse_range, 2, 4, lambda: [u(-1, 1), u(-1, 1, seed=2)], ["dup", "dup"]),
    "int_mix": (k_int_mix, 2, 4, lambda: [u(0.1, 0.9), u(-1, 1, seed=2), 5], ["dup", "dup", "const"]),
    "early_return": (k_early_return, 2, 4, lambda: [u(-1, 1), u(-1, 1, seed=2), 6],
                     ["dup", "dup", "const"]),
    "2d_grid": (k_2d_grid, 4, 3, lambda: [u(-1, 1, shape=(4, 3)), u(-1, 1, shape=4, seed=2)],
                ["dup", "dup"]),
    "expm_log1p": (k_expm_log1p, 2, 4, lambda: [u(-0.5, 0.5), u(-1, 1, seed=2)], ["dup", "dup"]),
    "trig": (k_trig, 2, 4, lambda: [u(-1, 1), u(-1, 1, seed=2)], ["dup", "dup"]),
    "break_continue": (k_break_continue, 2, 4, lambda: [u(-0.8, 0.8), u(-1, 1, seed=2), 6],
                       ["dup", "dup", "const"]),
    "while_break": (k_while_break, 2, 4, lambda: [u(-0.8, 0.8), u(-1, 1, seed=2)], ["dup", "dup"]),
    "nested_calls": (k_nested_calls, 2, 4, lambda: [u(-1, 1), u(-1, 1, seed=2), u(-1, 1, seed=3), 3],
                     ["dup", "dup", "dup", "const"]),
    "call_writes": (k_call_writes, 2, 4, lambda: [u(-1, 1), u(-1, 1, seed=2)], ["dup", "dup"]),
    "int_output": (k_int_output, 2, 4, lambda: [u(0.05, 0.95), np.zeros(N, np.int64),
                                                u(-1, 1, seed=2)], ["dup", "const", "dup"]),
    "shared_tile": (k_shared_tile, 2, 4, lambda: [u(-1, 1), u(-1, 1, seed=2)], ["dup", "dup"]),
    "shared_accumulate": (k_shared_accumulate, 2, 4, lambda: [u(-1, 1), u(-1, 1, seed=2)],
                          ["dup", "dup"]),
    "inner_autodiff": (k_inner_autodiff, 2, 4, lambda: [u(-1, 1), u(-1, 1, seed=2),
                                                        u(-1, 1, seed=3)], ["dup"] * 3),
    "inner_fwddiff": (k_inner_fwddiff, 2, 4, lambda: [u(-1, 1), u(-1, 1, seed=2)], ["dup", "dup"]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_gradient(name):
    kernel, grid, block, make, kinds = CASES[name]
    dot_test(kernel, grid, block, make(), kinds)


@pytest.mark.parametrize("name", ["elementwise", "loop_runtime", "matvec", "while", "inplace"])
def test_gradient_float32(name):
    """float32 reverse mode agrees with the float64 compilation of the same
    kernel (itself checked against finite differences above)."""
    kernel, grid, block, make, kinds = CASES[name]
    args64 = make()
    args32 = [a.astype(np.float32) if isinstance(a, np.ndarray) and a.dtype == np.float64
              else a for a in args64]
    rng = np.random.default_rng(5)
    D = {k: rng.standard_normal(a.shape) for k, (a, kind) in enumerate(zip(args64, kinds))
         if kind == "dup"}
    v64, s64, g64 = reverse_result(kernel, grid, block, args64, kinds, D)
    v32, s32, g32 = reverse_result(kernel, grid, block, args32, kinds,
                                   {k: d.astype(np.float32) for k, d in D.items()})
    for k in D:
        assert s32[k].dtype == np.float32
        np.testing.assert_allclose(s32[k], s64[k], rtol=2e-3, atol=2e-4)
        np.testing.assert_allclose(v32[k], v64[k], rtol=2e-3, atol=2e-4)


def test_seed_case():
    """The seed case (docs/seed.md) through the Python API: A=3, dA=1 -> A=9, dA=6."""
    A = np.array([3.0], np.float32)
    dA = np.ones(1, np.float32)
    assert dg.autodiff(k_square_first[1, 1], Duplicated(A, dA)) == ()
    assert A[0] == 9.0 and dA[0] == 6.0


def test_inner_dup_array():
    """dg.autodiff of a kernel inside a kernel, with a shadow array."""
    A = np.array([3.0])
    dA = np.array([1.0])
    B = np.zeros(1)
    k_inner_dup_array[1, 1](A, dA, B)
    assert A[0] == 9.0 and dA[0] == 6.0 and B[0] == 54.0


def test_inner_autodiff_values():
    """The gradients returned inside a kernel are the analytic ones."""
    X, Y, G = u(-1, 1), u(-1, 1, seed=2), np.zeros(N)
    k_inner_autodiff[2, 4](X, Y, G)
    gx = 2 * X * Y + np.exp(X - Y)
    gy = X * X - np.exp(X - Y)
    np.testing.assert_allclose(G, gx * gx + gy, rtol=1e-12)


def test_scalar_gradients_exact():
    """Active scalar gradients are summed over all threads."""
    X, Y = u(-1, 1), np.zeros(N)
    ga, gb = dg.autodiff(k_scalar_active[2, 4], Duplicated(X, np.zeros(N)),
                         Duplicated(Y, np.ones(N)), Active(0.7), Active(-1.3))
    np.testing.assert_allclose(ga, np.sum(X * X + -1.3 * np.cos(0.7 * X) * X), rtol=1e-12)
    np.testing.assert_allclose(gb, np.sum(np.sin(0.7 * X)), rtol=1e-12)

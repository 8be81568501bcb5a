"""Tapes of runtime-length loops without device `malloc`
(lowering/autodiff/remat.py LOOP_OPS, lowering/autodiff/checkpoint.py).

- n-body (an inner loop over j with an accumulator): the body is
  recomputed in the reverse, no tape at all; the recurrence
  `s = sin(s) * w[t] + x[i]`: 64 checkpoints of s and a 64-slot replay
  buffer. Both: no tape holder in the derivative's IR, no `malloc` and no
  tape stack in their PTX (counted), while the same kernels with
  `DIFFGPU_REMAT=0` (the previous, taped code) call `malloc`;
- gradients against float64 references and finite differences (float32
  and float64), and against the taped program, for trip counts that cover
  every case of the checkpoint arithmetic: 0, 1, fewer than 64, exactly 64,
  65 (two trips per segment), 4,096 (the last count with one replay per
  trip) and 5,000 (sub-segments of 2 trips);
- a loop whose body loads an array it writes keeps the tape, and is right.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

import diffgpu as dg
from kernels_loop_tapes import (back_step, nbody, nbody_grad, recur, recur_grad, scan_written,
                                scan_written_grad, two_carried)

STACK = "memref<1xmemref<?xi64>>"  # the tape stack's holder (tape.py)


def _rev(text):
    start = text.index("func.func @__dg_rev_")
    return text[start:text.index("\n  }\n", start)]


def _nbody_args(dtype=np.float32, n=16, seed=0):
    r = np.random.default_rng(seed)
    return [np.zeros(n, dtype), r.standard_normal(n).astype(dtype),
            r.standard_normal(n).astype(dtype), np.zeros(n, dtype),
            r.standard_normal(n).astype(dtype), np.zeros(n, dtype)]


def _recur_args(n, dtype=np.float64, m=4, seed=1):
    r = np.random.default_rng(seed)
    return [np.zeros(m, dtype), r.uniform(-1, 1, m).astype(dtype),
            r.uniform(-1, 1, m).astype(dtype), np.zeros(m, dtype),
            r.uniform(-0.9, 0.9, max(n, 1)).astype(dtype), np.zeros(max(n, 1), dtype), n]


def _recur_reference(x, w, n, g):
    """float64 reverse mode by hand: (dL/dx, dL/dw) for L = sum(g * out)."""
    gx, gw = np.zeros(len(x)), np.zeros(len(w))
    for i in range(len(x)):
        s = [float(x[i])]
        for t in range(n):
            s.append(np.sin(s[-1]) * w[t] + x[i])
        ds, dxi = float(g[i]), 0.0
        for t in reversed(range(n)):
            gw[t] += ds * np.sin(s[t])
            dxi += ds
            ds *= np.cos(s[t]) * w[t]
        gx[i] = dxi + ds
    return gx, gw


def _launch(kernel, args, grid, block, monkeypatch=None, remat=True):
    if monkeypatch is not None:
        monkeypatch.setenv("DIFFGPU_REMAT", "1" if remat else "0")
    kernel._programs.clear()
    out = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    kernel[grid, block](*out)
    kernel._programs.clear()
    return out


# -- structure: no tape ------------------------------------------------------------
@pytest.mark.parametrize("kernel,make", [(nbody_grad, _nbody_args),
                                         (recur_grad, lambda: _recur_args(9))])
def test_no_tape_in_the_derivative(kernel, make):
    rev = _rev(kernel.ir(*make(), stage="autodiff", target="host", grid=1, block=16))
    assert STACK not in rev and "tape_push" not in rev


def test_recurrence_keeps_checkpoints():
    rev = _rev(recur_grad.ir(*_recur_args(9), stage="autodiff", target="host", grid=1, block=4))
    assert rev.count("memref.alloca() : memref<64xf64>") == 2  # checkpoints, replay buffer


def _malloc_calls(ptx):
    """Calls of device malloc in PTX (`call.uni (retval), malloc, (...)`)."""
    return len(re.findall(r"\bcall(?:\.uni)?\b[^;\n]*\bmalloc\b", ptx))


@pytest.mark.parametrize("kernel,make", [(nbody_grad, _nbody_args),
                                         (recur_grad, lambda: _recur_args(9, np.float32))])
def test_ptx_has_no_malloc(kernel, make, monkeypatch):
    from diffgpu.driver.compiler import has_nvptx
    if not has_nvptx():
        pytest.skip("these MLIR bindings have no NVPTX backend")
    args = make()
    ptx = kernel.ir(*args, stage="ptx", target="sm_90", grid=1, block=16)
    assert "malloc" not in ptx
    monkeypatch.setenv("DIFFGPU_REMAT", "0")  # the taped code, as before
    kernel._programs.clear()
    old = kernel.ir(*args, stage="ptx", target="sm_90", grid=1, block=16)
    assert _malloc_calls(old) >= 1


# -- values ------------------------------------------------------------------------
@pytest.mark.parametrize("n", [0, 1, 9, 64, 65, 4096, 5000])
def test_recurrence_matches_the_reference(n):
    args = _recur_args(n)
    g = np.random.default_rng(n).uniform(-1, 1, 4)
    args[1] = g.copy()  # the cotangent of out
    out = _launch(recur_grad, args, 1, 4)
    gx, gw = _recur_reference(args[2], args[4], n, g)
    np.testing.assert_allclose(out[3], gx, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(out[5][:n], gw[:n], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("n", [9, 70])
def test_recurrence_equals_the_taped_program(n, monkeypatch):
    args = _recur_args(n, np.float32)
    args[1] = np.ones(4, np.float32)
    new = _launch(recur_grad, args, 1, 4, monkeypatch, remat=True)
    old = _launch(recur_grad, args, 1, 4, monkeypatch, remat=False)
    for a, b in zip(new, old):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_recurrence_finite_differences(dtype):
    r = np.random.default_rng(5)
    n = 70
    acts = [dg.Duplicated(np.zeros(3, dtype), np.zeros(3, dtype)),
            dg.Duplicated(r.uniform(-1, 1, 3).astype(dtype), np.zeros(3, dtype)),
            dg.Duplicated(r.uniform(-0.9, 0.9, n).astype(dtype), np.zeros(n, dtype)), n]
    eps, tol = (1e-3, 2e-2) if dtype == np.float32 else (1e-6, 1e-6)
    assert dg.gradcheck(recur[1, 3], *acts, eps=eps, atol=tol, rtol=tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nbody_finite_differences(dtype):
    args = _nbody_args(dtype, 12)
    x, y = args[1], args[4]
    acts = [dg.Duplicated(np.zeros(12, dtype), np.zeros(12, dtype)),
            dg.Duplicated(x, np.zeros_like(x)), dg.Duplicated(y, np.zeros_like(y))]
    eps, tol = (1e-3, 3e-2) if dtype == np.float32 else (1e-6, 1e-6)
    assert dg.gradcheck(nbody[1, 12], *acts, eps=eps, atol=tol, rtol=tol)


def test_nbody_equals_the_taped_program(monkeypatch):
    args = _nbody_args(np.float32, 40)
    args[1] = np.random.default_rng(3).standard_normal(40).astype(np.float32)
    new = _launch(nbody_grad, args, 2, 32, monkeypatch, remat=True)
    old = _launch(nbody_grad, args, 2, 32, monkeypatch, remat=False)
    for a, b in zip(new, old):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kernel", [back_step, two_carried])
@pytest.mark.parametrize("n", [0, 1, 7, 130, 300])
def test_other_recurrences_finite_differences(kernel, n):
    """A negative step with an integer carried value, and two carried floats,
    at trip counts of every checkpoint case (float64)."""
    r = np.random.default_rng(n)
    m = max(n, 3)
    acts = [dg.Duplicated(np.zeros(3), np.zeros(3)),
            dg.Duplicated(r.uniform(-1, 1, 3), np.zeros(3)),
            dg.Duplicated(r.uniform(-0.9, 0.9, m), np.zeros(m)), n]
    assert dg.gradcheck(kernel[1, 3], *acts, eps=1e-6, atol=1e-6, rtol=1e-5)


# -- what keeps the tape -------------------------------------------------------------
def _scan_args(dtype=np.float64, n=20):
    r = np.random.default_rng(7)
    return [r.uniform(-1, 1, (4, n + 1)).astype(dtype), np.zeros((4, n + 1), dtype),
            r.uniform(-1, 1, 4).astype(dtype), np.ones(4, dtype), n]


def test_a_loop_reading_what_it_writes_keeps_the_tape():
    rev = _rev(scan_written_grad.ir(*_scan_args(), stage="autodiff", target="host", grid=1,
                                    block=4))
    assert STACK in rev and "memref<64x" not in rev
    r = np.random.default_rng(8)
    acts = [dg.Duplicated(r.uniform(-1, 1, (3, 21)), np.zeros((3, 21))),
            dg.Duplicated(r.uniform(-1, 1, 3), np.zeros(3)), 20]
    assert dg.gradcheck(scan_written[1, 3], *acts, eps=1e-6, atol=1e-6, rtol=1e-6)

"""Recomputation instead of the tape (lowering/autodiff/remat.py).

In the reverse of a loop with a runtime trip count, index arithmetic, loads
from arrays the function never writes and cheap float ops of those are
rebuilt instead of pushed and popped. Checked here:
- tape words per iteration (push sites in the loop) before and after, read
  from the derivative's IR (`DIFFGPU_REMAT=0` gives the old code);
- gradients against finite differences (dg.gradcheck, float64) and against
  the taped code (the same kernels with recomputation off), for the kernels
  below and the differentiated corpus (diff_corpus_gpu.py);
- what must keep the tape: a load of an array the loop writes, loads that a
  written array may alias (the same array passed twice: no `noalias` fact),
  shared-memory loads, loads in a function with a barrier (no launch facts);
- on a GPU target sin is recomputed beside its cos (one sincos);
- a while loop's counter (`k = 0; while k < m: ...; k += 1`) is rebuilt
  like a for loop's induction variable, so loads it indexes are reloaded;
- second order through a recomputed load (its adjoint reaches the array's
  shadow in the outer derivative);
- the setting is part of the cache key.
"""
from __future__ import annotations

import math
import re

import numpy as np
import pytest

import diffgpu as dg
from diffgpu.runtime.store import cache_key

import diff_corpus_gpu as corpus
from kernels_remat import (chain, chain_grad, gather, gather_grad, wloop, wloop_grad,
                          wsin, wsin_grad)  # wsin, gather: bench/remat.py's too

N, M = 40, 9
STACK = "memref<1xmemref<?xi64>>"  # the tape stack's holder (tape.py)


@dg.func
def f_table(x, w, m):
    s = 0.0
    for k in range(m):
        s = s + w[k] * math.sin(x * (k * 0.3))
    return s


@dg.kernel
def g_table(X, G, W, m):
    """G = df/dx per element, by reverse mode inside the kernel: the inner
    derivative writes no memory, so W is read-only and w[k] is reloaded."""
    i = dg.global_id(0)
    if i < len(X):
        (G[i],) = dg.autodiff(f_table, dg.Active(X[i]), dg.Const(W), dg.Const(m))


def _rng(seed):
    return np.random.default_rng(seed)


def _wsin_args(dtype=np.float32, seed=0):
    r = _rng(seed)
    return [np.zeros(N, dtype), r.standard_normal(N).astype(dtype),
            r.uniform(-1, 1, N).astype(dtype), np.zeros(N, dtype),
            r.uniform(-1, 1, M).astype(dtype), np.zeros(M, dtype), M]


def _gather_args(dtype=np.float32, seed=1):
    r = _rng(seed)
    return [np.zeros(N, dtype), r.standard_normal(N).astype(dtype),
            r.uniform(-1, 1, N).astype(dtype), np.zeros(N, dtype),
            r.uniform(-1, 1, 13).astype(dtype), np.zeros(13, dtype), M]


def _chain_args(dtype=np.float32, seed=2):
    r = _rng(seed)
    return [r.uniform(-1, 1, (N, M + 1)).astype(dtype), r.uniform(-1, 1, (N, M + 1)).astype(dtype),
            r.uniform(-1, 1, N).astype(dtype), np.zeros(N, dtype), M]


GRADS = {"wsin": (wsin_grad, _wsin_args), "gather": (gather_grad, _gather_args),
         "chain": (chain_grad, _chain_args), "wloop": (wloop_grad, _wsin_args)}


def _rev(text):
    start = text.index("func.func @__dg_rev_")
    return text[start:text.index("\n  }\n", start)]


def tape_words(text) -> int:
    """Push sites of the derivative's tape: each push checks the stack's
    capacity once (`arith.cmpi uge`, tape.py); these kernels have one loop
    and no comparison of their own of that kind, so this is the number of
    words each iteration pushes."""
    return len(re.findall(r"arith\.cmpi uge", _rev(text)))


def _ir(kernel, args, monkeypatch, remat, grid=3, block=16):
    monkeypatch.setenv("DIFFGPU_REMAT", "1" if remat else "0")
    return kernel.ir(*args, stage="autodiff", target="host", grid=grid, block=block)


def _launch(kernel, args, monkeypatch, remat, grid=3, block=16):
    """Run `kernel` on copies of `args` with recomputation on or off."""
    monkeypatch.setenv("DIFFGPU_REMAT", "1" if remat else "0")
    kernel._programs.clear()  # compile again under this setting (fast path included)
    out = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    kernel[grid, block](*out)
    kernel._programs.clear()
    return out


# -- tape words per iteration ---------------------------------------------------
@pytest.mark.parametrize("name,before,after", [
    ("wsin", 4, 0),    # x[i]*k, float(k), w[k], sin: all recomputed (sin: in a loop)
    ("gather", 4, 0),  # j, t[j] recomputed; s carried: checkpoints (checkpoint.py)
    ("chain", 4, 2),   # k + 1 and x[i] recomputed; a[i, k], loaded twice, is written: taped
    ("wloop", 4, 2),   # the while counter k and w[k] recomputed; s and sin(s) taped
])
def test_tape_words_per_iteration(name, before, after, monkeypatch):
    kernel, make = GRADS[name]
    args = make()
    assert tape_words(_ir(kernel, args, monkeypatch, remat=False)) == before
    assert tape_words(_ir(kernel, args, monkeypatch, remat=True)) == after


def test_gpu_recomputes_sin_beside_its_cos(monkeypatch):
    """On a GPU target the reverse also recomputes sin(x[i] * k): its
    derivative cos(x[i] * k) is computed in the same block, and the two
    fuse into one sincos (one range reduction): no tape at all."""
    args = _wsin_args()
    assert tape_words(wsin_grad.ir(*args, stage="autodiff", target="sm_90", grid=3,
                                   block=16)) == 0
    monkeypatch.setenv("DIFFGPU_REMAT", "0")
    assert tape_words(wsin_grad.ir(*args, stage="autodiff", target="sm_90", grid=3,
                                   block=16)) == 4
    monkeypatch.setenv("DIFFGPU_REMAT", "1")
    nvvm = wsin_grad.ir(*args, stage="nvvm", target="sm_90", grid=3, block=16)
    rev = nvvm[nvvm.index("llvm.func @__dg_rev_"):]
    rev = rev[:rev.index("\n  }\n")]
    assert "@__nv_sincosf" in rev and "@__nv_cosf" not in rev


def test_a_function_without_writes_needs_no_tape(monkeypatch):
    X, G, W = _rng(3).uniform(0.2, 0.9, 8), np.zeros(8), _rng(4).uniform(-1, 1, 6)
    text = _ir(g_table, [X, G, W, 6], monkeypatch, remat=True)
    assert STACK not in _rev(text)
    assert STACK in _rev(_ir(g_table, [X, G, W, 6], monkeypatch, remat=False))


@dg.func
def f_sync(x, w, m):
    dg.syncthreads()
    s = 0.0
    for k in range(m):
        s = s + w[k] * math.sin(x * k)
    return s


@dg.func
def f_nosync(x, w, m):
    s = 0.0
    for k in range(m):
        s = s + w[k] * math.sin(x * k)
    return s


@dg.kernel
def g_sync(X, G, W, m):
    i = dg.global_id(0)
    (g,) = dg.autodiff(f_sync, dg.Active(X[i]), dg.Const(W), dg.Const(m))
    G[i] = g
    W[i] = 0.0  # after the call: other threads may still be in their reverse


@dg.kernel
def g_nosync(X, G, W, m):
    i = dg.global_id(0)
    (g,) = dg.autodiff(f_nosync, dg.Active(X[i]), dg.Const(W), dg.Const(m))
    G[i] = g


def test_a_function_with_a_barrier_keeps_loads_on_the_tape(monkeypatch):
    """Without launch facts a function that writes no memory may still
    not reload an array if it has a barrier: the calling kernel may write
    the array (race-free) once every thread passed the last barrier."""
    X, G, W = np.ones(16), np.zeros(16), np.ones(16)
    sync = _ir(g_sync, [X, G, W, 5], monkeypatch, remat=True, grid=1, block=16)
    nosync = _ir(g_nosync, [X, G, W, 5], monkeypatch, remat=True, grid=1, block=16)
    assert tape_words(sync) == 1  # w[k]; x * k is still recomputed
    assert tape_words(nosync) == 0


def test_aliasing_arrays_keep_the_load_on_the_tape(monkeypatch):
    """x passed for both x and w: no `noalias` fact, y (written) may overlap
    them, so their loads are pushed; float(k) is still recomputed."""
    y, dy, x, dx, _, dw, m = _wsin_args()
    args = [y, dy, x, dx, x, dw, m]
    assert tape_words(_ir(wsin_grad, args, monkeypatch, remat=True)) == 3
    assert tape_words(_ir(wsin_grad, args, monkeypatch, remat=False)) == 4
    got = _launch(wsin_grad, [a.astype(np.float64) if isinstance(a, np.ndarray) else a
                              for a in args], monkeypatch, remat=True)
    # y = sum_k x_k sin(x_i k): dx_i (both slots of x) = sum_k dy_i ...
    xv, dyv = x.astype(np.float64), dy.astype(np.float64)
    k = np.arange(m)
    ang = np.outer(xv, k)
    want_dx = dyv * (np.cos(ang) * k * xv[:m]).sum(1)
    want_dw = (dyv[:, None] * np.sin(ang)).sum(0)
    np.testing.assert_allclose(got[3], want_dx, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got[5][:m], want_dw, rtol=1e-10, atol=1e-12)


SB = 8  # threads per block of the shared-memory kernel


@dg.kernel
def shared_loop(x, y, w, m):
    s = dg.shared_array(SB, np.float64)
    t = dg.thread_id(0)
    i = dg.global_id(0)
    s[t] = x[i]
    dg.syncthreads()
    acc = 0.0
    for k in range(m):
        acc += s[(t + k) % SB] * w[k]
    y[i] = acc


@dg.kernel
def shared_loop_grad(x, dx, y, dy, w, dw, m):
    dg.autodiff(shared_loop, dg.Duplicated(x, dx), dg.Duplicated(y, dy), dg.Duplicated(w, dw), m)


def _shared_args(dtype=np.float64, seed=5):
    r = _rng(seed)
    return [r.uniform(-1, 1, 2 * SB).astype(dtype), np.zeros(2 * SB, dtype),
            np.zeros(2 * SB, dtype), r.uniform(-1, 1, 2 * SB).astype(dtype),
            r.uniform(-1, 1, M).astype(dtype), np.zeros(M, dtype), M]


def test_shared_memory_loads_keep_the_tape(monkeypatch):
    """The shared load s[(t + k) % 8] is pushed (another thread may write
    shared memory between the sweeps); w[k] and the index are recomputed."""
    args = _shared_args()
    texts = {on: _ir(shared_loop_grad, args, monkeypatch, remat=on, grid=2, block=SB)
             for on in (False, True)}
    assert tape_words(texts[False]) == 3  # s[...], w[k], the index
    assert tape_words(texts[True]) == 1
    (pushed,) = re.findall(r"arith\.bitcast (%\w+) \{diffgpu\.tape_push", texts[True])
    load = re.search(re.escape(pushed) + r" = memref\.load .*", texts[True]).group(0)
    assert "workgroup" in load, load


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_shared_loop_gradient(dtype, monkeypatch):
    args = _shared_args(dtype)
    on = _launch(shared_loop_grad, args, monkeypatch, remat=True, grid=2, block=SB)
    off = _launch(shared_loop_grad, args, monkeypatch, remat=False, grid=2, block=SB)
    for k in (1, 5):
        np.testing.assert_array_equal(on[k], off[k])
    x, dy, w = (args[0].astype(np.float64), args[3].astype(np.float64),
                args[4].astype(np.float64))
    want_dx, want_dw = np.zeros_like(x), np.zeros_like(w)
    for i in range(len(x)):
        b, t = divmod(i, SB)
        for k in range(M):
            j = b * SB + (t + k) % SB
            want_dx[j] += dy[i] * w[k]
            want_dw[k] += dy[i] * x[j]
    tol = 1e-12 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(on[1], want_dx, rtol=tol, atol=tol)
    np.testing.assert_allclose(on[5], want_dw, rtol=tol, atol=tol)


# -- gradients: finite differences, and the taped code --------------------------
def _acts(args, seed=7):
    """Duplicated(array, random seed) for float arrays, the rest as they are."""
    r = _rng(seed)
    return [dg.Duplicated(a, r.uniform(-1, 1, a.shape).astype(a.dtype))
            if isinstance(a, np.ndarray) and a.dtype.kind == "f" else a for a in args]


PRIMALS = {"wsin": (wsin, lambda d: [_wsin_args(d)[k] for k in (0, 1, 4, 6)]),
           "gather": (gather, lambda d: [_gather_args(d)[k] for k in (0, 1, 4, 6)]),
           "chain": (chain, lambda d: [_chain_args(d)[k] for k in (0, 2, 4)]),
           "wloop": (wloop, lambda d: [_wsin_args(d)[k] for k in (0, 1, 4, 6)])}


@pytest.mark.parametrize("name", sorted(PRIMALS))
def test_gradcheck(name):
    kernel, make = PRIMALS[name]
    args = make(np.float64)
    assert dg.gradcheck(kernel[3, 16], *_acts(args), eps=1e-6, atol=1e-6, rtol=1e-5)


def _reverse(kernel, grid, block, args, monkeypatch, remat):
    """dg.autodiff on copies: the arrays and shadows after the launch."""
    monkeypatch.setenv("DIFFGPU_REMAT", "1" if remat else "0")
    acts = _acts([a.copy() if isinstance(a, np.ndarray) else a for a in args])
    kernel._programs.clear()  # the in-memory programs do not know the setting
    dg.autodiff(kernel[grid, block], *acts)
    kernel._programs.clear()
    out = []
    for a in acts:
        if isinstance(a, dg.Duplicated):
            out += [a.value, a.shadow]
    return out


def _same(on, off, dtype):
    for k, (a, b) in enumerate(zip(on, off)):
        if dtype == np.float64:
            np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-13, err_msg=f"array {k}")
        else:
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6, err_msg=f"array {k}")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(PRIMALS))
def test_recomputed_equals_taped(name, dtype, monkeypatch):
    kernel, make = PRIMALS[name]
    args = make(dtype)
    _same(_reverse(kernel, 3, 16, args, monkeypatch, True),
          _reverse(kernel, 3, 16, args, monkeypatch, False), dtype)


@pytest.mark.parametrize("name", [c.name for c in corpus.CASES if not c.xfail])
def test_diff_corpus_recomputed_equals_taped(name, monkeypatch):
    """Every kernel of diff_corpus_gpu.py (shared memory, barriers, atomics,
    runtime loops): reverse mode with recomputation equals the taped code."""
    c = next(c for c in corpus.CASES if c.name == name)
    args = c.make(np.float32, _rng(0))
    _same(_reverse(c.kernel, c.grid, c.block, args, monkeypatch, True),
          _reverse(c.kernel, c.grid, c.block, args, monkeypatch, False), np.float32)


def test_second_order_through_a_recomputed_load():
    """g_table's inner derivative reloads W[k] in its reverse loop; the outer
    derivative (dg.gradcheck of g_table: reverse and forward over reverse)
    differentiates that load: d(df/dx)/dW is nonzero and must be right."""
    X, G, W = _rng(3).uniform(0.2, 0.9, 6), np.zeros(6), _rng(4).uniform(-1, 1, 5)
    acts = [dg.Duplicated(X, np.zeros_like(X)), dg.Duplicated(G, np.zeros_like(G)),
            dg.Duplicated(W, np.zeros_like(W)), 5]
    assert dg.gradcheck(g_table[1, 8], *acts, eps=1e-6, atol=1e-6, rtol=1e-5)


def test_cache_key_includes_the_setting(monkeypatch):
    from diffgpu.types import ArrayType

    types = (ArrayType("float32", 1),) * 3
    monkeypatch.setenv("DIFFGPU_REMAT", "1")
    on = cache_key.cache_key(wsin, types, "host")
    monkeypatch.setenv("DIFFGPU_REMAT", "0")
    off = cache_key.cache_key(wsin, types, "host")
    monkeypatch.delenv("DIFFGPU_REMAT")
    assert on != off
    assert cache_key.cache_key(wsin, types, "host") == on  # on by default


def _corpus_loops():
    """kernels_corpus.py kernels with a loop and a float array (differentiated
    with every float array Duplicated)."""
    import inspect

    import kernels_corpus

    out = []
    for c in kernels_corpus.CASES:
        src = inspect.getsource(c.kernel.py_func)
        if c.needs_autodiff or not ("for " in src or "while " in src):
            continue
        if any(isinstance(a, np.ndarray) and a.dtype.kind == "f" for a in c.make(np.float64, np)):
            out.append(c)
    return out


CORPUS_LOOPS = {c.name: c for c in _corpus_loops()}


def test_corpus_has_loops():
    assert len(CORPUS_LOOPS) >= 8, sorted(CORPUS_LOOPS)


@pytest.mark.parametrize("name", sorted(CORPUS_LOOPS))
def test_corpus_recomputed_equals_taped(name, monkeypatch):
    c = CORPUS_LOOPS[name]
    args = c.make(np.float64, np)
    _same(_reverse(c.kernel, c.grid, c.block, args, monkeypatch, True),
          _reverse(c.kernel, c.grid, c.block, args, monkeypatch, False), np.float64)


@pytest.mark.parametrize("name", sorted(CORPUS_LOOPS))
def test_corpus_gradcheck(name):
    c = CORPUS_LOOPS[name]
    args = c.make(np.float64, np)
    assert dg.gradcheck(c.kernel[c.grid, c.block], *_acts(args), eps=1e-6, atol=1e-6,
                        rtol=1e-5, max_elements=0)

"""The computations of bench/peers.py: diffgpu kernels, the same computation
for PyTorch / JAX, float64 numpy references and the bytes each must move.

Each case names its kernel's parameters; `inputs(rng, n)` makes host arrays
(float32, int32 for indices); `primal_ref` / `grad_ref` give {name: (float64
values, indices)} at a sample of indices `s` (indices None: the whole
array, for reductions and scatter gradients).
"""
from __future__ import annotations

import os
import sys

import numpy as np

STEPS = 16
REUSE = 16


def kernels():
    import diffgpu as dg
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                    "test", "python"))
    # the test suite's kernels, defined once
    from kernels_elementwise import gather, saxpy, square, stencil, sumsq
    from kernels_rows_collective import layernorm, softmax
    from kernels_rows_params import layernorm_rows
    from kernels_rows_fast import layernorm_fast, layernorm_fast_rows, softmax_fast
    from kernels_rows_variants import layernorm_r8, layernorm_v8, softmax_r2, softmax_v8
    from kernels_specialize import loop16

    @dg.kernel
    def softplus(y, x):
        i = dg.global_id(0)
        if i < len(x):
            y[i] = dg.log1p(dg.exp(x[i]))

    @dg.kernel
    def add4(o, a, b, c):
        i = dg.global_id(0)
        if i < len(o):
            o[i] = a[i] + b[i] + c[i]

    @dg.kernel
    def conv5(y, x, w):
        """5x5 valid cross-correlation; x fastest along a row (coalesced)."""
        j = dg.global_id(0)
        i = dg.global_id(1)
        if i < y.shape[0] and j < y.shape[1]:
            acc = np.float32(0.0)
            for a in range(5):
                for b in range(5):
                    acc += w[a, b] * x[i + a, j + b]
            y[i, j] = acc

    return {k.name: k for k in (square, saxpy, softplus, stencil, loop16, sumsq, gather,
                                add4, layernorm, layernorm_rows, softmax, conv5,
                                layernorm_fast, layernorm_fast_rows, softmax_fast,
                                softmax_v8, softmax_r2, layernorm_r8, layernorm_v8)}


def _f32(rng, n, scale=1.0):
    return (scale * rng.standard_normal(n)).astype(np.float32)


class Case:
    """name; params (kernel order); diff: differentiable peer inputs;
    out: the written array; words: (P, FB, FB_autodiff) bytes / 4 per element
    of n, where FB is a functional vjp (read inputs and cotangents, write
    gradients) and FB_autodiff follows Enzyme's convention (the primal output
    is written, each shadow is read and written: 6 words for y = x*x).
    kernel: the diffgpu kernel's name (default: the case's); geometry(n):
    its (grid, block), None for the 1-D default of bench/peers.py;
    peer_check: the peers' results are compared with the references too
    (their outputs have the kernel's shapes)."""

    def __init__(self, name, params, diff, out, words, make, peer, primal_ref, grad_ref,
                 peer_cot=None, kernel=None, geometry=None, peer_check=False):
        self.name, self.params, self.diff, self.out = name, params, diff, out
        self.words, self.make, self.peer = words, make, peer
        self.primal_ref, self.grad_ref = primal_ref, grad_ref
        self.peer_cot = peer_cot or (lambda g: g)
        self.kernel, self.geometry, self.peer_check = kernel or name, geometry, peer_check


def _sig(x):
    return 1.0 / (1.0 + np.exp(-x))


def _loop_ref(x, p):
    states = [x]
    s = x
    for _ in range(STEPS):
        s = s + 0.1 * np.sin(s) * p
        states.append(s)
    return states


def _loop_grad(x, p, g):
    states = _loop_ref(x, p)
    sb, pb = g.copy(), np.zeros_like(g)
    for s in reversed(states[:-1]):
        pb += sb * 0.1 * np.sin(s)
        sb = sb * (1.0 + 0.1 * np.cos(s) * p)
    return sb, pb


def _stencil_xbar(g, s, n):
    gi = np.zeros(len(s))
    for k, c in ((-1, 0.25), (0, 0.5), (1, 0.25)):
        o = s - k  # x[s] feeds y[o] (as its x[o + k]) with weight c
        ok = (o >= 1) & (o <= n - 2)
        gi[ok] += c * g[o[ok]]
    return gi


def _stencil_y(x, s, n):
    s = s[(s >= 1) & (s <= n - 2)]
    return 0.25 * x[s - 1] + 0.5 * x[s] + 0.25 * x[s + 1], s


def cases(n: int) -> list:
    from peer_rows import row_cases  # layernorm, softmax, conv2d (they use Case)
    m = max(n // REUSE, 1)

    def ew(rng):
        return {"x": _f32(rng, n), "y": np.zeros(n, np.float32)}

    return [
        Case("square", ["y", "x"], ["x"], "y", (2, 3, 6), ew,
             lambda L, x: x * x,
             lambda h, s: {"y": (h["x"][s] ** 2, s)},
             lambda h, g, s: {"x": (2 * h["x"][s] * g[s], s)}),
        Case("saxpy", ["o", "a", "x", "y"], ["a", "x", "y"], "o", (3, 4, 9),
             lambda rng: {"o": np.zeros(n, np.float32), "a": 1.5, "x": _f32(rng, n),
                          "y": _f32(rng, n)},
             lambda L, a, x, y: a * x + y,
             lambda h, s: {"o": (h["a"] * h["x"][s] + h["y"][s], s)},
             lambda h, g, s: {"a": (float(np.dot(h["x"], g)), None),
                              "x": (h["a"] * g[s], s), "y": (g[s], s)}),
        Case("softplus", ["y", "x"], ["x"], "y", (2, 3, 6), ew,
             lambda L, x: L.log1p(L.exp(x)),
             lambda h, s: {"y": (np.log1p(np.exp(h["x"][s])), s)},
             lambda h, g, s: {"x": (_sig(h["x"][s]) * g[s], s)}),
        Case("stencil", ["y", "x"], ["x"], "y", (2, 2, 6), ew,
             lambda L, x: 0.25 * x[:-2] + 0.5 * x[1:-1] + 0.25 * x[2:],
             lambda h, s: {"y": _stencil_y(h["x"], s, n)},
             lambda h, g, s: {"x": (_stencil_xbar(g, s, n), s)},
             peer_cot=lambda g: g[1:-1]),
        Case("loop16", ["y", "x", "p"], ["x", "p"], "y", (3, 5, 9),
             lambda rng: {"y": np.zeros(n, np.float32), "x": _f32(rng, n),
                          "p": _f32(rng, n)},
             _peer_loop,
             lambda h, s: {"y": (_loop_ref(h["x"][s], h["p"][s])[-1], s)},
             lambda h, g, s: dict(zip(("x", "p"), (
                 (v, s) for v in _loop_grad(h["x"][s], h["p"][s], g[s]))))),
        Case("sumsq", ["out", "x"], ["x"], "out", (1, 2, 3),
             lambda rng: {"out": np.zeros(1, np.float32), "x": _f32(rng, n)},
             lambda L, x: L.sum(x * x),
             lambda h, s: {"out": (np.array([np.dot(h["x"], h["x"])]), None)},
             lambda h, g, s: {"x": (2 * h["x"][s] * g[0], s), "out": (g, None)},
             peer_cot=lambda g: g[0]),
        Case("gather", ["y", "x", "idx"], ["x"], "y",
             (2 + 1 / REUSE, 2 + 1 / REUSE, 4 + 3 / REUSE),
             lambda rng: {"y": np.zeros(n, np.float32), "x": _f32(rng, m),
                          "idx": rng.integers(0, m, n).astype(np.int32)},
             lambda L, x, idx: x[idx],
             lambda h, s: {"y": (h["x"][h["idx"][s]], s)},
             lambda h, g, s: {"x": (np.bincount(h["idx"], weights=g, minlength=m), None)}),
    ] + row_cases(n)


def _peer_loop(L, x, p):
    s = x
    for _ in range(STEPS):
        s = s + 0.1 * L.sin(s) * p
    return s


def sample(n: int, where=None):
    """Indices compared element by element: about 2^20 spread over the array
    (all of them for small n), plus both ends."""
    step = max(n // (1 << 20), 1)
    s = np.unique(np.concatenate([np.arange(0, n, step), [0, n - 1]]))
    if where is not None:
        s = s[where(s)]
    return s.astype(np.int64)

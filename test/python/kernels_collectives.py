"""Kernels of the collective builtins (docs/collectives.md), defined once:
the CPU tests (test/python/lowering/autodiff/test_collectives*.py,
test/python/lowering/host/test_collectives_host.py) and the GPU check
(scripts/gpu_cases/collectives.py) import them.

`OPS` maps a name to a kernel `k(X, Y)` over a 1-D block: thread t (linear
index of a block of any shape) reads v = X[b, t] of its block b and writes
Y[b, t] = g(op(f(v)), v) with f, g smooth, so every derivative path is taken.
`reference(name, X)` computes the same with numpy (a shuffle from a lane
out of range gives the thread its own value, as documented; blocks are
whole warps: others are refused at launch).
"""
import numpy as np

import diffgpu as dg


@dg.func
def _lin():
    return dg.thread_id(0) + dg.block_dim(0) * (dg.thread_id(1) + dg.block_dim(1) * dg.thread_id(2))


@dg.func
def _v(X):
    return X[dg.block_id(0), _lin()]


@dg.func
def _out(Y, r, v):
    Y[dg.block_id(0), _lin()] = r * (1.0 + 0.5 * v)


@dg.kernel
def warp_sum_k(X, Y):
    v = _v(X)
    _out(Y, dg.warp_sum(dg.sin(v)), v)


@dg.kernel
def warp_max_k(X, Y):
    v = _v(X)
    _out(Y, dg.warp_max(v * v), v)


@dg.kernel
def warp_min_k(X, Y):
    v = _v(X)
    _out(Y, dg.warp_min(v * v), v)


@dg.kernel
def block_sum_k(X, Y):
    v = _v(X)
    _out(Y, dg.block_sum(dg.sin(v)), v)


@dg.kernel
def block_max_k(X, Y):
    v = _v(X)
    _out(Y, dg.block_max(v * v), v)


@dg.kernel
def block_min_k(X, Y):
    v = _v(X)
    _out(Y, dg.block_min(v * v), v)


@dg.kernel
def block_scan_k(X, Y):
    v = _v(X)
    _out(Y, dg.block_scan(dg.sin(v)), v)


@dg.kernel
def shfl_xor_k(X, Y):
    v = _v(X)
    _out(Y, dg.shfl_xor(v * v, 5), v)


@dg.kernel
def shfl_up_k(X, Y):
    v = _v(X)
    _out(Y, dg.shfl_up(v * v, 3), v)


@dg.kernel
def shfl_down_k(X, Y):
    v = _v(X)
    _out(Y, dg.shfl_down(v * v, 7), v)


@dg.kernel
def shfl_idx_k(X, Y):
    v = _v(X)
    _out(Y, dg.shfl_idx(v * v, _lin() * 7 + 3), v)


@dg.kernel
def shfl_idx_const_k(X, Y):
    v = _v(X)
    _out(Y, dg.shfl_idx(v * v, 37), v)


@dg.kernel
def sums_raw_k(X, Y):
    t = dg.thread_id(0)
    Y[0, t] = dg.warp_sum(X[0, t])
    Y[1, t] = dg.block_sum(X[0, t])
    Y[2, t] = dg.block_scan(X[0, t])


@dg.kernel
def ints_k(X, Y):
    t = dg.thread_id(0)
    v = X[0, t]
    Y[0, t] = dg.warp_sum(v)
    Y[1, t] = dg.block_max(v)
    Y[2, t] = dg.block_min(v)
    Y[3, t] = dg.block_scan(v)
    Y[4, t] = dg.shfl_xor(v, 3)
    Y[5, t] = dg.block_sum(v)


OPS = {"warp_sum": warp_sum_k, "warp_max": warp_max_k, "warp_min": warp_min_k,
       "block_sum": block_sum_k, "block_max": block_max_k, "block_min": block_min_k,
       "block_scan": block_scan_k, "shfl_xor": shfl_xor_k, "shfl_up": shfl_up_k,
       "shfl_down": shfl_down_k, "shfl_idx": shfl_idx_k, "shfl_idx_const": shfl_idx_const_k}


@dg.kernel
def shfl_var_k(X, Y):
    """Offsets that are values: a butterfly in a while loop, up/down by
    -2 .. 2 (shfl_idx of the source lane; own value outside the warp)."""
    t = _lin()
    v = X[0, t]
    acc = v * 0.0
    s = 16
    while s > 0:
        acc += dg.shfl_xor(v, s) * v
        s //= 2
    for d in range(-2, 3):
        acc += dg.shfl_up(v * v, d) + 2.0 * dg.shfl_down(v, d)
    Y[0, t] = acc


def shfl_var_reference(x):
    n = len(x)
    lin = np.arange(n)
    lane, base = lin % 32, lin - lin % 32

    def rd(u, src):
        ok = (src >= 0) & (src < 32) & (base + src < n)
        return np.where(ok, u[np.clip(base + src, 0, n - 1)], u)
    return (sum(rd(x, lane ^ s) * x for s in (16, 8, 4, 2, 1))
            + sum(rd(x * x, lane - d) + 2 * rd(x, lane + d) for d in range(-2, 3)))


@dg.kernel
def atomics_k(M, X):
    t = dg.global_id(0)
    v = X[t]
    dg.atomic_max(M, 0, v)
    dg.atomic_min(M, 1, v)
    dg.atomic_sub(M, 2, v)


@dg.kernel
def atomic_sub_k(A, X):
    t = dg.global_id(0)
    dg.atomic_sub(A, t % 3, X[t] * X[t])


@dg.kernel
def divergent_k(X, Y):
    t = dg.thread_id(0)
    if t < 16:
        Y[0, t] = dg.warp_sum(X[0, t])


@dg.kernel
def data_divergent_k(X, Y):
    t = dg.thread_id(0)
    if X[0, t] > 0.0:
        Y[0, t] = dg.block_sum(X[0, t])


@dg.kernel
def two_in_loop_k(X, Y):
    t = dg.thread_id(0)
    acc = X[0, t] * 0.0
    for i in range(3):
        acc += dg.block_sum(X[0, t] * i) + dg.shfl_down(X[0, t], 1)
    Y[0, t] = acc


@dg.func
def _mix(X, Y):
    t = dg.thread_id(0)
    v = X[t]
    Y[t] = (dg.block_sum(v * v * v) + dg.shfl_xor(v, 1) * v + dg.block_max(v * v)
            + dg.block_scan(v) * v + dg.warp_min(v) * dg.shfl_idx(v, t + 3))


@dg.kernel
def mix_grad_k(X, dX, Y, dY):
    """The reverse of `_mix` in the kernel: its forward derivative is a
    Hessian-vector product (collectives differentiated twice)."""
    dg.autodiff(_mix, dg.Duplicated(X, dX), dg.Duplicated(Y, dY))


# -- numpy references -------------------------------------------------------------
def _f(name, v):
    return np.sin(v) if name in ("warp_sum", "block_sum", "block_scan") else v * v


def reference(name, X):
    """Y of kernel OPS[name] on X (rows = blocks), in float64."""
    X = X.astype(np.float64)
    Y = np.zeros_like(X)
    n = X.shape[1]
    for b in range(X.shape[0]):
        v = X[b]
        u = _f(name, v)
        r = np.zeros(n)
        for i in range(n):
            w, lane = divmod(i, 32)
            warp = u[w * 32:min(n, w * 32 + 32)]

            def read(src):
                j = w * 32 + src
                return u[j] if 0 <= src < 32 and j < n else u[i]
            r[i] = {"warp_sum": lambda: warp.sum(), "warp_max": lambda: warp.max(),
                    "warp_min": lambda: warp.min(), "block_sum": lambda: u.sum(),
                    "block_max": lambda: u.max(), "block_min": lambda: u.min(),
                    "block_scan": lambda: u[:i + 1].sum(),
                    "shfl_xor": lambda: read(lane ^ 5), "shfl_up": lambda: read(lane - 3),
                    "shfl_down": lambda: read(lane + 7),
                    "shfl_idx": lambda: read((i * 7 + 3) & 31),
                    "shfl_idx_const": lambda: read(37 & 31)}[name]()
        Y[b] = r * (1.0 + 0.5 * v)
    return Y


def kogge_stone(u):
    """The GPU's inclusive warp scan of 32 values, in its order (shfl_up 1 .. 16)."""
    u = list(u)
    for d in (1, 2, 4, 8, 16):
        u = [u[j - d] + u[j] if j >= d else u[j] for j in range(32)]
    return u


def butterfly_sum(u):
    """The GPU's warp sum of 32 values, in its order (xor offsets 16 .. 1)."""
    u = list(u)
    for off in (16, 8, 4, 2, 1):
        u = [u[j] + u[j ^ off] if j < off else u[j ^ off] + u[j] for j in range(32)]
    return u[0]

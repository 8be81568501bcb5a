"""Kernels with a loop whose trip count is a runtime argument, defined once:
test_remat.py checks recomputation instead of the tape on them, and
bench/remat.py times them on a GPU with recomputation on and off.

- `wsin`: y[i] = sum_k w[k] sin(x[i] k); `wsin_grad` differentiates y, x
  and w (dw by atomics);
- `gather`: s = x[i]; s = 0.9 s + t[(7 i + 3 k) % len(t)] cos(s), a
  loop-carried value; `gather_grad` differentiates y, x and the table t.
"""
import diffgpu as dg


@dg.kernel
def wsin(y, x, w, m):
    i = dg.global_id(0)
    if i < len(x):
        acc = 0.0
        for k in range(m):
            acc += w[k] * dg.sin(x[i] * k)
        y[i] = acc


@dg.kernel
def wsin_grad(y, dy, x, dx, w, dw, m):
    dg.autodiff(wsin, dg.Duplicated(y, dy), dg.Duplicated(x, dx), dg.Duplicated(w, dw), m)


@dg.kernel
def gather(y, x, t, m):
    i = dg.global_id(0)
    if i < len(x):
        s = x[i]
        for k in range(m):
            j = (i * 7 + k * 3) % len(t)
            s = s * 0.9 + t[j] * dg.cos(s)
        y[i] = s


@dg.kernel
def gather_grad(y, dy, x, dx, t, dt, m):
    dg.autodiff(gather, dg.Duplicated(y, dy), dg.Duplicated(x, dx), dg.Duplicated(t, dt), m)

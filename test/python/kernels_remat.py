"""Kernels with a loop whose trip count is a runtime argument, defined once:
test_remat.py checks recomputation instead of the tape on them, and
bench/remat.py times them on a GPU with recomputation on and off.

- `wsin`: y[i] = sum_k w[k] sin(x[i] k); `wsin_grad` differentiates y, x
  and w (dw by atomics);
- `gather`: s = x[i]; s = 0.9 s + t[(7 i + 3 k) % len(t)] cos(s), a
  loop-carried value; `gather_grad` differentiates y, x and the table t;
- test_remat.py's only: `chain` (writes the array it reads) and `wloop` (a
  while loop with a counter), each with its `*_grad`.
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


@dg.kernel
def chain(a, x, m):
    """Writes the array it reads (a[i, k + 1] from a[i, k]): its loads keep
    the tape; x[i] (never written, launch proved disjoint) is reloaded."""
    i = dg.global_id(0)
    if i < len(x):
        for k in range(m):
            a[i, k + 1] = a[i, k] * x[i] + 0.3 * dg.sin(a[i, k])


@dg.kernel
def chain_grad(a, da, x, dx, m):
    dg.autodiff(chain, dg.Duplicated(a, da), dg.Duplicated(x, dx), m)


@dg.kernel
def wloop(y, x, w, m):
    """A while loop with a counter: k is rebuilt from the reverse's step
    count (remat.while_counters), so w[k] can be reloaded."""
    i = dg.global_id(0)
    if i < len(x):
        k = 0
        s = x[i]
        while k < m:
            s = s + w[k] * dg.sin(s)
            k += 1
        y[i] = s


@dg.kernel
def wloop_grad(y, dy, x, dx, w, dw, m):
    dg.autodiff(wloop, dg.Duplicated(y, dy), dg.Duplicated(x, dx), dg.Duplicated(w, dw), m)

"""A loss accumulated by every thread, its gradient on the host, and gradcheck.

    loss = sum_i (a * x[i] + y[i] - t[i])^2

`dg.autodiff(kernel[grid, block], ...)` runs the reverse kernel: shadows of
arrays receive J^T D, `Active` scalars come back as a tuple.
"""
import numpy as np

import diffgpu as dg


@dg.kernel
def loss_kernel(loss, a, x, y, t):
    i = dg.global_id(0)
    if i < len(x):
        r = a * x[i] + y[i] - t[i]
        dg.atomic_add(loss, 0, r * r)


n = 1000
rng = np.random.default_rng(0)
x, y, t = (rng.standard_normal(n) for _ in range(3))
a = 0.5
loss = np.zeros(1)
loss_kernel[(n + 127) // 128, 128](loss, a, x, y, t)
r = a * x + y - t
print(f"loss = {loss[0]:.6f} (numpy {np.sum(r * r):.6f})")

dloss = np.ones(1)                    # adjoint of the loss
dx, dy = np.zeros(n), np.zeros(n)
(da,) = dg.autodiff(loss_kernel[(n + 127) // 128, 128],
                    dg.Duplicated(np.zeros(1), dloss), dg.Active(a),
                    dg.Duplicated(x, dx), dg.Duplicated(y, dy), dg.Const(t))
print(f"dloss/da = {da:.6f} (analytic {np.sum(2 * r * x):.6f})")
print(f"max |dloss/dx - 2 r a| = {np.max(np.abs(dx - 2 * r * a)):.2e}")
assert np.allclose(da, np.sum(2 * r * x)) and np.allclose(dx, 2 * r * a)
assert np.allclose(dy, 2 * r)

# finite differences in float64 against reverse and forward mode
m = 16
dg.gradcheck(loss_kernel[1, m], dg.Duplicated(np.zeros(1), np.ones(1)), dg.Active(a),
             dg.Duplicated(x[:m].copy(), np.zeros(m)), dg.Duplicated(y[:m].copy(), np.zeros(m)),
             dg.Const(t[:m].copy()))
print("gradcheck: reverse and forward mode agree with finite differences")

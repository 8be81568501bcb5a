"""Kernels of the launch-time specialisation tests, defined once:
test_specialize.py (and the tests beside it) run them on the CPU, and
scripts/gpu_check_specialize.py runs them on the GPU, specialised and generic.

- `scale_shift` (y = 2x + 1), `mul` (y = x * w), `loop16` (16 steps of
  s = s + 0.1 sin(s) p) and `add2d` (c = a * b + 1, 2-D), each with a
  `*_grad` kernel differentiating it in reverse mode inside a kernel;
- `two_guards`: guards on two arrays' lengths (the `extents` fact).
"""
import diffgpu as dg


@dg.kernel
def scale_shift(y, x):
    i = dg.global_id(0)
    if i < len(x):
        y[i] = 2.0 * x[i] + 1.0


@dg.kernel
def scale_shift_grad(y, dy, x, dx):
    dg.autodiff(scale_shift, dg.Duplicated(y, dy), dg.Duplicated(x, dx))


@dg.kernel
def mul(y, x, w):
    i = dg.global_id(0)
    if i < len(x):
        y[i] = x[i] * w[i]


@dg.kernel
def mul_grad(y, dy, x, dx, w, dw):
    dg.autodiff(mul, dg.Duplicated(y, dy), dg.Duplicated(x, dx), dg.Duplicated(w, dw))


@dg.kernel
def loop16(y, x, p):
    i = dg.global_id(0)
    if i < len(x):
        s = x[i]
        for k in range(16):
            s = s + 0.1 * dg.sin(s) * p[i]
        y[i] = s


@dg.kernel
def loop16_grad(y, dy, x, dx, p, dp):
    dg.autodiff(loop16, dg.Duplicated(y, dy), dg.Duplicated(x, dx), dg.Duplicated(p, dp))


@dg.kernel
def add2d(c, a, b):
    i = dg.global_id(0)
    j = dg.global_id(1)
    if i < c.shape[0]:
        if j < c.shape[1]:
            c[i, j] = a[i, j] * b[i, j] + 1.0


@dg.kernel
def add2d_grad(c, dc, a, da, b, db):
    dg.autodiff(add2d, dg.Duplicated(c, dc), dg.Duplicated(a, da), dg.Duplicated(b, db))


@dg.kernel
def two_guards(o, x, w):
    """Two guards, one per array: one `scf.if` when the launch fact
    `extents` proves len(w) == len(x) (lowering/facts/specialize_shapes.py)."""
    i = dg.global_id(0)
    if i < len(x):
        o[i] = 2.0 * x[i]
    if i < len(w):
        w[i] = 3.0 * w[i] + 1.0

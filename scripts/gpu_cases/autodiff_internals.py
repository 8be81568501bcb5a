"""Strong zeros, dg.stop_gradient and integer shared arrays in derivatives
(docs/autodiff.md): Warp's integrate_particles clamp at rest (the gradient
is the identity, not NaN) and in motion, x * stop_gradient(x) (gradient x,
not 2x), and a reverse through an int32 shared array of indices that the
kernel overwrites after use. The CPU's results are expected."""
from __future__ import annotations

import numpy as np

import diffgpu as dg


@dg.kernel
def clamp_speed(v, vmax):
    i = dg.global_id(0)
    if i < len(v) // 3:
        vx = v[3 * i]
        vy = v[3 * i + 1]
        vz = v[3 * i + 2]
        m = dg.sqrt(vx * vx + vy * vy + vz * vz)
        if m > vmax:
            s = vmax / m
            v[3 * i] = vx * s
            v[3 * i + 1] = vy * s
            v[3 * i + 2] = vz * s


@dg.kernel
def half_square(y, x):
    i = dg.global_id(0)
    if i < len(x):
        y[i] = x[i] * dg.stop_gradient(x[i])


@dg.kernel
def permuted(y, x, perm):
    idx = dg.shared_array(128, np.int32)
    t = dg.thread_id(0)
    i = dg.global_id(0)
    idx[t] = perm[i]
    dg.syncthreads()
    j = idx[(t + 1) % 128]
    y[i] = x[j] * x[j] + x[i] * 2.0
    dg.syncthreads()
    idx[t] = 0


def _particles(r, n, dt, moving):
    v = (r.uniform(-3, 3, 3 * n) if moving else np.zeros(3 * n)).astype(dt)
    return [v, 1.0, r.standard_normal(3 * n).astype(dt)]


def cases():
    n = 4096
    out = []
    for dt in (np.float32, np.float64):
        name = np.dtype(dt).name
        out += [
            (f"strong zeros clamp at rest vjp {name}", clamp_speed, 16, 256, "vjp",
             lambda r, dt=dt: _particles(r, n, dt, False), None),
            (f"strong zeros clamp moving vjp {name}", clamp_speed, 16, 256, "vjp",
             lambda r, dt=dt: _particles(r, n, dt, True), None),
            (f"stop_gradient x*sg(x) vjp {name}", half_square, 16, 256, "vjp",
             lambda r, dt=dt: [np.zeros(n, dt), r.standard_normal(n).astype(dt),
                               r.standard_normal(n).astype(dt)], None),
            (f"int shared indices reverse {name}", permuted, 32, 128, "reverse",
             lambda r, dt=dt: [dg.Duplicated(np.zeros(n, dt), r.standard_normal(n).astype(dt)),
                               dg.Duplicated(r.standard_normal(n).astype(dt), np.zeros(n, dt)),
                               dg.Const(r.permutation(n).astype(np.int32))], None),
        ]
    return out

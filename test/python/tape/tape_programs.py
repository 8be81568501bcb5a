"""Kernels and multi-launch programs for the dg.Tape tests, and a float64
central-difference checker. Each program is `prog(arrays: dict)`: it runs
its launches (and dg.copy / dg.fill) on the arrays in place and leaves its
scalar loss in arrays["loss"]."""
from __future__ import annotations

import numpy as np

import diffgpu as dg

B = 32  # threads per block


@dg.kernel
def lap_step(dst, src, c):
    """dst[i] = src[i] + c * (src[i-1] - 2 src[i] + src[i+1]) (ends held)."""
    i = dg.global_id(0)
    n = len(src)
    if i < n:
        if i > 0 and i < n - 1:
            dst[i] = src[i] + c * (src[i - 1] - 2.0 * src[i] + src[i + 1])
        else:
            dst[i] = src[i]


@dg.kernel
def flux(f, u, kappa):
    i = dg.global_id(0)
    n = len(u)
    if i < n:
        if i > 0 and i < n - 1:
            f[i] = kappa[i] * (u[i - 1] - 2.0 * u[i] + u[i + 1])
        else:
            f[i] = 0.0


@dg.kernel
def axpy_inplace(u, f, dt):
    i = dg.global_id(0)
    if i < len(u):
        u[i] = u[i] + dt * f[i]


@dg.kernel
def nonlin_inplace(u, c):
    i = dg.global_id(0)
    if i < len(u):
        u[i] = u[i] * c[i] + 0.1 * u[i] * u[i]


@dg.kernel
def spring_force(f, x, k):
    """f[i] = k[i] (x[i+1] - x[i] - 1) - k[i-1] (x[i] - x[i-1] - 1)."""
    i = dg.global_id(0)
    n = len(x)
    if i < n:
        acc = 0.0
        if i < n - 1:
            acc = acc + k[i] * (x[i + 1] - x[i] - 1.0)
        if i > 0:
            acc = acc - k[i - 1] * (x[i] - x[i - 1] - 1.0)
        f[i] = acc


@dg.kernel
def integrate(x, v, f, dt):
    i = dg.global_id(0)
    if i < len(x):
        v[i] = v[i] + dt * f[i]
        x[i] = x[i] + dt * v[i]


@dg.kernel
def bounce(x, v, e):
    """A floor at 0: a particle below it is put back and its speed reversed."""
    i = dg.global_id(0)
    if i < len(x):
        if x[i] < 0.0:
            x[i] = -x[i]
            v[i] = -e * v[i]


@dg.kernel
def fall(x, v, dt):
    i = dg.global_id(0)
    if i < len(x):
        v[i] = v[i] - 9.81 * dt
        x[i] = x[i] + dt * v[i]


@dg.kernel
def sq_loss(u, loss):
    i = dg.global_id(0)
    if i < len(u):
        dg.atomic_add(loss, 0, u[i] * u[i])


@dg.kernel
def dot_loss(u, w, loss):
    i = dg.global_id(0)
    if i < len(u):
        dg.atomic_add(loss, 0, u[i] * w[i])


@dg.kernel
def quad_grad(g, p, target):
    """g = 2 (p - target) + 0.5 p^3: the gradient of a model loss in p."""
    i = dg.global_id(0)
    if i < len(p):
        d = p[i] - target[i]
        g[i] = 2.0 * d + 0.5 * p[i] * p[i] * p[i]


@dg.kernel
def sgd(p, g, lr):
    i = dg.global_id(0)
    if i < len(p):
        p[i] = p[i] - lr * g[i]


@dg.kernel
def jacobi(xn, x, b, d):
    """One Jacobi sweep of (D + L + U) x = b with L, U = 0.5 off-diagonals."""
    i = dg.global_id(0)
    n = len(x)
    if i < n:
        s = b[i]
        if i > 0:
            s = s - 0.5 * x[i - 1]
        if i < n - 1:
            s = s - 0.5 * x[i + 1]
        xn[i] = s / d[i]


@dg.kernel
def resid(r, xn, x):
    i = dg.global_id(0)
    if i < len(x):
        dg.atomic_add(r, 0, (xn[i] - x[i]) * (xn[i] - x[i]))


@dg.kernel
def pair(y1, y2, x, w):
    i = dg.global_id(0)
    if i < len(x):
        y1[i] = dg.sin(x[i]) * w[i]
        y2[i] = x[i] * x[i] + w[i]


@dg.kernel
def combine(z, a, b):
    i = dg.global_id(0)
    if i < len(z):
        z[i] = a[i] * b[i]


@dg.kernel
def half_write(y, x):
    """Writes only the first half of y: the rest keeps its values."""
    i = dg.global_id(0)
    if i < len(x) // 2:
        y[i] = x[i] * x[i]


@dg.kernel
def gather(y, x, idx):
    i = dg.global_id(0)
    if i < len(y):
        y[i] = x[idx[i]] * 2.0 + y[i]


@dg.kernel
def shift_idx(idx, n):
    i = dg.global_id(0)
    if i < len(idx):
        idx[i] = (idx[i] + 1) % n


@dg.kernel
def scale_time(u, s):
    i = dg.global_id(0)
    if i < len(u):
        u[i] = u[i] * s + s * s


def grid(n):
    return (n + B - 1) // B


# -- programs --------------------------------------------------------------
def heat_inplace(a):
    u, kappa, f = a["u"], a["kappa"], a["f"]
    n = len(u)
    for _ in range(6):
        flux[grid(n), B](f, u, kappa)
        axpy_inplace[grid(n), B](u, f, 0.2)
    sq_loss[grid(n), B](u, a["loss"])


def heat_pingpong(a):
    u, w = a["u"], a["w"]
    n = len(u)
    for _ in range(4):
        lap_step[grid(n), B](w, u, 0.3)
        lap_step[grid(n), B](u, w, 0.3)
    dot_loss[grid(n), B](u, a["target"], a["loss"])


def mass_spring(a):
    x, v, f, k = a["x"], a["v"], a["f"], a["k"]
    n = len(x)
    for _ in range(8):
        spring_force[grid(n), B](f, x, k)
        integrate[grid(n), B](x, v, f, 0.05)
    sq_loss[grid(n), B](x, a["loss"])


def contact(a):
    x, v = a["x"], a["v"]
    n = len(x)
    for _ in range(10):
        fall[grid(n), B](x, v, 0.05)
        bounce[grid(n), B](x, v, 0.8)
    sq_loss[grid(n), B](v, a["loss"])
    sq_loss[grid(n), B](x, a["loss"])


def optimiser(a):
    p, g, target = a["p"], a["g"], a["target"]
    n = len(p)
    for _ in range(5):
        quad_grad[grid(n), B](g, p, target)
        sgd[grid(n), B](p, g, 0.1)
    sq_loss[grid(n), B](p, a["loss"])


def solver(a):
    """Jacobi until the residual is small: the count depends on the data
    (read on the host; the tape records the launches that ran)."""
    x, xn, b, d, r = a["x"], a["xn"], a["b"], a["d"], a["r"]
    n = len(x)
    for it in range(200):
        jacobi[grid(n), B](xn, x, b, d)
        dg.fill(r, 0.0)
        resid[grid(n), B](r, xn, x)
        dg.copy(x, xn)
        if r[0] < 1e-10:
            break
    a["iterations"] = it + 1
    dot_loss[grid(n), B](x, a["w"], a["loss"])


def shared_inputs(a):
    x, w, y1, y2, z = a["x"], a["w"], a["y1"], a["y2"], a["z"]
    n = len(x)
    pair[grid(n), B](y1, y2, x, w)
    combine[grid(n), B](z, y1, y2)
    pair[grid(n), B](y1, y2, z, w)
    combine[grid(n), B](z, y1, x)
    sq_loss[grid(n), B](z, a["loss"])


def copies(a):
    u, s, kappa = a["u"], a["s"], a["kappa"]
    n = len(u)
    dg.copy(s, u)                       # keep the initial state
    nonlin_inplace[grid(n), B](u, kappa)
    nonlin_inplace[grid(n), B](s, u)    # reads the kept copy and the new u
    dg.copy(u, s)
    dg.fill(s, 0.5)
    nonlin_inplace[grid(n), B](u, s)
    sq_loss[grid(n), B](u, a["loss"])


def views(a):
    """Launches on halves of one array; the gradient of the whole array
    collects what flowed through each half."""
    buf, c = a["buf"], a["c"]
    n = len(buf) // 2
    lo, hi = buf[:n], buf[n:]
    for _ in range(3):
        nonlin_inplace[grid(n), B](lo, c)
        combine[grid(n), B](hi, lo, hi)
    sq_loss[grid(2 * n), B](buf, a["loss"])


def partial_outputs(a):
    y, x = a["y"], a["x"]
    n = len(x)
    half_write[grid(n), B](y, x)        # y's second half passes through
    nonlin_inplace[grid(n), B](x, y)
    half_write[grid(n), B](y, x)
    sq_loss[grid(n), B](y, a["loss"])


def indexed(a):
    y, x, idx = a["y"], a["x"], a["idx"]
    n = len(x)
    for _ in range(3):
        gather[grid(n), B](y, x, idx)
        shift_idx[grid(n), B](idx, n)   # an integer array overwritten in place
        nonlin_inplace[grid(n), B](x, y)
    sq_loss[grid(n), B](x, a["loss"])


def time_scalars(a):
    u = a["u"]
    n = len(u)
    for t in range(5):
        scale_time[grid(n), B](u, 0.9 - 0.05 * t)   # a scalar new at every step
    sq_loss[grid(n), B](u, a["loss"])


def make(name: str, n: int = 12, dtype=np.float64, seed: int = 0) -> dict:
    """Fresh inputs of program `name`."""
    rng = np.random.default_rng(seed)
    r = lambda lo=0.1, hi=1.0: rng.uniform(lo, hi, n).astype(dtype)  # noqa: E731
    z = lambda: np.zeros(n, dtype)  # noqa: E731
    a = {"loss": np.zeros(1, dtype)}
    if name == "heat_inplace":
        a.update(u=r(), kappa=r(0.1, 0.4), f=z())
    elif name == "heat_pingpong":
        a.update(u=r(), w=z(), target=r(-1, 1))
    elif name == "mass_spring":
        a.update(x=np.arange(n, dtype=dtype) * 1.1 + r(0, 0.1), v=r(-0.1, 0.1), f=z(),
                 k=r(0.5, 1.5))
    elif name == "contact":
        a.update(x=r(0.05, 0.4), v=r(-1.0, 0.5))
    elif name == "optimiser":
        a.update(p=r(-1, 1), g=z(), target=r(-1, 1))
    elif name == "solver":
        a.update(x=z(), xn=z(), b=r(), d=r(2.0, 3.0), r=np.zeros(1, dtype), w=r())
    elif name == "shared_inputs":
        a.update(x=r(), w=r(), y1=z(), y2=z(), z=z())
    elif name == "copies":
        a.update(u=r(), s=z(), kappa=r(0.5, 0.9))
    elif name == "views":
        a.update(buf=rng.uniform(0.2, 0.8, 2 * n).astype(dtype), c=r(0.3, 0.9))
    elif name == "partial_outputs":
        a.update(y=r(), x=r())
    elif name == "indexed":
        a.update(y=r(), x=r(0.1, 0.5), idx=rng.permutation(n).astype(np.int64))
    elif name == "time_scalars":
        a.update(u=r())
    return a


PROGRAMS = {f.__name__: f for f in (heat_inplace, heat_pingpong, mass_spring, contact,
                                    optimiser, solver, shared_inputs, copies, views,
                                    partial_outputs, indexed, time_scalars)}
#: per program, the arrays differentiated
WRT = {"heat_inplace": ["u", "kappa"], "heat_pingpong": ["u", "target"],
       "mass_spring": ["x", "v", "k"], "contact": ["x", "v"], "optimiser": ["p", "target"],
       "solver": ["b", "d"], "shared_inputs": ["x", "w"], "copies": ["u", "kappa"],
       "views": ["buf", "c"], "partial_outputs": ["y", "x"], "indexed": ["y", "x"],
       "time_scalars": ["u"]}


def loss_of(name: str, inputs: dict) -> float:
    a = {k: v.copy() for k, v in inputs.items() if isinstance(v, np.ndarray)}
    PROGRAMS[name](a)
    return float(a["loss"][0])


def finite_differences(name: str, inputs: dict, wrt: str, eps: float = 1e-6):
    base = inputs[wrt]
    out = np.zeros(base.shape, np.float64)
    for k in np.ndindex(base.shape):
        plus = dict(inputs)
        minus = dict(inputs)
        plus[wrt], minus[wrt] = base.copy(), base.copy()
        plus[wrt][k] += eps
        minus[wrt][k] -= eps
        out[k] = (loss_of(name, plus) - loss_of(name, minus)) / (2 * eps)
    return out


def taped(name: str, inputs: dict, **tape_options):
    """(tape, the arrays after the program): the program recorded."""
    a = {k: v.copy() for k, v in inputs.items() if isinstance(v, np.ndarray)}
    with dg.Tape(**tape_options) as tape:
        PROGRAMS[name](a)
    return tape, a

"""The 16-bit stage of `dg.gradcheck`: a kernel given float16 / bfloat16
arrays is checked twice. Finite differences need float64, so gradcheck.py
first checks the derivative code on float64 copies of every array (as for
any dtype); then this module runs the derivative the user's dtypes select
(16-bit loads and stores, float32 arithmetic) and compares it with the
float64 one, at 16-bit tolerance:

- reverse mode: J^T D of the 16-bit program vs the float64 program's, for a
  random D that 16-bit shadows hold exactly (rounded to their dtype first);
- forward mode: J V likewise, V rounded to the 16-bit inputs' dtype.

Each gradient array may differ by HALF_ULPS roundings of the coarsest 16-bit
dtype among the arguments, relative to max(1, max |float64 value|): one per
store, and one per add into a shadow element (docs/language.md, 16-bit
floats). Raises GradcheckError naming the array.
"""
from __future__ import annotations

import numpy as np

from diffgpu.activities import Active, Const, Duplicated, DuplicatedNoNeed
from diffgpu.types import STORAGE_DTYPES

#: roundings of the 16-bit dtype a gradient element may carry
HALF_ULPS = 8
#: spacing at 1 of each 16-bit dtype
EPS = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7}


def half_arrays(primals) -> list:
    """Indices of the 16-bit float arrays among `primals`."""
    return [i for i, a in enumerate(primals)
            if hasattr(a, "dtype") and np.dtype(a.dtype).name in STORAGE_DTYPES]


def check_half(p, primals, rng, error_cls) -> None:
    """The 16-bit program's derivatives against the float64 program's (see
    the module docstring); `p`: gradcheck's _Problem, `primals`: the user's
    arrays and scalars."""
    from diffgpu.hostdiff.diff import autodiff, fwddiff
    half = half_arrays(primals)
    if not half:
        return
    worst = max(EPS[np.dtype(primals[i].dtype).name] for i in half)
    tol = HALF_ULPS * worst

    def as_user(i, values):  # float64 values in the user's dtype of argument i
        return p.xp.asarray(np.asarray(values).astype(primals[i].dtype))

    def exact(i, values):  # the float64 values argument i's dtype holds exactly
        return np.asarray(values).astype(primals[i].dtype).astype(np.float64)

    d = [exact(i, rng.standard_normal(p.base[i].shape)) for i in p.dup]
    want = p.vjp(d)
    acts, shadows = [], {}
    for i, a in enumerate(primals):
        if i in p.dup:
            shadows[i] = as_user(i, d[p.dup.index(i)])
            cls = DuplicatedNoNeed if p.kinds[i] == "dupnoneed" else Duplicated
            acts.append(cls(p.xp.array(a, copy=True), shadows[i]))
        elif i in p.active:
            acts.append(Active(a))
        else:
            acts.append(Const(a))
    grads = autodiff(p.launcher, *acts)
    got = [_host(shadows[i]) for i in p.dup] + [float(g) for g in grads]
    _compare(p, p.dup + p.active, got, want, tol, "reverse mode J^T D", error_cls)

    v = [exact(i, rng.standard_normal(p.base[i].shape)) if i in p.dup
         else float(rng.standard_normal()) for i in p.inputs]
    want = p.jvp(v)
    acts, shadows = [], {}
    for i, a in enumerate(primals):
        if i in p.dup:
            shadows[i] = as_user(i, v[p.inputs.index(i)])
            cls = DuplicatedNoNeed if p.kinds[i] == "dupnoneed" else Duplicated
            acts.append(cls(p.xp.array(a, copy=True), shadows[i]))
        elif i in p.active:
            acts.append(Duplicated(a, type(a)(v[p.inputs.index(i)])))
        else:
            acts.append(Const(a))
    fwddiff(p.launcher, *acts)
    got = [_host(shadows[i]) for i in p.dup]
    _compare(p, p.dup, got, want, tol, "forward mode J V", error_cls)


def _host(x):
    return np.array(x if isinstance(x, np.ndarray) else x.get(), dtype=np.float64)


def _compare(p, which, got, want, tol, what, error_cls) -> None:
    for k, (g, w) in enumerate(zip(got, want)):
        g, w = np.ravel(np.asarray(g, np.float64)), np.ravel(np.asarray(w, np.float64))
        if not g.size:
            continue
        err = float(np.max(np.abs(g - w))) / max(1.0, float(np.max(np.abs(w))))
        if not err <= tol:
            i = which[k]
            raise error_cls(f"{what} of {p.launcher.kernel.name} with its 16-bit arrays: "
                            f"d{p.names[i]} differs from the float64 program's by {err:.3g} "
                            f"(max |difference| / max(1, max |value|)); tolerance {tol:.3g} "
                            f"({HALF_ULPS} roundings of the coarsest 16-bit dtype)")

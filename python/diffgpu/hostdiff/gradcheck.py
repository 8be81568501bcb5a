"""`dg.gradcheck(kernel[grid, block], *activities)`: derivatives vs finite differences.

The kernel maps a state X (its `Duplicated` float arrays and `Active` float
scalars) to Y (the `Duplicated` arrays after the launch), with Jacobian J.
Everything runs in float64 on copies (the caller's arrays are never touched);
the float64 signature is compiled like any other.

- reverse mode, dot-product test: <D, J V> (central finite differences along
  a random V) equals <J^T D, V> (dg.autodiff with random shadows D);
- forward mode: J V (dg.fwddiff with tangents V; an Active scalar x becomes
  Duplicated(x, v)) equals the finite-difference J V, element by element;
- small problems (at most `max_elements` inputs and outputs): the whole
  Jacobian, column by column by finite differences, row by row by reverse
  mode and column by column by forward mode, element by element.

float16 / bfloat16 arrays: the float64 copies are checked as above, then the
program of the user's dtypes against the float64 one at 16-bit tolerance
(gradcheck_half.py).

Finite differences move each element x of X by eps * max(1, |x|) (a step
relative to large inputs, as scipy's approx_fprime rel_step: an absolute step
is lost in the rounding of x near 1e9). Raises GradcheckError (a DiffgpuError
and an AssertionError) naming the worst element; returns True.

    dg.gradcheck(f[1, 1], dg.Duplicated(A, dA))
"""
from __future__ import annotations

import numpy as np

from diffgpu.activities import Active, Const, Duplicated, DuplicatedNoNeed
from diffgpu.errors import user_facing
from diffgpu.hostdiff.diff import _launcher_of, autodiff, fwddiff, split_activities
from diffgpu.hostdiff.gradcheck_half import check_half
from diffgpu.errors import DiffgpuError
from diffgpu.runtime.args import arg_type, is_device_array
from diffgpu.types import ArrayType, is_float


class GradcheckError(DiffgpuError, AssertionError):
    """A derivative that disagrees with finite differences (also an
    AssertionError, so that a failed check fails a test like an assert)."""


class _Problem:
    """The kernel, its float64 arguments and which of them are X and Y."""

    def __init__(self, launcher, activities):
        self.launcher = _launcher_of(launcher, "reverse")
        kernel = self.launcher.kernel
        kinds, primals, _ = split_activities(kernel, activities, "reverse")
        self.names, self.kinds = kernel.arg_names, kinds
        self.xp = np
        if any(is_device_array(p) for p in primals):
            from diffgpu.runtime.gpu import cupy_module
            self.xp = cupy_module()
        self.base = []  # float64 (for floats) copies of the primals
        for i, (k, p) in enumerate(zip(kinds, primals)):
            t, _ = arg_type(p, self.names[i])
            if isinstance(t, ArrayType):
                dtype = np.float64 if is_float(t) else p.dtype
                self.base.append(self.xp.array(p, dtype=dtype, copy=True))
            else:
                self.base.append(float(p) if is_float(t) else p)
        self.primals = primals  # the user's (16-bit arrays: gradcheck_half.py)
        self.dup = [i for i, k in enumerate(kinds) if k in ("dup", "dupnoneed")]
        self.active = [i for i, k in enumerate(kinds) if k == "active"]
        self.inputs = self.dup + self.active  # X, in this order

    # state vectors: one flat float64 numpy vector per argument in X -------
    def sizes(self, which):
        return [int(np.prod(self.base[i].shape)) if i in self.dup else 1 for i in which]

    def random(self, rng, which):
        return [rng.standard_normal(self.base[i].shape) if i in self.dup
                else float(rng.standard_normal()) for i in which]

    def scales(self):
        """max(1, |x|) for each element x of X: finite-difference steps are
        eps times these (relative for large inputs)."""
        return [np.maximum(1.0, np.abs(_host(self.base[i]))) if i in self.dup
                else max(1.0, abs(self.base[i])) for i in self.inputs]

    def args(self, delta=None, scale=0.0):
        """Fresh copies of all arguments, X moved by scale * delta."""
        out = [self.xp.array(b, copy=True) if _is_array(b) else b for b in self.base]
        if delta is not None:
            for i, d in zip(self.inputs, delta):
                if i in self.dup:
                    out[i] += self.xp.asarray(scale * d)
                else:
                    out[i] += scale * d
        return out

    def run(self, args):
        self.launcher(*args)
        return [_host(args[i]) for i in self.dup]

    def fd_jvp(self, v, step):
        """J V by central differences, X moved by +-step * V."""
        plus = self.run(self.args(v, step))
        minus = self.run(self.args(v, -step))
        return [(p - m) / (2 * step) for p, m in zip(plus, minus)]

    def vjp(self, d):
        """J^T D: per input in X (dup shadows after reverse, active grads)."""
        args, acts = self.args(), []
        shadows = {}
        for i, a in enumerate(args):
            if i in self.dup:
                shadows[i] = self.xp.asarray(d[self.dup.index(i)].copy())
                cls = DuplicatedNoNeed if self.kinds[i] == "dupnoneed" else Duplicated
                acts.append(cls(a, shadows[i]))
            elif i in self.active:
                acts.append(Active(a))
            else:
                acts.append(Const(a))
        grads = autodiff(self.launcher, *acts)
        return [_host(shadows[i]) for i in self.dup] + [float(g) for g in grads]

    def jvp(self, v):
        """J V by forward mode (Active scalars become Duplicated(x, v))."""
        args, acts, shadows = self.args(), [], {}
        for i, a in enumerate(args):
            if i in self.dup:
                shadows[i] = self.xp.asarray(v[self.inputs.index(i)].copy())
                cls = DuplicatedNoNeed if self.kinds[i] == "dupnoneed" else Duplicated
                acts.append(cls(a, shadows[i]))
            elif i in self.active:
                acts.append(Duplicated(a, float(v[self.inputs.index(i)])))
            else:
                acts.append(Const(a))
        fwddiff(self.launcher, *acts)
        return [_host(shadows[i]) for i in self.dup]

    def label(self, which, k: int, flat: int) -> str:
        i = which[k]
        if i in self.dup:
            idx = np.unravel_index(flat, self.base[i].shape)
            return f"{self.names[i]}[{', '.join(str(int(j)) for j in idx)}]"
        return self.names[i]


def _is_array(x) -> bool:
    return isinstance(x, np.ndarray) or is_device_array(x)


def _host(x):
    return np.array(x if isinstance(x, np.ndarray) else x.get(), dtype=np.float64)


def _dot(a, b) -> float:
    return float(sum(np.vdot(np.asarray(x, np.float64).ravel(), np.asarray(y, np.float64).ravel())
                     for x, y in zip(a, b)))


def _close(got, want, atol, rtol):
    return abs(got - want) <= atol + rtol * abs(want)


@user_facing
def gradcheck(launcher, *activities, eps: float = 1e-6, atol: float = 1e-5,
              rtol: float = 1e-4, seed: int = 0, max_elements: int = 64) -> bool:
    """Check reverse and forward mode of `launcher` against finite differences.

    Takes `kernel[grid, block]` and one activity per parameter (at least one
    Duplicated float array; float64 recommended). Compares the full Jacobian
    when inputs and outputs have at most `max_elements` elements, and random
    directions (seeded by `seed`) always, with central differences that move
    each input element x by `eps * max(1, |x|)`, and tolerances `atol`/`rtol`.
    Returns True; raises GradcheckError naming what disagrees."""
    p = _Problem(launcher, activities)
    if not p.dup:
        raise GradcheckError("gradcheck needs at least one Duplicated float array "
                             "(the kernel's outputs)")
    n_in, n_out = sum(p.sizes(p.inputs)), sum(p.sizes(p.dup))
    if n_in <= max_elements and n_out <= max_elements:
        _full_jacobian(p, eps, atol, rtol)  # first: its errors name elements
    rng = np.random.default_rng(seed)
    # the direction scaled by max(1, |x|): each element moves by eps * max(1, |x|) * r
    v = [r * s for r, s in zip(p.random(rng, p.inputs), p.scales())]
    d = [rng.standard_normal(p.base[i].shape) for i in p.dup]

    # forward mode: J V element by element
    _compare(p, p.jvp(v), p.fd_jvp(v, eps), "forward mode J V", None, atol, rtol)

    # reverse mode: <D, J V> == <J^T D, V>
    lhs, rhs = _dot(d, p.fd_jvp(v, eps)), _dot(p.vjp(d), v)
    if not _close(rhs, lhs, atol, rtol):
        raise GradcheckError(f"reverse mode of {p.launcher.kernel.name}: <J^T D, V> = {rhs!r} "
                             f"but finite differences give <D, J V> = {lhs!r} "
                             f"(difference {abs(rhs - lhs):.3g})")
    # float16 / bfloat16 arrays: their own program against the float64 one checked above
    check_half(p, p.primals, rng, GradcheckError)
    return True


def _compare(p, got, want, what, column, atol, rtol) -> None:
    worst = None
    for k, (g, w) in enumerate(zip(got, want)):
        g, w = np.ravel(g), np.ravel(w)
        err = np.abs(g - w) - (atol + rtol * np.abs(w))
        j = int(np.argmax(err)) if err.size else 0
        if err.size and err[j] > 0 and (worst is None or err[j] > worst[0]):
            worst = (err[j], k, j, float(g[j]), float(w[j]))
    if worst is not None:
        _, k, j, g, w = worst
        wrt = f" / d{column}" if column else ""
        raise GradcheckError(f"{what} of {p.launcher.kernel.name}: worst element "
                             f"d{p.label(p.dup, k, j)}{wrt} = {g!r}, finite differences "
                             f"give {w!r} (|difference| {abs(g - w):.3g}, atol={atol}, "
                             f"rtol={rtol})")


def _unit(p, which, k, j):
    out = []
    for kk, i in enumerate(which):
        if i in p.dup:
            e = np.zeros(p.base[i].shape)
            if kk == k:
                e.flat[j] = 1.0
            out.append(e)
        else:
            out.append(1.0 if kk == k else 0.0)
    return out


def _full_jacobian(p, eps, atol, rtol) -> None:
    """Every element of J by finite differences, reverse and forward mode."""
    cols = []  # FD columns: per input element, list of output arrays
    for k, (size, scale) in enumerate(zip(p.sizes(p.inputs), p.scales())):
        for j in range(size):
            e = _unit(p, p.inputs, k, j)
            col = p.fd_jvp(e, eps * float(np.ravel(scale)[j]))
            cols.append((k, j, col))
            _compare(p, p.jvp(e), col, "forward mode", p.label(p.inputs, k, j), atol, rtol)
    for ko, size in enumerate(p.sizes(p.dup)):
        for jo in range(size):
            row = p.vjp(_unit(p, p.dup, ko, jo))
            for (k, j, col) in cols:
                got = float(np.ravel(row[k])[j])
                want = float(np.ravel(col[ko])[jo])
                if not _close(got, want, atol, rtol):
                    raise GradcheckError(
                        f"reverse mode of {p.launcher.kernel.name}: "
                        f"d{p.label(p.dup, ko, jo)} / d{p.label(p.inputs, k, j)} = {got!r}, "
                        f"finite differences give {want!r} (|difference| "
                        f"{abs(got - want):.3g}, atol={atol}, rtol={rtol})")

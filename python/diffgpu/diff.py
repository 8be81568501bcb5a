"""Host-level differentiation: `dg.autodiff(kernel[grid, block], *activities)`.

    dg.autodiff(f[1, 1], dg.Duplicated(A, dA))          # -> () ; dA <- J^T dA
    gx, = dg.autodiff(g[n, 256], dg.Active(x), dg.Duplicated(Y, dY))
    dg.fwddiff(f[1, 1], dg.Duplicated(A, dA))           # dA <- J dA

The frontend builds a wrapper kernel (`frontend.build_diff_module`) taking,
for each argument, its primal then its shadow (dup/dupnoneed), then in
reverse mode one 1-element array per `Active` scalar into which the gradient
is atomically summed. It is compiled and cached like any kernel; these
functions validate the activities (before anything runs), allocate the
gradient slots on the arrays' device and launch. Inside kernels the same
names are builtins the frontend compiles (tag `__diffgpu_builtin__`).
"""
from __future__ import annotations

import numpy as np

from diffgpu.activities import Activity, Const, Duplicated
from diffgpu.api import user_facing
from diffgpu.errors import LaunchError
from diffgpu.runtime.args import arg_type, describe_arg, infer_signature, is_device_array
from diffgpu.types import ScalarType, is_float

#: slots of an Active scalar's gradient buffer: the reverse kernel's block b
#: adds its share at slot b % ACTIVE_SLOTS (frontend/diff_lower.py), so the
#: blocks' adds spread over that many addresses instead of queueing on one;
#: the gradient is their sum (docs/atomics.md)
ACTIVE_SLOTS = 256


@user_facing
def autodiff(launcher, *activities):
    """Reverse mode of `kernel[grid, block]` on the host.

    Takes the launcher and one activity per kernel parameter (Const,
    Duplicated, DuplicatedNoNeed, Active; plain values are Const). Shadows D
    become J^T D: read-only inputs' shadows accumulate, a written array's
    adjoint is consumed. Returns the gradients of the `Active` scalars, in
    order (an empty tuple if none). LaunchError before anything runs on bad
    activities."""
    return _diff_launch("reverse", launcher, activities)


@user_facing
def fwddiff(launcher, *activities):
    """Forward mode of `kernel[grid, block]` on the host.

    Takes the launcher and one activity per kernel parameter; shadows V (the
    tangents of the initial values) become J V (of the final values), and the
    primal results are written to the arrays. Returns None."""
    _diff_launch("forward", launcher, activities)


autodiff.__diffgpu_builtin__ = "autodiff"
fwddiff.__diffgpu_builtin__ = "fwddiff"


def _launcher_of(launcher, mode: str):
    from diffgpu.api import Definition, Launcher

    name = "autodiff" if mode == "reverse" else "fwddiff"
    if isinstance(launcher, Launcher):
        return launcher
    if isinstance(launcher, Definition):
        raise LaunchError(f"dg.{name} on the host takes a launch configuration: "
                          f"dg.{name}({launcher.name}[grid, block], ...)")
    raise LaunchError(f"dg.{name} takes kernel[grid, block] as its first argument, "
                      f"got {type(launcher).__name__}")


def _same_memory(a, b) -> bool:
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return np.shares_memory(a, b)
    if is_device_array(a) and is_device_array(b):
        return (a.__cuda_array_interface__["data"][0]
                == b.__cuda_array_interface__["data"][0])
    return False


def _shape(x) -> tuple:
    if isinstance(x, np.ndarray):
        return x.shape
    return tuple(x.__cuda_array_interface__["shape"])


def split_activities(kernel, activities, mode: str):
    """(kinds, primals, shadows) after checking every activity; LaunchError
    (nothing has run) on a mismatch."""
    names = kernel.arg_names
    if len(activities) != len(names):
        raise LaunchError(f"{kernel.name}() takes {len(names)} argument"
                          f"{'s' if len(names) != 1 else ''} ({', '.join(names)}), "
                          f"got {len(activities)} activities")
    kinds, primals, shadows = [], [], []
    for i, a in enumerate(activities):
        where = describe_arg(i, names)
        if isinstance(a, Activity):
            kind, value, shadow = a.kind, a.value, a.shadow
        else:
            kind, value, shadow = Const.kind, a, None  # plain arguments are Const
        if isinstance(value, Activity):
            raise LaunchError(f"{where}: nested activity {a!r}")
        t, _ = arg_type(value, where)
        if kind == "active":
            if mode == "forward":
                raise LaunchError(f"{where}: Active is reverse mode only; in dg.fwddiff "
                                  "pass Duplicated(x, dx) with a scalar tangent dx")
            if not isinstance(t, ScalarType):
                raise LaunchError(f"{where}: Active is for scalars; wrap arrays in "
                                  "Duplicated(A, dA)")
            if not is_float(t):
                raise LaunchError(f"{where}: Active needs a float scalar, got {t}")
        elif isinstance(a, Duplicated):
            _check_shadow(t, value, shadow, where, mode)
        kinds.append(kind)
        primals.append(value)
        shadows.append(shadow if isinstance(a, Duplicated) else None)
    return kinds, primals, shadows


def _check_shadow(t, value, shadow, where: str, mode: str) -> None:
    kind = "adjoint" if mode == "reverse" else "tangent"
    if not is_float(t):
        raise LaunchError(f"{where}: Duplicated needs float data, got {t}; "
                          "integer arguments are always Const")
    if isinstance(t, ScalarType):
        if mode == "reverse":
            raise LaunchError(f"{where}: a scalar is passed by value; in dg.autodiff "
                              "use Active(x) to get its gradient")
        st, _ = arg_type(shadow, f"{where} (shadow)")
        if st != t:
            raise LaunchError(f"{where}: tangent of type {st} for a {t} scalar")
        return
    st, _ = arg_type(shadow, f"{where} (shadow)")
    if st != t:
        raise LaunchError(f"{where}: the {kind} has type {st}, the array {t}; "
                          "they must match")
    if is_device_array(value) != is_device_array(shadow):
        raise LaunchError(f"{where}: the array and its {kind} live on different "
                          "devices (numpy vs CUDA)")
    if _shape(value) != _shape(shadow):
        raise LaunchError(f"{where}: the {kind} has shape {_shape(shadow)}, the array "
                          f"{_shape(value)}; they must match")
    if _same_memory(value, shadow):
        raise LaunchError(f"{where}: the {kind} shares memory with its array; "
                          "pass a separate buffer")


def _diff_launch(mode: str, launcher, activities):
    from diffgpu.launch import facts_for, flat_types, get_program, run_program, target_for

    launcher = _launcher_of(launcher, mode)
    kernel = launcher.kernel
    kinds, primals, shadows = split_activities(kernel, activities, mode)
    flat = []
    for p, s in zip(primals, shadows):
        flat.append(p)
        if s is not None:
            flat.append(s)
    sig = infer_signature(flat, None, kernel.name)  # device agreement of everything
    types = tuple(arg_type(p, describe_arg(i, kernel.arg_names))[0]
                  for i, p in enumerate(primals))
    target = target_for(sig)
    grads = []
    if mode == "reverse":
        for t, k in zip(types, kinds):
            if k == "active":
                grads.append(_zeros(ACTIVE_SLOTS, t.dtype, sig))
    diff = (mode, tuple(kinds))
    facts = facts_for(flat + grads, flat_types(types, diff), target, launcher.grid,
                      launcher.block)  # specialised for the launch (runtime/specialize.py)
    program = get_program(kernel, types, target, diff=diff, facts=facts)
    run_program(program, flat + grads, sig, launcher.grid, launcher.block)
    if mode == "reverse":
        return tuple(_scalar(g) for g in grads)
    return None


def _zeros(n: int, dtype: str, sig):
    if sig.device == "host":
        return np.zeros(n, dtype)
    from diffgpu.runtime.gpu import cupy_module
    cupy = cupy_module()
    with cupy.cuda.Device(sig.gpu_id or 0):
        return cupy.zeros(n, dtype)


def _scalar(arr):
    """An Active scalar's gradient: the sum of its slots (in float64),
    rounded to the scalar's type. On the host a numpy scalar; on a GPU a
    0-d device array summed there (buffers.slot_sum), so the call returns
    without waiting for the kernel, as `dg.vjp` does (`float(g)` waits)."""
    if isinstance(arr, np.ndarray):
        return arr.dtype.type(arr.sum(dtype=np.float64))
    from diffgpu.buffers import slot_sum
    return slot_sum(arr)


__all__ = ["autodiff", "fwddiff", "split_activities"]

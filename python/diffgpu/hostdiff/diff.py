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

A 16-bit array's shadow (float16, bfloat16) is, in reverse mode, a float32
copy the kernel accumulates into (kind `dup32`: float32 adds and atomics),
rounded back into the caller's shadow after the launch (one rounding per
element; docs/language.md, 16-bit floats).

A checked call becomes a `replay.Recipe`, kept per call key (`_call_key`:
mode, kinds, the launch key of primals and shadows). A repeat with an equal
key skips the checks, facts and program lookup and relaunches with the
kept packed arguments; only the Active scalars' slot arrays are new
(zeroed) each call:

| call            | checks | facts, program | packing              | slots |
|-----------------|--------|----------------|----------------------|-------|
| first of a key  | yes    | yes            | yes                  | new   |
| second          | no     | kept           | yes, kept            | new   |
| later           | no     | kept           | kept, slot pointers put in | new |
"""
from __future__ import annotations

import numpy as np

from diffgpu.activities import Active, Activity, Const, Duplicated, DuplicatedNoNeed
from diffgpu.errors import user_facing
from diffgpu.errors import LaunchError
from diffgpu.hostdiff.buffers import ACTIVE_SLOTS  # noqa: F401  (kept importable here)
from diffgpu.hostdiff.buffers import is_half
from diffgpu.runtime import fastpath
from diffgpu.runtime.args import (arg_type, cuda_interface, describe_arg, infer_signature,
                                  is_device_array)
from diffgpu.types import ScalarType, is_float



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
    name = "autodiff" if mode == "reverse" else "fwddiff"
    if getattr(type(launcher), "__diffgpu_launcher__", False):  # api.Launcher
        return launcher
    if getattr(type(launcher), "__diffgpu_definition__", False):  # api.Definition
        raise LaunchError(f"dg.{name} on the host takes a launch configuration: "
                          f"dg.{name}({launcher.name}[grid, block], ...)")
    raise LaunchError(f"dg.{name} takes kernel[grid, block] as its first argument, "
                      f"got {type(launcher).__name__}")


def _same_memory(a, b) -> bool:
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return np.shares_memory(a, b)
    if is_device_array(a) and is_device_array(b):
        return cuda_interface(a)["data"][0] == cuda_interface(b)["data"][0]
    return False


def _shape(x) -> tuple:
    if isinstance(x, np.ndarray):
        return x.shape
    return tuple(cuda_interface(x)["shape"])  # (torch tensors: their attributes)


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
    """Replay the recipe kept for this call's key (`_call_key`), or check
    the call (`split_activities`, the signature) and run it as a recipe
    (replay.py), kept for the next call with that key."""
    from diffgpu.hostdiff import replay
    from diffgpu.driver.launch import STATS

    key = kflat = None
    if getattr(type(launcher), "__diffgpu_launcher__", False):
        key, kflat = _call_key(mode, launcher, activities)
        flat = kflat
        recipe = replay.lookup(launcher.kernel, key) if key is not None else None
        if recipe is not None:
            out = recipe.run(flat, _NO_SEEDS, first=False)
            if out is not None:
                STATS["autodiff_reuse"] += 1
                return tuple(out.values()) if mode == "reverse" else None
        # the same layouts and aliasing elsewhere in memory: the recipe kept for
        # them, every pointer put in (replay.Recipe.run_moved)
        mkey = _moved_key(key, flat)
        recipe = replay.lookup_moved(launcher.kernel, mkey)
        if recipe is not None:
            out, fit = recipe.run_moved(flat, _NO_SEEDS)
            if fit:  # these pointers again: a plain replay of their own key
                replay.keep(launcher.kernel, key, recipe.for_key(), flat, _NO_SEEDS)
            STATS["autodiff_moved"] += 1
            return tuple(out.values()) if mode == "reverse" else None
    launcher = _launcher_of(launcher, mode)
    kernel = launcher.kernel
    kinds, primals, shadows = split_activities(kernel, activities, mode)
    flat, wide = [], []
    for k, (p, s) in enumerate(zip(primals, shadows)):
        flat.append(p)
        if s is not None:
            if mode == "reverse" and not isinstance(arg_type(p, "")[0], ScalarType) \
                    and is_half(s):  # a float32 scratch shadow (replay.diff_recipe)
                kinds[k] = "dup32"
                wide.append(len(flat))
            flat.append(s)
    sig = infer_signature(flat, None, kernel.name)  # device agreement of everything
    types = tuple(arg_type(p, describe_arg(i, kernel.arg_names))[0]
                  for i, p in enumerate(primals))
    scope = next((i for i, v in enumerate(flat)
                  if isinstance(v, np.ndarray) or is_device_array(v)), None)
    from diffgpu.hostdiff.buffers import slot_sum
    summed = _scalar if sig.device == "host" else slot_sum  # no test per call
    recipe = replay.diff_recipe(launcher, mode, kinds, types, sig, len(flat), scope, summed,
                                wide)
    out = recipe.run(flat, _NO_SEEDS, first=True)
    replay.keep(kernel, key, recipe, flat, _NO_SEEDS, _moved_key(key, kflat))
    STATS["autodiff_plan"] += 1
    return tuple(out.values()) if mode == "reverse" else None


_NO_SEEDS: dict = {}
_SHADOWED = (Duplicated, DuplicatedNoNeed)
_PLAIN = (Active, Const)


def _call_key(mode: str, launcher, activities):
    """(key, the flat values: primals and shadows) of a call, or (None,
    None) when no key can be formed (an activity or value type the launch
    key does not know). The key is (mode, the kinds, the launch key of the
    flat values: grid, block, per array type, dtype, pointer, shape,
    strides, writeable / GPU, per scalar type and value, the race-check
    switch; runtime/fastpath.py); `split_activities`, the signature, the
    facts and the program read only these."""
    flat, kinds = [], []
    for a in activities:
        t = type(a)
        if t in _SHADOWED:
            flat += (a.value, a.shadow)
            kinds.append(t.kind)
        elif t in _PLAIN:
            flat.append(a.value)
            kinds.append(t.kind)
        elif isinstance(a, Activity):
            return None, None  # a subclass: checked every call
        else:
            flat.append(a)
            kinds.append("const")
    key = fastpath.launch_key(flat, launcher.grid, launcher.block)
    if key is None:
        return None, None
    return (mode, tuple(kinds), key), flat


def _moved_key(key, flat):
    """`key` (of the flat values `flat`) with the launch key's pointers
    replaced by alias classes (fastpath.moved_key: the checks read nothing
    else of them), or None."""
    if key is None:
        return None
    mode, kinds, launch = key
    moved = fastpath.moved_key(((flat, launch),))
    return None if moved is None else (mode, kinds, moved)


def _scalar(arr):
    """An Active scalar's gradient: the sum of its slots (in float64),
    rounded to the scalar's type. On the host a numpy scalar; on a GPU a
    0-d device array summed there (buffers.slot_sum), so the call returns
    without waiting for the kernel, as `dg.vjp` does (`float(g)` waits)."""
    if isinstance(arr, np.ndarray):
        return arr.dtype.type(arr.sum(dtype=np.float64))
    from diffgpu.hostdiff.buffers import slot_sum
    return slot_sum(arr)


__all__ = ["autodiff", "fwddiff", "split_activities"]

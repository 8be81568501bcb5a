"""Functional gradients: `dg.vjp` and `dg.jvp` (host level), as in JAX.

    grads = dg.vjp(square[blocks, 256], y, x, cotangents={"y": ybar})
    grads["x"]                  # a new array: 2 * x * ybar; ybar untouched
    tans = dg.jvp(square[blocks, 256], y, x, tangents={"x": xdot})
    tans["y"]                   # a new array: 2 * x * xdot

Parameters are named as in the kernel. A read/write analysis of the kernel
(lowering/autodiff/functional/access.py, cached with the compiled kernels) sorts its float
array parameters into

| role     | the kernel...            | vjp                          | jvp                        |
|----------|--------------------------|------------------------------|----------------------------|
| input    | only reads it            | returns its gradient         | needs its tangent          |
| output   | only writes it           | needs its cotangent          | returns its tangent        |
| in-out   | reads and writes it      | needs the cotangent of its   | needs the tangent of its   |
|          | (also `dg.atomic_add`)   | final value, returns the     | initial value, returns the |
|          |                          | gradient of its initial one  | tangent of its final one   |

Float scalars are inputs (vjp returns a Python float, a 0-d device array on
a GPU: no wait for the kernel; jvp needs a scalar tangent); integer arrays
and scalars are not differentiated, nor are inputs held constant
(`dg.Const(x)`, or not named in `wrt=`: the derivative kernel gets them as
`const`). Looking up a parameter without a result raises
NoDerivativeError (a KeyError) saying why (replay.Derivatives). An array passed
for several parameters (the same memory, same layout) is one variable: its
role is the union, its cotangent or tangent is given once (under any of its
names) and its result appears under each name. Arrays that overlap without
being the same array are refused.

Cotangents and tangents are never modified. Primal outputs (and in-out
arrays) are written only with `outputs=True`; otherwise the caller's arrays
are left as they were. The results are new arrays on the arguments' device.

How the launch is planned (`plan.py`): the derivative kernel is the
host-level `dg.autodiff` / `dg.fwddiff` wrapper with activities chosen per
parameter; where the analysis proves that each element is written by one
thread once, the gradient is written instead of accumulated and the
cotangent is read instead of consumed, otherwise buffers are zero-filled
and copies are consumed (docs/functional.md). A call whose arguments and
seeds have the key of an earlier call (the same arrays, layouts, seeds,
geometry and `outputs`) replays that call's plan (`replay.py`): it only
allocates the fresh results and launches.
"""
from __future__ import annotations

import numpy as np

from diffgpu.activities import Activity, Const
from diffgpu.errors import user_facing
from diffgpu.errors import ArgumentTypeError, LaunchError
from diffgpu.runtime.args import describe_arg


def _launcher(launcher, name: str):
    from diffgpu.api import Definition, Launcher

    if isinstance(launcher, Launcher):
        return launcher
    if isinstance(launcher, Definition):
        raise LaunchError(f"dg.{name} takes a launch configuration: "
                          f"dg.{name}({launcher.name}[grid, block], ...)")
    raise LaunchError(f"dg.{name} takes kernel[grid, block] as its first argument, "
                      f"got {type(launcher).__name__}")


@user_facing
def vjp(launcher, *args, cotangents=None, outputs=False, wrt=None):
    """Reverse mode: {parameter name: gradient} for the kernel's float inputs
    and in-out arrays (new arrays) and float scalars (Python floats; 0-d
    device arrays on a GPU), given the cotangent of every output and in-out
    array. `dg.Const(x)` holds an input constant (no gradient computed);
    `wrt=[names]` holds every float input and scalar it does not name and
    returns only the gradients it names."""
    launcher = _launcher(launcher, "vjp")
    return _call("vjp", launcher, args, _named(cotangents, "cotangents", "vjp"),
                 _flag(outputs, "vjp"), _wrt(wrt, "vjp"))


@user_facing
def jvp(launcher, *args, tangents=None, outputs=False, wrt=None):
    """Forward mode: {parameter name: tangent} for the kernel's output and
    in-out arrays (new arrays), given the tangent of every float input and
    in-out array and of every float scalar, but those held constant
    (`dg.Const(x)`, or not named in `wrt=[names]`)."""
    launcher = _launcher(launcher, "jvp")
    return _call("jvp", launcher, args, _named(tangents, "tangents", "jvp"),
                 _flag(outputs, "jvp"), _wrt(wrt, "jvp"))


def _call(fn: str, launcher, args, seeds: dict, outputs: bool, wrt) -> dict:
    """Replay the plan kept for this call's key (replay.py), or plan it:
    checks, roles, buffers, program (plan.py), kept for the next call."""
    from diffgpu.hostdiff import replay
    from diffgpu.runtime.fastpath import STATS, launch_key

    kernel = launcher.kernel
    args, consts = _plain(args, kernel, fn)
    names = tuple(sorted(seeds))
    given = [seeds[n] for n in names]
    key = launch_key(args, launcher.grid, launcher.block)
    skey = launch_key(given, (), ()) if key is not None else None
    key = (fn, outputs, names, key, skey, (consts, wrt)) if skey is not None else None
    recipe = replay.lookup(kernel, key) if key is not None else None
    if recipe is not None:
        out = recipe.run(args, seeds, first=False)
        if out is not None:
            STATS["vjp_reuse"] += 1
            return out
    # the same layouts and aliasing elsewhere in memory (a chain of calls on
    # new arrays): the plan kept for them, the pointers put in (replay.py)
    mkey = replay.moved_key(key, args, given)
    recipe = replay.lookup_moved(kernel, mkey)
    if recipe is not None:
        out, fit = recipe.run_moved(args, seeds)
        if fit:  # these pointers again: a plain replay of their own key
            replay.keep(kernel, key, recipe.for_key(), args, seeds)
        STATS["vjp_moved"] += 1
        return out
    from diffgpu.hostdiff.plan import Call

    call = Call(launcher, args, fn, consts, wrt)
    recipe = call.vjp(seeds, outputs) if fn == "vjp" else call.jvp(seeds, outputs)
    out = recipe.run(args, seeds, first=True)
    replay.keep(kernel, key, recipe, args, seeds, mkey)
    STATS["vjp_plan"] += 1
    return out


def _plain(args, kernel, fn: str):
    """(the argument values, the positions passed as dg.Const): dg.Const(x)
    holds x constant; any other activity is dg.autodiff's."""
    for a in args:
        if isinstance(a, Activity):
            break
    else:
        return args, ()
    for i, a in enumerate(args):
        if isinstance(a, Activity) and type(a) is not Const:
            raise LaunchError(f"dg.{fn}: {describe_arg(i, kernel.arg_names)} is "
                              f"{type(a).__name__}(...); dg.{fn} takes plain arguments and "
                              "dg.Const(x) for an input held constant (Duplicated and "
                              "Active are for dg.autodiff / dg.fwddiff)")
    consts = tuple(i for i, a in enumerate(args) if isinstance(a, Const))
    return tuple(a.value if isinstance(a, Const) else a for a in args), consts


def _named(d, what: str, fn: str) -> dict:
    if d is None:
        return {}
    if not isinstance(d, dict) or not all(isinstance(k, str) for k in d):
        raise ArgumentTypeError(f"dg.{fn}: {what}= takes a dict {{parameter name: array}}, "
                                f"got {type(d).__name__}")
    return dict(d)


def _flag(v, fn: str) -> bool:
    if not isinstance(v, (bool, np.bool_)):
        raise ArgumentTypeError(f"dg.{fn}: outputs= takes True or False, got "
                                f"{type(v).__name__} {v!r}")
    return bool(v)


def _wrt(wrt, fn: str):
    """None, or the sorted tuple of the names `wrt=` gives (plan.Call checks them)."""
    if wrt is None:
        return None
    if isinstance(wrt, str) or not isinstance(wrt, (list, tuple, set, frozenset)) \
            or not all(isinstance(n, str) for n in wrt):
        raise ArgumentTypeError(f"dg.{fn}: wrt= takes a list of parameter names "
                                f"(wrt=['x']), got {type(wrt).__name__} {wrt!r}")
    return tuple(sorted(set(wrt)))


@user_facing
def access(launcher, *args) -> dict:
    """{parameter name: "input" | "output" | "inout" | "scalar" | "const"}:
    the roles the analysis gives the kernel's parameters for these args
    (an argument passed as dg.Const(x) is "const")."""
    from diffgpu.hostdiff.plan import Call

    launcher = _launcher(launcher, "access")
    args, consts = _plain(args, launcher.kernel, "access")
    call = Call(launcher, args, "access", consts)
    return {call.names[i]: call.role[i] for i in range(len(call.names))}


__all__ = ["vjp", "jvp", "access"]

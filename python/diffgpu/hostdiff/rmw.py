"""`dg.vjp` / `dg.jvp` of launches using `dg.atomic_max` / `dg.atomic_min`
(docs/collectives.md, "Atomic max and min").

Which contribution to `A[i]` won is known only once every thread of the
grid has done its atomic, so the derivative program runs after a plain
launch of the kernel has produced the final values:

1. `rmw_kinds` (at planning): an array parameter every use of which in the
   kernel's own body is a `diffgpu.atomic_rmw` of one kind, max or min,
   whose old value is unused, is an *rmw array*: access fact `"rmw"`.
2. `Finals.__call__` (each call, before the derivative launch): the kernel
   runs on fresh copies of every array it writes, integer arrays included
   (read-only arrays are passed as they are), so nothing the caller holds
   changes; the copy of
   each rmw array then holds its final values F. Where F equals the
   original value the original won (it wins ties: memory unchanged), and F
   becomes NaN there: no contribution compares equal to NaN.
3. The derivative program takes that array as the rmw array's primal
   (activity `"rmw"`, dialects/names.py RMW_FINAL). Its forward part's
   atomics leave it unchanged (max(F, v) = F; NaN stays NaN), and the rule
   of lowering/autodiff/rules/collectives.py compares each contribution
   with F: the one that equals it and exchanges the shadow element first
   takes the cotangent (reverse) or writes its tangent (forward).
"""
from __future__ import annotations

import numpy as np

from diffgpu.hostdiff import buffers as M

#: the activity of an rmw array (dialects/names.py RMW_FINAL)
KIND = "rmw"


def rmw_kinds(text: str) -> list:
    """Per parameter of the kernel of frontend module `text`: "max" / "min"
    when it is an rmw array (see the module docstring), else None."""
    from diffgpu._mlir import ir
    from diffgpu.dialects import names as N
    from diffgpu.lowering.common import session, targets

    with session.context(), ir.Location.unknown():
        module = ir.Module.parse(text)
        kernels = [op for op in module.body.operations if op.operation.name == "func.func"
                   and targets.KERNEL_ATTR in op.attributes]
        if len(kernels) != 1:
            raise ValueError(f"expected one kernel in the module, found {len(kernels)}")
        out = []
        for arg in kernels[0].regions[0].blocks[0].arguments:
            kinds, ok = set(), True
            for use in arg.uses:
                op = use.owner.operation if hasattr(use.owner, "operation") else use.owner
                if op.name == "memref.dim":
                    continue
                if (op.name != N.ATOMIC_RMW or use.operand_number != 0
                        or len(list(op.results[0].uses))):
                    ok = False
                    break
                kinds.add(ir.StringAttr(op.attributes["kind"]).value)
            out.append(next(iter(kinds)) if ok and len(kinds) == 1
                       and kinds <= {"max", "min"} else None)
        return out


class Finals:
    """The step before the derivative launch (replay.Recipe.pre): `groups`,
    the alias groups (parameter positions) of the arrays the kernel writes,
    integer arrays included; `rmw`, per rmw
    array (its position, its buffer's index in the recipe's fresh buffers,
    made as a copy of the argument)."""

    __slots__ = ("launcher", "groups", "rmw", "tangents")

    def __init__(self, launcher, groups, rmw, tangents=()):
        self.launcher = launcher
        self.groups = tuple(tuple(g) for g in groups)
        self.rmw = tuple(rmw)
        #: forward mode: per rmw array its tangent's buffer index, NaN-marked
        #: where a contribution wins (the first to exchange it keeps it)
        self.tangents = tuple(tangents)

    def __call__(self, args, bufs) -> None:
        run = list(args)
        mine = {i: b for i, b in self.rmw}
        for g in self.groups:
            own = next((mine[i] for i in g if i in mine), None)
            c = bufs[own] if own is not None else M.copy(args[g[0]])
            for i in g:
                run[i] = c
        self.launcher(*run)
        for i, b in self.rmw:
            final = bufs[b]
            xp = M.xp_of(final)
            final[final == xp.asarray(args[i])] = np.nan  # the original value won
        for (_i, b), t in zip(self.rmw, self.tangents):
            final = bufs[b]
            bufs[t][final == final] = np.nan  # not NaN: a contribution won


__all__ = ["Finals", "KIND", "rmw_kinds"]

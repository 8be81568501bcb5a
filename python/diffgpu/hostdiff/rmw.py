"""`dg.vjp` / `dg.jvp` of launches using `dg.atomic_max` / `dg.atomic_min`
(docs/collectives.md, "Atomic max and min").

Which contribution to `A[i]` won is known only once every thread of the
grid has done its atomic, so the derivative program runs after a plain
launch of the kernel has produced the final values:

1. `rmw_kinds` (lowering/autodiff/functional/rmw_access.py, at planning,
   cached with the access facts): an array parameter every use of which in
   the kernel's own body is a `diffgpu.atomic_rmw` of one kind, max or min,
   whose old value is unused, is an *rmw array*: access fact `"rmw"`.
2. `Finals.__call__` (each call, before the derivative launch): the kernel
   runs on fresh copies of every array it writes, integer arrays included
   (read-only arrays are passed as they are), so nothing the caller holds
   changes; the copy of each rmw array then holds its final values F. Where
   F equals the original value the original won (it wins ties: memory
   unchanged), and F becomes NaN there: no contribution compares equal to
   NaN. In forward mode the rmw array's tangent becomes NaN where F is not:
   the mark the first winning exchange finds.
3. The derivative program takes that array as the rmw array's primal
   (activity `"rmw"`, dialects/names.py RMW_FINAL). Its forward part drops
   the atomics (max(F, v) = F), and the rule of
   lowering/autodiff/rules/collectives.py compares each contribution with
   F: the one that equals it and exchanges the shadow element first takes
   the cotangent (reverse) or keeps its tangent there (forward).
"""
from __future__ import annotations

import numpy as np

from diffgpu.hostdiff import buffers as M

#: the activity of an rmw array (dialects/names.py RMW_FINAL)
KIND = "rmw"


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


__all__ = ["Finals", "KIND"]

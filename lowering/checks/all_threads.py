"""Ops that every thread of a block must reach, or none: which of them (or
which calls reaching them) sit under control flow that depends on the thread
id. Shared by `diffgpu-check-barriers` (barriers.py) and
`diffgpu-check-collectives` (collectives.py), which differ only in the ops
they look for, how they name them and the advice they give.

A device function is checked with the divergence of its arguments at each
call (lowering/facts/uniform.py).
"""
from __future__ import annotations

from collections.abc import Callable

from diffgpu.lowering.common import targets
from diffgpu.lowering.common.diagnostics import location_text
from diffgpu.lowering.common.ir_util import sym_name, top_ops, walk
from diffgpu.lowering.facts.uniform import Divergence

_WHY = {"branch": "under a condition that depends on the thread id (the branch at {})",
        "loop": "in a loop whose trip count depends on the thread id (the loop at {})"}


def divergent_reaches(module, ops: tuple, describe: Callable, advice: str) -> list:
    """(op, message) for each op named in `ops`, or call reaching one, that
    only some threads of a block may reach; `describe(op)` is how the user
    wrote the op (`dg.syncthreads()`, `dg.warp_sum`)."""
    if not walk(module, ops):
        return []  # most kernels: nothing to prove
    walker = _Walker(Divergence(module), ops, describe, advice)
    for k in top_ops(module, ("func.func",)):
        if targets.KERNEL_ATTR in k.attributes and k.regions[0].blocks:
            walker.check(k, None)
    return walker.out


class _Walker:
    def __init__(self, d, ops, describe, advice):
        self.d, self.ops, self.describe, self.advice = d, ops, describe, advice
        self.out: list = []
        self.seen: set = set()
        self.reaches: dict = {}

    def check(self, fn, flags) -> None:
        """Check `fn` with the arguments marked in `flags` divergent."""
        d = self.d
        key = (sym_name(fn), tuple(flags or ()))
        if key in self.seen:
            return
        self.seen.add(key)
        div = d.function(fn, flags)[0]
        for op in walk(fn, self.ops + ("func.call",)):
            fn2 = d.callee(op) if op.name == "func.call" else None
            if op.name == "func.call":
                found = self.first(fn2) if fn2 is not None else None
                if found is None:
                    continue
            why = self.why(op, div)
            if why is None:
                if fn2 is not None:
                    self.check(fn2, [o in div for o in op.operands])
            elif fn2 is None:
                self.out.append((op, f"{self.describe(op)} {why}: {self.advice}"))
            else:
                self.out.append((op, f"this call reaches {self.describe(found)} (at "
                                     f"{location_text(found.location)}) {why}: {self.advice}"))

    def why(self, op, div) -> str | None:
        """Why only some threads reach `op`: its outermost enclosing branch or
        loop that depends on the thread id, or None."""
        why = None
        parent = op.parent
        while parent is not None and parent.name != "func.func":
            kind = self.d.control(parent, div)
            if kind:
                why = _WHY[kind].format(location_text(parent.location))
            parent = parent.parent
        return why

    def first(self, fn, stack=()):
        """An op of `ops` that `fn` reaches (directly or through calls), or None."""
        name = sym_name(fn)
        if name in self.reaches:
            return self.reaches[name]
        if name in stack:
            return None
        found = None
        for op in walk(fn, self.ops + ("func.call",)):
            if op.name in self.ops:
                found = op
            elif self.d.callee(op) is not None:
                found = self.first(self.d.callee(op), stack + (name,))
            if found is not None:
                break
        self.reaches[name] = found
        return found

"""`diffgpu-check-barriers`: no barrier under thread-dependent control flow.

On a GPU every thread of a block must reach a `dg.syncthreads()`, or none:
a barrier that only some threads reach hangs the block or lets the others
run on past it (and read shared memory not yet written). This pass (after
`diffgpu-autodiff`, so derivatives are checked too) rejects, at the
barrier, every barrier that sits in

- an `scf.if` whose condition is divergent (lowering/facts/uniform.py: computed
  from the thread id), including the code after a `return` that only some
  threads take (the frontend puts it in the `else` of such an `scf.if`),
- an `scf.for` / `scf.while` whose trip count is divergent,

and every call, in such a region, of a function that reaches a barrier.
A device function is checked with the divergence of its arguments at each
call (`if t < 16: dg.syncthreads()` in a `@dg.func` called with
`dg.thread_id(0)`):

    %c = arith.cmpi slt, %t, %c16 : index      // %t: diffgpu.thread_id
    scf.if %c {
      "diffgpu.barrier"() : () -> ()
      // error: dg.syncthreads() under a condition that depends on the thread id ...
    }

Conditions this cannot prove divergent (a loaded value, `if x[t] > 0`) are
checked at run time by the race-checked host variant
(lowering/host/racecheck.py, docs/racecheck.md).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from diffgpu.dialects import names as N
from diffgpu.lowering.common import targets
from diffgpu.lowering.common.diagnostics import location_text
from diffgpu.lowering.common.ir_util import sym_name, top_ops, walk
from diffgpu.lowering.registry import ModulePass, register_pass
from diffgpu.lowering.facts.uniform import Divergence

_ADVICE = ("every thread of a block must reach a barrier, or none (on a GPU the block "
           "hangs or reads shared memory not yet written); keep the barrier where all "
           "threads pass and guard only the work around it")
_WHY = {"branch": "under a condition that depends on the thread id (the branch at {})",
        "loop": "in a loop whose trip count depends on the thread id (the loop at {})"}


def divergent_barriers(module) -> list:
    """(op, message) for each barrier, or call reaching one, that only some
    threads of a block may reach (module docstring)."""
    if not walk(module, (N.BARRIER,)):
        return []  # most kernels: nothing to prove
    d = Divergence(module)
    out: list = []
    seen: set = set()
    reaches: dict = {}
    for k in top_ops(module, ("func.func",)):
        if targets.KERNEL_ATTR in k.attributes and k.regions[0].blocks:
            _check(d, k, None, out, seen, reaches)
    return out


def _check(d, fn, flags, out, seen, reaches) -> None:
    """Check `fn` with the arguments marked in `flags` divergent."""
    key = (sym_name(fn), tuple(flags or ()))
    if key in seen:
        return
    seen.add(key)
    div = d.function(fn, flags)[0]
    for op in walk(fn, (N.BARRIER, "func.call")):
        fn2 = d.callee(op) if op.name == "func.call" else None
        if op.name == "func.call":
            barrier = _first_barrier(d, fn2, reaches) if fn2 is not None else None
            if barrier is None:
                continue
        why = _why(d, op, div)
        if why is None:
            if fn2 is not None:
                _check(d, fn2, [o in div for o in op.operands], out, seen, reaches)
        elif fn2 is None:
            out.append((op, f"dg.syncthreads() {why}: {_ADVICE}"))
        else:
            out.append((op, f"this call reaches dg.syncthreads() (at "
                            f"{location_text(barrier.location)}) {why}: {_ADVICE}"))


def _why(d, op, div) -> str | None:
    """Why only some threads reach `op`: its outermost enclosing branch or
    loop that depends on the thread id, or None."""
    why = None
    parent = op.parent
    while parent is not None and parent.name != "func.func":
        kind = d.control(parent, div)
        if kind:
            why = _WHY[kind].format(location_text(parent.location))
        parent = parent.parent
    return why


def _first_barrier(d, fn, reaches, stack=()):
    """A barrier `fn` reaches (directly or through calls), or None."""
    name = sym_name(fn)
    if name in reaches:
        return reaches[name]
    if name in stack:
        return None
    found = None
    for op in walk(fn, (N.BARRIER, "func.call")):
        if op.name == N.BARRIER:
            found = op
        elif d.callee(op) is not None:
            found = _first_barrier(d, d.callee(op), reaches, stack + (name,))
        if found is not None:
            break
    reaches[name] = found
    return found


@register_pass
@dataclass
class CheckBarriers(ModulePass):
    """Reject barriers that only some threads of a block reach (module docstring)."""

    name: ClassVar[str] = "diffgpu-check-barriers"
    summary: ClassVar[str] = ("reject dg.syncthreads() under a branch or loop that "
                              "depends on the thread id")

    def run(self, module) -> None:
        for op, message in divergent_barriers(module):
            self.error(op, message)

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
from diffgpu.lowering.checks.all_threads import divergent_reaches
from diffgpu.lowering.registry import ModulePass, register_pass

_ADVICE = ("every thread of a block must reach a barrier, or none (on a GPU the block "
           "hangs or reads shared memory not yet written); keep the barrier where all "
           "threads pass and guard only the work around it")


def divergent_barriers(module) -> list:
    """(op, message) for each barrier, or call reaching one, that only some
    threads of a block may reach (module docstring)."""
    return divergent_reaches(module, (N.BARRIER,), lambda op: "dg.syncthreads()", _ADVICE)


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

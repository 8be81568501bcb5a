"""`diffgpu-check-collectives`: no collective under thread-dependent control flow.

A warp or block collective (`dg.warp_sum`, `dg.block_scan`, `dg.shfl_xor`,
...; docs/collectives.md) combines the values of every thread of the warp or
block: each of them must reach it, or none. On the GPU a shuffle that some
lanes skip reads registers of lanes that are not there; on the CPU the
collective is a barrier. So this pass (after `diffgpu-autodiff`: the
collectives of derivatives are checked too) rejects, at the op, every
collective in an `scf.if` whose condition is divergent (computed from the
thread id: lowering/facts/uniform.py) or in a loop whose trip count is, and
every call in such a region of a function that reaches a collective; device
functions are checked with the divergence of their arguments at each call,
as `diffgpu-check-barriers` does for barriers.

    %c = arith.cmpi slt, %t, %c16 : index      // %t: diffgpu.thread_id
    scf.if %c {
      %s = "diffgpu.warp_reduce"(%v) {kind = "sum"} : (f32) -> f32
      // error: dg.warp_sum under a condition that depends on the thread id ...
    }

Conditions it cannot prove divergent (`if x[t] > 0`) are caught at run
time by the race-checked CPU variant, where a collective is a barrier.

The pass also records, per kernel, the collectives it reaches (directly,
through device-function calls, in its derivatives): `used_collectives`,
handed to the innermost `record_used()` of this thread. The compile driver
keeps them in the program (payload "collectives"), and the runtime refuses
a launch of such a kernel whose block's thread count is not a multiple of
the warp (runtime/launch_checks.py). Being the first check after
`diffgpu-autodiff` in both pipelines, it also hands the module to
lowering/facts/heap_tape.py `note` (the words of the derivatives' heap
tapes, payload "heap_tape").
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from diffgpu.dialects import names as N
from diffgpu.lowering.checks.all_threads import divergent_reaches
from diffgpu.lowering.common import targets
from diffgpu.lowering.common.ir_util import callee, sym_name, top_ops, walk
from diffgpu.lowering.common.recorder import Recorder
from diffgpu.lowering.registry import ModulePass, register_pass

_USED = Recorder()

COLLECTIVES = N.COLLECTIVES
_ADVICE = ("every thread of the warp/block must reach a collective, or none; call it where "
           "all threads pass (give the others a neutral value, e.g. 0 for a sum)")


def builtin_name(op) -> str:
    """How the user wrote `op`: dg.warp_sum, dg.shfl_xor, dg.block_scan, ..."""
    name = op.name
    attrs = op.attributes
    if name == N.SHUFFLE and "mode" in attrs:
        return f"dg.shfl_{attrs['mode'].value}"
    if name in (N.WARP_REDUCE, N.BLOCK_REDUCE) and "kind" in attrs:
        return f"dg.{'warp' if name == N.WARP_REDUCE else 'block'}_{attrs['kind'].value}"
    return "dg.block_scan" if name == N.BLOCK_SCAN else name


def divergent_collectives(module) -> list:
    """(op, message) for each collective, or call reaching one, that only
    some threads of a block may reach."""
    return divergent_reaches(module, COLLECTIVES, builtin_name, _ADVICE)


def used_collectives(module) -> dict:
    """kernel name -> sorted tuple of the collectives (as the user wrote
    them: `dg.warp_sum`, ...) it reaches, directly or through calls; kernels
    reaching none are left out."""
    funcs = {sym_name(f): f for f in top_ops(module, ("func.func",))}
    own = {n: {builtin_name(op) for op in walk(f, COLLECTIVES)} for n, f in funcs.items()}
    calls = {n: {callee(c) for c in walk(f, ("func.call",))} for n, f in funcs.items()}
    out = {}
    for name, f in funcs.items():
        if targets.KERNEL_ATTR not in f.attributes:
            continue
        found, seen, todo = set(), {name}, [name]
        while todo:
            n = todo.pop()
            found |= own.get(n, set())
            for c in calls.get(n, ()):
                if c in funcs and c not in seen:
                    seen.add(c)
                    todo.append(c)
        if found:
            out[name] = tuple(sorted(found))
    return out


def record_used():
    """Collect `used_collectives` of every module `diffgpu-check-collectives`
    checks inside (this thread) into the dict yielded."""
    return _USED.record()


@register_pass
@dataclass
class CheckCollectives(ModulePass):
    """Reject collectives that only some threads of a block reach (module docstring)."""

    name: ClassVar[str] = "diffgpu-check-collectives"
    summary: ClassVar[str] = ("reject warp/block collectives under a branch or loop that "
                              "depends on the thread id")

    def run(self, module) -> None:
        from diffgpu.lowering.facts import heap_tape
        heap_tape.note(module)  # the heap tapes' words, for the payload (facts/heap_tape.py)
        found = _USED.innermost()
        if found is not None and walk(module, COLLECTIVES):
            found.update(used_collectives(module))
        for op, message in divergent_collectives(module):
            self.error(op, message)

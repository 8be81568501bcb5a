"""The `diffgpu-autodiff` pass: reverse and forward mode.

Each `diffgpu.autodiff` op becomes a call to a generated function
`@__dg_rev_<callee>_<hash>` (forward sweep running the primal, then the
reverse sweep) whose arguments are the callee's primals, the shadows of its
`dup` arguments and the seed, and whose results are the gradients of its
`active` arguments; `diffgpu.fwddiff` becomes a call to `@__dg_fwd_...`
computing primal and tangents. Generated functions carry the target of the
op that asked for them.

    func.func @f(%A: memref<?xf32, ...>) { A[0] *= A[0] }
    %0 = "diffgpu.autodiff"(%A, %dA) {callee = @f, activity = ["dup"], ...}
  becomes
    func.call @__dg_rev_f_1a2b3c4d(%A, %dA)
    func.func @__dg_rev_f_1a2b3c4d(%A, %dA) attributes {diffgpu.target = <the op's>} {
      %a = memref.load %A[%c0]; %p = arith.mulf %a, %a; memref.store %p, %A[%c0]
      %d = memref.load %dA[%c0]; memref.store %zero, %dA[%c0]     // consume
      %g = arith.addf (arith.mulf %d, %a), (arith.mulf %d, %a)
      "diffgpu.atomic_add"(%dA, %g, %c0)
    }

Derivative rules: one table per dialect (rules_arith, rules_math,
rules_memref, rules_scf, rules_diffgpu, rules_func); the sweep: reverse.py;
the tape: tape.py (recomputation instead: remat.py; checkpoints of
runtime-length recurrences: checkpoint.py); activities: activity.py; forward mode: forward.py;
atomic elision (a plain shadow update where the index is provably one
thread's, e.g. A[global_id] in a whole launch): elision.py; the functional
kinds `cot` / `grad` of `dg.vjp`: functional/.

Higher order: a function holding derivatives generated earlier is
differentiated again after inlining them (inline.py); the tape words of the
inner derivative carry their derivatives through tapes of adjoints/tangents
(rules/tape.py), and its local slots get shadows (locals.py). An op that
touches an active value without a rule is an error; the ops that carry no
derivative are listed, each with its reason (the INACTIVE tables).

Layers inside: the core modules (build, context, tape, locals, elision,
remat, checkpoint, spec) import none of the others; rules/ and functional/ build on
them; the pass modules (activity, reverse, forward, generate, inline,
shared, unroll, stop_gradient and this one) on all three.

May import: lowering.facts, lowering.registry, lowering.common,
diffgpu.dialects and the foundation modules of diffgpu.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from diffgpu.dialects import names as N
from diffgpu.lowering.registry import ModulePass, register_pass


@register_pass
@dataclass
class Autodiff(ModulePass):
    """Replace diffgpu.autodiff / diffgpu.fwddiff by calls to generated
    derivative functions (see the module docstring for an example)."""

    name: ClassVar[str] = "diffgpu-autodiff"
    summary: ClassVar[str] = f"generate derivative functions for {N.AUTODIFF}/fwddiff"

    def run(self, module):
        from diffgpu.lowering.autodiff.functional.kinds import finish
        from diffgpu.lowering.autodiff.generate import Generator

        from diffgpu.lowering.autodiff.stop_gradient import erase_stop_gradients

        gen = Generator(self, module)
        gen.lower_all()
        finish(self, gen)
        erase_stop_gradients(module)

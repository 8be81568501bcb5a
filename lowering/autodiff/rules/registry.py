"""The rule registry: what autodiff knows about each op, found by op name.

One table per dialect (rules_arith, rules_math, rules_memref, rules_scf,
rules_diffgpu, rules_func, rules_collectives) feeds three maps, and an op is
in at most one:

- `STRUCTURED`: ops with memory effects or regions, one `partials.Rule`
  object each (activity, needs, reverse, tangent);
- `ELEMENTWISE`: ops with one float result, one partial per operand
  (partials.py); their activity is the default one;
- `INACTIVE`: ops that carry no derivative, with the reason.

Tape words of generated derivatives (`diffgpu.tape_push`/`tape_pop` tags,
rules/tape.py) have one rule of their own, whatever their op. An op in no
map is an error naming it (reverse.py, forward.py).

    rule_of(op)          -> the Rule of `op`, or None (elementwise, inactive)
"""
from __future__ import annotations

from diffgpu.dialects import names as N

from diffgpu.lowering.autodiff.rules import arith as rules_arith
from diffgpu.lowering.autodiff.rules import collectives as rules_collectives
from diffgpu.lowering.autodiff.rules import diffgpu as rules_diffgpu
from diffgpu.lowering.autodiff.rules import func as rules_func
from diffgpu.lowering.autodiff.rules import math as rules_math
from diffgpu.lowering.autodiff.rules import memref as rules_memref
from diffgpu.lowering.autodiff.rules import scf as rules_scf
from diffgpu.lowering.autodiff import remat
from diffgpu.lowering.autodiff.rules import tape as rules_tape

ELEMENTWISE = {**rules_arith.DERIVATIVES, **rules_math.DERIVATIVES,
               **rules_diffgpu.DERIVATIVES}
STRUCTURED = {**rules_memref.REVERSE, **rules_scf.REVERSE, **rules_diffgpu.REVERSE,
              **rules_collectives.REVERSE,
              **rules_func.REVERSE}
INACTIVE = (rules_arith.INACTIVE | rules_math.INACTIVE | rules_memref.INACTIVE
            | rules_diffgpu.INACTIVE)
#: pure ops without operands that the reverse sweep rebuilds instead of
#: taping (other values: remat.py decides)
REMAT = remat.FREE
#: terminators: their operands flow into the parent op, whose rule handles them
TERMINATORS = ("scf.yield", "scf.condition", "func.return")


def rule_of(op):
    """The Rule object of `op` (a tape word's, or its op's), or None."""
    if rules_tape.tag_of(op) is not None:
        return rules_tape.RULE
    return STRUCTURED.get(op.operation.name)

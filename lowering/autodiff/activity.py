"""Activity analysis: which values carry a derivative.

A float value is active when it depends on an active input: an `active`
scalar argument, or a load from (or atomic on) a `dup` array. Integer, index
and i1 values are never active; neither is anything computed from `const`
arguments only. Loop-carried values (scf.for iter_args, scf.while
arguments) are solved to a fixed point. A value that depends on an active
input but reaches no output (only `dg.stop_gradient`, comparisons, or
nothing) is dropped again (useful.py): it needs no derivative.

Two ways a value stays active through memory the function owns (both matter
when a generated derivative is differentiated again): a local float buffer
(`memref.alloca`) becomes `dup` once an active value is stored into it
(locals.py), and a tagged tape word carries its activity from push to pop
(`tape_active`, by tag: rules/tape.py).

What each op makes active is its rule's `activity` (partials.Rule, found
through rules.py), Enzyme's ActivityOpInterface; this module only runs the
fixed point.
"""
from __future__ import annotations

from diffgpu.lowering.common.ir_util import walk_block

from diffgpu.lowering.autodiff import build as B
from diffgpu.lowering.autodiff.rules.registry import ELEMENTWISE, INACTIVE, TERMINATORS, rule_of
from diffgpu.lowering.autodiff.tape import tag_of
from diffgpu.lowering.autodiff.useful import useless


#: all ops of a block, nested ones included, in pre-order (as OpViews)
walk_ops = walk_block


class Activity:
    """`active`: set of float values with derivatives; `dup`: memref values
    that have a shadow."""

    def __init__(self, entry_block, active_args, dup_args):
        args = entry_block.arguments
        self._entry = entry_block
        self.active = {args[i] for i in active_args if B.is_float(args[i].type)}
        self.dup = {args[i] for i in dup_args}
        self.ops = walk_ops(entry_block)
        self.push_tags = set()
        self.tape_active = set()  # tags of tape words that carry derivatives
        for op in self.ops:
            t = tag_of(op)
            if t is not None and t[0] == "push":
                self.push_tags.add(t[1])
        self._solve()

    # -- the context the rules' `activity(A, op)` see (partials.Rule) ---------
    def is_active(self, v) -> bool:
        return v in self.active

    def is_dup(self, v) -> bool:
        return v in self.dup

    def mark(self, v) -> bool:
        """Make float value `v` active; whether that is new."""
        if v in self.active or not B.is_float(v.type):
            return False
        self.active.add(v)
        return True

    def add_dup(self, m) -> bool:
        """Give buffer `m` a shadow; whether that is new."""
        if m in self.dup:
            return False
        self.dup.add(m)
        return True

    # -- the fixed point ------------------------------------------------------
    def _solve(self):
        self._rule_of, self._inert = rule_of, (INACTIVE, TERMINATORS)
        changed = True
        while changed:
            changed = False
            for op in self.ops:
                changed |= self._step(op)
        self.active -= useless(self.ops, self.active, ELEMENTWISE, INACTIVE, self._entry)

    def _step(self, op) -> bool:
        """One op's rule (rules.py), or the default: every float result is
        active when an operand is active or has a shadow."""
        rule = self._rule_of(op)
        if rule is not None and rule.activity is not None:
            return rule.activity(self, op)
        name = op.operation.name
        if any(name in names for names in self._inert):
            return False
        ch = False
        if any(v in self.active or v in self.dup for v in op.operands):
            for r in op.results:
                ch |= self.mark(r)
        return ch


def nested_uses(ops, is_active):
    """Active values used in a block other than the one defining them: their
    adjoints accumulate in slots instead of SSA values."""
    out = set()
    for op in ops:
        blk = op.operation.block
        for v in op.operands:
            if is_active(v) and B.defining_block(v) != blk:
                out.add(v)
    return out

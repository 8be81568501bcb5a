"""Activity analysis: which values carry a derivative.

A float value is active when it depends on an active input: an `active`
scalar argument, or a load from (or atomic on) a `dup` array. Integer, index
and i1 values are never active; neither is anything computed from `const`
arguments only. Loop-carried values (scf.for iter_args, scf.while
arguments) are solved to a fixed point.

Two ways a value stays active through memory the function owns (both matter
when a generated derivative is differentiated again): a local float buffer
(`memref.alloca`) becomes `dup` once an active value is stored into it
(locals.py), and a tagged tape word carries its activity from push to pop
(`tape_active`, by tag: rules_tape.py).
"""
from __future__ import annotations

from diffgpu.dialects import names as N

from . import build as B
from . import rules_arith, rules_math
from .locals import is_local
from .rules_tape import tag_of


def walk_ops(block):
    """All ops of `block`, nested ones included, in pre-order."""
    out = []
    for op in block.operations:
        out.append(op)
        for region in op.regions:
            for b in region.blocks:
                out.extend(walk_ops(b))
    return out


class Activity:
    """`active`: set of float values with derivatives; `dup`: memref values
    that have a shadow."""

    def __init__(self, entry_block, active_args, dup_args):
        args = entry_block.arguments
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

    def is_active(self, v) -> bool:
        return v in self.active

    def is_dup(self, v) -> bool:
        return v in self.dup

    def _mark(self, v) -> bool:
        if v in self.active or not B.is_float(v.type):
            return False
        self.active.add(v)
        return True

    def _any(self, values) -> bool:
        return any(v in self.active or v in self.dup for v in values)

    def _solve(self):
        changed = True
        while changed:
            changed = False
            for op in self.ops:
                changed |= self._step(op)

    def _step(self, op) -> bool:
        name = op.operation.name
        ch = False
        tagged = tag_of(op)
        if tagged is not None:
            kind, tag = tagged
            if kind == "push" and op.operands[0] in self.active \
                    and tag not in self.tape_active:
                self.tape_active.add(tag)
                return True
            if kind == "pop" and tag in self.tape_active:
                return self._mark(op.results[0])
            return False
        if name == "memref.store":
            mem = op.operands[1]
            if op.operands[0] in self.active and mem not in self.dup and is_local(mem):
                self.dup.add(mem)
                return True
            return False
        if name in rules_arith.INACTIVE or name in rules_math.INACTIVE:
            return False
        if name in ("memref.load", N.ATOMIC_ADD):
            if op.operands[0] in self.dup:
                ch |= self._mark(op.results[0])
            return ch
        if name == "scf.for":
            body = op.regions[0].blocks[0]
            yld = body.operations[-1]
            for k, res in enumerate(op.results):
                if op.operands[3 + k] in self.active or yld.operands[k] in self.active:
                    ch |= self._mark(res)
                    ch |= self._mark(body.arguments[1 + k])
            return ch
        if name in ("scf.if", "scf.execute_region", "scf.index_switch"):
            for region in op.regions:
                for b in region.blocks:
                    yld = b.operations[-1]
                    if yld.operation.name != "scf.yield":
                        continue  # a cf branch: reported by the rule
                    for k, res in enumerate(op.results):
                        if yld.operands[k] in self.active:
                            ch |= self._mark(res)
            return ch
        if name == "scf.while":
            before = op.regions[0].blocks[0]
            after = op.regions[1].blocks[0]
            cond, yld = before.operations[-1], after.operations[-1]
            for k, a in enumerate(before.arguments):
                if op.operands[k] in self.active or yld.operands[k] in self.active:
                    ch |= self._mark(a)
            for j, res in enumerate(op.results):
                if cond.operands[1 + j] in self.active:
                    ch |= self._mark(res)
                    ch |= self._mark(after.arguments[j])
            return ch
        if name in ("scf.yield", "scf.condition", "func.return"):
            return False
        if self._any(op.operands):
            for r in op.results:
                ch |= self._mark(r)
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

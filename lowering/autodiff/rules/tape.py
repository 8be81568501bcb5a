"""Derivatives of tape words: differentiating a generated derivative again.

A reverse-mode function built by this pass keeps forward values on its tape
as integer words (tape.py); taken at face value, a popped float would be a
fresh value computed from integers, with no derivative (the cause of silent
zeros in second-order derivatives through loops). The word's two ends carry
the same tag `N`, so here the pop IS the push, and the derivative follows
the word through a second LIFO tape of the outer derivative function:

    %w = arith.bitcast %x {diffgpu.tape_push = N}    reverse: pop d; adj(x) += d
    %y = arith.bitcast %v {diffgpu.tape_pop = N}     reverse: push adj(y)
                                                     tangent: pop dy
                                                     tangent: push dx (at the push)

The outer sweep replays the inner function's events backwards, so the pops
of the tape of adjoints meet its pushes in LIFO order, exactly as the inner
tape's pops met its pushes; in forward mode the tape of tangents sees the
same order as the inner tape. There is one such tape per tag (small: 16
words before it grows): the events of one tag are a LIFO sequence of their
own, while the events of two tags may sit on different inner stacks (a
third-order function holds the tape and the tape of adjoints of the second
order), which interleave out of LIFO order. A tag is active when any push with that tag
pushes an active value (one generated push site may appear several times
after inlining, paired with the same pop sites), and then every push and pop
of that tag takes part, so the second tape stays balanced.
"""
from __future__ import annotations

from diffgpu.lowering.autodiff import build as B
from diffgpu.lowering.autodiff.rules.partials import Rule
from diffgpu.lowering.autodiff.tape import Tape, tag_of

SIDE_WORDS = 16


def _activity(A, op):
    """A push of an active value activates its tag; a pop of an active tag
    gives an active value."""
    kind, tag = tag_of(op)
    if kind == "push" and A.is_active(op.operands[0]) and tag not in A.tape_active:
        A.tape_active.add(tag)
        return True
    if kind == "pop" and tag in A.tape_active:
        return A.mark(op.results[0])
    return False


def _needs(D, op):
    kind, tag = tag_of(op)
    if kind == "pop" and not D.tape_tag_pushed(tag):
        D.error(op, "a tape value popped here was pushed in another function: it cannot "
                    "be differentiated (differentiate the function holding both)")
        return False
    return D.tape_tag_active(tag)


class SideTapes:
    """The tapes of adjoints (reverse) or tangents (forward) of one
    derivative function, one per tag, allocated at `entry` on first use;
    each pair of events gets a fresh tag of its own (for the next order)."""

    def __init__(self, gen, entry):
        self.gen, self.entry = gen, entry
        self.tapes = {}  # inner tag -> (Tape, tag of its own words)

    def get(self, tag):
        if tag not in self.tapes:
            self.tapes[tag] = (Tape(self.entry, self.entry, initial=SIDE_WORDS),
                               self.gen.tape_tag())
        return self.tapes[tag]

    def release(self):
        for tape, _ in self.tapes.values():
            tape.release()


def _reverse(R, op):
    kind, tag = tag_of(op)
    side, own = R.side_tape(tag)
    if kind == "pop":  # later in the forward code: reversed first
        side.push(R.adj_or_zero(op.results[0]), own)
    else:
        x = op.operands[0]
        d, _ = side.pop(B.adjoint_type(x.type), own)  # as pushed: adj_or_zero's type
        R.add_adj(x, d)


def _tangent(F, op):
    kind, tag = tag_of(op)
    side, own = F.side_tape(tag)
    if kind == "push":
        side.push(F.tangent(op.operands[0]), own)
    else:
        d, _ = side.pop(op.results[0].type, own)
        F.set_tangent(op.results[0], d)


RULE = Rule(_needs, _reverse, _tangent, _activity)

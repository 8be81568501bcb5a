"""What a rule object (partials.Rule) may ask of the analysis or the sweep
that applies it: these three interfaces, nothing else.

Enzyme's derivative interfaces receive a `MGradientUtilsReverse` with a
small set of queries; ours are below. `Activity` (activity.py) implements
`ActivityContext`, `ReverseSweep` (reverse.py) `ReverseContext`, and
`ForwardSweep` (forward.py) `TangentContext`. A rule reads forward values,
adjoints, shadows and tapes only through them, never the sweep's frames,
tapes or caches; so the sweeps can change how they keep values without
touching a rule.

    def _load_reverse(R, op):                 # %v = memref.load %A[%i]
        d = R.get_adj(op.results[0])          # adj(v), None when zero
        idx = [R.need(i) for i in op.operands[1:]]
        accumulate(R.shadow(op.operands[0]), d, idx, R.elision_of(op.operands[0]))
"""
from __future__ import annotations

from typing import Protocol


class _Common(Protocol):
    def is_active(self, v) -> bool:
        """Whether float value `v` carries a derivative."""

    def is_dup(self, v) -> bool:
        """Whether buffer `v` has a shadow."""


class ActivityContext(_Common, Protocol):
    """For `Rule.activity(A, op) -> bool` (whether anything changed)."""

    tape_active: set  # tags of tape words that carry derivatives (rules_tape)

    def mark(self, v) -> bool:
        """Make float value `v` active; whether that is new."""

    def add_dup(self, m) -> bool:
        """Give local buffer `m` a shadow; whether that is new."""


class _Sweep(_Common, Protocol):
    def shadow(self, m):
        """The shadow of buffer `m` (adjoints, or tangents in forward mode)."""

    def error(self, op, msg: str) -> None:
        """Report `msg` at `op`; the pass fails after the sweep."""

    def needs(self, op) -> bool:
        """Whether `op` (e.g. one nested in a region) takes part."""

    def tape_tag_pushed(self, tag: int) -> bool:
        """Whether this function pushes tape words with `tag` (rules_tape)."""

    def tape_tag_active(self, tag: int) -> bool:
        """Whether tape words with `tag` carry derivatives (rules_tape)."""

    def side_tape(self, tag: int):
        """(tape, owned) of the adjoints/tangents of tape words `tag`."""


class ReverseContext(_Sweep, Protocol):
    """For `Rule.needs(R, op)` and `Rule.reverse(R, op)`; the rule runs at the
    reverse insertion point, after the reverse of every later op."""

    def need(self, v):
        """Forward value `v`, usable here (directly, recomputed, or popped
        from the tape)."""

    def get_adj(self, v):
        """The total adjoint of `v` (None when zero); read once, at `v`'s op."""

    def adj_or_zero(self, v):
        """get_adj(v), or a zero of v's type."""

    def add_adj(self, v, d) -> None:
        """adjoint(v) += d."""

    def sweep(self, fwd_block, in_loop=False, seed=None, finish=None, kind=None):
        """Emit the reverse of `fwd_block` here; `seed()` runs before the
        first reversed op, `finish()` after the last (its result returned)."""

    def recompute(self, v, make) -> None:
        """Inside the block being reversed, rebuild forward value `v` with
        `make()` instead of keeping it (a loop's induction variable)."""

    def forward_slot(self, t):
        """A one-value buffer of type `t` written by the forward code and
        readable in the reverse (e.g. an iteration count)."""

    def elision_of(self, m):
        """Guard dimensions under which updates of the shadow of `m` need
        no atomics (elision.py), or None."""

    def call_info_of(self, op):
        """The rules_func.CallInfo of a call the sweep augmented, or None."""

    def reverse_tape_holder(self):
        """(tape holder, count) the reverse passes to a callee's reverse."""


class TangentContext(_Sweep, Protocol):
    """For `Rule.tangent(F, op)`, emitted right after `op`."""

    def val(self, v):
        """Forward value `v` (forward mode computes next to the primal)."""

    def tangent(self, v):
        """The tangent of `v` (a zero of its type when inactive)."""

    def set_tangent(self, v, t) -> None:
        """Record `t` as the tangent of `v`."""

    def slot(self, t):
        """A one-value buffer of type `t` (a tangent carried across regions)."""

    def run_block(self, block) -> None:
        """Emit the tangents of the ops of `block` (a region of `op`)."""

"""How the rule tables are written and applied.

An elementwise rule is one entry per op, one expression per operand: the
partial derivative of the op's (single, float) result with respect to that
operand, written with `e.x`, `e.y`, `e.z` (operands 0, 1, 2, as forward
values), `e.r` (the forward result) and `e.c(k)` (a constant of the result
type). `ONE` / `NEG_ONE` mark partials that need no multiplication, `None`
an operand that carries no derivative (integer, i1 condition), and `ZERO`
a float operand whose partial is zero (floor, ceil, ...).

Reverse mode adds `adj(result) * partial` to each active operand's adjoint;
forward mode sums `partial * tangent(operand)` over active operands.
"""
from __future__ import annotations

from diffgpu.lowering.autodiff import build as B

ONE = "one"
NEG_ONE = "neg_one"
ZERO = "zero"


class Args:
    """Lazy access to an op's forward values for the partial expressions."""

    def __init__(self, op, fetch):
        self._op = op
        self._fetch = fetch  # value -> value usable at the insertion point

    def op(self, i):
        return self._fetch(self._op.operands[i])

    @property
    def x(self):
        return B.V(self.op(0))

    @property
    def y(self):
        return B.V(self.op(1))

    @property
    def z(self):
        return B.V(self.op(2))

    @property
    def r(self):
        return B.V(self._fetch(self._op.results[0]))

    def c(self, value):
        return B.V(B.const(self._op.results[0].type, value))


def scale(d, partial, args):
    """d * partial (d: float value of the result's type) -> V, or None for zero."""
    if partial is None or partial == ZERO:
        return None
    if partial == ONE:
        return B.V(d)
    if partial == NEG_ONE:
        return -B.V(d)
    return B.V(d) * partial(args)


class Rule:
    """Everything autodiff knows about an op with memory effects or regions
    (Enzyme's ActivityOpInterface + AutoDiffOpInterface in one object):

    - `activity(A, op) -> bool`: which of its values it makes active, during
      the fixed point of activity.py; it marks them with `A.mark(v)` (or
      `A.add_dup(m)` for a buffer) and returns whether anything changed.
      None: the default, every float result is active when an operand is
      active or has a shadow.
    - `needs(R, op)`: whether the op takes part in differentiation.
    - `reverse(R, op)`: its adjoint, at the reverse insertion point.
    - `tangent(F, op)`: its forward-mode code, emitted after the op (None:
      no forward rule yet).

    The sweeps (reverse.py, forward.py) and the activity analysis consult
    only these objects, found by op name in rules.py."""

    __slots__ = ("needs", "reverse", "tangent", "activity")

    def __init__(self, needs, reverse, tangent=None, activity=None):
        self.needs, self.reverse, self.tangent = needs, reverse, tangent
        self.activity = activity

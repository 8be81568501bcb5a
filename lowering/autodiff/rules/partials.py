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

Strong zeros. A partial wrapped in `Singular` can be infinite or NaN where
the op's own value is finite (1/x of log at 0, 0.5/sqrt(x) at 0, 1/y of a
division by 0, ...). Its product with an adjoint (or tangent) that is
exactly zero is made exactly zero:

    d * p    becomes    select(d == 0, 0, d * p)

so a branch that was not taken (its adjoints are zero) never turns a
gradient into NaN. Only `Singular` partials pay the compare and select
(two instructions): `x * y`'s partials are never guarded. `Singular(fn,
safe)` takes a test of the forward op that proves the partial finite
(log1p of an exp, a division by a nonzero constant), and then the guard is
left out. `DIFFGPU_STRONG_ZEROS=0` turns the guards off (switches.py).
"""
from __future__ import annotations

from diffgpu import switches
from diffgpu._mlir import ir
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
    def forward_op(self):
        """The forward op itself (its operands as the forward code has them)."""
        return self._op.operation

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


class Singular:
    """A partial that may be non-finite at finite points of the op (see the
    module docstring); `safe(op)`, when given, proves it finite for `op`."""

    __slots__ = ("fn", "safe")

    def __init__(self, fn, safe=None):
        self.fn, self.safe = fn, safe

    def __call__(self, e):
        return self.fn(e)


def strong_zeros() -> bool:
    """Whether zero adjoints stay zero through singular partials
    (`DIFFGPU_STRONG_ZEROS`, default on)."""
    return switches.on(switches.STRONG_ZEROS)


def defining_op(v):
    """The op defining value `v`, or None for a block argument."""
    owner = v.owner
    return None if isinstance(owner, ir.Block) else owner.operation


def constant_value(v):
    """The float value of an `arith.constant` scalar, or None."""
    op = defining_op(v)
    if op is None or op.name != "arith.constant":
        return None
    attr = op.attributes["value"]
    return ir.FloatAttr(attr).value if isinstance(attr, ir.FloatAttr) else None


def guarded(d, product):
    """select(d == 0, 0, product): an exactly zero `d` contributes zero."""
    d = B.V(d)
    return B.select(d.eq(0.0), d.c(0.0), product)


def scale(d, partial, args):
    """d * partial (d: float value of the result's type) -> V, or None for zero."""
    if partial is None or partial == ZERO:
        return None
    if partial == ONE:
        return B.V(d)
    if partial == NEG_ONE:
        return -B.V(d)
    product = B.V(d) * partial(args)
    if isinstance(partial, Singular) and strong_zeros() and \
            not (partial.safe is not None and partial.safe(args.forward_op)):
        return guarded(d, product)
    return product


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

"""Enzyme-style activity annotations for dg.autodiff / dg.fwddiff.

Used both inside kernels (the frontend reads them from the AST) and on the
host (`dg.autodiff(kernel[grid, block], dg.Duplicated(A, dA))`).
"""
from __future__ import annotations


class Activity:
    """Base class; `kind` is the IR spelling used in the `activity` attribute."""
    kind = ""
    __slots__ = ("value", "shadow")

    def __init__(self, value, shadow=None):
        self.value = value
        self.shadow = shadow

    def __repr__(self) -> str:
        if self.shadow is None:
            return f"{type(self).__name__}({self.value!r})"
        return f"{type(self).__name__}({self.value!r}, {self.shadow!r})"


class Const(Activity):
    """Not differentiated."""
    kind = "const"

    def __init__(self, value):
        super().__init__(value)


class Duplicated(Activity):
    """An array and its shadow (adjoint in reverse mode, tangent in forward)."""
    kind = "dup"

    def __init__(self, value, shadow):
        super().__init__(value, shadow)


class DuplicatedNoNeed(Duplicated):
    """Like Duplicated, but the primal result need not be kept."""
    kind = "dupnoneed"


class Active(Activity):
    """A differentiated scalar; reverse mode returns its gradient."""
    kind = "active"

    def __init__(self, value):
        super().__init__(value)


ACTIVITY_KINDS = {c.kind: c for c in (Const, Duplicated, DuplicatedNoNeed, Active)}

"""What a Python expression evaluates to while lowering a kernel.

- `Value`: an SSA value (`ref` like `%v3` or `%v3#1`) of a `Scalar` or
  `ArrayT` type;
- `Const`: a compile-time Python number (weak unless it came from a numpy
  scalar), materialized as `arith.constant` in the type its use asks for;
- `TupleV`: a tuple of the above (tuple literals, multi-result calls,
  gradients of `dg.autodiff`);
- `PyObj`: a compile-time Python object: module, function, dtype, class;
- `ShapeV`: `A.shape`, materialized per element by `A.shape[k]`.
"""
from __future__ import annotations

from dataclasses import dataclass

from diffgpu.frontend.types_infer import ArrayT, Scalar


@dataclass(frozen=True)
class Value:
    ref: str
    type: object  # Scalar | ArrayT

    @property
    def is_array(self) -> bool:
        return isinstance(self.type, ArrayT)


@dataclass(frozen=True)
class Const:
    value: object  # bool | int | float
    type: Scalar

    @staticmethod
    def of(v) -> "Const":
        if isinstance(v, bool):
            return Const(v, Scalar("i1", True))
        if isinstance(v, int):
            return Const(v, Scalar("i64", True))
        return Const(float(v), Scalar("f64", True))


@dataclass(frozen=True)
class TupleV:
    items: tuple


@dataclass(frozen=True)
class PyObj:
    obj: object


@dataclass(frozen=True)
class ShapeV:
    array: Value


def describe(v) -> str:
    """Short user-facing description of an evaluated expression."""
    if isinstance(v, (Value, Const)):
        return str(v.type)
    if isinstance(v, TupleV):
        return f"tuple of {len(v.items)}"
    if isinstance(v, ShapeV):
        return "array shape"
    if isinstance(v, PyObj):
        name = getattr(v.obj, "__name__", None) or type(v.obj).__name__
        return f"Python object {name!r}"
    return type(v).__name__

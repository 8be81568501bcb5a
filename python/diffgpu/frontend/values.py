"""What a Python expression evaluates to while lowering a kernel.

- `Value`: an SSA value (`ref` like `%v3` or `%v3#1`) of a `Scalar` or
  `ArrayT` type;
- `Const`: a compile-time Python number (weak unless it came from a numpy
  scalar), materialized as `arith.constant` in the type its use asks for;
- `TupleV`: a tuple of the above (tuple literals, multi-result calls,
  gradients of `dg.autodiff`);
- `PyObj`: a compile-time Python object: module, function, dtype, class;
- `ShapeV`: `A.shape`, materialized per element by `A.shape[k]`;
- `VecV`: a vector, matrix or quaternion (vectors.py): a register tuple of
  scalar items, of type `VecT`; a local variable holding one is a `VecSlot`
  in the environment with one hidden scalar variable per component.
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


@dataclass(frozen=True)
class VecT:
    """The type of a VecV: kind "vec", "mat" or "quat", shape (n,) or (rows, cols),
    and the scalar type of every component (floats only)."""
    kind: str
    shape: tuple
    elem: Scalar

    @property
    def size(self) -> int:
        return self.shape[0] * (self.shape[1] if len(self.shape) == 2 else 1)

    def mlir(self) -> str:  # one SSA value per component
        return ", ".join([self.elem.ty] * self.size)

    def __str__(self) -> str:
        return f"{type_name(self.kind, self.shape)} of {self.elem.strong()}"


def type_name(kind: str, shape: tuple) -> str:
    return "quat" if kind == "quat" else kind + "".join(str(d) for d in shape)


@dataclass(frozen=True)
class VecV:
    """A vector/matrix/quaternion value: `items` in row-major order, all of one
    float type (vectors.VectorMixin.make_vec makes them so)."""
    kind: str
    shape: tuple
    items: tuple

    @property
    def type(self) -> VecT:
        return VecT(self.kind, self.shape, self.items[0].type)


@dataclass(frozen=True)
class VecSlot:
    """The environment's entry of a variable holding a VecV: its components
    are the hidden variables `name[k]` (merged by branches and loops as
    scalars)."""
    kind: str
    shape: tuple


def describe(v) -> str:
    """Short user-facing description of an evaluated expression."""
    if isinstance(v, VecV):
        return str(v.type)
    if isinstance(v, VecSlot):
        return f"a {type_name(v.kind, v.shape)}"
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

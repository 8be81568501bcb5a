"""Value types of the frontend and the weak-typing promotion rules.

Scalars carry a `weak` flag, as in JAX and NumPy 2: a Python literal (or a
value computed only from literals, `int(x)`, `float(x)`) adapts to the other
operand. Rules of `promote(a, b)` for binary operators:

- same type: that type (weak only if both are weak);
- weak with strong: the strong type, except weak float with a strong int,
  which gives f64;
- bool (i1) with a number: the number's type;
- int with int: the wider one; float with float: the wider one;
- int with float (both strong): the float type (JAX-like: `x[i] * i` stays
  f32 for float32 `x`).

Integer true division `/` converts both operands to f64 first (NumPy 2).
"""
from __future__ import annotations

from dataclasses import dataclass

FLOATS = ("f32", "f64")
INTS = ("i1", "i32", "i64")
BITS = {"i1": 1, "i32": 32, "i64": 64, "f32": 32, "f64": 64, "index": 64}
DTYPE_OF = {"f32": "float32", "f64": "float64", "i32": "int32", "i64": "int64",
            "f16": "float16", "bf16": "bfloat16"}
#: 16-bit storage element types -> the type their values are computed in: an
#: array of them loads into (extends to) f32 and stores back rounded to
#: nearest even; no scalar value of the frontend has them
STORAGE = {"f16": "f32", "bf16": "f32"}
#: element types of arrays that can be differentiated
FLOAT_ELEMS = FLOATS + tuple(STORAGE)


def value_type(elem: str) -> "Scalar":
    """The scalar type a load of an `elem` array gives (f16 -> f32)."""
    return Scalar(STORAGE.get(elem, elem))


@dataclass(frozen=True)
class Scalar:
    """A scalar SSA type: f32, f64, i32, i64, i1 or index."""
    ty: str
    weak: bool = False

    def mlir(self) -> str:
        return self.ty

    @property
    def is_float(self) -> bool:
        return self.ty in FLOATS

    @property
    def is_int(self) -> bool:
        return self.ty in INTS

    def strong(self) -> "Scalar":
        return Scalar(self.ty, False)

    def __str__(self) -> str:
        names = {"f32": "float32", "f64": "float64", "i32": "int32",
                 "i64": "int64", "i1": "bool", "index": "index"}
        return ("weak " if self.weak else "") + names[self.ty]


@dataclass(frozen=True)
class ArrayT:
    """A memref type: a strided kernel argument, or a static shared array."""
    elem: str
    ndim: int
    shape: tuple | None = None  # static shape: shared memory

    def mlir(self) -> str:
        if self.shape is not None:
            dims = "x".join(str(d) for d in self.shape)
            return f"memref<{dims}x{self.elem}, #gpu.address_space<workgroup>>"
        dims = "?x" * self.ndim
        strides = ", ".join(["?"] * self.ndim)
        return f"memref<{dims}{self.elem}, strided<[{strides}], offset: ?>>"

    def __str__(self) -> str:
        kind = "shared array" if self.shape is not None else "array"
        return f"{DTYPE_OF[self.elem]} {self.ndim}-d {kind}"


def wider(a: str, b: str) -> str:
    return a if BITS[a] >= BITS[b] else b


def promote(a: Scalar, b: Scalar) -> Scalar:
    """Result type of a binary arithmetic op on `a` and `b` (see module doc)."""
    if a.ty == b.ty:
        return Scalar(a.ty, a.weak and b.weak)
    if a.ty == "index" or b.ty == "index":
        raise TypeError("index values are internal")
    if a.weak and not b.weak:
        a, b = b, a
    if b.weak and not a.weak:  # a strong, b weak
        if b.is_float and a.is_int:
            return Scalar("f64", False)
        if a.ty == "i1":  # strong bool with a weak number: the number
            return Scalar(b.ty, False)
        return a
    weak = a.weak and b.weak
    if a.ty == "i1":
        return Scalar(b.ty, weak)
    if b.ty == "i1":
        return Scalar(a.ty, weak)
    if a.is_float and b.is_float or a.is_int and b.is_int:
        return Scalar(wider(a.ty, b.ty), weak)
    return Scalar(a.ty if a.is_float else b.ty, weak)


def true_div_type(t: Scalar) -> Scalar:
    """Operand type of `/` after promotion: ints go to f64."""
    return t if t.is_float else Scalar("f64", t.weak)

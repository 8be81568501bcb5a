"""Expressions: names (locals, globals, closures), constants, tuples,
attributes, array subscripts, loads and stores. Operators are in
operators.py; every AST class without a `visit_*` method in the mixins is
rejected by `generic_visit` in lowerer.py.
"""
from __future__ import annotations

import ast
import builtins as py_builtins
import types as pytypes

from diffgpu.frontend.emitter import I64
from diffgpu.frontend.source import FrontendError
from diffgpu.frontend.types_infer import STORAGE, Scalar
from diffgpu.frontend.values import Const, PyObj, ShapeV, TupleV, Value, VecSlot, VecV, describe


def _is_numpy_scalar(obj) -> bool:
    return (type(obj).__module__ == "numpy" and hasattr(obj, "dtype")
            and hasattr(obj, "item") and getattr(obj, "ndim", None) == 0)


def py_to_val(obj, what: str, node):
    """A compile-time Python object (global, closure, attribute) as a value."""
    from diffgpu.types import DTYPES
    if isinstance(obj, (bool, int, float)):
        return Const.of(obj)
    if _is_numpy_scalar(obj):
        name = obj.dtype.name
        if obj.dtype.kind == "b":
            return Const(bool(obj), Scalar("i1"))
        if name not in DTYPES:
            raise FrontendError(f"{what} has unsupported numpy type {name}", node)
        return Const(obj.item(), Scalar(DTYPES[name]))
    if not isinstance(obj, (pytypes.ModuleType, type)) and hasattr(obj, "shape") \
            and hasattr(obj, "dtype"):  # numpy/CuPy/torch arrays
        raise FrontendError(f"{what} is a global array: pass arrays to kernels as "
                            "arguments", node)
    if isinstance(obj, tuple):
        return TupleV(tuple(py_to_val(x, what, node) for x in obj))
    if obj is None or callable(obj) or isinstance(obj, (pytypes.ModuleType, type)):
        return PyObj(obj)
    if type(obj).__module__ == "numpy" and type(obj).__name__.endswith("DType") \
            or type(obj).__name__ == "dtype":
        return PyObj(obj)
    raise FrontendError(f"{what} is a {type(obj).__name__}, which kernels cannot use "
                        "(only numbers, numpy dtypes, modules and diffgpu functions)", node)


class ExprMixin:
    # names ---------------------------------------------------------------
    def visit_Name(self, node):
        if not isinstance(node.ctx, ast.Load):
            raise FrontendError(f"unsupported use of name {node.id!r}", node)
        name = node.id
        if name in self.env:
            v = self.env[name]
            return self.read_vector(name, v, node) if isinstance(v, VecSlot) else v
        if name in self.maybe_undefined:
            raise FrontendError(
                f"variable {name!r} may be undefined here ({self.maybe_undefined[name]})", node)
        if name in self.local_names:
            raise FrontendError(
                f"variable {name!r} is used before it is assigned on this path (a "
                "variable carried through a loop or branch must be assigned before it)",
                node)
        found, obj = self.resolve_global(name)
        if not found:
            raise FrontendError(f"name {name!r} is not defined", node)
        return py_to_val(obj, f"global {name!r}", node)

    def resolve_global(self, name):
        fn = self.py_func
        code = fn.__code__
        if fn.__closure__ and name in code.co_freevars:
            cell = fn.__closure__[code.co_freevars.index(name)]
            try:
                return True, cell.cell_contents
            except ValueError:
                return False, None
        if name in fn.__globals__:
            return True, fn.__globals__[name]
        if hasattr(py_builtins, name):
            return True, getattr(py_builtins, name)
        return False, None

    def visit_Constant(self, node):
        v = node.value
        if isinstance(v, (bool, int, float)):
            return Const.of(v)
        if v is None:
            return PyObj(None)
        if isinstance(v, str):
            raise FrontendError("strings are not supported in kernels", node)
        raise FrontendError(f"unsupported constant of type {type(v).__name__}", node)

    def visit_Tuple(self, node):
        if not isinstance(node.ctx, ast.Load):
            raise FrontendError("unsupported tuple target", node)
        return TupleV(tuple(self.visit(e) for e in node.elts))

    # scalars -------------------------------------------------------------
    def scalar(self, v, node, what="operand") -> Value | Const:
        if isinstance(v, Const) or isinstance(v, Value) and isinstance(v.type, Scalar):
            return v
        if isinstance(v, PyObj) and v.obj is None:
            raise FrontendError(f"{what} is None (a call that returns nothing?)", node)
        if isinstance(v, Value):
            raise FrontendError(f"{what} is an array ({describe(v)}); whole-array "
                                "operations are not supported, index it", node)
        raise FrontendError(f"{what} must be a number, got {describe(v)}", node)

    def eval_scalar(self, node, what="operand"):
        return self.scalar(self.visit(node), node, what)

    def boolean(self, v, node) -> Value:
        v = self.scalar(v, node, "condition")
        return self.em.truth(self.em.value(v))


    # arrays ----------------------------------------------------------------
    def visit_Attribute(self, node):
        base = self.visit(node.value)
        if isinstance(base, PyObj):
            if base.obj is None or not hasattr(base.obj, node.attr):
                name = getattr(base.obj, "__name__", type(base.obj).__name__)
                raise FrontendError(f"unknown attribute {node.attr!r} of {name!r}", node)
            return py_to_val(getattr(base.obj, node.attr), f"attribute {node.attr!r}", node)
        if isinstance(base, VecV):
            return self.vector_attribute(base, node.attr, node)
        if isinstance(base, Value) and base.is_array:
            if node.attr == "shape":
                return ShapeV(base)
            if node.attr == "ndim":
                return Const.of(base.type.ndim)
        raise FrontendError(f"unknown attribute {node.attr!r} of {describe(base)} "
                            "(arrays have .shape and .ndim)", node)

    def array_dim(self, arr: Value, k: int) -> Value:
        em = self.em
        if arr.type.shape is not None:
            return em.value(Const(arr.type.shape[k], I64))
        c = em.op(f"arith.constant {k} : index", Scalar("index"))
        d = em.op(f"memref.dim {arr.ref}, {c.ref} : {arr.type.mlir()}", Scalar("index"))
        return em.cast(d, I64)

    def indices(self, arr: Value, node) -> list[Value]:
        """The index operands (index type) of `arr[node.slice]`."""
        sl = node.slice
        elts = sl.elts if isinstance(sl, ast.Tuple) else [sl]
        if any(isinstance(e, ast.Slice) for e in elts):
            raise FrontendError("slicing is not supported in kernels; index single "
                                "elements", node)
        vals = [self.visit(e) for e in elts]
        if len(vals) == 1 and isinstance(vals[0], (TupleV, ShapeV)):  # A[idx], idx a tuple
            v = vals[0]
            vals = list(v.items) if isinstance(v, TupleV) else [
                self.array_dim(v.array, k) for k in range(v.array.type.ndim)]
            elts = [sl] * len(vals)
        if len(vals) != arr.type.ndim:
            raise FrontendError(f"a {arr.type} needs {arr.type.ndim} indices, got "
                                f"{len(vals)} (write A[i, j], not A[i][j])", node)
        out = []
        for k, (e, v) in enumerate(zip(elts, vals)):
            if isinstance(v, Const) and v.type.is_int and isinstance(v.value, int) \
                    and not isinstance(v.value, bool) and v.value < 0:
                d = self.array_dim(arr, k)
                v = self.binop("+", d, v, e)
            elif not (isinstance(v, (Const, Value)) and isinstance(v.type, Scalar)):
                raise FrontendError(f"array index must be an integer, got {describe(v)}", e)
            elif not v.type.is_int or v.type.ty == "i1":
                raise FrontendError(f"array index must be an integer, got {v.type}", e)
            out.append(self.em.to_index(self.em.value(v)))
        return out

    def visit_Subscript(self, node):
        if not isinstance(node.ctx, ast.Load):
            raise FrontendError("unsupported subscript target", node)
        base = self.visit(node.value)
        if isinstance(base, Value) and base.is_array:
            idx = self.indices(base, node)
            return self.load(base, idx)
        if isinstance(base, VecV):
            return self.vector_subscript(base, node)
        key = self.visit(node.slice) if not isinstance(node.slice, ast.Slice) else None
        if isinstance(base, (ShapeV, TupleV)):
            if not (isinstance(key, Const) and isinstance(key.value, int)):
                raise FrontendError("tuples and shapes need a constant integer index", node)
            k = key.value
            n = base.array.type.ndim if isinstance(base, ShapeV) else len(base.items)
            if not -n <= k < n:
                raise FrontendError(f"index {k} out of range for a tuple of {n}", node)
            k %= n
            if isinstance(base, ShapeV):
                return self.array_dim(base.array, k)
            return base.items[k]
        raise FrontendError(f"{describe(base)} is not subscriptable", node)

    def load(self, arr: Value, idx: list[Value]) -> Value:
        refs = ", ".join(i.ref for i in idx)
        elem = arr.type.elem
        x = self.em.op(f"memref.load {arr.ref}[{refs}] : {arr.type.mlir()}", Scalar(elem))
        return self.from_storage(x, elem)

    def from_storage(self, x: Value, elem: str) -> Value:
        """A value read from an `elem` array as the frontend computes it: f16 /
        bf16 extended to f32 (types_infer.STORAGE), others unchanged."""
        if elem not in STORAGE:
            return x
        return self.em.op(f"arith.extf {x.ref} : {elem} to {STORAGE[elem]}",
                          Scalar(STORAGE[elem]))

    def to_storage(self, v, elem: str) -> Value:
        """`v` converted for a store into an `elem` array (f16 / bf16: through
        f32, then arith.truncf, which rounds to nearest even)."""
        if elem not in STORAGE:
            return self.em.value(v, Scalar(elem))
        x = self.em.value(v, Scalar(STORAGE[elem]))
        return self.em.op(f"arith.truncf {x.ref} : {STORAGE[elem]} to {elem}", Scalar(elem))

    def store(self, arr: Value, idx: list[Value], v, node) -> None:
        v = self.scalar(v, node, "stored value")
        x = self.to_storage(v, arr.type.elem)
        refs = ", ".join(i.ref for i in idx)
        self.em.line(f"memref.store {x.ref}, {arr.ref}[{refs}] : {arr.type.mlir()}")


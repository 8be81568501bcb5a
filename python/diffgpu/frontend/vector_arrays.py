"""Vectors, matrices and quaternions in arrays (vectors.py holds the values):
`dg.load_vec3(A, i)` reads the components from the last axis (two for
matrices) of `A` at the leading indices `i`, `dg.store(A, i, v)` writes them,
`dg.atomic_add(A, i, v)` adds them one atomic per component. Each component is
one memref.load/store; the GPU's coarsened launches merge neighbouring rows
into vector instructions (docs/vectors.md).
"""
from __future__ import annotations

import ast

from diffgpu.dialects import names as N
from diffgpu.frontend.emitter import INDEX
from diffgpu.frontend.source import FrontendError
from diffgpu.frontend.types_infer import Scalar
from diffgpu.frontend.values import Const, PyObj, TupleV, Value, VecV, describe

#: marks the loads and stores of a vector's components (lowering/gpu/vector_access.py)
ROW_ATTR = N.VECTOR_ROW
#: load names -> (kind, shape)
SHAPES = {"vec2": ("vec", (2,)), "vec3": ("vec", (3,)), "vec4": ("vec", (4,)),
          "mat22": ("mat", (2, 2)), "mat33": ("mat", (3, 3)), "mat44": ("mat", (4, 4)),
          "quat": ("quat", (4,))}


class VectorArrayMixin:
    # arrays -------------------------------------------------------------------------
    def lead_indices(self, arr, idx_node, n_lead, what):
        """Index Values of the leading axes of `arr` given by `idx_node` (an int or
        a tuple), the last axes left for the components."""
        v = TupleV(()) if idx_node is None else self.visit(idx_node)
        vals = list(v.items) if isinstance(v, TupleV) else [v]
        if len(vals) != n_lead:
            raise FrontendError(f"{what}: a {arr.type} holds the components in its last "
                                f"{arr.type.ndim - n_lead} axes and needs {n_lead} index(es) "
                                f"before them, got {len(vals)}", idx_node)
        out = []
        for k, iv in enumerate(vals):
            if isinstance(iv, Const) and isinstance(iv.value, int) and \
                    not isinstance(iv.value, bool) and iv.value < 0:
                iv = self.binop("+", self.array_dim(arr, k), iv, idx_node)
            if not (isinstance(iv, (Const, Value)) and isinstance(iv.type, Scalar)
                    and iv.type.is_int and iv.type.ty != "i1"):
                raise FrontendError(f"{what}: an index must be an integer, got "
                                    f"{describe(iv)}", idx_node)
            out.append(self.em.to_index(self.em.value(iv)))
        return out

    def component_arrays(self, arr_node, shape, what):
        arr = self.visit(arr_node)
        if not (isinstance(arr, Value) and arr.is_array):
            raise FrontendError(f"{what} needs an array, got {describe(arr)}", arr_node)
        if not arr.type.elem.startswith("f"):
            raise FrontendError(f"{what} needs a float array, got {arr.type}", arr_node)
        if arr.type.ndim < len(shape):
            raise FrontendError(f"{what} needs an array of at least {len(shape)} "
                                f"dimension(s) (the last {len(shape)} holding the "
                                f"components), got a {arr.type}", arr_node)
        if arr.type.shape is not None:
            last = arr.type.shape[-len(shape):]
            if tuple(last) != tuple(shape):
                raise FrontendError(f"{what} needs the last axes of size "
                                    f"{'x'.join(map(str, shape))}, got a shared array of "
                                    f"shape {arr.type.shape}", arr_node)
        return arr

    def component_offsets(self, shape):
        em = self.em
        consts = {}

        def c(k):
            if k not in consts:
                consts[k] = em.op(f"arith.constant {k} : index", INDEX)
            return consts[k]
        if len(shape) == 1:
            return [[c(k)] for k in range(shape[0])]
        return [[c(i), c(j)] for i in range(shape[0]) for j in range(shape[1])]

    def load_vector(self, name, node):
        kind, shape = SHAPES[name]
        what = f"load_{name}()"
        args = self.call_args(node, 1, 2, f"load_{name}")
        arr_node, idx_node = args[0], (args[1] if len(args) == 2 else None)
        arr = self.component_arrays(arr_node, shape, what)
        lead = self.lead_indices(arr, idx_node, arr.type.ndim - len(shape), what)
        items = [self.row_load(arr, lead + off) for off in self.component_offsets(shape)]
        return VecV(kind, shape, tuple(items))

    def row_load(self, arr, idx):
        """One component; float32/float64 loads carry ROW_ATTR, which lets the
        GPU lowering merge a row into one vector load (diffgpu-vector-access)."""
        if arr.type.elem not in ("f32", "f64"):
            return self.load(arr, idx)
        refs = ", ".join(i.ref for i in idx)
        return self.em.op(f"memref.load {arr.ref}[{refs}] {{{ROW_ATTR}}} : {arr.type.mlir()}",
                          Scalar(arr.type.elem))

    def row_store(self, arr, idx, v, node):
        if arr.type.elem not in ("f32", "f64"):
            return self.store(arr, idx, v, node)
        x = self.em.value(self.scalar(v, node, "stored value"), Scalar(arr.type.elem))
        refs = ", ".join(i.ref for i in idx)
        self.em.line(f"memref.store {x.ref}, {arr.ref}[{refs}] {{{ROW_ATTR}}} : "
                     f"{arr.type.mlir()}")

    def builtin_store(self, node):
        """dg.store(A, index, v): A[index, ...] = the components of v."""
        arr_node, idx_node, val_node = self.call_args(node, 3, 3, "store")
        v = self.visit(val_node)
        if not isinstance(v, VecV):
            fake = ast.copy_location(ast.Subscript(arr_node, idx_node, ast.Store()), node)
            arr = self.subscript_base(fake)
            self.store(arr, self.indices(arr, fake), v, val_node)
            return PyObj(None)
        shape = v.shape
        arr = self.component_arrays(arr_node, shape, "store()")
        lead = self.lead_indices(arr, idx_node, arr.type.ndim - len(shape), "store()")
        for it, off in zip(v.items, self.component_offsets(shape)):
            self.row_store(arr, lead + off, it, node)
        return PyObj(None)

    def vector_atomic_add(self, arr, idx_node, v: VecV, node):
        """dg.atomic_add(A, index, v): one atomic add per component; returns the old
        values as a vector."""
        from diffgpu.dialects import names as N
        if not arr.type.elem.startswith("f"):
            raise FrontendError(f"atomic_add() of a vector needs a float array, got "
                                f"{arr.type}", node)
        if arr.type.ndim <= len(v.shape):
            raise FrontendError(f"atomic_add() of a {describe(v)} needs an array of at "
                                f"least {len(v.shape) + 1} dimensions, got a {arr.type}", node)
        lead = self.lead_indices(arr, idx_node, arr.type.ndim - len(v.shape), "atomic_add()")
        et = Scalar(arr.type.elem)
        olds = []
        for it, off in zip(v.items, self.component_offsets(v.shape)):
            x = self.to_storage(it, et.ty)  # f16 / bf16: rounded (expressions.py)
            idx = lead + off
            operands = ", ".join([arr.ref, x.ref] + [i.ref for i in idx])
            types = ", ".join([arr.type.mlir(), et.ty] + ["index"] * len(idx))
            old = self.em.op(f'"{N.ATOMIC_ADD}"({operands}) : ({types}) -> {et.ty}', et)
            olds.append(self.from_storage(old, et.ty))
        return VecV(v.kind, v.shape, tuple(olds))


def _loader(name):
    def method(self, node):
        return self.load_vector(name, node)
    method.__name__ = f"builtin_load_{name}"
    return method


for _name in SHAPES:
    setattr(VectorArrayMixin, f"builtin_load_{_name}", _loader(_name))

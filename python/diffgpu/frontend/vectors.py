"""Vector, matrix and quaternion values in kernels: `dg.vec3(a, b, c)`,
`dg.mat33(...)`, `dg.quat(x, y, z, w)`, their loads and stores, operators,
indexing, variables, and passing them to and from `@dg.func` functions.

A `VecV` is a register tuple of scalar values (scalarised): every operator and
builtin is written out as scalar arith/math ops, so the autodiff pass
differentiates them with its scalar rules and no vector op reaches the IR.
A local variable holding one is a `VecSlot` in the environment plus one hidden
scalar variable `name[k]` per component, which branches and loops merge and
carry like any scalar. The builtins (dot, cross, ...) are in vector_builtins.py.

Layout: components in row-major order (`m[r, c]` is item `r * cols + c`);
quaternions are x, y, z, w (as NVIDIA Warp). In arrays the last axis (two for
matrices) holds the components: `dg.load_vec3(x, i)` reads `x[i, 0:3]`.
"""
from __future__ import annotations

import ast

from diffgpu.frontend.source import FrontendError
from diffgpu.frontend.types_infer import Scalar, promote
from diffgpu.frontend.vector_arrays import VectorArrayMixin
from diffgpu.frontend.values import (Const, TupleV, Value, VecSlot, VecT, VecV, describe,
                                     type_name)

COMPONENT_ATTRS = {"x": 0, "y": 1, "z": 2, "w": 3}
OP_WORDS = {"+": "add", "-": "subtract", "*": "multiply", "/": "divide", "@": "multiply (@)"}


def slot_key(name: str, k: int) -> str:
    """The hidden variable of component k of variable `name`."""
    return f"{name}[{k}]"


def flat_types(types) -> list:
    """Scalar types of SSA values: a VecT spans one per component."""
    out = []
    for t in types:
        out.extend([t.elem] * t.size if isinstance(t, VecT) else [t])
    return out


class VectorMixin(VectorArrayMixin):
    # making -------------------------------------------------------------------
    def make_vec(self, kind, shape, items, node=None) -> VecV:
        """A VecV of `items` (scalars) converted to their common float type."""
        t = items[0].type
        for it in items[1:]:
            t = promote(t, it.type)
        if not t.is_float:
            t = Scalar("f64", t.weak)
        out = []
        for it in items:
            if isinstance(it, Const):
                out.append(Const(float(it.value), t))
            else:
                out.append(self.em.value(it, t))
        return VecV(kind, tuple(shape), tuple(out))

    def like(self, v: VecV, items, node=None) -> VecV:
        return self.make_vec(v.kind, v.shape, items, node)

    def eval_operand(self, node, what="operand"):
        """A scalar or a VecV (operators accept both)."""
        v = self.visit(node)
        return v if isinstance(v, VecV) else self.scalar(v, node, what)

    def vec_arg(self, node, what, kinds=("vec", "quat", "mat"), size=None):
        v = self.visit(node)
        if not isinstance(v, VecV) or v.kind not in kinds \
                or size is not None and v.shape != size:
            want = " or ".join(kinds) if size is None else type_name(kinds[0], size)
            raise FrontendError(f"{what} must be a {want}, got {describe(v)}", node)
        return v

    # scalar helpers -------------------------------------------------------------
    def s_add(self, terms, node):
        acc = terms[0]
        for t in terms[1:]:
            acc = self.binop("+", acc, t, node)
        return acc

    def s_mul(self, a, b, node):
        return self.binop("*", a, b, node)

    def s_neg(self, a, node):
        if isinstance(a, Const):
            return Const(-a.value, a.type)
        x = self.em.value(a)
        return self.em.op(f"arith.negf {x.ref} : {x.type.ty}", x.type)

    def s_math(self, name, a):
        x = self.em.value(a)
        return self.em.op(f"math.{name} {x.ref} : {x.type.ty}", x.type)

    def s_select(self, c, a, b):
        t = promote(a.type, b.type)
        x, y = self.em.value(a, t), self.em.value(b, t)
        return self.em.op(f"arith.select {c.ref}, {x.ref}, {y.ref} : {t.ty}", t)

    def guarded(self, x, node):
        """(nz, safe): nz = x != 0 (true for NaN), safe = x where nz, else 1.
        The 'double select' keeps derivatives finite where x == 0: a result
        select(nz, f(safe), 0) has derivative 0 there, never 0 * inf."""
        x = self.em.value(x)
        nz = self.compare("!=", x, Const(0.0, x.type))
        return nz, self.s_select(nz, x, Const(1.0, x.type))

    # operators --------------------------------------------------------------------
    def vector_binop(self, op, a, b, node):
        va, vb = isinstance(a, VecV), isinstance(b, VecV)
        if op == "@":
            if not (va and vb):
                raise FrontendError("'@' needs a matrix and a vector or two matrices, got "
                                    f"{describe(a)} and {describe(b)}", node)
            return self.matmul(a, b, node)
        if va and vb:
            if a.kind != b.kind or a.shape != b.shape:
                raise FrontendError(f"cannot {OP_WORDS.get(op, op)} {describe(a)} and "
                                    f"{describe(b)}: the shapes differ", node)
            if op in ("*", "/") and a.kind != "vec":
                hint = "dg.quat_mul" if a.kind == "quat" else "'@' for the matrix product"
                raise FrontendError(f"'{op}' of two {type_name(a.kind, a.shape)} is not "
                                    f"defined; use {hint}", node)
            if op not in ("+", "-", "*", "/"):
                raise FrontendError(f"operator '{op}' is not defined on vectors", node)
            return self.like(a, [self.binop(op, x, y, node)
                                 for x, y in zip(a.items, b.items)])
        v, s = (a, b) if va else (b, a)
        if op == "*" or op == "/" and va:
            return self.like(v, [self.binop(op, x, s, node) if va else
                                 self.binop(op, s, x, node) for x in v.items])
        if op in ("+", "-"):
            raise FrontendError(f"cannot {OP_WORDS[op]} {describe(a)} and {describe(b)} "
                                "(no broadcasting of scalars; build a vector)", node)
        raise FrontendError(f"operator '{op}' is not defined for {describe(a)} and "
                            f"{describe(b)}", node)

    def vector_unary(self, op, v, node):
        if isinstance(op, ast.USub):
            return self.like(v, [self.s_neg(x, node) for x in v.items])
        if isinstance(op, ast.UAdd):
            return v
        raise FrontendError(f"unary operator {type(op).__name__} is not defined on "
                            f"{describe(v)}", node)

    def vector_conditional(self, c, a, b, regions, node):
        """`a if c else b` of two vectors of one shape: per component, an
        arith.select, or (`regions`: each side's lines, when one loads or calls)
        one scf.if yielding the components."""
        if not (isinstance(a, VecV) and isinstance(b, VecV)) or a.kind != b.kind \
                or a.shape != b.shape:
            raise FrontendError(f"the two values of the conditional expression differ: "
                                f"{describe(a)} and {describe(b)}", node)
        types = [promote(x.type, y.type) for x, y in zip(a.items, b.items)]
        if regions is None:
            return self.like(a, [self.s_select(c, x, y) for x, y in zip(a.items, b.items)])
        from diffgpu.frontend.operators import em_structured
        self.yield_into(list(regions), [a.items, b.items], types)
        head = f"scf.if {c.ref} -> ({', '.join(t.ty for t in types)})"
        return self.like(a, em_structured(self.em, head, list(regions), types, "} else {"))

    def rows(self, m):
        r, c = m.shape
        return [m.items[i * c:(i + 1) * c] for i in range(r)]

    def matmul(self, a, b, node):
        if a.kind == "mat" and b.kind == "vec":
            if a.shape[1] != b.shape[0]:
                raise FrontendError(f"cannot multiply {describe(a)} by {describe(b)}: "
                                    "the shapes differ", node)
            return self.make_vec("vec", (a.shape[0],), [
                self.s_add([self.s_mul(x, y, node) for x, y in zip(row, b.items)], node)
                for row in self.rows(a)])
        if a.kind == "vec" and b.kind == "mat":  # row vector times matrix
            return self.matmul(self.transpose(b), a, node)
        if a.kind == "mat" and b.kind == "mat":
            if a.shape[1] != b.shape[0]:
                raise FrontendError(f"cannot multiply {describe(a)} by {describe(b)}: "
                                    "the shapes differ", node)
            cols = self.rows(self.transpose(b))
            items = [self.s_add([self.s_mul(x, y, node) for x, y in zip(row, col)], node)
                     for row in self.rows(a) for col in cols]
            return self.make_vec("mat", (a.shape[0], b.shape[1]), items)
        raise FrontendError(f"'@' is not defined for {describe(a)} and {describe(b)}", node)

    def transpose(self, m):
        r, c = m.shape
        return VecV("mat", (c, r), tuple(m.items[i * c + j] for j in range(c) for i in range(r)))

    # indexing -----------------------------------------------------------------------
    def component_index(self, v: VecV, node) -> tuple:
        """(flat item index, or None for a whole row) of `v[node.slice]`."""
        sl = node.slice
        if isinstance(sl, ast.Slice) or isinstance(sl, ast.Tuple) and any(
                isinstance(e, ast.Slice) for e in sl.elts):
            raise FrontendError("slicing vectors is not supported; index components", node)
        key = self.visit(sl)
        keys = list(key.items) if isinstance(key, TupleV) else [key]
        if len(keys) > len(v.shape):
            raise FrontendError(f"a {type_name(v.kind, v.shape)} takes at most "
                                f"{len(v.shape)} index(es), got {len(keys)}", node)
        ks = []
        for k, (kv, n) in enumerate(zip(keys, v.shape)):
            if not (isinstance(kv, Const) and isinstance(kv.value, int)
                    and not isinstance(kv.value, bool)):
                raise FrontendError("a vector or matrix component needs a constant integer "
                                    f"index, got {describe(kv)}", node)
            if not -n <= kv.value < n:
                raise FrontendError(f"index {kv.value} out of range for a "
                                    f"{type_name(v.kind, v.shape)}", node)
            ks.append(kv.value % n)
        if len(ks) == 1 and len(v.shape) == 2:
            return None, ks[0]
        return (ks[0] * v.shape[1] + ks[1] if len(ks) == 2 else ks[0]), None

    def vector_subscript(self, v: VecV, node):
        flat, row = self.component_index(v, node)
        if flat is None:
            c = v.shape[1]
            return VecV("vec", (c,), v.items[row * c:(row + 1) * c])
        return v.items[flat]

    def vector_attribute(self, v: VecV, attr, node):
        k = COMPONENT_ATTRS.get(attr)
        if v.kind == "mat" or k is None or k >= v.shape[0]:
            raise FrontendError(f"unknown attribute {attr!r} of {describe(v)}", node)
        return v.items[k]

    # variables --------------------------------------------------------------------
    def bind_vector(self, name, v: VecV) -> None:
        self.unbind_vector(name)
        self.env[name] = VecSlot(v.kind, v.shape)
        for k, it in enumerate(v.items):
            self.env[slot_key(name, k)] = it
            self.maybe_undefined.pop(slot_key(name, k), None)

    def unbind_vector(self, name) -> None:
        old = self.env.get(name)
        if isinstance(old, VecSlot):
            for k in range(_size(old.shape)):
                self.env.pop(slot_key(name, k), None)

    def read_vector(self, name, slot: VecSlot, node) -> VecV:
        items = []
        for k in range(_size(slot.shape)):
            key = slot_key(name, k)
            if key not in self.env:
                why = self.maybe_undefined.get(key, "not all its components are assigned")
                raise FrontendError(f"variable {name!r} may be undefined here ({why})", node)
            items.append(self.env[key])
        return self.make_vec(slot.kind, slot.shape, items, node)

    def expand_vector_names(self, names) -> list:
        """Loop-carried names with each vector variable replaced by its components."""
        out = []
        for n in names:
            slot = self.env.get(n)
            if isinstance(slot, VecSlot):
                out.extend(slot_key(n, k) for k in range(_size(slot.shape)))
            else:
                out.append(n)
        return out

    def component_targets(self, loop) -> list:
        """Vector variables a loop's body assigns components of (`v[k] = ...`)."""
        out = [n.value.id for s in loop.body for n in ast.walk(s)
               if isinstance(n, (ast.Subscript, ast.Attribute)) and isinstance(n.ctx, ast.Store)
               and isinstance(n.value, ast.Name)]
        return [n for n in dict.fromkeys(out) if isinstance(self.env.get(n), VecSlot)]

    def vector_target(self, target):
        """(name, slot) when `target` is `v[...]`/`v.x` of a vector variable, else None."""
        base = target.value
        if isinstance(base, ast.Name) and isinstance(self.env.get(base.id), VecSlot):
            return base.id, self.env[base.id]
        return None

    def target_component(self, target, name, slot, node) -> int:
        v = self.read_vector(name, slot, target)
        if isinstance(target, ast.Attribute):
            self.vector_attribute(v, target.attr, target)
            return COMPONENT_ATTRS[target.attr]
        flat, row = self.component_index(v, target)
        if flat is None:
            raise FrontendError("assign a matrix component with m[i, j] = value, not a row",
                                target)
        return flat

    def assign_component(self, target, name, slot, value, node, op=None) -> None:
        """`v[k] = value` / `m[i, j] op= value` on a vector variable."""
        k = self.target_component(target, name, slot, node)
        value = self.scalar(value, node, "assigned component")
        key = slot_key(name, k)
        if op is not None:
            value = self.binop(op, self.env[key], value, node)
        self.env[key] = value

    # functions --------------------------------------------------------------------------
    def vector_param(self, k, p, t: VecT):
        """Parameters of a @dg.func argument of type t: one per component."""
        refs = [f"%a{k}_{j}" for j in range(t.size)]
        self.bind_vector(p.arg, VecV(t.kind, t.shape, tuple(Value(r, t.elem) for r in refs)))
        loc = self.src.loc(p)
        return [f"{r}: {t.elem.ty} {loc}" for r in refs]

    def flatten_returned(self, items, node):
        """The scalar values returned (vectors flattened); records the layout,
        which every `return` of the function must share."""
        layout = [it.type if isinstance(it, VecV) else None for it in items]
        if any(layout):
            if self.loop is not None:
                raise FrontendError("a vector cannot be returned from inside a loop; assign "
                                    "it to a variable and return it after the loop", node)
            shape = [None if t is None else (t.kind, t.shape) for t in layout]
            known = getattr(self, "ret_layout", None)
            if known is not None and known != shape:
                raise FrontendError(f"{self.py_func.__name__!r} returns vectors of "
                                    "different shapes on different paths", node)
            self.ret_layout = shape
        out = []
        for it in items:
            out.extend(it.items if isinstance(it, VecV) else [it])
        return out

    def group_results(self, types):
        """Result types of the function: the layout of its returns regrouped into VecTs."""
        layout = getattr(self, "ret_layout", None)
        if layout is None:
            return types
        out, k = [], 0
        for entry in layout:
            if entry is None:
                out.append(types[k])
                k += 1
            else:
                t = VecT(entry[0], entry[1], types[k])  # one type: make_vec made it so
                out.append(t)
                k += t.size
        return out

    def vector_activity(self, kind, vals, mode, k, node):
        """The operand groups, one per component, of a vector argument of an
        in-kernel dg.autodiff / dg.fwddiff (Active, Const, or Duplicated(v, dv)
        with dv a vector of v's shape)."""
        from diffgpu.frontend.diff_lower import check_activity
        prim = vals[0]
        shadow = vals[1] if len(vals) > 1 else None
        if shadow is not None and not (isinstance(shadow, VecV) and shadow.shape == prim.shape
                                       and shadow.kind == prim.kind):
            raise FrontendError(f"the shadow of argument {k} must be a {describe(prim)} too, "
                                f"got {describe(shadow)}", node)
        try:
            check_activity(kind, prim.type.elem, mode, k)
        except FrontendError as e:
            raise FrontendError(e.msg, node) from None
        t = prim.type.elem
        out = []
        for j, x in enumerate(prim.items):
            g = [self.em.value(x, t)]
            if shadow is not None:
                g.append(self.em.value(shadow.items[j], t))
            out.append(g)
        return out

    def group_gradients(self, res, kinds, vec_args):
        """The gradients of dg.autodiff, one per Active argument: a vector
        argument's components regrouped (vec_args: (first group, VecT))."""
        starts = {first: t for first, t in vec_args}
        out, r, g = [], 0, 0
        while g < len(kinds):
            t = starts.get(g)
            n = t.size if t is not None else 1
            if kinds[g] == "active":
                out.append(VecV(t.kind, t.shape, tuple(res[r:r + n])) if t is not None
                           else res[r])
                r += n
            g += n
        return out

    def call_operands(self, vals):
        """SSA operands of a call: a vector's components in its own type."""
        ops = []
        for v in vals:
            if isinstance(v, VecV):
                ops.extend(self.em.value(x, v.type.elem) for x in v.items)
            else:
                ops.append(self.em.value(v, v.type if isinstance(v.type, Scalar) else None))
        return ops

    def regroup(self, values, types):
        out, k = [], 0
        for t in types:
            if isinstance(t, VecT):
                out.append(VecV(t.kind, t.shape, tuple(values[k:k + t.size])))
                k += t.size
            else:
                out.append(values[k])
                k += 1
        return out


def _size(shape) -> int:
    return shape[0] * (shape[1] if len(shape) == 2 else 1)

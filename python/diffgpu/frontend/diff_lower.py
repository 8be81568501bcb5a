"""Differentiation: `dg.autodiff` / `dg.fwddiff` inside kernels (the
visitor's `DiffMixin`), and the op both they and the wrapper kernels of the
host API (diff_kernel.py) emit (`diff_op`).

Both emit one `diffgpu.autodiff` / `diffgpu.fwddiff` op (docs/IR.md): operand
groups per callee argument (primal, then shadow for dup/dupnoneed), the
`activity` list, the callee symbol and the enclosing function's target.

```mlir
%g = "diffgpu.autodiff"(%seed, %x) {activity = ["active"], callee = @f,
       diffgpu.target = #llvm.target<...>, groups = array<i32: 1>,
       operandSegmentSizes = array<i32: 2, 0, ...>,
       resultSegmentSizes = array<i32: 1, 0, ...>} : (f32, f32) -> f32
```
(`groups`: the operands of each argument; the segment sizes are runs of
equal types for IRDL, dialects/names.py `diff_layout`.)
"""
from __future__ import annotations

import ast

from diffgpu import activities
from diffgpu.dialects import names as N
from diffgpu.frontend.source import FrontendError
from diffgpu.frontend.types_infer import FLOAT_ELEMS, STORAGE, ArrayT, Scalar
from diffgpu.frontend.values import Const, PyObj, TupleV, Value, VecV, describe

KINDS = {activities.Const: "const", activities.Duplicated: "dup",
         activities.DuplicatedNoNeed: "dupnoneed", activities.Active: "active"}
CLASS_OF = {"const": "Const", "dup": "Duplicated", "dupnoneed": "DuplicatedNoNeed",
            "active": "Active"}


#: reverse-mode kinds of the host's functional API (dg.vjp): shadowed arrays
#: (lowering/autodiff/functional/kinds.py), never written by users
FUNCTIONAL = ("cot", "grad")


def check_activity(kind: str, t, mode: str, k: int) -> None:
    """Raise FrontendError if activity `kind` is invalid for a value of type t."""
    what = f"argument {k} ({t})"
    if kind not in CLASS_OF and kind not in FUNCTIONAL and kind not in (N.DUP32, N.RMW_FINAL):
        raise FrontendError(f"unknown activity {kind!r} for {what}")
    if kind == "const":
        return
    if kind == N.DUP32:  # the host API's float32 scratch shadow of a 16-bit array
        if mode != "reverse" or not isinstance(t, ArrayT) or t.elem not in STORAGE:
            raise FrontendError(f"{what}: '{kind}' is for 16-bit float arrays in reverse "
                                "mode")
        return
    if kind == N.RMW_FINAL:  # the host API's final values of dg.atomic_max/min
        if not isinstance(t, ArrayT) or t.elem not in FLOAT_ELEMS or t.elem in STORAGE:
            raise FrontendError(f"{what}: '{kind}' is for float32 / float64 arrays")
        return
    if kind in FUNCTIONAL:
        if mode != "reverse" or not isinstance(t, ArrayT) or t.elem not in FLOAT_ELEMS:
            raise FrontendError(f"{what}: '{kind}' is for float arrays in reverse mode")
        return
    if isinstance(t, ArrayT):
        if kind == "active":
            raise FrontendError(f"{what}: Active is for scalars; use Duplicated(A, dA) "
                                "for arrays")
        if t.elem not in FLOAT_ELEMS:
            raise FrontendError(f"{what}: integer arrays cannot be differentiated; use Const")
        return
    if not t.is_float:
        raise FrontendError(f"{what}: integer arguments are always Const")
    if mode == "reverse" and kind != "active":
        raise FrontendError(f"{what}: a scalar is Active in reverse mode, not "
                            f"{CLASS_OF[kind]}")
    if mode == "forward" and kind == "active":
        raise FrontendError(f"{what}: Active is for reverse mode (dg.autodiff); in "
                            "forward mode pass Duplicated(x, dx) with a tangent")


def diff_op(op, callee, kinds, groups, seed, result_types, target):
    """Generic text of a diffgpu.autodiff/fwddiff op (`op`: N.AUTODIFF or
    N.FWDDIFF) without results/loc; the layout is dialects/names.py's.

    groups: per argument a list of Values; seed: a Value or None."""
    operands = ([seed] if seed is not None else []) + [v for g in groups for v in g]
    layout = N.diff_layout(op, [len(g) for g in groups], [v.type.mlir() for v in operands],
                           [t.mlir() for t in result_types])  # N.LayoutError past its limit
    acts = ", ".join(f'"{k}"' for k in kinds)
    attrs = f"activity = [{acts}], callee = @{callee}, diffgpu.target = {target}"
    for key, sizes in layout.items():
        attrs += f", {key} = array<i32: {', '.join(map(str, sizes))}>"
    refs = ", ".join(v.ref for v in operands)
    types = ", ".join(v.type.mlir() for v in operands)
    rtypes = ", ".join(t.mlir() for t in result_types)
    return f'"{op}"({refs}) {{{attrs}}} : ({types}) -> ({rtypes})'


class DiffMixin:
    def lower_diff(self, tag, node):
        mode = "reverse" if tag == "autodiff" else "forward"
        name = f"dg.{tag}"
        if not node.args:
            raise FrontendError(f"{name}() needs the function to differentiate", node)
        fn = self.visit(node.args[0])
        if not (isinstance(fn, PyObj) and getattr(fn.obj, "__diffgpu_definition__", False)):
            raise FrontendError(f"{name}() differentiates a @dg.func or @dg.kernel, got "
                                f"{describe(fn)}", node.args[0])
        seed_node = None
        for kw in node.keywords:
            if kw.arg == "seed" and mode == "reverse":
                seed_node = kw.value
            else:
                raise FrontendError(f"{name}() got an unexpected keyword argument "
                                    f"{kw.arg!r}", kw.value)
        defn = fn.obj
        nparams = defn.py_func.__code__.co_argcount
        argnodes = node.args[1:]
        if len(argnodes) != nparams:
            raise FrontendError(f"{name}(): {defn.py_func.__name__!r} takes {nparams} "
                                f"argument(s), got {len(argnodes)}", node)
        kinds, groups, arg_types, vec_args = [], [], [], []
        for k, a in enumerate(argnodes):
            kind, vals = self.activity_arg(a)
            prim = vals[0]
            if isinstance(prim, VecV):  # vectors.py: one argument per component
                arg_types.append(prim.type)
                vec_args.append((len(groups), prim.type))
                for g in self.vector_activity(kind, vals, mode, k, a):
                    kinds.append(kind)
                    groups.append(g)
                continue
            arg_types.append(prim.type)
            try:
                check_activity(kind, prim.type, mode, k)
            except FrontendError as e:
                raise FrontendError(e.msg, a) from None
            if kind in ("dup", "dupnoneed") and vals[1].type != prim.type:
                if isinstance(prim.type, Scalar) and isinstance(vals[1].type, Scalar):
                    vals[1] = Value(self.em.value(vals[1], prim.type).ref, prim.type)
                else:
                    raise FrontendError(f"the shadow of argument {k} must have the type "
                                        f"of its primal ({prim.type}), got "
                                        f"{vals[1].type}", a)
            kinds.append(kind)
            groups.append(vals)
        info = self.mb.specialize(defn, tuple(arg_types), node)
        if len(info.results) > 1 or any(not isinstance(t, Scalar) for t in info.results):
            raise FrontendError(f"{name}() needs a function returning one scalar or "
                                "nothing, not a tuple", node)
        seed = None
        if mode == "reverse" and info.results:
            sv = self.eval_scalar(seed_node, "seed") if seed_node is not None else Const.of(1.0)
            seed = self.em.value(sv, info.results[0])
        elif seed_node is not None:
            raise FrontendError("seed= is only meaningful when the function returns a "
                                "value", seed_node)
        groups = [[self.em.value(v, v.type if isinstance(v.type, Scalar) else None)
                   for v in g] for g in groups]
        if mode == "reverse":
            rtypes = [g[0].type for g, k in zip(groups, kinds) if k == "active"]
        else:
            rtypes = list(info.results)
        try:
            text = diff_op(N.AUTODIFF if mode == "reverse" else N.FWDDIFF, info.symbol,
                           kinds, groups, seed, rtypes, self.target)
        except N.LayoutError as e:
            raise FrontendError(f"{name}() of {defn.py_func.__name__!r} in "
                                f"{self.py_func.__name__!r}: {e}", node) from None
        res = self.em.multi(text, rtypes)
        if mode == "reverse":
            return TupleV(tuple(self.group_gradients(res, kinds, vec_args)))
        return res[0] if res else PyObj(None)

    def activity_arg(self, a):
        """(kind, [primal, shadow?]) of one argument of autodiff/fwddiff."""
        if isinstance(a, ast.Call):
            f = self.visit(a.func)
            if isinstance(f, PyObj) and f.obj in KINDS:
                kind = KINDS[f.obj]
                n = 2 if kind in ("dup", "dupnoneed") else 1
                if a.keywords or len(a.args) != n:
                    raise FrontendError(f"{f.obj.__name__}() takes {n} argument(s)", a)
                return kind, [self.diff_value(x) for x in a.args]
        return "const", [self.diff_value(a)]

    def diff_value(self, node):
        v = self.visit(node)
        if isinstance(v, (Const, Value, VecV)):
            return v
        raise FrontendError(f"cannot differentiate with respect to a {describe(v)}", node)

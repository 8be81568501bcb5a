"""Calls: diffgpu builtins, `math` functions, Python builtins, and calls of
other `@dg.func` / `@dg.kernel` functions.

Builtins are recognized by their `__diffgpu_builtin__` tag, `math` and
Python builtins by identity. `math.floor/ceil/trunc` return ints (as in
Python), `dg.floor/ceil/trunc` floats (as in NumPy).
"""
from __future__ import annotations

import ast
import builtins as py_builtins
import math

from diffgpu import activities
from diffgpu.dialects import names as N
from diffgpu.builtins import MATH_FUNCTIONS
from diffgpu.frontend.emitter import I64, INDEX
from diffgpu.frontend.scalar_builtins import NUMPY_SCALAR
from diffgpu.frontend.source import FrontendError
from diffgpu.frontend.types_infer import ArrayT, Scalar, promote
from diffgpu.frontend.values import Const, PyObj, ShapeV, TupleV, Value, VecV, describe
from diffgpu.frontend.vectors import flat_types
from diffgpu.lowering.checks.shared_memory import SHARED_LIMIT  # bytes of static shared memory per block

MATH_OPS = {
    "exp": "math.exp", "exp2": "math.exp2", "log": "math.log", "log2": "math.log2",
    "log10": "math.log10", "log1p": "math.log1p", "expm1": "math.expm1",
    "sin": "math.sin", "cos": "math.cos", "tan": "math.tan", "asin": "math.asin",
    "acos": "math.acos", "atan": "math.atan", "sinh": "math.sinh", "cosh": "math.cosh",
    "tanh": "math.tanh", "asinh": "math.asinh", "acosh": "math.acosh",
    "atanh": "math.atanh", "sqrt": "math.sqrt", "rsqrt": "math.rsqrt", "cbrt": "math.cbrt",
    "erf": "math.erf", "erfc": "math.erfc", "floor": "math.floor", "ceil": "math.ceil",
    "trunc": "math.trunc", "fabs": "math.absf", "pow": "math.powf",
    "atan2": "math.atan2", "copysign": "math.copysign", "fma": "math.fma",
}
#: functions of Python's math module, by identity -> our name
PY_MATH = {id(getattr(math, n)): n for n in MATH_OPS if hasattr(math, n)}
INT_RESULT_MATH = ("floor", "ceil", "trunc")  # math.floor(x) is an int in Python
GEOMETRY = ("thread_id", "block_id", "block_dim", "grid_dim")
ACTIVITY_CLASSES = (activities.Const, activities.Duplicated,
                    activities.DuplicatedNoNeed, activities.Active)


#: numpy functions usable in kernels -> our name (floor/ceil/trunc give floats)
NUMPY_MATH = {
    "exp": "exp", "exp2": "exp2", "log": "log", "log2": "log2", "log10": "log10",
    "log1p": "log1p", "expm1": "expm1", "sin": "sin", "cos": "cos", "tan": "tan",
    "arcsin": "asin", "arccos": "acos", "arctan": "atan", "sinh": "sinh", "cosh": "cosh",
    "tanh": "tanh", "arcsinh": "asinh", "arccosh": "acosh", "arctanh": "atanh",
    "sqrt": "sqrt", "cbrt": "cbrt", "floor": "floor", "ceil": "ceil", "trunc": "trunc",
    "fabs": "fabs", "power": "pow", "arctan2": "atan2", "copysign": "copysign",
}
NUMPY_OTHER = ("abs", "absolute", "minimum", "maximum", "float32", "float64", "int32",
               "int64", "isnan", "isinf", "isfinite")


def numpy_function(obj):
    """The numpy name of `obj` if it is a numpy function kernels support."""
    if type(obj).__name__ not in ("ufunc", "type", "_ArrayFunctionDispatcher"):
        return None
    name = getattr(obj, "__name__", None)
    if name not in NUMPY_MATH and name not in NUMPY_OTHER and name not in NUMPY_SCALAR:
        return None
    import numpy as np
    return name if getattr(np, name, None) is obj else None


BYTES = {"f32": 4, "f64": 8, "i32": 4, "i64": 8, "f16": 2, "bf16": 2}


def dtype_elem(obj, node) -> str:
    """numpy dtype (np.float32, np.dtype('float32'), float, int) -> f32, ..."""
    from diffgpu.types import DTYPES
    if obj is float:
        return "f64"
    if obj is int:
        return "i64"
    try:
        import numpy as np
        name = np.dtype(obj).name
    except Exception:
        name = None
    if name not in DTYPES:
        raise FrontendError(f"unsupported dtype {getattr(obj, '__name__', obj)!r} for "
                            "shared_array (use float32, float64, float16, bfloat16, int32 "
                            "or int64)", node)
    return DTYPES[name]


class BuiltinMixin:
    def visit_Call(self, node):
        fn = self.visit(node.func)
        callee = ast.unparse(node.func)
        if not isinstance(fn, PyObj) or fn.obj is None:
            raise FrontendError(f"{callee!r} is not callable (it is a {describe(fn)})", node)
        obj = fn.obj
        if getattr(obj, "__diffgpu_definition__", False):
            return self.call_user(obj, node)
        tag = getattr(obj, "__diffgpu_builtin__", None)
        if tag in ("autodiff", "fwddiff"):
            return self.lower_diff(tag, node)
        if isinstance(tag, str):
            if tag in MATH_OPS:
                return self.math_call(tag, node, int_result=False)
            method = getattr(self, f"builtin_{tag}", None)
            if method is None:
                raise FrontendError(f"diffgpu builtin {tag!r} is not supported in kernels",
                                    node)
            return method(node)
        np_name = numpy_function(obj)
        if np_name is not None:
            return self.numpy_call(np_name, obj, node)
        if id(obj) in PY_MATH and obj is getattr(math, PY_MATH[id(obj)]):
            name = PY_MATH[id(obj)]
            return self.math_call(name, node, int_result=name in INT_RESULT_MATH)
        if obj is getattr(math, "isnan") or obj is getattr(math, "isinf") \
                or obj is getattr(math, "isfinite"):
            return self.float_class(obj.__name__, node)
        for name in ("abs", "min", "max", "int", "float", "bool", "len", "round", "pow"):
            if obj is getattr(py_builtins, name):
                return getattr(self, f"py_{name}")(node)
        if obj is py_builtins.range:
            raise FrontendError("range() is only supported as the iterable of a for loop",
                                node)
        if obj in ACTIVITY_CLASSES:
            raise FrontendError(f"{obj.__name__}(...) can only be an argument of "
                                "dg.autodiff or dg.fwddiff", node)
        if obj is py_builtins.print:
            raise FrontendError("print() is not supported in kernels", node)
        raise FrontendError(
            f"call to unknown Python function {callee!r}: kernels can only call "
            "@dg.func/@dg.kernel functions, diffgpu builtins and math functions", node)

    # argument helpers ------------------------------------------------------
    def call_args(self, node, lo, hi=None, name="function"):
        hi = lo if hi is None else hi
        if node.keywords:
            raise FrontendError(f"{name}() takes no keyword arguments", node.keywords[0].value)
        for a in node.args:
            if isinstance(a, ast.Starred):
                raise FrontendError("*args in calls is not supported", a)
        n = len(node.args)
        if not lo <= n <= hi:
            want = str(lo) if lo == hi else f"{lo} to {hi}"
            raise FrontendError(f"{name}() takes {want} argument(s), got {n}", node)
        return node.args

    def const_int(self, argnode, what):
        v = self.visit(argnode)
        if not (isinstance(v, Const) and isinstance(v.value, int)
                and not isinstance(v.value, bool)):
            raise FrontendError(f"{what} must be a constant integer, got {describe(v)}",
                                argnode)
        return v.value

    def axis(self, node, name):
        args = self.call_args(node, 0, 1, name)
        if not args:
            return 0
        ax = self.const_int(args[0], f"{name}() axis")
        if ax not in (0, 1, 2):
            raise FrontendError(f"{name}() axis must be 0, 1 or 2, got {ax}", args[0])
        return ax

    # math -------------------------------------------------------------------
    def math_call(self, name, node, int_result):
        nargs = MATH_FUNCTIONS[name]
        args = [self.eval_scalar(a, f"argument of {name}()")
                for a in self.call_args(node, nargs, nargs, name)]
        t = args[0].type
        for a in args[1:]:
            t = promote(t, a.type)
        if not t.is_float:
            t = Scalar("f64", t.weak)
        em = self.em
        xs = [em.value(a, t) for a in args]
        r = em.op(f"{MATH_OPS[name]} {', '.join(x.ref for x in xs)} : {t.ty}", t)
        if int_result:
            return em.cast(r, Scalar("i64", t.weak))
        return r

    # Python builtins --------------------------------------------------------
    def py_abs(self, node):
        (a,) = self.call_args(node, 1, 1, "abs")
        v = self.eval_scalar(a, "argument of abs()")
        if isinstance(v, Const) and v.type.weak:
            return Const.of(abs(v.value))
        em = self.em
        if v.type.is_float:
            x = em.value(v)
            return em.op(f"math.absf {x.ref} : {x.type.ty}", x.type)
        neg = self.binop("-", Const.of(0), v, node)
        x = em.value(v, neg.type)
        lt = self.compare("<", x, Const.of(0))
        return em.op(f"arith.select {lt.ref}, {neg.ref}, {x.ref} : {neg.type.ty}", neg.type)

    def py_min(self, node):
        return self._minmax(node, "min", "<")

    def py_max(self, node):
        return self._minmax(node, "max", ">")

    def _minmax(self, node, name, op):
        args = self.call_args(node, 2, 64, name)
        vals = [self.eval_scalar(a, f"argument of {name}()") for a in args]
        acc = vals[0]
        for v in vals[1:]:
            if isinstance(acc, Const) and isinstance(v, Const) and acc.type.weak and v.type.weak:
                acc = Const.of(min(acc.value, v.value) if name == "min" else max(acc.value, v.value))
                continue
            t = promote(acc.type, v.type)
            a, b = self.em.value(acc, t), self.em.value(v, t)
            better = self.compare(op, b, a)  # Python: min(a, b) is b only if b < a
            acc = self.em.op(f"arith.select {better.ref}, {b.ref}, {a.ref} : {t.ty}", t)
        return acc

    def numpy_call(self, name, obj, node):
        """np.exp, np.sqrt, ... (elementwise on scalars); np.float32(x) etc. are
        strongly typed conversions."""
        from diffgpu.types import DTYPES
        if name in NUMPY_MATH:
            return self.math_call(NUMPY_MATH[name], node, int_result=False)
        if name in NUMPY_SCALAR:  # np.sign, np.clip, np.rint, np.fmod
            return getattr(self, NUMPY_SCALAR[name])(node)
        if name in ("abs", "absolute"):
            return self.py_abs(node)
        if name in ("minimum", "maximum"):
            self.call_args(node, 2, 2, f"np.{name}")
            return self._minmax(node, "min" if name == "minimum" else "max",
                                "<" if name == "minimum" else ">")
        if name in ("isnan", "isinf", "isfinite"):
            return self.float_class(name, node)
        (a,) = self.call_args(node, 1, 1, f"np.{name}")
        v = self.eval_scalar(a, f"argument of np.{name}()")
        t = Scalar(DTYPES[name])
        if isinstance(v, Const) and not (t.is_int and isinstance(v.value, float)):
            return Const(v.value, t)
        return self.em.cast(self.em.value(v), t)

    def py_round(self, node):
        """round(x): nearest int, ties to even (Python 3)."""
        (a,) = self.call_args(node, 1, 1, "round")
        v = self.eval_scalar(a, "argument of round()")
        if isinstance(v, Const):
            return Const.of(round(v.value))
        if not v.type.is_float:
            return v
        x = self.em.value(v)
        r = self.em.op(f"math.roundeven {x.ref} : {x.type.ty}", x.type)
        return self.em.cast(r, Scalar("i64", x.type.weak))

    def py_pow(self, node):
        a, b = self.call_args(node, 2, 2, "pow")
        return self.binop("**", self.eval_scalar(a, "argument of pow()"),
                          self.eval_scalar(b, "argument of pow()"), node)

    def float_class(self, name, node):
        """math.isnan / isinf / isfinite."""
        (a,) = self.call_args(node, 1, 1, name)
        v = self.eval_scalar(a, f"argument of {name}()")
        if not v.type.is_float:
            return Const.of(name == "isfinite") if isinstance(v, Const) else \
                self.em.value(Const(name == "isfinite", Scalar("i1")))
        em = self.em
        x = em.value(v)
        t = x.type.ty
        if name == "isnan":
            return em.op(f"arith.cmpf uno, {x.ref}, {x.ref} : {t}", Scalar("i1"))
        ax = em.op(f"math.absf {x.ref} : {t}", x.type)
        inf = em.constant(float("inf"), Scalar(t))
        pred = "oeq" if name == "isinf" else "olt"
        return em.op(f"arith.cmpf {pred}, {ax.ref}, {inf.ref} : {t}", Scalar("i1"))

    def py_int(self, node):
        (a,) = self.call_args(node, 1, 1, "int")
        v = self.eval_scalar(a, "argument of int()")
        if isinstance(v, Const):
            return Const.of(int(v.value))
        return self.em.cast(v, Scalar("i64", True))

    def py_float(self, node):
        (a,) = self.call_args(node, 1, 1, "float")
        v = self.eval_scalar(a, "argument of float()")
        if isinstance(v, Const):
            return Const.of(float(v.value))
        return self.em.cast(v, Scalar("f64", True))

    def py_bool(self, node):
        (a,) = self.call_args(node, 1, 1, "bool")
        v = self.eval_scalar(a, "argument of bool()")
        if isinstance(v, Const):
            return Const.of(bool(v.value))
        return self.em.truth(v)

    def py_len(self, node):
        (a,) = self.call_args(node, 1, 1, "len")
        v = self.visit(a)
        if isinstance(v, TupleV):
            return Const.of(len(v.items))
        if isinstance(v, ShapeV):
            return Const.of(v.array.type.ndim)
        if isinstance(v, Value) and v.is_array:
            return self.array_dim(v, 0)
        if isinstance(v, VecV):  # components of a vector, rows of a matrix (as Warp)
            return Const.of(v.shape[0])
        raise FrontendError(f"len() of {describe(v)} is not supported", a)

    # diffgpu builtins ------------------------------------------------------
    def _geometry(self, name, dim):
        return self.em.op(f'"{N.full(name)}"() {{dim = {dim} : i64}} : () -> index', INDEX)

    def _geometry_builtin(self, node, name):
        return self.em.cast(self._geometry(name, self.axis(node, name)), I64)

    def builtin_thread_id(self, node):
        return self._geometry_builtin(node, "thread_id")

    def builtin_block_id(self, node):
        return self._geometry_builtin(node, "block_id")

    def builtin_block_dim(self, node):
        return self._geometry_builtin(node, "block_dim")

    def builtin_grid_dim(self, node):
        return self._geometry_builtin(node, "grid_dim")

    def builtin_global_id(self, node):
        ax = self.axis(node, "global_id")
        em = self.em
        b, d, t = (self._geometry(n, ax) for n in ("block_id", "block_dim", "thread_id"))
        bd = em.op(f"arith.muli {b.ref}, {d.ref} : index", INDEX)
        return em.cast(em.op(f"arith.addi {bd.ref}, {t.ref} : index", INDEX), I64)

    def builtin_syncthreads(self, node):
        self.call_args(node, 0, 0, "syncthreads")
        self.em.line(f'"{N.BARRIER}"() : () -> ()')
        return PyObj(None)

    def builtin_atomic_add(self, node):
        arr_node, idx_node, val_node = self.call_args(node, 3, 3, "atomic_add")
        arr = self.visit(arr_node)
        if not (isinstance(arr, Value) and arr.is_array):
            raise FrontendError(f"atomic_add() needs an array, got {describe(arr)}", arr_node)
        fake = ast.copy_location(ast.Subscript(arr_node, idx_node, ast.Load()), idx_node)
        v = self.visit(val_node)
        if isinstance(v, VecV):  # one atomic add per component (vectors.py)
            return self.vector_atomic_add(arr, idx_node, v, node)
        idx = self.indices(arr, fake)
        v = self.scalar(v, val_node, "atomic_add() value")
        et = Scalar(arr.type.elem)
        x = self.to_storage(v, et.ty)  # f16 / bf16: rounded from f32 (expressions.py)
        operands = ", ".join([arr.ref, x.ref] + [i.ref for i in idx])
        types = ", ".join([arr.type.mlir(), et.ty] + ["index"] * len(idx))
        old = self.em.op(f'"{N.ATOMIC_ADD}"({operands}) : ({types}) -> {et.ty}', et)
        return self.from_storage(old, et.ty)

    def builtin_shared_array(self, node):
        shape_node, dtype_node = self.call_args(node, 2, 2, "shared_array")
        if self.kind != "kernel":
            raise FrontendError("shared_array() is only allowed in a @dg.kernel", node)
        shp = self.visit(shape_node)
        items = shp.items if isinstance(shp, TupleV) else (shp,)
        dims = []
        for it in items:
            if not (isinstance(it, Const) and isinstance(it.value, int)
                    and not isinstance(it.value, bool)):
                raise FrontendError("shared_array() shape must be a constant int or a tuple "
                                    f"of constant ints, got {describe(it)}", shape_node)
            if it.value <= 0:
                raise FrontendError(f"shared_array() dimensions must be positive, got "
                                    f"{it.value}", shape_node)
            dims.append(it.value)
        from diffgpu.types import MAX_NDIM
        if not 1 <= len(dims) <= MAX_NDIM:
            raise FrontendError(f"shared_array() takes 1 to {MAX_NDIM} dimensions", shape_node)
        dt = self.visit(dtype_node)
        if not isinstance(dt, PyObj):
            raise FrontendError(f"shared_array() dtype must be a numpy dtype such as "
                                f"np.float32, got {describe(dt)}", dtype_node)
        t = ArrayT(dtype_elem(dt.obj, dtype_node), len(dims), tuple(dims))
        # one static array per call site, also when the frontend lowers the
        # site more than once (loop type rounds, code after an early exit)
        sites = self.__dict__.setdefault("shared_sites", {})  # id(call) -> Value
        known = sites.get(id(node))
        if known is not None and known.type == t:
            return known
        self.count_shared(t, node)
        name = self.em.fresh()
        self.prologue.append(f'{name} = "{N.SHARED_ALLOC}"() : () -> {t.mlir()} '
                             f'{self.em.loc}')
        sites[id(node)] = Value(name, t)
        return Value(name, t)

    def count_shared(self, t, node):
        """Static shared memory is limited per block: SHARED_LIMIT bytes for
        every target (a kernel that runs on the CPU must also build for the
        GPU; ptxas rejects more static shared memory than that). Counted over
        the whole module: kernels called from a kernel share its block."""
        size = BYTES[t.elem]
        for d in t.shape:
            size *= d
        self.mb.shared_bytes += size
        if self.mb.shared_bytes > SHARED_LIMIT:
            total = self.mb.shared_bytes
            mine = "" if total == size else f" ({total} bytes with the kernel's other shared arrays)"
            raise FrontendError(
                f"shared_array() of {size} bytes{mine} exceeds the {SHARED_LIMIT} bytes "
                "(48 KiB) of static shared memory a block can have on NVIDIA GPUs; use "
                "smaller tiles or fewer shared arrays", node)

    # user functions ---------------------------------------------------------
    def call_user(self, defn, node):
        pyf = defn.py_func
        nparams = pyf.__code__.co_argcount
        args = self.call_args(node, nparams, nparams, getattr(defn, "name", pyf.__name__))
        vals = []
        for a in args:
            v = self.visit(a)
            if not (isinstance(v, (Value, Const, VecV))):
                raise FrontendError(f"cannot pass a {describe(v)} to a function", a)
            vals.append(v)
        info = self.mb.specialize(defn, tuple(v.type for v in vals), node)
        ops = self.call_operands(vals)  # vectors.py: a vector passes its components
        argt = ", ".join(v.type.mlir() for v in vals)
        rett = ", ".join(t.mlir() for t in info.results)
        res = self.em.multi(f"func.call @{info.symbol}({', '.join(o.ref for o in ops)}) : "
                            f"({argt}) -> ({rett})", flat_types(info.results))
        res = self.regroup(res, info.results)
        if not res:
            return PyObj(None)
        return res[0] if len(res) == 1 else TupleV(tuple(res))

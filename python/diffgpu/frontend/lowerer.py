"""One Python function, specialized on its argument types, to one `func.func`.

`FunctionLowerer` is an `ast.NodeVisitor` whose allow-list is the `visit_*`
methods of its mixins (expressions, statements, builtins, differentiation);
anything else reaches `generic_visit` and is rejected, naming the construct.
"""
from __future__ import annotations

import ast
from contextlib import contextmanager

from diffgpu.frontend.builtins_lower import BuiltinMixin
from diffgpu.frontend.collectives import CollectiveMixin
from diffgpu.frontend.diff_lower import DiffMixin
from diffgpu.frontend.emitter import Emitter
from diffgpu.frontend.expressions import ExprMixin
from diffgpu.frontend.loops import LoopMixin
from diffgpu.frontend.operators import OperatorMixin
from diffgpu.frontend.scalar_builtins import ScalarBuiltinMixin
from diffgpu.frontend.source import FrontendError, debug
from diffgpu.frontend.statements import StmtMixin, assigned_in
from diffgpu.frontend.stop_gradient import StopGradientMixin
from diffgpu.frontend.values import Value, VecT
from diffgpu.frontend.vector_builtins import VectorBuiltinMixin
from diffgpu.frontend.vectors import VectorMixin

class Deferred(Exception):
    """Raised at a call module.MAX_NESTED lowerings deep whose callee is not lowered
    yet; carries the callee's request. Not an error: the visitor lets it pass."""

    def __init__(self, request):
        super().__init__(request[0].py_func.__name__)
        self.request = request


CONSTRUCT_NAMES = {
    ast.Lambda: "lambda", ast.ListComp: "list comprehension",
    ast.SetComp: "set comprehension", ast.DictComp: "dict comprehension",
    ast.GeneratorExp: "generator expression", ast.Dict: "dict literal",
    ast.List: "list literal", ast.Set: "set literal", ast.JoinedStr: "f-string",
    ast.Starred: "starred expression", ast.Slice: "slicing", ast.Await: "await",
    ast.Yield: "yield", ast.YieldFrom: "yield from",
    ast.NamedExpr: "assignment expression (:=)", ast.Try: "try statement",
    ast.With: "with statement", ast.AsyncWith: "async with", ast.Raise: "raise statement",
    ast.Assert: "assert statement", ast.Delete: "del statement",
    ast.Global: "global statement", ast.Nonlocal: "nonlocal statement",
    ast.Import: "import statement", ast.ImportFrom: "import statement",
    ast.FunctionDef: "nested function definition", ast.ClassDef: "class definition",
    ast.AsyncFunctionDef: "async function", ast.AsyncFor: "async for",
    ast.Match: "match statement",
}
if hasattr(ast, "TryStar"):
    CONSTRUCT_NAMES[ast.TryStar] = "try statement"


def construct_name(node) -> str:
    return CONSTRUCT_NAMES.get(type(node), type(node).__name__)


class FunctionLowerer(ExprMixin, OperatorMixin, StmtMixin, LoopMixin, BuiltinMixin,
                      CollectiveMixin, ScalarBuiltinMixin, VectorMixin, VectorBuiltinMixin,
                      StopGradientMixin, DiffMixin, ast.NodeVisitor):
    def __init__(self, mb, defn, kind, src, arg_types, symbol, is_entry):
        self.mb, self.defn, self.kind, self.src = mb, defn, kind, src
        self.py_func = defn.py_func
        self.arg_types, self.symbol, self.is_entry = arg_types, symbol, is_entry
        self.target = mb.target
        self.em = Emitter()
        self.env: dict = {}
        self.maybe_undefined: dict = {}
        self.prologue: list[str] = []
        self.results: list = []

    # visiting -------------------------------------------------------------
    @contextmanager
    def at(self, node):
        saved = self.em.loc
        if hasattr(node, "lineno"):
            self.em.loc = self.src.loc(node)
        try:
            yield
        finally:
            self.em.loc = saved

    def visit(self, node):
        with self.at(node):
            try:
                return super().visit(node)
            except FrontendError as e:
                if e.node is None:
                    e.node = node
                raise
            except Deferred:  # a callee to lower first (module.ModuleBuilder._bottom)
                raise
            except RecursionError:
                raise FrontendError("expression too deeply nested (split it into several "
                                    "statements)", node) from None
            except Exception as e:  # a bug of ours: still point at the user's code
                if debug():
                    raise
                raise FrontendError(
                    f"internal compiler error here ({type(e).__name__}: {e}); "
                    "set DIFFGPU_DEBUG=1 to see the compiler traceback", node) from e

    def generic_visit(self, node):
        raise FrontendError(f"unsupported construct in a kernel: {construct_name(node)}", node)

    # the function ----------------------------------------------------------
    def lower(self) -> str:
        fn = self.src.tree
        a = fn.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.defaults or a.posonlyargs:
            raise FrontendError("kernel parameters must be plain positional names "
                                "(no defaults, *args, **kwargs or keyword-only)", fn)
        if len(a.args) != len(self.arg_types):
            raise FrontendError(f"{fn.name!r} takes {len(a.args)} argument(s), "
                                f"got {len(self.arg_types)}", fn)
        self.local_names = set(assigned_in(fn)) | {p.arg for p in a.args}
        params = []
        for k, (p, t) in enumerate(zip(a.args, self.arg_types)):
            if isinstance(t, VecT):  # a vector: one parameter per component
                params += self.vector_param(k, p, t)
                continue
            ref = f"%a{k}"
            self.env[p.arg] = Value(ref, t)
            params.append(f"{ref}: {t.mlir()} {self.src.loc(p)}")
        with self.at(fn):
            self.init_loop_returns(fn)
            ret = self.visit_block(fn.body)
            vals = ret.values if ret else []
            if vals and self.kind == "kernel":
                raise FrontendError("a kernel cannot return a value", ret.node)
            with self.at(ret.node if ret else fn):
                outs = [self.em.value(v) for v in vals]
                self.results = self.group_results([o.type for o in outs])
                if outs:
                    self.em.line(f"func.return {', '.join(o.ref for o in outs)} : "
                                 f"{', '.join(o.type.mlir() for o in outs)}")
                else:
                    self.em.line("func.return")
        attrs = ["diffgpu.kernel"] if self.is_entry and self.kind == "kernel" else []
        attrs.append(f"diffgpu.target = {self.target}")
        res = ""
        if self.results:
            res = " -> (" + ", ".join(t.mlir() for t in self.results) + ")"
        head = (f"func.func @{self.symbol}({', '.join(params)}){res} "
                f"attributes {{{', '.join(attrs)}}} {{")
        body = ["  " + ln for ln in self.prologue + self.em.buf]
        return "\n".join([head] + body + [f"}} {self.src.loc(fn)}"])

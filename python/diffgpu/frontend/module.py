"""A module of specialized functions: the entry and everything it calls.

Each (Python function, argument types) pair becomes one `func.func`; the
first specialization of a function gets its plain name, later ones a numeric
suffix (`@f`, `@f_1`, ...). Callees are device functions (no
`diffgpu.kernel`) with the target of the module.
"""
from __future__ import annotations

import re
import weakref
from dataclasses import dataclass

from diffgpu.frontend.lowerer import Deferred, FunctionLowerer
from diffgpu.frontend.source import FrontendError, FunctionSource
from diffgpu.frontend.types_infer import ArrayT, Scalar

#: parsed sources (the AST is never mutated), dropped with their functions
_SOURCES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_SYMBOL_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_$.]*$")


#: lowerings of callees nested on the Python stack before the next callee
#: is lowered at its bottom instead (ModuleBuilder._bottom): deep call chains
#: must not use up the Python stack that deeply nested expressions need
MAX_NESTED = 8


@dataclass
class FuncInfo:
    symbol: str
    results: tuple  # Scalar types (with weak flags) of the results


def from_api_type(t):
    """types.ArrayType/ScalarType -> ArrayT/Scalar."""
    from diffgpu.types import MAX_NDIM, ArrayType, ScalarType
    if isinstance(t, ArrayType):
        if not 1 <= t.ndim <= MAX_NDIM:
            raise FrontendError(f"arrays must have 1 to {MAX_NDIM} dimensions, got {t.ndim}")
        return ArrayT(t.element, t.ndim)
    if isinstance(t, ScalarType):
        return Scalar(t.element)
    raise FrontendError(f"unsupported argument type {t!r}")


class ModuleBuilder:
    def __init__(self, target: str):
        self.target = target
        self.funcs: dict = {}  # (py_func, types) -> FuncInfo
        self.texts: list[str] = []
        self.stack: list = []  # the functions being lowered, callers first
        self.nested = 0  # lowerings on the Python stack now
        self.used: set[str] = set()
        self.shared_bytes = 0  # static shared memory of all shared_array() calls

    def source(self, py_func) -> FunctionSource:
        src = _SOURCES.get(py_func)
        if src is None or src[0] is not py_func.__code__:
            src = (py_func.__code__, FunctionSource(py_func))
            _SOURCES[py_func] = src
        return src[1]

    def symbol(self, name: str) -> str:
        base = name if _SYMBOL_RE.match(name) else "fn"
        sym, k = base, 0
        while sym in self.used:
            k += 1
            sym = f"{base}_{k}"
        self.used.add(sym)
        return sym

    def specialize(self, defn, types: tuple, call_node=None, entry=False,
                   symbol: str | None = None) -> FuncInfo:
        key = (defn.py_func, types)
        if key in self.funcs:
            return self.funcs[key]
        if defn.py_func in self.stack:
            raise FrontendError(
                f"recursion is not supported: {defn.py_func.__name__!r} calls itself"
                + ("" if self.stack[-1] is defn.py_func else " through other functions"),
                call_node)
        request = (defn, types, entry, symbol)
        if self.nested == 0:
            return self._bottom(request)
        if self.nested >= MAX_NESTED:
            raise Deferred(request)
        return self._lower(request)

    def _bottom(self, request) -> FuncInfo:
        """Lower `request` with its callees, none more than MAX_NESTED
        lowerings deep on the Python stack: a caller that meets a call
        MAX_NESTED deep is abandoned (`Deferred`), the callee lowered here at
        the bottom and the caller lowered again. A chain of n functions costs
        about 2n lowerings and never the Python stack of n."""
        pending = [request]  # each one calls the next (through abandoned ones)
        while pending:
            self.stack = [r[0].py_func for r in pending[:-1]]
            try:
                info = self._lower(pending[-1])
            except Deferred as d:
                pending.append(d.request)
                continue
            pending.pop()
        return info

    def _lower(self, request) -> FuncInfo:
        defn, types, entry, symbol = request
        py_func = defn.py_func
        src = self.source(py_func)
        sym = self.symbol(symbol or getattr(defn, "name", None) or py_func.__name__)
        kind = getattr(defn, "kind", "func")
        low = FunctionLowerer(self, defn, kind, src, types, sym, entry)
        shared_bytes = self.shared_bytes
        self.stack.append(py_func)
        self.nested += 1
        try:
            text = low.lower()
        except FrontendError as e:
            if e.source is None:
                e.source = src
            raise
        except Deferred:  # lowered again later: nothing of this attempt stays
            self.used.discard(sym)
            self.shared_bytes = shared_bytes
            raise
        finally:
            self.stack.pop()
            self.nested -= 1
        info = FuncInfo(sym, tuple(low.results))
        self.funcs[(py_func, types)] = info
        self.texts.append(text)
        return info

    def text(self) -> str:
        return "module {\n" + "\n".join(self.texts) + "\n}\n"

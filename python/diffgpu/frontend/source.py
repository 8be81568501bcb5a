"""Source of a kernel: its AST, locations, and user-facing errors.

`FrontendError(msg, node)` is raised anywhere in the frontend; the function
being lowered attaches its `FunctionSource`, and `to_compile_error` turns it
into a `diffgpu.errors.CompileError` with `file:line:col`, the source line and
a caret.
"""
from __future__ import annotations

import ast
import inspect
import os
import sys

from diffgpu.errors import CompileError


class FrontendError(Exception):
    """A user error at an AST node (internal; becomes a CompileError)."""

    def __init__(self, msg: str, node=None):
        super().__init__(msg)
        self.msg = msg
        self.node = node
        self.source: FunctionSource | None = None


class FunctionSource:
    """The parsed `def` of a Python function, with its file and lines."""

    def __init__(self, py_func):
        # (no reference to py_func: module.py caches sources in a dict weakly
        # keyed by the function, which a strong reference would keep alive)
        self.filename = py_func.__code__.co_filename
        try:
            lines, start = inspect.getsourcelines(py_func)
        except (OSError, TypeError):
            raise FrontendError(
                f"cannot read the source of {py_func.__name__!r}: kernels must "
                "be defined in a file") from None
        self.first_line = max(start, 1)
        text = "".join(lines)
        shift = 0
        if text[:1] in (" ", "\t"):  # nested def: keep columns exact
            text, shift = "if 1:\n" + text, 1
        tree = _parse(text)
        node = tree.body[0]
        if shift:
            node = node.body[0]
        if not isinstance(node, ast.FunctionDef):
            raise FrontendError(f"{py_func.__name__!r} is not a plain 'def' function")
        self.tree = node
        self._delta = self.first_line - 1 - shift
        self._lines = lines
        self._quoted = '"' + self.filename.replace("\\", "\\\\").replace('"', '\\"') + '"'

    def line_of(self, node) -> int:
        return getattr(node, "lineno", self.tree.lineno) + self._delta

    def loc(self, node) -> str:
        """`loc("file":LINE:COL)` (1-based column) of an AST node."""
        col = getattr(node, "col_offset", 0) + 1
        return f"loc({self._quoted}:{self.line_of(node)}:{col})"

    def source_line(self, line: int) -> str | None:
        idx = line - self.first_line
        if 0 <= idx < len(self._lines):
            return self._lines[idx]
        return None


PARSE_RECURSION_LIMIT = 100_000


def _parse(text: str):
    """ast.parse with head room: CPython builds the AST recursively, so a flat
    sum of n terms needs about n levels (the default limit of 1000 stops
    near 2,500 terms); what the user's Python compiled, possibly under a
    raised limit, must parse here too. (100,000 levels of AST building fit
    in the C stack; deep parentheses stop earlier, in the parser.)"""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(2 * limit, PARSE_RECURSION_LIMIT))
    try:
        return ast.parse(text)
    finally:
        sys.setrecursionlimit(limit)


def to_compile_error(err: FrontendError) -> CompileError:
    src, node = err.source, err.node
    if src is None:
        return CompileError(err.msg)
    if node is None:
        node = src.tree
    line = src.line_of(node)
    return CompileError(err.msg, src.filename, line, getattr(node, "col_offset", 0),
                        src.source_line(line))


def memo_node(fn):
    """Cache a pure function of an AST node on the node (sources are cached
    and never mutated, so analyses run once per node)."""
    attr = f"_diffgpu_{fn.__name__}"

    def wrapper(node):
        try:
            return node.__dict__[attr]
        except KeyError:
            value = node.__dict__[attr] = fn(node)
            return value
    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    return wrapper


def debug() -> bool:
    return os.environ.get("DIFFGPU_DEBUG", "") not in ("", "0")

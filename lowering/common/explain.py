"""Optimisation remarks: why a pass left code as it was (like LLVM's `-Rpass-missed`).

A pass that looks at a candidate and decides not to rewrite it says why:

    from diffgpu.lowering.common import explain
    explain.missed("stencil-adjoint", op, "x[i * W + j]: index not affine in the thread id")

and one that rewrites it may say what it did:

    explain.applied("stencil-adjoint", op, "dx: 25 offsets gathered, no atomics")

Remarks go to the innermost `collect()` of this thread (the compile driver,
python/diffgpu/driver/compiler.py, wraps every pipeline run in one and keeps
them with the compiled program); outside any `collect()` they are dropped,
so passes call these functions unconditionally. A remark is one line:

    k.py:7:9: remark: stencil-adjoint [missed] in conv2d: dx: <reason>

Each pass reports a decision once per candidate and run: the remarks of one
compile are deduplicated, in the order they were made.
"""
from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass

from diffgpu.lowering.common.diagnostics import format_location

_local = threading.local()


@dataclass(frozen=True)
class Remark:
    """One decision of a pass: `kind` "missed" or "applied", the pass's
    short name, where (`file:line:col` of the op, or empty), the function it
    is in, and the message."""

    kind: str
    pass_name: str
    where: str
    function: str
    message: str

    def text(self) -> str:
        head = f"{self.where}: " if self.where else ""
        inside = f" in {self.function}" if self.function else ""
        return f"{head}remark: {self.pass_name} [{self.kind}]{inside}: {self.message}"

    def __str__(self) -> str:
        return self.text()


@contextlib.contextmanager
def collect():
    """Collect the remarks made inside (this thread) into the list yielded;
    an enclosing `collect()` receives them too when this one ends."""
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    found = _Remarks()
    stack.append(found)
    try:
        yield found
    finally:
        stack.pop()
        if stack:
            for r in found:
                stack[-1].add(r)


class _Remarks(list):
    """A list of distinct remarks, in the order they were first made."""

    def __init__(self):
        super().__init__()
        self._seen = set()

    def add(self, remark) -> None:
        if remark not in self._seen:
            self._seen.add(remark)
            self.append(remark)


def active() -> bool:
    """Is some `collect()` listening (a pass may skip building a costly message)?"""
    return bool(getattr(_local, "stack", None))


def _function_of(op) -> str:
    cur = op.operation if hasattr(op, "operation") else op
    for _ in range(64):
        if cur is None:
            return ""
        if cur.name == "func.func" and "sym_name" in cur.attributes:
            return str(cur.attributes["sym_name"]).strip('"')
        parent = cur.parent
        cur = parent.operation if parent is not None else None
    return ""


def _record(kind: str, pass_name: str, op, message: str) -> None:
    stack = getattr(_local, "stack", None)
    if not stack:
        return
    where, function = "", ""
    if op is not None:
        try:
            where = format_location(op.location)
            where = "" if where.startswith("loc(") else where
            function = _function_of(op)
        except Exception:  # an erased op or a detached one: the message alone
            where, function = "", ""
    stack[-1].add(Remark(kind, pass_name, where, function, message))


def missed(pass_name: str, op, reason: str) -> None:
    """Pass `pass_name` did not rewrite `op` (None: nothing to point at) because `reason`."""
    _record("missed", pass_name, op, reason)


def applied(pass_name: str, op, what: str) -> None:
    """Pass `pass_name` rewrote `op`: `what` it did."""
    _record("applied", pass_name, op, what)


def render(remarks) -> str:
    """The remarks' lines (Remark objects or their texts)."""
    return "\n".join(r.text() if isinstance(r, Remark) else str(r) for r in remarks)


__all__ = ["Remark", "collect", "active", "missed", "applied", "render"]

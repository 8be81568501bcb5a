"""Loading host programs: LLVM-dialect text (or module) -> an ExecutionEngine.

This is the runtime's only module that imports MLIR, and only inside its
functions: the ExecutionEngine is MLIR's JIT, so loading a host program needs
the `mlir` bindings even when nothing is compiled (a disk-cache hit parses the
cached LLVM-dialect text). It never imports the compiler (`lowering`,
`dialects`): the text holds upstream LLVM-dialect ops only.

    loaded = load_text(llvm_text, opt_level=2)   # a cache hit
    loaded = load_module(module, opt_level=2)    # just compiled: no re-parse
    addr = loaded.engine.raw_lookup("_mlir_ciface_k")
    loaded.string_list("diffgpu.host_accesses")  # a module attribute (abi.py)

Text is parsed in one context per thread, created on first use (a context
costs ~10 ms).
"""
from __future__ import annotations

import os
import threading

from diffgpu.errors import CompileError

_LOCAL = threading.local()
_INHERITED: list = []  # a forked child's inherited context: kept, never used


def _after_fork_in_child() -> None:
    _INHERITED.append(dict(_LOCAL.__dict__))
    _LOCAL.__dict__.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class Loaded:
    """A JIT-compiled module: its engine, and what must stay alive with it."""

    def __init__(self, engine, module, keep=()):
        self.engine = engine
        self.module = module
        self.keep = tuple(keep)

    def string_list(self, attr: str) -> list[str] | None:
        """The module's string-array attribute `attr`, or None if absent."""
        from diffgpu._mlir import ir

        attrs = self.module.operation.attributes
        if attr not in attrs:
            return None
        return [ir.StringAttr(a).value for a in ir.ArrayAttr(attrs[attr])]


def _context():
    ctx = getattr(_LOCAL, "ctx", None)
    if ctx is None:
        from diffgpu._mlir import ir
        ctx = _LOCAL.ctx = ir.Context()
    return ctx


def _diagnostics(exc) -> str:
    lines = [f"{d.location}: error: {d.message}"
             for d in getattr(exc, "error_diagnostics", None) or []]
    return "\n".join(lines) or str(exc)


def parse_text(text: str):
    """Parse LLVM-dialect text in this thread's loader context."""
    from diffgpu._mlir import MLIRError, ir

    ctx = _context()
    try:
        with ctx:
            return ir.Module.parse(text)
    except MLIRError as exc:
        raise CompileError(f"cannot parse lowered host module: {_diagnostics(exc)}") from None


def load_text(text: str, opt_level: int = 2) -> Loaded:
    """JIT-compile LLVM-dialect text (e.g. a cache entry)."""
    module = parse_text(text)
    return load_module(module, opt_level, keep=(module.context,))


def load_module(module, opt_level: int = 2, keep=()) -> Loaded:
    """JIT-compile an LLVM-dialect `ir.Module` (kept alive with the engine)."""
    from diffgpu._mlir import execution_engine

    if opt_level not in (0, 1, 2, 3):
        raise ValueError(f"opt_level must be 0, 1, 2 or 3, got {opt_level!r}")
    if execution_engine is None:
        raise CompileError("this MLIR distribution has no ExecutionEngine: the CPU runtime "
                           "is unavailable")
    try:
        engine = execution_engine.ExecutionEngine(module, opt_level=opt_level)
    except Exception as exc:  # JIT failure (e.g. unresolved symbol): not the user's bug
        raise CompileError(f"JIT compilation of the host module failed: {exc}") from None
    return Loaded(engine, module, (module.context,) + tuple(keep))

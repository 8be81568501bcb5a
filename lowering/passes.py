"""diffgpu's passes and pipelines, registered: the one list of them.

The driver (`diffgpu-opt`), the compile driver (python/diffgpu/driver/compiler.py)
and the tests all read it; there is no second list. A pass is a small class:

    @register_pass
    @dataclass
    class VerifyTargets(ModulePass):
        '''Docstring with a short MLIR example.'''
        name: ClassVar[str] = "diffgpu-verify-targets"
        summary: ClassVar[str] = "check that every op's target matches its parent's"

        def run(self, module):          # module: the builtin.module Operation
            ...                         # report with self.error(op, msg)

Options are the dataclass fields (str, int, bool, float); text like
`{chip=sm_90 O=3}` fills them (pipelines.py). A pipeline is a function from
its options to a list of pipeline elements, any mix of our passes and
upstream ones: `register_pipeline`.
"""
from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from typing import Callable, ClassVar

#: modules whose import registers passes/pipelines (decorators below)
_PASS_MODULES = (
    "diffgpu.lowering.checks.verify_targets",
    "diffgpu.lowering.checks.barriers",
    "diffgpu.lowering.checks.collectives",
    "diffgpu.lowering.autodiff",
    "diffgpu.lowering.gpu.to_gpu",
    "diffgpu.lowering.gpu.atomics",
    "diffgpu.lowering.gpu.vector_access",
    "diffgpu.lowering.reduce.vector_red",
    "diffgpu.lowering.reduce.aggregate_atomics",
    "diffgpu.lowering.reduce.block_sums",
    "diffgpu.lowering.reduce.combine_adds",
    "diffgpu.lowering.reduce.stencil_adjoint",
    "diffgpu.lowering.host.to_host",
    "diffgpu.lowering.common.llvm_flags",
    "diffgpu.lowering.host.collectives",
    "diffgpu.lowering.gpu.collectives",
    "diffgpu.lowering.common.chunk_blocks",
    "diffgpu.lowering.common.special_math",
    "diffgpu.lowering.checks.lowered_check",
)

_PASSES: dict[str, type] = {}
_PIPELINES: dict[str, "PipelineInfo"] = {}
_UPSTREAM_CHECKS: dict[str, Callable[[dict], None]] = {}
#: pipeline -> element appended after it: the check of what it promises
_PROMISES: dict[str, str] = {}
_loaded = False


class PassFailure(Exception):
    """Raised by a pass after it has emitted its error diagnostics."""


class ModulePass:
    """Base of diffgpu's passes; each runs on a `builtin.module`."""

    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""

    def run(self, module) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    # Diagnostics -----------------------------------------------------------
    def error(self, op, message: str) -> None:
        """Emit an error at `op` (or a Location); the pass fails at its end."""
        loc = op if _is_location(op) else getattr(op, "operation", op).location
        loc.emit_error(message)
        self._failed = True

    def fail(self, op, message: str):
        """Emit an error and stop the pass at once."""
        self.error(op, message)
        raise PassFailure(message)

    def __call__(self, op, pass_handle) -> None:
        self._failed = False
        try:
            self.run(op)
        except PassFailure:
            self._failed = True
        except Exception as exc:  # an internal bug: a diagnostic, not a traceback
            if os.environ.get("DIFFGPU_DEBUG"):
                raise
            op.location.emit_error(
                f"internal error in pass '{self.name}': {type(exc).__name__}: {exc} "
                "(set DIFFGPU_DEBUG=1 for the traceback)")
            self._failed = True
        if self._failed:
            pass_handle.signal_pass_failure()


def _is_location(x) -> bool:
    return type(x).__name__ == "Location"


@dataclass
class PipelineInfo:
    name: str
    summary: str
    options: type  # a dataclass of the pipeline's options
    expand: Callable[[object], list[str]]  # options -> pipeline elements


def register_pass(cls):
    """Class decorator: add a ModulePass subclass to the registry."""
    assert cls.name and cls.name not in _PASSES, cls.name
    _PASSES[cls.name] = cls
    return cls


def register_pipeline(name: str, summary: str, options: type):
    """Decorator on `expand(opts) -> list[str]` registering a pipeline."""
    def deco(fn):
        assert name not in _PIPELINES, name
        _PIPELINES[name] = PipelineInfo(name, summary, options, fn)
        return fn
    return deco


def register_promise(pipeline: str, check: str) -> None:
    """Append the element `check` to every expansion of `pipeline` (the
    end check of a pipeline that promises LLVM: lowered_check.py)."""
    _PROMISES[pipeline] = check


def register_upstream_check(pass_name: str):
    """Decorator on `check(options: dict[str, str])`: validates options of an
    upstream pass before MLIR sees them (raise PipelineError)."""
    def deco(fn):
        _UPSTREAM_CHECKS[pass_name] = fn
        return fn
    return deco


def load_all() -> None:
    """Import every module that registers passes (idempotent)."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    for mod in _PASS_MODULES:
        importlib.import_module(mod)


def passes() -> dict[str, type]:
    load_all()
    return dict(_PASSES)


def pipelines() -> dict[str, PipelineInfo]:
    load_all()
    return dict(_PIPELINES)

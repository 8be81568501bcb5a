"""Diagnostics of a pipeline run: formatting and routing.

Every diagnostic of a run goes to our own handler (`run_passes`), errors
included, and comes back as `file:line:col: error: message` lines (notes
indented below) in a PipelineRunError:

    try:
        run_passes("diffgpu-to-host", module)
    except PipelineRunError as exc:
        print(exc)     # k.py:3:5: error: 'diffgpu.barrier' ...
"""
from __future__ import annotations

from dataclasses import dataclass, field

from diffgpu.lowering.pipelines import build_pass_manager


@dataclass
class Diagnostic:
    """One error of a run, read out of MLIR: where (`file`, `line`, `col`,
    1-based, or None when the location names no file position; `where` is
    the printed location then, or empty for a bare message), the message and
    the notes (Diagnostics)."""

    where: str
    message: str
    file: str | None = None
    line: int | None = None
    col: int | None = None
    notes: list = field(default_factory=list)

    def text(self, kind: str = "error") -> str:
        """`where: kind: message` (the bare message when `where` is empty)."""
        return f"{self.where}: {kind}: {self.message}" if self.where else self.message


class PipelineRunError(Exception):
    """A pipeline that failed; the message holds its diagnostics, one per line
    (`file:line:col: error: message`, notes indented below); `diagnostics`
    holds them as Diagnostic records (compiler.py shows the kernel's source
    line under each)."""

    def __init__(self, message: str, diagnostics=()):
        super().__init__(message)
        self.diagnostics = list(diagnostics)


def file_position(loc):
    """(file, line, col) of a Location, through names, call sites and
    fusions; None when it names no file position (`loc(unknown)`)."""
    for _ in range(32):
        if loc.is_a_file():
            return loc.filename, loc.start_line, loc.start_col
        if loc.is_a_name():
            loc = loc.child_loc
        elif loc.is_a_callsite():
            loc = loc.callee
        elif loc.is_a_fused() and len(loc.locations):
            loc = loc.locations[0]
        else:
            break
    return None


def format_location(loc) -> str:
    """`file:line:col` of a Location (through names, call sites, fusions)."""
    pos = file_position(loc)
    return "%s:%d:%d" % pos if pos else str(loc)


def location_text(loc) -> str:
    """`loc("f.py":3:5)` -> `f.py:3:5` (best effort for other locations)."""
    text = str(loc)
    if text.startswith("loc(") and text.endswith(")"):
        text = text[4:-1]
    return text.replace('"', "")


def diagnostic(d) -> Diagnostic:
    """The Diagnostic record of an MLIR diagnostic (or DiagnosticInfo)."""
    pos = file_position(d.location)
    file, line, col = pos if pos else (None, None, None)
    where = "%s:%d:%d" % pos if pos else str(d.location)
    return Diagnostic(where, d.message, file, line, col, [diagnostic(n) for n in d.notes])


def render(diags) -> str:
    """`file:line:col: error: message` lines of Diagnostics (notes indented)."""
    lines = []
    for d in diags:
        lines.append(d.text())
        lines.extend("  " + n.text("note") for n in d.notes)
    return "\n".join(lines)


def format_diagnostics(exc) -> str:
    """`file:line:col: error: message` lines of an MLIRError (notes indented)."""
    return render(diagnostic(d) for d in getattr(exc, "error_diagnostics", []) or []) \
        or str(exc)


def run_passes(pipeline, module) -> None:
    """Run `pipeline` (text, element list or PassManager) on `module`.

    Every diagnostic goes to our own handler, errors included: otherwise the
    bindings capture errors inside `pm.run` and abort the whole process when
    a pass emits an error yet succeeds. Raises PipelineRunError with the
    collected diagnostics if anything failed.
    """
    from diffgpu._mlir import MLIRError

    ctx = module.context
    pm = pipeline if hasattr(pipeline, "run") else build_pass_manager(pipeline, ctx)
    errors: list[Diagnostic] = []

    def on_diag(d) -> bool:
        try:
            if "ERROR" in str(d.severity).upper():
                errors.append(diagnostic(d))
        except Exception:  # never let a handler raise into MLIR
            pass
        return True

    old = ctx.emit_error_diagnostics
    ctx.emit_error_diagnostics = True
    handler = ctx.attach_diagnostic_handler(on_diag)
    try:
        pm.run(module.operation)
        failed = False
    except MLIRError as exc:
        failed = True
        found = [diagnostic(d) for d in getattr(exc, "error_diagnostics", None) or []]
        errors.extend(found or ([] if errors else [Diagnostic("", str(exc))]))
    finally:
        handler.detach()
        ctx.emit_error_diagnostics = old
    if failed or errors:
        raise PipelineRunError(render(errors), errors)

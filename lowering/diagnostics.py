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

from diffgpu.lowering.pipelines import build_pass_manager


class PipelineRunError(Exception):
    """A pipeline that failed; the message holds its diagnostics, one per line
    (`file:line:col: error: message`, notes indented below)."""


def format_location(loc) -> str:
    """`file:line:col` of a Location (through names, call sites, fusions)."""
    for _ in range(32):
        if loc.is_a_file():
            return f"{loc.filename}:{loc.start_line}:{loc.start_col}"
        if loc.is_a_name():
            loc = loc.child_loc
        elif loc.is_a_callsite():
            loc = loc.callee
        elif loc.is_a_fused() and len(loc.locations):
            loc = loc.locations[0]
        else:
            break
    return str(loc)


def format_diagnostics(exc) -> str:
    """`file:line:col: error: message` lines of an MLIRError (notes indented)."""
    lines = []
    for d in getattr(exc, "error_diagnostics", []) or []:
        lines.append(f"{format_location(d.location)}: error: {d.message}")
        lines.extend(f"  {format_location(n.location)}: note: {n.message}" for n in d.notes)
    return "\n".join(lines) or str(exc)


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
    errors: list[str] = []

    def on_diag(d) -> bool:
        try:
            if "ERROR" in str(d.severity).upper():
                errors.append(f"{format_location(d.location)}: error: {d.message}")
                errors.extend(f"  {format_location(n.location)}: note: {n.message}"
                              for n in d.notes)
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
        if getattr(exc, "error_diagnostics", None) or not errors:
            errors.append(format_diagnostics(exc))
    finally:
        handler.detach()
        ctx.emit_error_diagnostics = old
    if failed or errors:
        raise PipelineRunError("\n".join(errors))

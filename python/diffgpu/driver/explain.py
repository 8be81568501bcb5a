"""`DIFFGPU_EXPLAIN=1` and `dg.explain`: the optimisations that did not apply, and why.

The passes report their decisions through lowering/common/explain.py
(`missed`: a candidate they left as it was, with the reason; `applied`: a
rewrite). Every compile collects them and the program keeps them: they are
stored in its cache entry (`payload["remarks"]`, one line each), so a
program loaded from the disk cache explains itself exactly like a fresh
compile, and explaining never changes the cache key or the code.

- `DIFFGPU_EXPLAIN=1` (or inside `with dg.explain():`): each program a
  launch, `dg.autodiff` or `dg.vjp` selects is reported on stderr (or the
  context's `file`) the first time this process selects it (compiled or
  loaded from disk; a launch repeated on the fast path reports nothing new).
- `dg.explain(kernel[grid, block], *args, target=None)`: the remarks of the
  program that launch would run (compiled or loaded, not run), as a list of
  lines; `print(*dg.explain(...), sep="\\n")`.

docs/explain.md lists the remarks of each pass.
"""
from __future__ import annotations

from diffgpu.driver.remarks import ENV, Explaining, enabled  # noqa: F401

def explain(launcher=None, *args, target: str | None = None, file=None):
    """`dg.explain()`: a context manager that turns reporting on (see the
    module docstring); `dg.explain(False)` turns it off inside.
    `dg.explain(kernel[grid, block], *args, target=None)`: the remark lines
    of the program that launch would run (`target`: "host" or "sm_XX", by
    default the one the arguments select; a GPU target compiles PTX without
    a GPU)."""
    if launcher is None or isinstance(launcher, bool):
        if args:
            raise TypeError("dg.explain(): arguments need a launch, dg.explain(k[grid, block], ...)")
        return Explaining(True if launcher is None else launcher, file)
    if not getattr(launcher, "__diffgpu_launcher__", False):
        raise TypeError(f"dg.explain takes a launch, kernel[grid, block], got "
                        f"{type(launcher).__name__}")
    from diffgpu.driver.launch import check_launch_args, facts_for, get_program
    from diffgpu.driver.stages import resolve_target

    kernel = launcher.kernel
    sig = check_launch_args(kernel, args)
    target = resolve_target(target, args, kernel)
    program = get_program(kernel, sig.types, target,
                          facts=facts_for(args, sig.types, target, launcher.grid, launcher.block))
    remarks = program.payload.get("remarks")
    return list(remarks) if remarks is not None else []


__all__ = ["explain", "enabled", "ENV", "Explaining"]

"""Reporting the passes' remarks of the programs a process selects
(`DIFFGPU_EXPLAIN=1`, `with dg.explain():`; driver/explain.py has the user
side and docs/explain.md the design). driver/launch.py calls `report` for
each program it compiles or loads; it prints nothing unless reporting is on.
"""
from __future__ import annotations

import contextvars
import os
import sys

ENV = "DIFFGPU_EXPLAIN"
_context: contextvars.ContextVar = contextvars.ContextVar("diffgpu_explain", default=None)


def enabled() -> bool:
    """Is reporting on: inside `with dg.explain():`, else `DIFFGPU_EXPLAIN` set
    (to anything but 0/false/no/off/empty)?"""
    ctx = _context.get()
    if ctx is not None:
        return ctx.on
    return os.environ.get(ENV, "").strip().lower() not in ("", "0", "false", "no", "off")


def header(name: str, target: str, diff=None) -> str:
    what = f" [{diff[0]} {', '.join(diff[1])}]" if diff else ""
    return f"diffgpu explain: {name}{what} on {target}:"


def report(name: str, target: str, diff, payload: dict) -> None:
    """Print (or hand to the active `dg.explain()` context) the remarks of a
    program just selected, when reporting is on."""
    if not enabled():
        return
    remarks = payload.get("remarks")
    lines = [header(name, target, diff)]
    if remarks is None:
        lines.append("  (this program was compiled without remarks: a bundle or an "
                     "entry of an older diffgpu)")
    else:
        lines.extend("  " + r for r in remarks)
        if not remarks:
            lines.append("  (no remarks: nothing was left undone)")
    ctx = _context.get()
    if ctx is not None:
        ctx.lines.extend(lines)
    out = (ctx.file if ctx is not None else None) or sys.stderr
    if ctx is None or ctx.file is not False:
        print("\n".join(lines), file=out)


class Explaining:
    """`with dg.explain() as ex:`: reporting on inside (thread- and task-local);
    `ex.lines` holds what was reported; `file`: where to print (default
    stderr; False: collect only)."""

    def __init__(self, on: bool = True, file=None):
        self.on, self.file, self.lines = on, file, []
        self._token = None

    def __enter__(self):
        self._token = _context.set(self)
        return self

    def __exit__(self, *exc):
        _context.reset(self._token)
        return False


__all__ = ["ENV", "enabled", "report", "Explaining"]

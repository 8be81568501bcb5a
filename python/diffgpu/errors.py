"""User-facing exceptions, and `user_facing`, the boundary where they reach
the user. Importing this never imports MLIR (or anything of diffgpu)."""
from __future__ import annotations

import functools
import os


class DiffgpuError(Exception):
    """Base of every error diffgpu raises on purpose."""


class CompileError(DiffgpuError):
    """A kernel that cannot be compiled: unsupported Python, bad types, or a
    diagnostic from a pass. The message names `file:line:col`, shows the
    source line and a caret under the construct."""

    def __init__(self, message: str, filename: str | None = None,
                 line: int | None = None, col: int | None = None,
                 source_line: str | None = None):
        self.msg = message
        self.filename, self.line, self.col = filename, line, col
        self.source_line = source_line
        super().__init__(self._format())

    def _format(self) -> str:
        if self.filename is None or self.line is None:
            return self.msg
        col = self.col if self.col is not None else 0
        text = f"{self.filename}:{self.line}:{col + 1}: error: {self.msg}"
        if self.source_line is not None:
            src = self.source_line.rstrip("\n")
            stripped = src.lstrip()
            indent = len(src) - len(stripped)
            text += "\n    " + stripped + "\n    " + " " * max(col - indent, 0) + "^"
        return text


class LaunchError(DiffgpuError, ValueError):
    """A launch that cannot run (arity, dtypes, devices, grid/block); raised
    before anything runs, with the inputs untouched."""


class ArgumentTypeError(LaunchError, TypeError):
    """An argument of the wrong Python type for a keyword of the API
    (`dg.vjp(..., outputs="yes")`, a string tangent); a LaunchError that is
    also a TypeError."""


class NoDerivativeError(DiffgpuError, KeyError):
    """Looking up, in the result of `dg.vjp` / `dg.jvp`, a parameter that has
    no result; the message says why (an integer, held constant, an output)."""

    __str__ = Exception.__str__  # the message, not KeyError's repr of it


class RaceError(DiffgpuError, RuntimeError):
    """A race-checked host launch (`with dg.racecheck():` or
    DIFFGPU_RACECHECK=1) found two accesses to one array element by
    different threads, in one barrier interval, at least one a write or
    exactly one atomic (or, as DivergentBarrierError, a barrier that only
    some threads of a block reached). The message names the array and
    element, both threads (block and thread ids) and both source lines;
    `array` and `index` hold the first two. The launch ran to its end."""

    def __init__(self, message: str, array: str | None = None, index: str | None = None):
        super().__init__(message)
        self.array, self.index = array, index


class DivergentBarrierError(RaceError):
    """A race-checked host launch reached a `dg.syncthreads()` with only some
    threads of a block (the others skipped it in a branch or left a loop
    early): on a GPU the block hangs or reads stale shared memory. The
    message names the kernel, the barrier's source line, the block and a
    thread that did not reach it; `site` holds the barrier's `file:line:col`."""

    def __init__(self, message: str, site: str | None = None):
        super().__init__(message)
        self.site = site


def user_facing(fn=None, *, also: tuple = ()):
    """Errors diffgpu raises on purpose (DiffgpuError, and the classes in
    `also`) reach the user without the frames of diffgpu's internals
    (DIFFGPU_DEBUG=1 keeps them): the traceback is the user's frames, then
    this one re-raise at the public API boundary. Every entry point a user
    calls (launches, `kernel[grid, block]`, dg.compile, dg.autodiff,
    dg.gradcheck, ...) is wrapped; nested wrapped calls re-raise once more
    at the outermost one."""
    if fn is None:
        return functools.partial(user_facing, also=also)
    caught = (DiffgpuError,) + tuple(also)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except caught as exc:
            if os.environ.get("DIFFGPU_DEBUG"):
                raise
            raise exc.with_traceback(None) from None
    return wrapper

"""Per-thread collectors of facts that passes find while a compile runs.

A pass that learns something the runtime needs (the collectives a kernel
reaches, the words of its heap tape, the rows a reverse program handles per
block) hands it to the compiles that asked for it: the driver opens
`with RECORDER.record() as found:` around a compile, and the pass adds to
`RECORDER.innermost()` (the compile that runs it) or to every dict of
`RECORDER.open()` (nested compiles and the ones around them alike). Each
thread has its own stack, so concurrent compiles never see each other's.
"""
from __future__ import annotations

import contextlib
import threading


class Recorder:
    """A stack, per thread, of the dicts of the `record()` blocks open."""

    def __init__(self):
        self._local = threading.local()

    def _stack(self) -> list:
        return self._local.__dict__.setdefault("stack", [])

    @contextlib.contextmanager
    def record(self):
        """A new dict, filled by what passes note until the block ends."""
        found: dict = {}
        stack = self._stack()
        stack.append(found)
        try:
            yield found
        finally:
            stack.pop()

    def innermost(self):
        """The dict of the innermost open `record()`, or None."""
        stack = self._stack()
        return stack[-1] if stack else None

    def open(self) -> list:
        """The dicts of every open `record()`, outermost first."""
        return list(self._stack())

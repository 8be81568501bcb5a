"""The tape overflow flags of a CUDA graph made by `tape.capture`
(hostdiff/tape/graphs.py `TapeGraph`), read once at the end of each replay.

A watched GPU program (runtime/gpu.py `GpuProgram.watch_tape`: its heap
tape has no formula of the launch, or a launch's tape reached the heap)
reads its module's flag `@__dg_tape_overflow` after each launch: one stream
synchronisation and 8 bytes (runtime/tape_overflow.py). A launch captured
into a CUDA graph cannot: nothing runs while the stream captures. So:

- while `TapeGraph` runs its calls eagerly and then captures them, a
  `GraphFlags` is collecting on the thread, and `GpuProgram.check_tape`
  notes in it every watched program it is called for (`note`), each flag
  once (a program launched 1,000 times in the graph is one flag: a launch
  that fits never clears it, so one read at the end sees any overflow);
- before the capture `reserve` allocates a pinned host buffer of one word
  per flag; at the capture's end, after the graph's last operation,
  `read_in_graph` copies each flag into its word (one 8-byte copy device
  to host on the capturing stream: a node of the graph, after every node
  before it). The graph itself brings its flags home at every replay;
- after a replay `check` waits for the stream once and reads the pinned
  words (host memory: no copy, no CUDA call). All zero (the usual case):
  done. Else it clears the flags that are set (one memset each and one more
  synchronisation: the failure path only) and raises the LaunchError of the
  first kernel in launch order whose flag was set.

Why nodes in the graph rather than reads queued after its launch: the
copies after a replay would be one `cudaMemcpyAsync` call from Python per
flag at every replay (a few microseconds of host time each), on top of the
synchronisation; as nodes they cost no host call, and the device does the
same 8-byte copies either way. Pinned memory because a copy to pageable
host memory cannot be captured. A graph with no watched program has no
`GraphFlags` at all: its replay reads nothing and does not synchronise.

Launches captured into a graph of your own (`Stream.begin_capture` outside
`tape.capture`) are noted by nobody: their flags are read by the program's
next launch outside a graph (docs/autodiff.md).

Imports numpy at module level (runtime/gpu.py imports this module, not
the other way round); CuPy inside `reserve`.
"""
from __future__ import annotations

import contextlib
import threading

import numpy as np

_active = threading.local()
#: cudaMemcpyKind cudaMemcpyDeviceToHost
_D2H = 2


def note(program, device_id: int) -> None:
    """`program` (a watched runtime/gpu.py GpuProgram) is launched on
    `device_id` while a GraphFlags collects on this thread: note its flag."""
    flags = getattr(_active, "flags", None)
    if flags is not None:
        flags.add(program, device_id)


class GraphFlags:
    """The flags of the watched programs of one captured graph (module
    docstring): `flags` lists (program, device id, flag pointer) in the
    order their programs were first launched."""

    def __init__(self):
        self.flags: list = []
        self._seen: set = set()  # the flags' device addresses
        self._host = None  # the pinned buffer (kept alive: the graph's copies write there)
        self.words = np.zeros(0, np.int64)  # over it

    @contextlib.contextmanager
    def collecting(self):
        """Inside, watched launches on this thread are noted here."""
        before = getattr(_active, "flags", None)
        _active.flags = self
        try:
            yield self
        finally:
            _active.flags = before

    def add(self, program, device_id: int) -> None:
        ptr = program.flag(device_id)[0]
        if int(ptr.ptr) not in self._seen:
            self._seen.add(int(ptr.ptr))
            self.flags.append((program, device_id, ptr))

    def reserve(self) -> None:
        """A pinned buffer with a word per flag noted so far (called before
        the capture: no host allocation while capturing, unless the capture
        met a program the eager run had not)."""
        if len(self.flags) <= len(self.words):
            return
        import cupy  # a graph's flags: CuPy made the graph
        n = len(self.flags)
        self._host = cupy.cuda.alloc_pinned_memory(8 * n)
        self.words = np.ndarray((n,), np.int64, buffer=self._host)
        self.words[...] = 0

    def read_in_graph(self, stream) -> None:
        """On `stream`, capturing, after the graph's last operation: copy
        each flag into its pinned word (the graph's last nodes), through
        cudaMemcpyAsync itself: CuPy's `MemoryPointer.copy_to_host_async`
        refuses a capturing stream ("D2H transfers are disallowed"), but
        CUDA captures a copy into pinned host memory as a memcpy node."""
        import cupy
        self.reserve()
        base = int(self._host.ptr) if self.flags else 0
        for i, (_, _, ptr) in enumerate(self.flags):
            cupy.cuda.runtime.memcpyAsync(base + 8 * i, int(ptr.ptr), 8, _D2H, stream.ptr)

    def check(self, stream) -> None:
        """After a replay launched on `stream`: wait for it and raise the
        LaunchError of the first flag that is set, after clearing them."""
        stream.synchronize()
        words = self.words
        if not words.any():
            return
        first = None
        for i, (program, device_id, ptr) in enumerate(self.flags):
            if words[i]:
                if first is None:
                    first = program.overflow(device_id, int(words[i]))
                ptr.memset_async(0, 8, stream)
        words[...] = 0
        stream.synchronize()
        raise first


__all__ = ["GraphFlags", "note"]

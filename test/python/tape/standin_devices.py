"""A CuPy stand-in that counts device operations, for the tape's cost tests
and bench/tape_reverse.py.

bench/launch_overhead.py's stand-in (numpy memory posing as CuPy arrays,
kernels that do nothing; programs compiled for sm_90) with what the tape
calls of CuPy besides, each counted in `counts` by the device operation it
would be on a GPU:

| count    | what                                                             |
|----------|------------------------------------------------------------------|
| kernel   | a launch of a diffgpu program (RawModule functions)              |
| add      | `a += b`, `a + b` (CuPy's elementwise kernel)                    |
| copy     | `cupy.array(a, copy=True)`, `a[...] = b` of an array, `cudaMemcpyAsync` (the tape's raw copies of versions) |
| memset   | `cupy.zeros` / `zeros_like` / `ones`, `a[...] = value`            |
| alloc    | `cupy.empty` / `empty_like`, `cupy.cuda.alloc` (no device work)  |

and a CUDA graph stand-in: `Stream.begin_capture()` / `end_capture()`
note the counts, so `captured` holds the operations a capture recorded
(the graph's nodes). Values are whatever numpy computes for the copies and
adds; the kernels do nothing, so results are not checked here.

The tape overflow flag (runtime/gpu.py `check_tape`, runtime/graph_flags.py)
is emulated as well: a module whose PTX declares `__dg_tape_overflow` has
an 8-byte flag (`RawModule.get_global`), and while `Devices.overflow` is
non-zero each launch of such a module sets its flag to that many words (a
thread whose tape could not grow). Streams are current inside `with`,
capture (`is_capturing`; a capturing stream refuses `synchronize`), and
while one captures, kernel launches and the flags' copies and clears are
not run but kept as the graph's nodes, which `Graph.launch` runs in order.
More counts, outside KINDS:

| count      | what                                                          |
|------------|---------------------------------------------------------------|
| sync       | `Stream.synchronize()`                                        |
| readback   | a flag copied to the host (`MemoryPointer.copy_to_host_async`) |
| flag clear | a flag's `memset_async`                                       |
| pinned     | `cupy.cuda.alloc_pinned_memory`                               |
"""
from __future__ import annotations

import os
import sys
import types
import zlib
from collections import Counter

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(REPO, "bench"))

KINDS = ("kernel", "add", "copy", "memset")
#: the tape's overflow flag (diffgpu.abi.TAPE_OVERFLOW_GLOBAL)
FLAG = "__dg_tape_overflow"
#: the counts the stand-in's kernels add to, and the Devices whose `overflow`
#: and capture they follow: the latest install's (a program keeps the
#: function and flag it loaded, from whichever install that was)
_CURRENT: list = [Counter()]
_LIVE: list = [None]


class Devices:
    """The installed stand-in: `counts` (a Counter of KINDS and "alloc"),
    `captured` (the counts of the latest capture), `S` (the array class)."""

    def __init__(self, S, cp):
        self.S, self.cp = S, cp
        self.counts: Counter = Counter()
        self.captured: Counter | None = None
        #: words a launch of a module with a tape overflow flag sets it to (0: none)
        self.overflow = 0
        #: the stream capturing a graph now, or None
        self.capturing = None

    def defer(self, op) -> None:
        """Run `op` (a device operation) now, or keep it as a node of the
        graph being captured."""
        if self.capturing is not None:
            self.capturing.nodes.append(op)
        else:
            op()

    def ops(self, since: Counter | None = None) -> int:
        """Device operations (KINDS) counted, since the counts `since`."""
        base = since or Counter()
        return sum(self.counts[k] - base[k] for k in KINDS)

    def snapshot(self) -> Counter:
        return Counter(self.counts)

    def array(self, host):
        return self.S(np.ascontiguousarray(host))


def install(monkeypatch) -> Devices:
    """Install the counting stand-in (undone by `monkeypatch` and by
    dropping sys.modules["cupy"] after the test)."""
    import launch_overhead as LO
    import vjp_overhead as VO

    from diffgpu.hostdiff.tape import arrays
    from diffgpu.runtime import gpu

    VO.install_standin()
    cp = sys.modules["cupy"]
    S = LO.StandinArray
    dev = Devices(S, cp)
    n = dev.counts

    _CURRENT[0], _LIVE[0] = n, dev

    class Function:
        def __init__(self, module):
            self.module = module

        def __call__(self, grid, block, args):
            _CURRENT[0]["kernel"] += 1
            flag, live = self.module.flag, _LIVE[0]

            def run():  # a thread whose tape could not grow records its words
                if live.overflow and flag is not None:
                    flag[0] = max(int(flag[0]), live.overflow)
            live.defer(run)

    class RawModule:
        def __init__(self, path=None, code=None):
            text = code if code is not None else open(path).read()
            self.flag = np.zeros(1, np.int64) if FLAG in text else None

        def get_function(self, name):
            return Function(self)

        def get_global(self, name):
            if name != FLAG or self.flag is None:
                raise RuntimeError(f"stand-in: no global {name!r} in the module")
            return FlagPointer(self.flag)

    class Flags(LO._Flags):
        def __init__(self, h):
            self.c_contiguous, self.f_contiguous = h.flags.c_contiguous, h.flags.f_contiguous

    init = S.__init__

    def __init__(self, host, dtype=None, memptr=None, strides=None):
        if memptr is not None:  # cupy.ndarray(shape, dtype, memptr, strides): over a raw copy
            host = np.ndarray(host, dtype, buffer=memptr.host, strides=strides)
        init(self, host)
        self.flags = Flags(host)

    def iadd(self, o):
        n["add"] += 1
        with np.errstate(all="ignore"):
            self._h += o._h if isinstance(o, S) else o
        return self

    def add(self, o):
        n["add"] += 1
        with np.errstate(all="ignore"):
            return S(self._h + (o._h if isinstance(o, S) else o))

    def setitem(self, k, o):
        n["copy" if isinstance(o, S) else "memset"] += 1
        self._h[k] = o._h if isinstance(o, S) else o

    def made(kind, fn):
        def make(*a, **k):
            n[kind] += 1
            return S(fn(*a, **k))
        return make

    def host(a):
        return a._h if isinstance(a, S) else a
    for name, value in (("__init__", __init__), ("base", None), ("__iadd__", iadd),
                        ("__add__", add), ("__setitem__", setitem),
                        ("__getitem__", lambda self, k: S(self._h[k]))):
        monkeypatch.setattr(S, name, value, raising=False)
    cp.ndarray = S
    cp.RawModule = RawModule
    cp.asarray = lambda a: a if isinstance(a, S) else S(np.asarray(a))
    cp.array = made("copy", lambda a, copy=True, order="K": np.array(host(a), copy=True,
                                                                     order=order))
    cp.zeros = made("memset", lambda shape, dtype=np.float64: np.zeros(shape, dtype))
    cp.zeros_like = made("memset", lambda a: np.zeros_like(host(a)))
    cp.ones = made("memset", lambda shape, dtype=np.float64: np.ones(shape, dtype))
    cp.empty = made("alloc", lambda shape, dtype=np.float64: np.empty(shape, dtype))
    cp.empty_like = made("alloc", lambda a: np.empty_like(host(a)))
    _graphs(cp, dev)
    _raw(cp, n)
    monkeypatch.setattr(arrays, "device_fingerprints", lambda roots, _cp: [
        (zlib.crc32(r._h.ravel(order="K").view(np.uint8)), r.nbytes) for r in roots])
    monkeypatch.setattr(gpu, "_chips", {0: "sm_90"})
    return dev


def _raw(cp, n) -> None:
    """The tape's raw copies (hostdiff/tape/device.py `copier`): a pool
    allocation of host bytes (a pointer into it: `+ offset`), and
    cudaMemcpyAsync a memmove, counted."""
    import ctypes

    from diffgpu.runtime.fastpath import host_pointer

    class Memory:
        def __init__(self, nbytes):  # (256-byte aligned, as CUDA's allocations are)
            n["alloc"] += 1
            raw = np.empty((nbytes or 1) + 256, np.uint8)
            at = -host_pointer(raw) % 256
            self.host = raw[at:at + (nbytes or 1)]
            self.ptr = host_pointer(raw) + at

        def __add__(self, offset):  # MemoryPointer + offset: into the same allocation
            m = Memory.__new__(Memory)
            m.host, m.ptr = self.host[offset:], self.ptr + offset
            return m

    def memcpy(dst, src, nbytes, kind, stream):
        if kind == 2:  # device to host: a flag read back (a node while capturing)
            n["readback"] += 1
            _LIVE[0].defer(lambda: ctypes.memmove(dst, src, nbytes))
            return
        n["copy"] += 1
        ctypes.memmove(dst, src, nbytes)
    cp.cuda.alloc = Memory
    cp.cuda.runtime.memcpyAsync = memcpy


class FlagPointer:
    """The MemoryPointer of a module's 8-byte tape overflow flag."""

    def __init__(self, word):
        self.word, self.ptr = word, word.ctypes.data

    def copy_to_host_async(self, dst, size, stream):
        import ctypes
        if _LIVE[0].capturing is not None:  # as CuPy's MemoryPointer does
            raise RuntimeError("the current stream is capturing, so D2H transfers are "
                               "disallowed")
        _CURRENT[0]["readback"] += 1
        _LIVE[0].defer(lambda: ctypes.memmove(int(dst), self.ptr, size))

    def memset_async(self, value, size, stream):
        import ctypes
        _CURRENT[0]["flag clear"] += 1
        _LIVE[0].defer(lambda: ctypes.memset(self.ptr, value, size))


class Pinned(bytearray):
    """`cupy.cuda.alloc_pinned_memory`'s buffer: host bytes with `ptr`."""

    @property
    def ptr(self) -> int:
        import ctypes
        return ctypes.addressof(ctypes.c_char.from_buffer(self))


def _graphs(cp, dev) -> None:
    """cupy.cuda.Stream with begin/end_capture, the current stream, the
    allocator hooks, a pool, pinned memory."""
    n = dev.counts

    class Graph:
        def __init__(self, nodes):
            self.launches, self.nodes = 0, nodes

        def launch(self, stream=None):
            self.launches += 1
            for op in self.nodes:
                op()

    current: list = []

    class Stream:
        _made = 0

        def __init__(self, non_blocking=False):
            self._at, self.nodes = None, None
            Stream._made += 1
            self.ptr = Stream._made

        def __enter__(self):
            current.append(self)
            return self

        def __exit__(self, *exc):
            current.pop()
            return False

        def is_capturing(self):
            return dev.capturing is self

        def synchronize(self):
            if dev.capturing is self:
                raise RuntimeError("stand-in: a capturing stream cannot be synchronized")
            n["sync"] += 1

        def begin_capture(self):
            self._at, self.nodes = dev.snapshot(), []
            dev.capturing = self

        def end_capture(self):
            dev.capturing = None
            dev.captured = dev.snapshot() - self._at
            return Graph(self.nodes)

    default = Stream()
    cp.cuda.get_current_stream = lambda: current[-1] if current else default

    def alloc_pinned_memory(nbytes):
        n["pinned"] += 1
        return Pinned(nbytes)
    cp.cuda.alloc_pinned_memory = alloc_pinned_memory
    # runtime/gpu.py ensure_malloc_heap: the limit CUDA keeps (its default 8 MB)
    limits = {2: 8 << 20}
    cp.cuda.runtime.deviceGetLimit = lambda what: limits.get(what, 0)
    cp.cuda.runtime.deviceSetLimit = lambda what, value: limits.__setitem__(what, value)
    cp.cuda.runtime.memGetInfo = lambda: (64 << 30, 80 << 30)

    class Pool:
        def malloc(self, nbytes):
            return object()

    pool = Pool()
    cp.cuda.Stream = Stream
    cp.cuda.get_allocator = lambda: None
    cp.cuda.set_allocator = lambda fn: None
    cp.get_default_memory_pool = lambda: pool


__all__ = ["install", "Devices", "KINDS"]

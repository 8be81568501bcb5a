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
#: the counts the stand-in's kernels add to: the latest install's (a program
#: keeps the function it loaded, from whichever install that was)
_CURRENT: list = [Counter()]


class Devices:
    """The installed stand-in: `counts` (a Counter of KINDS and "alloc"),
    `captured` (the counts of the latest capture), `S` (the array class)."""

    def __init__(self, S, cp):
        self.S, self.cp = S, cp
        self.counts: Counter = Counter()
        self.captured: Counter | None = None

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

    _CURRENT[0] = n

    class Function:
        def __call__(self, grid, block, args):
            _CURRENT[0]["kernel"] += 1

    class RawModule:
        def __init__(self, path=None, code=None):
            pass

        def get_function(self, name):
            return Function()

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
    allocation of host bytes, and cudaMemcpyAsync a memmove, counted."""
    import ctypes

    from diffgpu.runtime.fastpath import host_pointer

    class Memory:
        def __init__(self, nbytes):
            n["alloc"] += 1
            self.host = np.empty(nbytes or 1, np.uint8)
            self.ptr = host_pointer(self.host)

    def memcpy(dst, src, nbytes, kind, stream):
        n["copy"] += 1
        ctypes.memmove(dst, src, nbytes)
    cp.cuda.alloc = Memory
    cp.cuda.runtime.memcpyAsync = memcpy


def _graphs(cp, dev) -> None:
    """cupy.cuda.Stream with begin/end_capture, the allocator hooks, a pool."""
    class Graph:
        def __init__(self):
            self.launches = 0

        def launch(self, stream=None):
            self.launches += 1

    class Stream:
        def __init__(self, non_blocking=False):
            self._at = None

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def synchronize(self):
            pass

        def begin_capture(self):
            self._at = dev.snapshot()

        def end_capture(self):
            dev.captured = dev.snapshot() - self._at
            return Graph()

    class Pool:
        def malloc(self, nbytes):
            return object()

    pool = Pool()
    cp.cuda.Stream = Stream
    cp.cuda.get_allocator = lambda: None
    cp.cuda.set_allocator = lambda fn: None
    cp.get_default_memory_pool = lambda: pool


__all__ = ["install", "Devices", "KINDS"]

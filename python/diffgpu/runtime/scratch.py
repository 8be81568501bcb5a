"""Per-launch scratch of kernels whose float sums finish across blocks.

A kernel built with grid sums (lowering/reduce/grid_sum.py) takes two trailing
arguments its caller never passes (abi.py, SCRATCH_ATTR): `acc`, float64
accumulators, and `count`, int64 block counters; per grid sum ("slot") 65
of each (one per arrival group of blocks and one for the top), each on its
own 128-byte line (abi.scratch_sizes: 2 x 8.1 KiB per slot). The size does
not depend on the launch: any grid uses the same 64 groups (a grid-sized
scratch, one partial per block, would need the launch to size it and a
path for grids above a cap). Each launch needs them zero at its start; the
blocks that complete a group and the last block of the launch leave them
zero again.

- GPU (`GpuScratch`): one small zeroed buffer per (device, stream), made on
  the first launch there and reused: launches on one stream run one after
  another, so a launch always finds the buffer its predecessor left zero,
  and no memset is issued per launch. Two streams never share a buffer: two
  launches running at once would add into one accumulator and one counter,
  and the first to finish would take both launches' sums (a module-level
  buffer would do that). A stream handle that CUDA reuses after its stream
  was destroyed gets the old stream's buffer, which that stream's last
  launch left zero.
- host (`HostScratch`): one pair of numpy arrays per program and kernel (a
  program's launches are serialised); after an interrupted launch
  (Ctrl-C), `reset` zeroes them, since its last block never ran.

Kernels without scratch never reach this module: a launch of one costs
nothing more.
"""
from __future__ import annotations

import ctypes
import threading

import numpy as np


class GpuScratch:
    """The scratch of one GPU program: `wrap` makes a launcher that appends
    the SCRATCH_WORDS kernel parameters of the device's current stream."""

    def __init__(self, slots: int, as_kernel_pointers):
        self.slots = slots
        self._pointers = as_kernel_pointers  # runtime/gpu.py's: the kernel-argument form
        self._params: dict = {}  # (device id, stream handle) -> (params, buffer)
        self._lock = threading.Lock()

    def wrap(self, fn, device_id: int):
        """`fn(grid, block, values)` with the scratch parameters of the
        current stream appended (a dictionary look-up per launch)."""
        import cupy
        current, table, make = cupy.cuda.get_current_stream, self._params, self._make

        def launch(grid, block, values):
            key = (device_id, current().ptr)
            found = table.get(key)
            if found is None:
                found = make(key)
            fn(grid, block, tuple(values) + found[0])
        return launch

    def _make(self, key):
        import cupy
        with self._lock:
            found = self._params.get(key)
            if found is not None:
                return found
            from diffgpu.abi import scratch_layout, scratch_sizes
            offset, size = scratch_layout(self.slots)
            sizes = scratch_sizes(self.slots)
            with cupy.cuda.Device(key[0]):
                buf = cupy.zeros(size // 8, np.int64)  # acc (f64 bits), then counters
                # the zeros must land before a launch on any stream reads them
                cupy.cuda.get_current_stream().synchronize()
            acc, count = buf.data.ptr, buf.data.ptr + offset
            words = []
            for ptr, n in zip((acc, count), sizes):
                words += [np.uint64(ptr), np.uint64(ptr), np.int64(0), np.int64(n), np.int64(1)]
            found = self._params[key] = (self._pointers(tuple(words)), buf)
            return found


class HostScratch:
    """The scratch of one kernel of a host program: memref descriptors of
    two numpy arrays, kept zero between launches."""

    def __init__(self, slots: int, descriptor):
        from diffgpu.abi import scratch_sizes
        acc, count = scratch_sizes(slots)
        self.acc = np.zeros(acc, np.float64)
        self.count = np.zeros(count, np.int64)
        self._keep = []
        self.pointers = []
        for a in (self.acc, self.count):
            d = descriptor(a)
            p = ctypes.pointer(d)
            self._keep += [d, p]
            self.pointers.append(ctypes.cast(ctypes.pointer(p), ctypes.c_void_p))
            self._keep.append(self.pointers[-1])

    def reset(self) -> None:
        self.acc[:] = 0
        self.count[:] = 0

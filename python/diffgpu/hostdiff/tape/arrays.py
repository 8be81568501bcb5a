"""The memory a tape tracks: buffers (one per base allocation), views into
them, copies of their contents and fingerprints of them.

A launch argument is a *view*: its buffer (the base array owning the
memory: numpy's and CuPy's `.base` chain followed to its end, which must be
one contiguous block) and where it sits in it (byte offset, shape, strides,
dtype). Writes through one view change what every view of the buffer reads,
so versions (record.py) are per buffer. `View.on(root)` rebuilds the view
on another array of the buffer's layout: a snapshot, a checkpoint's copy, a
working copy. Other CUDA arrays (torch tensors, `__cuda_array_interface__`
objects) are seen through `cupy.asarray` (no copy): the array itself is its
buffer, and a buffer overlapping another one without being it is refused.
"""
from __future__ import annotations

import zlib

import numpy as np

from diffgpu.hostdiff import buffers as M
from diffgpu.hostdiff.tape.errors import TapeError
from diffgpu.runtime import torch16
from diffgpu.runtime.args import device_id, is_device_array
from diffgpu.runtime.fastpath import host_pointer


def as_array(a):
    """`a` as numpy or CuPy (other CUDA arrays through `cupy.asarray`, no copy)."""
    if isinstance(a, np.ndarray) or not is_device_array(a):
        return a
    if torch16.handles(a):
        raise TapeError("dg.Tape: a bfloat16 torch tensor on the GPU: the tape keeps its "
                        "copies as CuPy arrays, and CuPy has no bfloat16; tape a float32 or "
                        "float16 tensor, or differentiate each launch with dg.vjp")
    cp = M.xp_of(a)
    return a if isinstance(a, cp.ndarray) else cp.asarray(a)


def pointer(a) -> int:
    if type(a) is np.ndarray:
        return host_pointer(a)
    if isinstance(a, np.ndarray):
        return a.__array_interface__["data"][0]
    return a.data.ptr


def root_of(a):
    """The array owning `a`'s memory (the end of the `.base` chain)."""
    t = type(a)
    r = a
    while isinstance(r.base, t):
        r = r.base
    return r


def contiguous(a) -> bool:
    return bool(a.flags.c_contiguous or a.flags.f_contiguous)


def device_of(a):
    """"cpu" or the GPU's id."""
    if type(a) is np.ndarray:
        return "cpu"
    return device_id(a) if is_device_array(a) else "cpu"


class View:
    """Where an argument sits in its buffer."""

    __slots__ = ("buf", "offset", "shape", "strides", "dtype", "key")

    def __init__(self, buf, a):
        self.buf = buf
        self.offset = pointer(a) - buf.ptr
        self.shape, self.strides, self.dtype = tuple(a.shape), tuple(a.strides), a.dtype
        self.key = (id(buf), self.offset, self.shape, self.strides, self.dtype.str)

    def on(self, root):
        """This view on `root` (an array laid out like the buffer): `root`
        itself when the view is all of it."""
        if (self.offset == 0 and root.shape == self.shape and root.strides == self.strides
                and root.dtype == self.dtype):
            return root
        if isinstance(root, np.ndarray):
            flat = root.ravel(order="K").view(np.uint8)
            return np.ndarray(self.shape, self.dtype, buffer=flat, offset=self.offset,
                              strides=self.strides)
        cp = M.xp_of(root)
        return cp.ndarray(self.shape, self.dtype, memptr=root.data + self.offset,
                          strides=self.strides)

    def whole(self) -> bool:
        """The view is its buffer, element for element."""
        b = self.buf
        return (self.offset == 0 and self.shape == tuple(b.root.shape)
                and self.strides == tuple(b.root.strides) and self.dtype == b.root.dtype)


class Buffer:
    """One tracked allocation: its root array (the user's), a name for
    messages, its current version (record.py) and fingerprint."""

    __slots__ = ("root", "ptr", "nbytes", "device", "name", "version", "fp", "index",
                 "written", "first")

    def __init__(self, root, name: str, index: int):
        self.root, self.name, self.index = root, name, index
        self.ptr, self.nbytes, self.device = pointer(root), int(root.nbytes), device_of(root)
        self.version = None
        self.fp = None          # fingerprint of the contents the tape last saw
        self.written = False    # some recorded operation writes it
        self.first = None       # checkpointing: its contents when first written

    @property
    def is_float(self) -> bool:
        return self.root.dtype.kind == "f"

    def overlaps(self, ptr: int, nbytes: int) -> bool:
        return ptr < self.ptr + self.nbytes and self.ptr < ptr + nbytes


def copy_root(root):
    """A copy of a buffer with the same memory layout (C or Fortran order)."""
    xp = M.xp_of(root)
    return xp.array(root, copy=True, order="K")


def fingerprint(root):
    """A hash of the buffer's bytes: crc32 on the host; on a GPU a position-
    weighted sum of its 32-bit words computed there (one read of the array;
    the caller waits for it)."""
    if isinstance(root, np.ndarray):
        return zlib.crc32(root.ravel(order="K").view(np.uint8)), root.nbytes
    return device_fingerprint(root, M.xp_of(root))


def device_fingerprint(root, cp):
    """`fingerprint` computed with the array module `cp` (CuPy's: on the GPU)."""
    flat = root.ravel(order="K").view(cp.uint8)
    pad = (-flat.size) % 4
    if pad:
        flat = cp.concatenate([flat, cp.zeros(pad, cp.uint8)])
    words = flat.view(cp.uint32)
    total, step = 0, 1 << 22
    for lo in range(0, words.size, step):
        w = words[lo:lo + step].astype(cp.uint64)
        idx = cp.arange(lo, lo + w.size, dtype=cp.uint64)
        mixed = (w + cp.uint64(1)) * (idx * cp.uint64(0x9E3779B97F4A7C15) | cp.uint64(1))
        total = (total + int(mixed.sum()) + int((w ^ (idx & cp.uint64(0xFFFFFFFF))).max())) \
            % (1 << 64)
    return total, int(root.nbytes)


class Registry:
    """The buffers a tape has seen, found by their memory."""

    def __init__(self):
        self.buffers: list[Buffer] = []
        self._by_ptr: dict = {}
        #: id(array) -> (array, Buffer, View): an argument passed again (a loop
        #: over the same arrays) is found by identity, its layout compared
        self._seen: dict = {}

    def view(self, a, name: str, create: bool = True):
        """(Buffer, View) of array `a`; a new buffer when its memory is new
        (None, None if not `create`)."""
        hit = self._seen.get(id(a))
        if hit is not None and hit[0] is a and hasattr(a, "strides"):  # (numpy, CuPy: not
            # torch, whose tensors have stride(); they are seen through as_array each time)
            _, buf, view = hit
            if (a.shape == view.shape and a.strides == view.strides and a.dtype is view.dtype
                    and pointer(a) == buf.ptr + view.offset):
                return buf, view
        got = self._view(a, name, create)
        if got[0] is not None:
            self._seen[id(a)] = (a, got[0], got[1])
        return got

    def _view(self, a, name: str, create: bool):
        a = as_array(a)
        root = root_of(a)
        if not contiguous(root):
            raise TapeError(f"{name} is a view of a strided array that owns no memory of its "
                            "own; the tape records views of contiguous arrays (pass a copy)")
        key = (device_of(root), pointer(root), int(root.nbytes))
        buf = self._by_ptr.get(key)
        if buf is None:
            for b in self.buffers:
                if b.device == key[0] and b.overlaps(key[1], key[2]):
                    raise TapeError(f"{name} overlaps the memory of {b.name} without being a "
                                    "view of the same array; the tape cannot tell their "
                                    "versions apart (pass views of one array)")
            if not create:
                return None, None
            buf = Buffer(root, name, len(self.buffers))
            self.buffers.append(buf)
            self._by_ptr[key] = buf
        if a.dtype != root.dtype and (a.dtype.kind == "f" or root.dtype.kind == "f"):
            raise TapeError(f"{name} views {buf.name} as {a.dtype} but the array is "
                            f"{root.dtype}; the tape differentiates arrays in their own dtype")
        return buf, View(buf, a)


__all__ = ["Buffer", "View", "Registry", "as_array", "copy_root", "fingerprint",
           "device_of", "pointer"]

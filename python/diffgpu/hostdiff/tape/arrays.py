"""The memory a tape tracks: buffers (one per base allocation), views into
them, copies of their contents and fingerprints of them.

A launch argument is a *view*: its buffer (the base array owning the
memory: numpy's and CuPy's `.base` chain followed to its end, which must be
one contiguous block) and where it sits in it (byte offset, shape, strides,
dtype). Writes through one view change what every view of the buffer reads,
so versions (versions.py) are per buffer. `View.on(root)` rebuilds the view
on another array of the buffer's layout: a snapshot, a checkpoint's copy, a
working copy. Other CUDA arrays (torch tensors, `__cuda_array_interface__`
objects) are seen through `cupy.asarray` (no copy): the array itself is its
buffer, and a buffer overlapping another one without being it is refused.
"""
from __future__ import annotations

import sys
import zlib

import numpy as np

from diffgpu.hostdiff.tape import device as D
from diffgpu.hostdiff.tape.errors import TapeError
from diffgpu.runtime import torch16
from diffgpu.runtime.args import device_id, is_device_array
from diffgpu.runtime.fastpath import host_pointer
from diffgpu.runtime.gpu import cupy_module
from diffgpu.types import FLOAT_DTYPES, dtype_name


def _cupy():
    """The CuPy module (imported once a device array exists: its entry in
    sys.modules, no import statement per call)."""
    cp = sys.modules.get("cupy")
    return cp if cp is not None else cupy_module()


def _is_cupy(a) -> bool:
    nd = getattr(sys.modules.get("cupy"), "ndarray", None)
    return nd is not None and isinstance(a, nd)


def as_array(a):
    """`a` as numpy or CuPy (other CUDA arrays through `cupy.asarray`, no copy;
    a bfloat16 torch tensor as a CuPy bfloat16 array over its memory)."""
    if type(a) is np.ndarray or _is_cupy(a):
        return a
    if isinstance(a, np.ndarray) or not is_device_array(a):
        return a
    if torch16.handles(a):
        return _bf16_view(a)
    cp = _cupy()
    return a if isinstance(a, cp.ndarray) else cp.asarray(a)


def _bf16_view(t):
    """A CuPy array of ml_dtypes' bfloat16 over the memory of the bfloat16
    torch CUDA tensor `t` (keeping it alive): CuPy 14 has that dtype (its
    copies, zeros and adds); older versions raise a TapeError."""
    from diffgpu.runtime.args import cuda_interface

    iface = cuda_interface(t, "a bfloat16 tensor in a dg.Tape")  # (refuses requires_grad)
    dtype, shape, ptr = iface["typestr"], tuple(iface["shape"]), iface["data"][0]
    strides = iface["strides"]
    if strides is None:
        strides, acc = [], dtype.itemsize
        for n in reversed(shape):
            strides.insert(0, acc)
            acc *= n
    span = 0 if 0 in shape else dtype.itemsize + sum((n - 1) * st for n, st in
                                                     zip(shape, strides))
    cp = _cupy()
    try:
        mem = cp.cuda.UnownedMemory(ptr, span, t, device_id(t))
        return cp.ndarray(shape, dtype, cp.cuda.MemoryPointer(mem, 0), strides=tuple(strides))
    except (TypeError, ValueError) as e:
        raise TapeError(f"dg.Tape: a bfloat16 torch tensor is recorded through CuPy, and this "
                        f"CuPy ({getattr(cp, '__version__', '?')}) has no bfloat16 ({e}); "
                        "CuPy 14 with ml_dtypes has it. Else tape a float32 or float16 "
                        "tensor, or differentiate each launch with dg.vjp") from None


def torch_view(a):
    """The torch tensor over the CuPy array `a` (DLPack: no copy)."""
    return torch16._torch().from_dlpack(a)


def is_float_array(a) -> bool:
    """A float array of a dtype the tape differentiates (bfloat16 included)."""
    dt = getattr(a, "dtype", None)
    return dt is not None and _is_float(dt)


def _is_float(dtype) -> bool:
    return dtype.kind == "f" or dtype_name(dtype) in FLOAT_DTYPES


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
    if _is_cupy(a):
        return a.device.id
    return device_id(a) if is_device_array(a) else "cpu"


class View:
    """Where an argument sits in its buffer."""

    __slots__ = ("buf", "offset", "shape", "strides", "dtype", "key", "is_float")

    def __init__(self, buf, a):
        self.buf = buf
        self.offset = pointer(a) - buf.ptr
        self.shape, self.strides, self.dtype = tuple(a.shape), tuple(a.strides), a.dtype
        self.key = (id(buf), self.offset, self.shape, self.strides, self.dtype.str)
        self.is_float = _is_float(self.dtype)

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
        cp = _cupy()
        return cp.ndarray(self.shape, self.dtype, memptr=root.data + self.offset,
                          strides=self.strides)

    def whole(self) -> bool:
        """The view is its buffer, element for element."""
        b = self.buf
        return (self.offset == 0 and self.shape == tuple(b.root.shape)
                and self.strides == tuple(b.root.strides) and self.dtype == b.root.dtype)


class Buffer:
    """One tracked allocation: its root array (the user's), a name for
    messages, its current version (versions.py) and fingerprint."""

    __slots__ = ("root", "ptr", "nbytes", "device", "name", "version", "fp", "index",
                 "written", "first", "snap")

    def __init__(self, root, name: str, index: int, arena=None):
        self.root, self.name, self.index = root, name, index
        self.ptr, self.nbytes, self.device = pointer(root), int(root.nbytes), device_of(root)
        #: snap(v): the copy of `root` for version v, the copier looked up once; on
        #: a GPU into the tape's `arena` (device.py `Arena`: small copies share
        #: pool allocations)
        self.snap = _snapper(self, arena)
        self.version = None
        self.fp = None          # fingerprint of the contents the tape last saw
        self.written = False    # some recorded operation writes it
        self.first = None       # checkpointing: its contents when first written

    @property
    def is_float(self) -> bool:
        return _is_float(self.root.dtype)

    def overlaps(self, ptr: int, nbytes: int) -> bool:
        return ptr < self.ptr + self.nbytes and self.ptr < ptr + nbytes


def snapshot(root):
    """A copy of a buffer's contents: on the host a numpy copy; on a GPU its
    bytes in a new pool allocation, copied on the current stream (device.py
    `copy_bytes`: no array made). `as_root` makes the array over it when a
    reader needs one. (`Buffer.snap` copies for a version the tape keeps.)"""
    if isinstance(root, np.ndarray):
        return np.array(root, copy=True, order="K")
    return D.copy_bytes(_cupy(), pointer(root), int(root.nbytes), device_of(root))


def _snapper(buf, arena=None):
    """`snap(v)`: the copy of `buf.root` for version `v` (`v.copy`, and on a
    GPU `v.at`: its offset in the allocation, carved from `arena`'s chunks
    when small; device.py `copier`)."""
    root = buf.root
    if isinstance(root, np.ndarray):
        def snap(v):
            v.copy = np.array(root, copy=True, order="K")
        return snap
    return D.copier(_cupy(), buf.ptr, buf.nbytes, buf.device, arena)


def as_root(root, copy, at: int = 0):
    """The array over `copy` (a `snapshot` of `root`, or the allocation it
    was carved from and its offset `at` there), laid out as `root`."""
    if isinstance(copy, np.ndarray) or type(copy) is type(root):
        return copy
    return D.wrap(root, copy, _cupy(), at)


def copy_root(root):
    """A copy of a buffer with the same memory layout (C or Fortran order)."""
    return as_root(root, snapshot(root))


def fingerprint(root):
    """A hash of the buffer's bytes: crc32 on the host; on a GPU the pair of
    device.py, computed there by one kernel and read back (the caller waits)."""
    return fingerprints([root])[0]


def fingerprints(roots) -> list:
    """`fingerprint` of each of `roots` (one device): on a GPU one kernel
    launch per buffer and one read back for all of them."""
    if not roots:
        return []
    if isinstance(roots[0], np.ndarray):
        return [(zlib.crc32(r.ravel(order="K").view(np.uint8)), r.nbytes) for r in roots]
    return device_fingerprints(roots, _cupy())


def device_fingerprints(roots, cp) -> list:
    """`fingerprints` of device buffers with CuPy module `cp` (bench/
    tape_overhead.py's stand-in replaces this)."""
    return D.fingerprints([(pointer(r), int(r.nbytes)) for r in roots], cp, device_of(roots[0]))


def device_fingerprint(root, xp):
    """The GPU's fingerprint of one buffer; with `xp` numpy (a host array)
    the same hash computed on the host (device.py `reference`)."""
    if xp is np:
        return D.reference(root.ravel(order="K").view(np.uint8))
    return device_fingerprints([root], xp)[0]


class Registry:
    """The buffers a tape has seen, found by their memory."""

    def __init__(self):
        self.buffers: list[Buffer] = []
        self._by_ptr: dict = {}
        #: id(array) -> (array, Buffer, View): an argument passed again (a loop
        #: over the same arrays) is found by identity, its layout compared
        self._seen: dict = {}
        #: GPU id -> the Arena its buffers' copies are carved from (device.py)
        self.arenas: dict = {}

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
            dev = key[0]
            arena = None
            if dev != "cpu":
                arena = self.arenas.get(dev)
                if arena is None:
                    arena = self.arenas[dev] = D.Arena()
            buf = Buffer(root, name, len(self.buffers), arena)
            self.buffers.append(buf)
            self._by_ptr[key] = buf
        if a.dtype != root.dtype and (_is_float(a.dtype) or _is_float(root.dtype)):
            raise TapeError(f"{name} views {buf.name} as {a.dtype} but the array is "
                            f"{root.dtype}; the tape differentiates arrays in their own dtype")
        return buf, View(buf, a)


__all__ = ["Buffer", "View", "Registry", "as_array", "torch_view", "is_float_array", "snapshot", "as_root", "copy_root",
           "fingerprint", "fingerprints", "device_fingerprint", "device_of", "pointer"]

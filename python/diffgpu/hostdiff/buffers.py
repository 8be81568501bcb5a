"""Array helpers of the functional API (`dg.vjp` / `dg.jvp`), for numpy
arrays (CPU) and CUDA arrays (CuPy, or anything with
`__cuda_array_interface__`): byte ranges, aliasing, fresh buffers.

Imports numpy and the launch fast path's table of array types; CuPy on
first use of a device array.
"""
from __future__ import annotations

import numpy as np

from diffgpu.runtime import torch16
from diffgpu.runtime.args import cuda_interface, is_device_array
from diffgpu.runtime.fastpath import _ARRAYS
from diffgpu.types import STORAGE_DTYPES, dtype_name

#: slots of an Active scalar's gradient buffer: the reverse kernel's block b
#: adds its share at slot b % ACTIVE_SLOTS (frontend/diff_kernel.py), so the
#: blocks' adds spread over that many addresses instead of queueing on one;
#: the gradient is their sum (docs/atomics.md)
ACTIVE_SLOTS = 256


def xp_of(a):
    """numpy for host arrays, cupy for device arrays (a type the launch fast
    path knows to have CuPy's attributes needs no interface lookup)."""
    t = type(a)
    if t is np.ndarray:
        return np
    if t in _ARRAYS or is_device_array(a):
        from diffgpu.runtime.gpu import cupy_module
        return cupy_module()
    return np


def _interface(a) -> dict:
    if is_device_array(a):
        return cuda_interface(a)  # (torch tensors' from their attributes: bfloat16 too)
    return a.__array_interface__


def layout(a) -> tuple:
    """(data pointer, shape, strides in bytes, dtype): equal layouts are the
    same array seen twice."""
    if isinstance(a, np.ndarray):
        return (a.__array_interface__["data"][0], a.shape, a.strides, a.dtype.str)
    ptr = getattr(getattr(a, "data", None), "ptr", None)
    if isinstance(ptr, int) and hasattr(a, "strides"):  # CuPy: no interface dict built
        return (ptr, tuple(a.shape), tuple(a.strides), a.dtype.str)
    iface = _interface(a)
    shape = tuple(iface["shape"])
    item = np.dtype(iface["typestr"]).itemsize
    strides = iface.get("strides")
    if strides is None:  # C-contiguous
        strides, acc = [], item
        for n in reversed(shape):
            strides.insert(0, acc)
            acc *= n
    return (iface["data"][0], shape, tuple(strides), np.dtype(iface["typestr"]).str)


def byte_range(a, lay=None) -> tuple:
    """[lo, hi) of the bytes the array's elements occupy (empty: lo == hi);
    `lay`: its `layout(a)` if known."""
    ptr, shape, strides, dtype = lay or layout(a)
    if any(n == 0 for n in shape):
        return (ptr, ptr)
    lo = hi = ptr
    for n, s in zip(shape, strides):
        if s >= 0:
            hi += (n - 1) * s
        else:
            lo += (n - 1) * s
    return (lo, hi + np.dtype(dtype).itemsize)


def overlap(a, b, la=None, lb=None) -> bool:
    """True when the byte ranges of `a` and `b` intersect (conservative for
    interleaved strided views; exact for numpy arrays). `la`, `lb`: their
    layouts if known."""
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return bool(np.shares_memory(a, b))
    if is_device_array(a) != is_device_array(b):
        return False
    (lo1, hi1), (lo2, hi2) = byte_range(a, la), byte_range(b, lb)
    return lo1 < hi2 and lo2 < hi1


def shape_of(a) -> tuple:
    return tuple(a.shape) if isinstance(a, np.ndarray) else tuple(_interface(a)["shape"])


def dtype_of(a) -> str:
    if isinstance(a, np.ndarray):
        return a.dtype.name
    return np.dtype(_interface(a)["typestr"]).name


def copy(a):
    """A fresh contiguous copy on the array's device."""
    if torch16.handles(a):  # (CuPy has no bfloat16: torch makes it)
        return torch16.copy(a)
    xp = xp_of(a)
    return xp.array(xp.asarray(a), copy=True)


def _shape_dtype(a):
    dt = getattr(a, "dtype", None)
    if isinstance(a, np.ndarray) or (dt is not None and hasattr(a, "data")
                                     and hasattr(a.data, "ptr")):  # numpy, CuPy
        return a.shape, dt
    return shape_of(a), dtype_of(a)


def zeros_like(a):
    if torch16.handles(a):
        return torch16.zeros(a)
    return xp_of(a).zeros(*_shape_dtype(a))


def slot_sum(slots):
    """An Active scalar's gradient from its slot array (the kernel adds each
    block's partial sum into one of its slots), summed in float64 and
    rounded to the slots' type. Host slots give a Python float. Device slots
    give a 0-d device array, summed on the device: nothing is copied back,
    so `dg.vjp` returns without waiting for the kernel (`float(g)` waits
    when the value is needed), and back-to-back calls keep the GPU busy."""
    if isinstance(slots, np.ndarray):
        return float(slots.dtype.type(slots.sum(dtype=np.float64)))
    total = slots.sum(dtype=np.float64)  # a new 0-d array
    return total if slots.dtype == np.float64 else total.astype(slots.dtype)


def empty_like(a):
    if torch16.handles(a):
        return torch16.empty(a)
    return xp_of(a).empty(*_shape_dtype(a))


# float32 scratch shadows of 16-bit arrays (docs/language.md, 16-bit floats):
# the derivative kernel accumulates a gradient into one with float32 adds
# (atomics from many threads too), and the host rounds it once to the 16-bit
# dtype after the launch
def is_half(a) -> bool:
    """A float16 / bfloat16 array (numpy, ml_dtypes or CuPy)."""
    dt = getattr(a, "dtype", None)
    return (dtype_name(dt) if dt is not None else dtype_of(a)) in STORAGE_DTYPES


def zeros32_like(a):
    """float32 zeros of `a`'s shape on its device (a scratch shadow)."""
    return xp_of(a).zeros(_shape_dtype(a)[0], np.float32)


def copy32(a):
    """A fresh contiguous float32 copy of `a` (exact: every 16-bit float is a
    float32) on its device."""
    if torch16.handles(a):
        return torch16.copy32(a)
    xp = xp_of(a)
    return xp.asarray(a).astype(np.float32, order="C")


def narrow(scratch, dtype):
    """A new array of `dtype` holding the float32 `scratch` rounded to nearest
    even (one elementwise pass on its device)."""
    if not isinstance(dtype, np.dtype) and torch16.device_result(scratch, dtype):
        # (a torch tensor's dtype, by name; a CuPy array's is a numpy dtype: CuPy rounds)
        return torch16.narrow(scratch, dtype)
    return scratch.astype(dtype)


def narrow_into(dst, scratch) -> None:
    """`dst[...] = scratch`, each float32 element rounded to `dst`'s 16-bit dtype."""
    if isinstance(dst, np.ndarray):
        np.copyto(dst, scratch, casting="unsafe")
        return
    if torch16.handles(dst):
        torch16.narrow_into(dst, scratch)
        return
    xp_of(dst).asarray(dst)[...] = scratch


def device_scope(a):
    """A context selecting the array's GPU (a no-op on the host)."""
    if not is_device_array(a):
        import contextlib
        return contextlib.nullcontext()
    from diffgpu.runtime.args import device_id
    from diffgpu.runtime.gpu import cupy_module
    return cupy_module().cuda.Device(device_id(a))


__all__ = ["xp_of", "layout", "byte_range", "overlap", "shape_of", "dtype_of", "copy",
           "zeros_like", "empty_like", "device_scope", "is_half", "zeros32_like", "copy32",
           "narrow", "narrow_into"]

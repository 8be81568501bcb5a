"""Buffers like a torch CUDA tensor of a dtype CuPy lacks (bfloat16).

`dg.vjp` / `dg.autodiff` make their fresh buffers and 16-bit roundings with
the array module of the arguments (hostdiff/buffers.py): numpy on the CPU,
CuPy on the GPU. CuPy has no bfloat16, so for a bfloat16 torch CUDA tensor
these functions make them with torch instead, on the tensor's device and
torch's current stream (dg.torch makes that CuPy's current stream too; the
default streams of both are CUDA's legacy stream, so either way the kernels
and torch's copies are ordered). float32 scratch shadows stay CuPy arrays
(`cupy.asarray` of a torch float32 tensor is a view of it, and keeps it
alive); results of a bfloat16 dtype are torch tensors.

Importing this imports neither torch nor CuPy: torch is only ever reached
through a tensor the caller passed (runtime/args.torch_of).
"""
from __future__ import annotations

import sys

from diffgpu.runtime.args import torch_of

#: dtypes CuPy has no arrays of: device buffers of these are torch tensors
TORCH_ONLY = ("bfloat16",)


def _name(dtype) -> str:
    from diffgpu.types import dtype_name
    return dtype_name(dtype)


def handles(a) -> bool:
    """Is `a` a torch CUDA tensor of a dtype only torch has on the GPU?"""
    torch = torch_of(a)
    return torch is not None and a.is_cuda and _name(a.dtype) in TORCH_ONLY


def device_result(scratch, dtype) -> bool:
    """Is rounding the device array `scratch` to `dtype` torch's job?"""
    return _name(dtype) in TORCH_ONLY and not _is_numpy(scratch)


def _is_numpy(x) -> bool:
    import numpy as np
    return isinstance(x, np.ndarray)


def _torch():
    torch = sys.modules.get("torch")
    if torch is None:  # (a bfloat16 device array without torch: none is made here)
        from diffgpu.errors import LaunchError
        raise LaunchError("bfloat16 arrays on the GPU are torch tensors: import torch")
    return torch


def copy(a):
    """A fresh C-contiguous copy of `a` (its dtype, its device)."""
    torch = _torch()
    out = torch.empty(tuple(a.shape), dtype=a.dtype, device=a.device)
    out.copy_(a)
    return out


def zeros(a, dtype=None):
    torch = _torch()
    dt = a.dtype if dtype is None else getattr(torch, _name(dtype))
    return torch.zeros(tuple(a.shape), dtype=dt, device=a.device)


def empty(a, dtype=None):
    torch = _torch()
    dt = a.dtype if dtype is None else getattr(torch, _name(dtype))
    return torch.empty(tuple(a.shape), dtype=dt, device=a.device)


def copy32(a):
    """A fresh contiguous float32 copy of `a` as a CuPy array (exact)."""
    torch = _torch()
    wide = torch.empty(tuple(a.shape), dtype=torch.float32, device=a.device)
    wide.copy_(a)
    from diffgpu.runtime.gpu import cupy_module
    return cupy_module().asarray(wide)  # a view, keeping `wide` alive


def _as_tensor(x):
    torch = _torch()
    return x if isinstance(x, torch.Tensor) else torch.as_tensor(x)  # (its device)


def narrow(scratch, dtype):
    """A new torch tensor of `dtype`: the float32 device array `scratch`
    rounded to nearest even."""
    torch = _torch()
    return _as_tensor(scratch).to(getattr(torch, _name(dtype)))


def narrow_into(dst, scratch) -> None:
    """`dst[...] = scratch` rounded to `dst`'s dtype (dst: a torch tensor)."""
    dst.copy_(_as_tensor(scratch))


__all__ = ["TORCH_ONLY", "handles", "device_result", "copy", "zeros", "empty", "copy32",
           "narrow", "narrow_into"]

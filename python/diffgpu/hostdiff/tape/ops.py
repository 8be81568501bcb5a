"""`dg.copy(dst, src)` and `dg.fill(a, value)`: host-side array operations
a recording tape records (a plain numpy/CuPy write it cannot see). Outside a
tape they are `dst[...] = src` and `a[...] = value`, checked."""
from __future__ import annotations

import numbers

import numpy as np

from diffgpu.errors import user_facing
from diffgpu.hostdiff.tape.arrays import as_array, device_of
from diffgpu.hostdiff.tape.errors import TapeError
from diffgpu.hostdiff.tape.record import current_hook
from diffgpu.runtime.args import is_device_array


def _array(a, what: str, fn: str):
    if not (isinstance(a, np.ndarray) or is_device_array(a)):
        raise TapeError(f"dg.{fn}: {what} must be a numpy or CUDA array, got "
                        f"{type(a).__name__}")
    a = as_array(a)
    if isinstance(a, np.ndarray) and what.startswith("dst") and not a.flags.writeable:
        raise TapeError(f"dg.{fn}: {what} is read-only")
    return a


@user_facing
def copy(dst, src) -> None:
    """dst[...] = src (equal shapes and dtypes, one device), recorded by a
    tape: the reverse moves dst's adjoint to src."""
    d, s = _array(dst, "dst", "copy"), _array(src, "src", "copy")
    if tuple(d.shape) != tuple(s.shape) or d.dtype != s.dtype:
        raise TapeError(f"dg.copy: dst has shape {tuple(d.shape)} and dtype {d.dtype}, src "
                        f"{tuple(s.shape)} and {s.dtype}; they must be equal")
    if device_of(d) != device_of(s):
        raise TapeError("dg.copy: dst and src are on different devices")

    def run():
        d[...] = s
    hook = current_hook()
    if hook is None or hook.busy:
        run()
    else:
        hook.tape.host_op("copy", d, src=s, run=run)


@user_facing
def fill(a, value) -> None:
    """a[...] = value (a real number), recorded by a tape: the reverse
    zeroes a's adjoint."""
    d = _array(a, "dst (the array filled)", "fill")
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TapeError(f"dg.fill: value must be a real number, got {type(value).__name__}")

    def run():
        d[...] = value
    hook = current_hook()
    if hook is None or hook.busy:
        run()
    else:
        hook.tape.host_op("fill", d, value=value, run=run)


__all__ = ["copy", "fill"]

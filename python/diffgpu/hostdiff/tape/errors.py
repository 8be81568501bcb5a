"""The error of the tape (a LaunchError: bad use of a recorded program)."""
from __future__ import annotations

from diffgpu.errors import LaunchError


class TapeError(LaunchError):
    """A recorded program that cannot be differentiated as asked: an array
    changed behind the tape's back, a seed of the wrong shape, nested tapes,
    a launch on another device, a memory limit below one state, ..."""


__all__ = ["TapeError"]

"""The CPU programs loaded in this process: at most `max_loaded()` at a time.

A loaded host program (runtime/cpu.py HostProgram) holds MLIR's
ExecutionEngine, the machine code, and the LLVM-dialect module it came from:
about 1 MB each, kept for as long as the program lives, and kernels keep
their programs for the life of the process. When more than `max_loaded()`
programs are loaded, the least recently launched ones are unloaded: their
engine, module and context are released (a program busy launching in
another thread is left alone). An unloaded program keeps its LLVM text (the
disk cache's payload) and JIT-compiles it again on its next launch, at the
opt level it was first built with; nothing else changes.

    DIFFGPU_MAX_LOADED=64 python train.py    # at most 64 programs loaded

Importing this module imports no MLIR.
"""
from __future__ import annotations

import collections
import threading
import weakref

from diffgpu.switches import positive_int

ENV = "DIFFGPU_MAX_LOADED"
#: programs loaded at once by default (about 1 MB each)
DEFAULT_MAX_LOADED = 256

_LOCK = threading.Lock()
_LRU: collections.OrderedDict = collections.OrderedDict()  # id -> weakref, oldest first
_DEAD: list = []  # ids of programs garbage-collected since (no lock in a weakref callback)


def max_loaded() -> int:
    """`DIFFGPU_MAX_LOADED` (a positive integer), else DEFAULT_MAX_LOADED;
    a ValueError (switches.SwitchError) names the variable for anything else."""
    n = positive_int(ENV)
    return DEFAULT_MAX_LOADED if n is None else n


def count() -> int:
    """How many programs are loaded now."""
    with _LOCK:
        _purge()
        return len(_LRU)


def touch(program) -> None:
    """`program` was just launched: the most recently used."""
    key = id(program)
    with _LOCK:
        if key in _LRU:
            _LRU.move_to_end(key)


def added(program, cap: int) -> None:
    """`program` was just loaded: it joins as the most recent, and the
    oldest others are unloaded down to `cap`."""
    key = id(program)
    with _LOCK:
        _purge()
        _LRU.pop(key, None)
        _LRU[key] = weakref.ref(program, lambda _, k=key: _DEAD.append(k))
        victims = [ref() for k, ref in _LRU.items() if k != key][:max(0, len(_LRU) - cap)]
    for victim in victims:
        if victim is not None:
            victim._unload()


def removed(program) -> None:
    """`program` released its engine."""
    with _LOCK:
        _LRU.pop(id(program), None)


def _purge() -> None:
    while _DEAD:
        key = _DEAD.pop()
        ref = _LRU.get(key)
        if ref is not None and ref() is None:
            del _LRU[key]

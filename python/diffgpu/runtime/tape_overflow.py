"""A derivative's heap tape that could not grow: the error after the launch.

The reverse of a loop keeps a per-thread tape (lowering/autodiff/tape.py):
128 words on the thread's stack, then `malloc` doubling it. When that
`malloc` returns null (the GPU's heap is used up; on the CPU, a buffer over
the test cap DIFFGPU_TAPE_CAP_WORDS, diffgpu/switches.py) the thread keeps
its buffer, writes its further words to the buffer's last slot and records
the words it asked for in the module's flag `@__dg_tape_overflow`
(abi.TAPE_OVERFLOW_GLOBAL): nothing faults, the values are garbage. After
the launch the runtime reads the flag and clears it, and raises
`overflow_error`:

- the CPU (runtime/cpu.py) after every launch of a module with the flag,
  through `@__dg_host_tape_status()` (one call, like the bounds status);
- a GPU (runtime/gpu.py `GpuProgram.check_tape`) after the launches of a
  program that `watch_tape` marked: its tape has no formula of the launch
  (`launch_checks.watch_unknown`), or a launch's tape reached the heap
  (`launch_checks.check_heap`): one stream synchronisation and 8 bytes;
- a CUDA graph of `tape.capture` (hostdiff/tape/graphs.py) after each
  replay: the graph's last nodes copy the flags of its watched programs to
  pinned host memory, and its `launch()` waits once and reads them
  (runtime/graph_flags.py).

A launcher that cannot read the flag (XLA runs the PTX itself for dg.jax
on a GPU, bridges/jax_gpu.py) takes `trapping_ptx(ptx)`: the same PTX with
the module's `@__dg_tape_recover` starting at 0 instead of 1, so that a
thread whose tape cannot grow traps (the launch fails, as a fault would)
instead of going on with garbage.

Imports only errors.py: both runtimes use it.
"""
from __future__ import annotations

import re

from diffgpu.errors import LaunchError

#: bytes of a tape word (lowering/autodiff/tape.py: a stack of i64)
WORD = 8


def overflow_error(name: str, words: int, heap: str) -> LaunchError:
    """The error of a launch whose heap tape could not grow: a thread asked
    for a buffer of `words` words; `heap` says which heap ran out."""
    return LaunchError(
        f"kernel '{name}': its derivative's tape outgrew {heap}: a thread's tape needed a "
        f"buffer of {words} words ({WORD * words} bytes) that could not be allocated. The "
        "launch ran to its end but its results are not to be trusted (the arrays it wrote "
        "hold partial values). Launch fewer threads or fewer loop trips, or write the loop "
        "as a `for` over range(n) with n a scalar argument or an array extent, whose tape "
        "is checked before the launch (docs/autodiff.md, \"A tape larger than the heap\")")


_RECOVER = re.compile(r"(\.visible\s+\.global\s[^;=]*\b__dg_tape_recover\[8\])\s*=\s*\{1\};")


def trapping_ptx(ptx: str) -> str:
    """`ptx` whose tape overflow traps (module docstring); PTX without a
    heap tape is returned as it is."""
    if "__dg_tape_recover" not in ptx:
        return ptx
    out, n = _RECOVER.subn(r"\1;", ptx)
    if n != 1:
        raise LaunchError("internal: the PTX declares __dg_tape_recover in an unexpected "
                          "form; a derivative's heap tape could not be made to trap on overflow")
    return out

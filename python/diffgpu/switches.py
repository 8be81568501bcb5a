"""Environment switches that change the generated code.

Each is on unless set to 0, false, no or off, and each is part of the
compile cache's key (runtime/store/cache_key.py), so a program compiled with a
switch off is never served when it is on:

- `DIFFGPU_REMAT`: the reverse sweep recomputes cheap values instead of
  taping them (lowering/autodiff/remat.py);
- `DIFFGPU_VECTOR_RED`: sm_90 vector reductions for adjacent atomic adds
  (lowering/reduce/vector_red.py);
- `DIFFGPU_VECTOR_ACCESS`: GPU vector loads/stores (`ld.v4`, `st.global.v4`)
  of the rows `dg.load_vec4` etc. read and `dg.store` writes, where a row is
  aligned (lowering/gpu/vector_access.py);
- `DIFFGPU_STRONG_ZEROS`: in derivatives, an adjoint or tangent that is
  exactly zero contributes exactly zero through a partial that is infinite
  or NaN (lowering/autodiff/rules/partials.py);
- `DIFFGPU_CHECKPOINTS`: the reverse of a runtime-length recurrence keeps
  its carried values at checkpoints in bounded local memory instead of the
  tape (lowering/autodiff/checkpoint.py; needs `DIFFGPU_REMAT` too);
- `DIFFGPU_COMBINE_ADDS`: a thread's atomic adds into one element of an
  add-only array are summed in registers first (lowering/reduce/combine_adds.py);
- `DIFFGPU_STENCIL`: stencil adjoints without scatter atomics: `dg.vjp`
  gathers the gradient of a 2-D, 3-D or flattened affine stencil input
  (lowering/autodiff/functional/gather.py) and `diffgpu-stencil-adjoint`
  transposes shadow adds per block (docs/stencils.md).

`set_switch(name, on)` sets one from Python (it writes the environment
variable, so child processes see it too); like the variable, it applies to
kernels compiled afterwards (a signature already compiled in this process
keeps its program).

They exist to measure and compare both forms of the code; this module
imports only errors.py, so the runtime may read them without the compiler.

`DIFFGPU_TAPE_CAP_WORDS` (a number of words; unset by default) is for
tests: a derivative's heap tape buffer (lowering/autodiff/tape.py) that
would grow past it is treated as a `malloc` that failed, so the CPU drives
the overflow path a GPU takes when its heap runs out (docs/autodiff.md, "A
tape larger than the heap"). It is part of the cache key when set.

`DIFFGPU_OPT` (0 to 3, default 2, as Numba's `NUMBA_OPT`) is LLVM's
optimisation level when a CPU program is JIT-compiled: O0 JIT-compiles in
about half the time and runs slower, with the same results (diffgpu emits
no fast-math flags). It is read whenever a host program is JIT-compiled (a
compile or a disk-cache hit: the cache holds the lowered module, which is
the same at every level), so it is not part of the cache key; a program
already loaded in the process keeps the level it was built with.
"""
from __future__ import annotations

import os

from diffgpu.errors import DiffgpuError

OPT = "DIFFGPU_OPT"
DEFAULT_OPT_LEVEL = 2
REMAT = "DIFFGPU_REMAT"
VECTOR_RED = "DIFFGPU_VECTOR_RED"
VECTOR_ACCESS = "DIFFGPU_VECTOR_ACCESS"
STRONG_ZEROS = "DIFFGPU_STRONG_ZEROS"
COMBINE_ADDS = "DIFFGPU_COMBINE_ADDS"
STENCIL = "DIFFGPU_STENCIL"
CHECKPOINTS = "DIFFGPU_CHECKPOINTS"
#: test-only: the most words a thread's heap tape buffer may have; a bigger
#: one counts as a failed `malloc` (the tape's overflow path, on the CPU)
TAPE_CAP = "DIFFGPU_TAPE_CAP_WORDS"
CODEGEN_SWITCHES = (REMAT, VECTOR_RED, STRONG_ZEROS, COMBINE_ADDS, STENCIL, CHECKPOINTS,
                    VECTOR_ACCESS)


def on(name: str) -> bool:
    """Is the switch `name` on (unset, or not 0/false/no/off)?"""
    return os.environ.get(name, "1").strip().lower() not in ("0", "false", "no", "off")


class SwitchError(DiffgpuError, ValueError):
    """An unknown switch name given to `set_switch`."""


def set_switch(name: str, value: bool) -> None:
    """Turn code-generation switch `name` (one of CODEGEN_SWITCHES) on or off."""
    if name not in CODEGEN_SWITCHES:
        raise SwitchError(f"unknown switch {name!r}; the switches are "
                         f"{', '.join(CODEGEN_SWITCHES)}")
    os.environ[name] = "1" if value else "0"


def describe() -> str:
    """`DIFFGPU_REMAT=on DIFFGPU_VECTOR_RED=off`: every switch, as the compiler
    reads it (and the tape cap, when one is set)."""
    text = " ".join(f"{name}={'on' if on(name) else 'off'}" for name in CODEGEN_SWITCHES)
    cap = tape_cap_words()
    return text if cap is None else f"{text} {TAPE_CAP}={cap}"


def positive_int(name: str, what: str = "integer") -> int | None:
    """The environment variable `name` as a positive integer, or None when
    unset; SwitchError ("`name` must be a positive `what`") for anything else."""
    text = os.environ.get(name, "").strip()
    if not text:
        return None
    if not text.isdigit() or int(text) < 1:
        raise SwitchError(f"{name} must be a positive {what}, got {text!r}")
    return int(text)


def tape_cap_words() -> int | None:
    """`DIFFGPU_TAPE_CAP_WORDS` (a positive integer), or None when unset;
    SwitchError for anything else."""
    return positive_int(TAPE_CAP, "number of words")


def host_opt_level() -> int:
    """LLVM's optimisation level for CPU programs (`DIFFGPU_OPT`, default 2);
    ValueError for anything but 0, 1, 2 or 3."""
    text = os.environ.get(OPT, "").strip()
    if not text:
        return DEFAULT_OPT_LEVEL
    if text not in ("0", "1", "2", "3"):
        raise ValueError(f"{OPT} must be 0, 1, 2 or 3, got {text!r}")
    return int(text)

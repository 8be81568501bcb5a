"""ABI facts shared by the compiler (lowering/) and the runtime (runtime/).

Both sides import these names from here, never a copy: the lowering writes
symbols and attributes with them, the runtime looks them up in the compiled
artifact. This module imports no MLIR, no compiler and no runtime.

Host programs (`diffgpu-to-host`, run by runtime/cpu.py through the
ExecutionEngine):

- the entry of kernel `k` is `@k`, or `@__dg_entry_k` when `k` is a C
  library name such as `exp` (ENTRY_PREFIX; lowering/host/to_host.py), called
  through its C interface `@_mlir_ciface_<entry>` (CIFACE_PREFIX) with one
  packed `void*[]`: the kernel's arguments, then grid x, y, z and block
  x, y, z (index);
- an array argument is a ranked memref descriptor: `allocated, aligned,
  offset, sizes[r], strides[r]` (i64 words, strides in elements), passed by
  pointer; a scalar by a pointer to its value;
- `@__dg_host_status()` (STATUS_FUNC; lowering/host/bounds.py) returns and
  clears the number of the first out-of-bounds access, whose source location
  is entry N-1 of the module attribute `diffgpu.host_accesses` (ACCESSES_ATTR);
- `@__dg_host_cancel_addr()` (CANCEL_ADDR_FUNC; lowering/host/cancel.py)
  returns the address of the module's i64 cancel flag;
- `@__dg_host_tape_status()` (TAPE_STATUS_FUNC; lowering/host/to_host.py),
  in a module with a derivative's heap tape, returns and clears the global
  `@__dg_tape_overflow` (TAPE_OVERFLOW_GLOBAL): the words a thread's tape
  asked for when its buffer could not grow (0: none; lowering/autodiff/tape.py);
- the race-checked variant (lowering/host/racecheck.py) has `@__dg_race_begin`
  / `@__dg_race_end` and the site tables `diffgpu.race_sites` /
  `diffgpu.race_shared`.

GPU programs (PTX, lowering/gpu/to_gpu.py): a memref argument of rank r is
`2 + 1 + 2r` `.u64` parameters (`memref_words`), a scalar one parameter. A
module with a derivative's heap tape has the 8-byte `.visible .global`
`__dg_tape_overflow` (TAPE_OVERFLOW_GLOBAL), as on the host.

Per-launch scratch (lowering/reduce/grid_sum.py): a kernel whose aggregated float
sums finish across blocks takes two trailing arguments the user never
passes, `acc: memref<?xf64>` and `count: memref<?xi64>`, per such sum (a
"slot") 65 elements each, one 128-byte line apart (`scratch_sizes`: 64
arrival groups and a top). The module attribute `diffgpu.grid_scratch`
(SCRATCH_ATTR) lists `"kernel=slots"`; a GPU program's argument descriptors
end with `("scratch", slots)` (SCRATCH_KIND). The runtime passes zeroed
scratch, one buffer per (program, device, stream) on the GPU (the launch's
blocks leave it zero again), one per program and kernel on the host.

Chips: KNOWN_CHIPS and `check_chip` (lowering/common/targets.py re-exports them).
"""
from __future__ import annotations

import re

#: prefix of the host entry of a kernel named like a C library function
ENTRY_PREFIX = "__dg_entry_"
#: prefix MLIR gives the C-interface wrapper of a function
CIFACE_PREFIX = "_mlir_ciface_"
#: host status function (out-of-bounds access number) and its location table
STATUS_FUNC = "__dg_host_status"
ACCESSES_ATTR = "diffgpu.host_accesses"
#: host function returning the address of the module's cancel flag (Ctrl-C)
CANCEL_ADDR_FUNC = "__dg_host_cancel_addr"
#: a derivative's heap tape that could not grow (lowering/autodiff/tape.py):
#: the module's global index word holding the words a thread asked for (0: none),
#: and the host function that returns and clears it
TAPE_OVERFLOW_GLOBAL = "__dg_tape_overflow"
TAPE_STATUS_FUNC = "__dg_host_tape_status"
#: ... and the global index word that lets the thread go on after recording
#: it (1 as compiled); 0 makes the overflow a trap (for launchers that
#: cannot read the flag: runtime/tape_overflow.py `trapping_ptx`)
TAPE_RECOVER_GLOBAL = "__dg_tape_recover"
#: race-checked host variant: its entry points and site tables
RACE_BEGIN_FUNC = "__dg_race_begin"
RACE_END_FUNC = "__dg_race_end"
RACE_SITES_ATTR = "diffgpu.race_sites"
RACE_SHARED_ATTR = "diffgpu.race_shared"
#: race detector layout: regions it tracks, words of its report (the first
#: race, then the first divergent barrier), shadow words per element (seven
#: records of four words: lowering/host/race_runtime.py)
RACE_MAX_REGIONS = 64
RACE_REGION_WORDS = 8
RACE_REPORT_WORDS = 24
RACE_SHADOW_WORDS = 28
#: C-interface functions of a host module that are not kernels
HELPER_PREFIXES = ("__dg_host_", "__dg_race_")


#: per-launch scratch of cross-block sums (lowering/reduce/grid_sum.py)
SCRATCH_ATTR = "diffgpu.grid_scratch"
SCRATCH_KIND = "scratch"


def scratch_entries(slots_by_kernel: dict) -> list[str]:
    """The SCRATCH_ATTR strings of {kernel: slots}."""
    return [f"{k}={n}" for k, n in sorted(slots_by_kernel.items())]


def parse_scratch(entries) -> dict:
    """{kernel: slots} of the SCRATCH_ATTR strings (None: no scratch)."""
    out = {}
    for e in entries or ():
        k, _, n = str(e).rpartition("=")
        out[k] = int(n)
    return out


def scratch_slots(descriptors) -> int:
    """Slots of the scratch a kernel with these argument descriptors takes
    (0: none)."""
    if descriptors and descriptors[-1][0] == SCRATCH_KIND:
        return int(descriptors[-1][1])
    return 0


def user_descriptors(descriptors):
    """The descriptors of the arguments the caller passes (scratch dropped)."""
    return descriptors[:-1] if scratch_slots(descriptors) else descriptors


#: PTX parameters of the scratch: two rank-1 memref descriptors
SCRATCH_WORDS = 2 * (3 + 2 * 1)
#: the GPU buffer's cache line: every accumulator and counter of the scratch
#: has a 128-byte line to itself, so no two of the per-block atomics queue at
#: one L2 line unless they target the same element
SCRATCH_LINE = 128
#: words (8 bytes) per line: the stride between two scratch elements
SCRATCH_STRIDE = SCRATCH_LINE // 8
#: arrival groups of a grid sum (lowering/reduce/grid_sum.py): block b adds to the
#: accumulator and counter of group b % SCRATCH_GROUPS
SCRATCH_GROUPS = 64


def scratch_sizes(slots: int) -> tuple[int, int]:
    """(f64 accumulator words, i64 counter words) of `slots` grid sums: per
    slot one line per group and one for the top, of accumulators and of
    counters alike."""
    per = (SCRATCH_GROUPS + 1) * SCRATCH_STRIDE
    return slots * per, slots * per


def scratch_layout(slots: int) -> tuple[int, int]:
    """(byte offset of the counters, bytes) of a GPU scratch buffer: the
    accumulators from byte 0, the counters after them (line-aligned)."""
    acc, count = scratch_sizes(slots)
    return 8 * acc, 8 * (acc + count)


def memref_words(rank: int) -> int:
    """Words of a memref descriptor of `rank`: two pointers, the offset, the
    sizes and the strides (the host descriptor and the PTX parameters)."""
    return 3 + 2 * rank


def host_entry(kernel: str, c_library_name: bool) -> str:
    """Symbol of the host entry of `kernel` (`c_library_name`: the kernel is
    named like a C library function and gets ENTRY_PREFIX)."""
    return ENTRY_PREFIX + kernel if c_library_name else kernel


def kernel_of_entry(entry: str) -> str:
    """The kernel name of a host entry symbol (inverse of `host_entry`)."""
    return entry[len(ENTRY_PREFIX):] if entry.startswith(ENTRY_PREFIX) else entry


# ---------------------------------------------------------------------------
# chips
# ---------------------------------------------------------------------------

#: NVIDIA chips the NVPTX backend of MLIR 22 knows (sm_XX, plus `a` variants)
KNOWN_CHIPS = (
    "sm_50", "sm_52", "sm_53", "sm_60", "sm_61", "sm_62", "sm_70", "sm_72",
    "sm_75", "sm_80", "sm_86", "sm_87", "sm_89", "sm_90", "sm_90a", "sm_100",
    "sm_100a", "sm_101", "sm_101a", "sm_120", "sm_120a",
)
_CHIP_RE = re.compile(r"^sm_\d+a?$")


class TargetError(ValueError):
    """A target name or attribute that diffgpu cannot compile for."""


def check_chip(chip: str) -> str:
    """Return `chip` if the NVPTX backend knows it, else raise TargetError.

    MLIR/LLVM abort on an unknown chip, so this runs before any pass sees it.
    """
    if not isinstance(chip, str) or not _CHIP_RE.match(chip) or chip not in KNOWN_CHIPS:
        raise TargetError(
            f"unknown NVIDIA chip {chip!r}; expected one of: {', '.join(KNOWN_CHIPS)}")
    return chip

"""Checks of a launch that depend on what the program is, not only on its
arguments: they read facts the compiler recorded in the payload.

`check_block(program, block)`: a kernel that uses a warp or block collective
(`dg.warp_sum`, `dg.shfl_xor`, `dg.block_scan`, ...: directly, through a
device function, or in a derivative; payload "collectives", recorded by
lowering/checks/collectives.py) runs only on blocks whose thread count is a
multiple of the warp (32). Any other block is a LaunchError naming the
kernel, the collective and the block, before anything runs
(docs/collectives.md, "Block sizes").

These run where a launch's program and block first meet: driver/launch.py
`run_program` (the full path) and `fastpath.Ready` (one per launch key), so
a repeated launch pays nothing for them.
"""
from __future__ import annotations

from diffgpu.errors import LaunchError

#: threads per warp (NVIDIA GPUs; the CPU emulation forms the same warps)
WARP = 32


def block_threads(block) -> int:
    n = 1
    for b in block:
        n *= b
    return n


def check_block(program, block) -> None:
    """LaunchError when `program` uses collectives and `block` (a tuple of
    1 to 3 ints) holds a number of threads that is not a multiple of WARP."""
    uses = program.collectives
    if not uses:
        return
    n = block_threads(block)
    if n % WARP == 0:
        return
    shape = tuple(block) + (1,) * (3 - len(block))
    name = program.payload.get("name") or program.entry
    listed = ", ".join(uses)
    raise LaunchError(
        f"kernel '{name}' uses {listed}, which need{'s' if len(uses) == 1 else ''} "
        f"whole warps: block {shape} has {n} threads, not a multiple of the warp "
        f"({WARP}); round the block up (to {WARP * (n // WARP + 1)} threads) and give "
        f"the extra threads a neutral value")

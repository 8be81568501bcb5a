"""Checks of a launch that depend on what the program is, not only on its
arguments: they read facts the compiler recorded in the payload.

`check_block(program, block)`: a kernel that uses a warp or block collective
(`dg.warp_sum`, `dg.shfl_xor`, `dg.block_scan`, ...: directly, through a
device function, or in a derivative; payload "collectives", recorded by
lowering/checks/collectives.py) runs only on blocks whose thread count is a
multiple of the warp (32). Any other block is a LaunchError naming the
kernel, the collective and the block, before anything runs
(docs/collectives.md, "Block sizes").

`check_heap(program, args, grid, block, sig)`: a kernel whose reverse
keeps a tape on the heap (payload "heap_tape": the words a thread pushes, as
a formula of the launch, lowering/facts/heap_tape.py) must fit the heap:
the bytes one thread's tape takes at its peak (128 words on its stack, then
a buffer doubling from `malloc`, the old one alive while it is copied),
times the threads whose tapes are alive at once, at most the heap's size.
On a GPU that is every thread of the launch, up to the threads the device
holds at once (SMs x threads per SM), against the malloc heap the runtime
sets (runtime/gpu.py `ensure_malloc_heap`); on the CPU the threads of one
block (a block's threads run one after another, kept alive across its
barriers), against DIFFGPU_HEAP_BYTES (default 1 GiB, the GPU's). Setting
DIFFGPU_HEAP_BYTES on a GPU lowers the limit the check assumes (never the
heap itself). A launch over the limit is a LaunchError before anything
runs. A tape whose size is no formula of the launch (a `while` loop) is
not checked before the launch.

`watch_unknown(program)` and `check_heap` say which GPU programs read
their tape's overflow flag after a launch (runtime/tape_overflow.py).

These run where a launch's program and block first meet: driver/launch.py
`run_program` (the full path), `fastpath.Ready` and the checked level (one
per launch key), so a repeated launch pays nothing for them.
"""
from __future__ import annotations

import os

from diffgpu.errors import LaunchError
from diffgpu.runtime.tape_overflow import WORD  # bytes of a tape word

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


#: the heap limit the check assumes (bytes): the CPU's, and a lower one on a GPU
HEAP_ENV = "DIFFGPU_HEAP_BYTES"
HOST_HEAP_BYTES = 1 << 30


def tape_bytes(words: int, initial: int) -> int:
    """Heap bytes of one thread's tape at its peak after `words` pushes:
    none while they fit the `initial` words on its stack, else the final
    buffer plus the one before it (alive while copied) when that one was on
    the heap too."""
    if words <= initial:
        return 0
    cap = initial
    while cap < words:
        cap *= 2
    return WORD * (cap + (cap // 2 if cap // 2 > initial else 0))


def _env_limit() -> int | None:
    text = os.environ.get(HEAP_ENV, "").strip()
    if not text:
        return None
    try:
        value = int(text)
    except ValueError:
        raise LaunchError(f"{HEAP_ENV}={text!r}: expected a number of bytes") from None
    if value < 0:
        raise LaunchError(f"{HEAP_ENV}={text!r}: expected a number of bytes >= 0")
    return value


def check_heap(program, args, grid, block, sig=None) -> None:
    """LaunchError when the heap tapes of `program` for this launch would
    not fit the heap (module docstring)."""
    tape = program.heap_tape
    if not tape:
        return
    words = None if tape.get("words") is None else evaluate(tape["words"], args, grid, block)
    on_gpu = program.kind == "gpu"
    if words is None:  # not known before the launch: read its overflow flag after it
        if on_gpu:
            program.gpu.watch_tape()
        return
    per = tape_bytes(words, int(tape.get("initial") or 0))
    if per == 0:
        return
    if on_gpu:  # it reaches the heap: read its overflow flag too (the allocator's overhead)
        program.gpu.watch_tape()
    env = _env_limit()
    total = block_threads(grid) * block_threads(block)
    if on_gpu:
        from diffgpu.runtime import gpu
        heap, resident = gpu.heap_room((sig.gpu_id if sig is not None else None) or 0)
        threads = min(total, resident)
        limit = heap if env is None else min(heap, env)
        where = ("the GPU's malloc heap" if env is None or env >= heap
                 else f"the {HEAP_ENV} limit")
        held = f"{threads} threads alive at once (of {total})"
    else:
        threads = block_threads(block)
        limit = HOST_HEAP_BYTES if env is None else env
        where = f"the CPU heap limit ({HEAP_ENV})"
        held = f"{threads} threads of a block alive at once"
    need = per * threads
    if need <= limit:
        return
    name = program.payload.get("name") or program.entry
    raise LaunchError(
        f"kernel '{name}': its derivative keeps a tape of {words} words per thread on the "
        f"heap ({per} bytes each at its peak, {held}: {need} bytes), more than "
        f"{where} of {limit} bytes; launch fewer threads or fewer loop trips, or write the "
        "loop so its reverse needs no tape (docs/autodiff.md, loops)")


def evaluate(e, args, grid, block):
    """The value of a tape-words expression (lowering/facts/heap_tape.py)
    for a launch, or None when an argument it reads is not of the kind it
    names."""
    op = e[0]
    if op == "c":
        return int(e[1])
    if op == "arg":
        v = args[e[1]] if e[1] < len(args) else None
        if isinstance(v, bool) or not hasattr(v, "__index__"):
            return None
        return int(v)
    if op == "dim":
        shape = getattr(args[e[1]], "shape", None) if e[1] < len(args) else None
        return int(shape[e[2]]) if shape is not None and e[2] < len(shape) else None
    if op == "bdim":
        return int(block[e[1]]) if e[1] < len(block) else 1
    if op == "gdim":
        return int(grid[e[1]]) if e[1] < len(grid) else 1
    vals = [evaluate(x, args, grid, block) for x in e[1:]]
    if any(v is None for v in vals):
        return None
    if op == "trips":
        lb, ub, step = vals
        return max(0, -(-(ub - lb) // step)) if step > 0 else None
    a, b = vals
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op == "max":
        return max(a, b)
    if op == "min":
        return min(a, b)
    if b == 0:
        return None
    if op == "cdiv":
        return -(-a // b)
    if op == "div":
        q = abs(a) // abs(b)  # towards zero, as arith.divsi
        return q if (a >= 0) == (b >= 0) else -q
    return None


def watch_unknown(program) -> None:
    """A GPU `program` (driver/launch.py Program) whose heap tape has no
    formula (payload "heap_tape" words None, or no payload entry at all)
    reads its overflow flag after every launch; one with a formula starts
    to once a launch's tape reaches the heap (`check_heap`)."""
    tape = program.heap_tape
    if program.gpu is not None and (tape is None or tape.get("words") is None):
        program.gpu.watch_tape()

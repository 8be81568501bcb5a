"""Which warp-slot array each block collective of the shuffle path uses, and
which of them need a barrier after reading their slots (used by
`diffgpu-lower-collectives`, lowering/gpu/collectives.py).

A block reduction or scan on the shuffle path writes one value per warp into
a slot array, passes a barrier, and has every warp read the slots. The next
collective must not overwrite a slot before every warp has read it. Two slot
arrays (`parity` 0 and 1) remove the barrier after the read: when the next
block collective that can run is the following one in the same block, with
only ops that run no collective (nothing with a collective inside, no call)
in between, it writes the other array, and its own barrier orders our reads
before any later write of ours (a thread writes it only after passing that
barrier, which every thread passes only after its reads of ours). A
collective whose successor is not known that way (the last one of a loop's
body, one followed by an `scf.if` or a call that may run another) keeps its
barrier, and so restarts the alternation, except in the body of an
`scf.for` whose every collective-running op is one of an even number of
block collectives: there the last one's successor is the next iteration's
first, of the other parity (a coarsened row loop: 4 per row, 4 barriers
instead of 5). The last one of a kernel's
top-level block (ending in `gpu.return`) needs none: nothing runs after it;
nor does the last one of a function's top-level block when every call of
the function is followed by no collective and ends its caller the same way
(the reverse sweep of a derivative kernel, called last).

    plan(gpu_module, ops) -> {operation: (parity, needs_barrier_after)}

Only block reductions and scans are planned; warp collectives use no slots.
"""
from __future__ import annotations

from diffgpu.dialects import names as N
from diffgpu.lowering.common.ir_util import callee, sym_name, walk

#: the collectives that go through the warp slots
SLOTTED = (N.BLOCK_REDUCE, N.BLOCK_SCAN)


def _runs_collectives(op) -> bool:
    """Whether `op` may run a block collective (has one inside, or calls)."""
    if op.name in SLOTTED:
        return True
    if op.name.endswith(".call") or op.name == "func.call_indirect":
        return True
    if not len(op.regions):
        return False
    return any(o.name in SLOTTED or o.name.endswith(".call")
               for o in walk(op, include_self=False))


def _ends_program(block, calls, depth=0) -> bool:
    """Nothing runs a block collective after `block`'s last op: it ends in a
    return of a kernel, or of a function every call of which (`calls`:
    {callee: [call ops]}) is followed by no collective and ends its caller
    the same way."""
    ops = list(block.operations)
    owner = block.owner
    if owner is None or not ops or ops[-1].operation.name not in ("gpu.return", "func.return"):
        return False
    owner = owner.operation
    if owner.name == "gpu.func" and "gpu.kernel" in owner.attributes:
        return True
    name = sym_name(owner)
    if owner.name != "func.func" or not calls.get(name) or depth > 8:
        return False
    return all(_quiet_after(call) and _ends_program(call.block, calls, depth + 1)
               for call in calls[name])


def _quiet_after(op) -> bool:
    """No op after `op` in its block may run a block collective."""
    after = False
    for o in op.block.operations:
        o = o.operation
        if after and _runs_collectives(o):
            return False
        after = after or o == op
    return True


def plan(module, ops) -> dict:
    """{op: (parity, barrier_after)} for the SLOTTED ops among `ops`, the
    collectives of gpu.module `module`."""
    calls = {}
    for call in walk(module):
        if call.name in ("func.call", "gpu.call"):
            calls.setdefault(callee(call), []).append(call)
    out = {}
    seen = set()
    for op in ops:
        if op.name not in SLOTTED or op in seen:
            continue
        block = op.block
        parity = 0
        pending = None  # the slotted op waiting for its successor
        unbroken = True  # every op of the block that runs a collective is slotted
        count = 0
        for child in [o.operation for o in block.operations]:
            if child.name in SLOTTED:
                if pending is not None:
                    out[pending] = (out[pending][0], False)
                out[child] = (parity, True)
                seen.add(child)
                parity ^= 1
                pending = child
                count += 1
            elif _runs_collectives(child):
                pending, parity, unbroken = None, 0, False
        if pending is not None and (_ends_program(block, calls) or
                                    (unbroken and count % 2 == 0 and _for_body(block))):
            out[pending] = (out[pending][0], False)
    return out


def _for_body(block) -> bool:
    """`block` is the body of an `scf.for`: with an even number of slotted
    collectives and nothing else running one, its last collective (parity
    1) is followed by the next iteration's first (parity 0), so the
    alternation carries over the back edge; after the loop the next
    collective is planned afresh (the loop runs collectives: parity 0,
    whose slots' last reader, the body's second-to-last collective, is
    ordered by the last one's barrier)."""
    owner = block.owner
    return owner is not None and owner.operation.name == "scf.for"

"""`diffgpu-lower-collectives`: the collectives and `diffgpu.atomic_rmw` inside
`gpu.module`s (after `diffgpu-lower-to-gpu`; docs/collectives.md).

The collectives are warp shuffles (`gpu.shuffle`, `shfl.sync` in PTX):

- warp_reduce: the xor butterfly (offsets 16, 8, 4, 2, 1): 5 shuffles;
- block_reduce: the butterfly per warp, lane 0 stores the warp's value in
  a slot of a shared array, a barrier, every warp reads `slot[lane]` (the
  identity past the last warp) and runs the butterfly again: 10 shuffles,
  1 barrier. Consecutive block collectives alternate between two sets of
  32 slots, so the slots need no second barrier; one whose successor is not
  known (the last of a loop body) keeps a barrier after its read
  (lowering/gpu/slot_plan.py);
- block_scan: Kogge-Stone per warp (`shuffle up`, offsets 1 .. 16; the
  reverse scan `shuffle down`), the warp totals through the shared slots
  and scanned the same way, each thread adds the part of the warps before
  (after) its own (slots and barriers as block_reduce's);
- shuffle: one `gpu.shuffle` of its mode, width 32.

The slots are one `memref.global` of 64 elements per value type in the
workgroup address space of the gpu.module (`.shared` in PTX, 256 bytes for
float32), so device functions and derivatives use them too.

Shuffles need whole warps: the runtime refuses a launch of a kernel that
reaches a collective on a block whose thread count is not a multiple of 32
(runtime/launch_checks.py, payload "collectives": every collective here
was there when diffgpu-check-collectives recorded them). So the GPU code
holds no path for other block sizes (the shared-memory expansion the CPU
runs, lowering/common/collective_ir.py, kept ~20 more registers live in a
layer norm's reverse: 4 instead of 6 blocks per SM). Each function that
runs a collective starts with a `cf.assert` that the block is whole warps
(`__assertfail` in PTX): a launch of the PTX that bypasses the runtime's
check fails with that message instead of computing garbage.

`diffgpu.atomic_rmw` becomes `memref.atomic_rmw` maximumf/maxs, minimumf/mins
or assign (float max/min are a compare-and-swap loop in PTX).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from diffgpu.dialects import names as N
from diffgpu.lowering.common import collective_ir as C
from diffgpu.lowering.common.ir_util import sym_name, walk
from diffgpu.lowering.gpu.slot_plan import plan
from diffgpu.lowering.registry import ModulePass, register_pass

WARP = N.WARP_SIZE
#: arith::AtomicRMWKind of each atomic_rmw kind: (float, integer)
RMW = {"max": (4, 6), "min": (8, 10), "exch": (3, 3)}
#: the warp slots of the block collectives: two sets (parities) of WARP
SLOTS = "__dg_warp_slots_{}"
#: the message of the whole-warps assertion (`__assertfail` on the GPU)
WHOLE_WARPS = ("diffgpu: a warp or block collective needs whole warps: the block's "
               "thread count must be a multiple of 32")


@register_pass
@dataclass
class LowerCollectives(ModulePass):
    """Collectives to shuffles (or shared memory), atomic_rmw to memref.atomic_rmw."""

    name: ClassVar[str] = "diffgpu-lower-collectives"
    summary: ClassVar[str] = "GPU: warp/block collectives to gpu.shuffle and shared memory"

    def run(self, module) -> None:
        body = module.regions[0].blocks[0]
        for gm in [op.operation for op in body.operations]:
            if gm.name != "gpu.module":
                continue
            for op in walk(gm, (N.ATOMIC_RMW,)):
                self._atomic(op)
            ops = walk(gm, N.COLLECTIVES)
            for op in ops:
                why = C.problem(op.opview)
                if why:
                    self.error(op, why)
            if self._failed:
                return
            globals_ = {}
            slots = plan(gm, ops)  # read before any op is erased
            wheres = [slots.get(op, (0, True)) for op in ops]
            for fn in _functions(ops):
                _assert_whole_warps(fn)
            for op, where in zip(ops, wheres):
                with op.location:
                    _lower(op, gm, globals_, where)

    def _atomic(self, op) -> None:
        from diffgpu._mlir import ir

        view = op.opview
        if view.kind not in RMW or len(op.operands) < 2:
            self.error(op, f"'{N.ATOMIC_RMW}' needs a kind of {', '.join(N.RMW_KINDS)}")
            return
        kind = RMW[view.kind][0 if C.is_float(view.value.type) else 1]
        attrs = {"kind": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), kind)}
        new = ir.Operation.create("memref.atomic_rmw", results=[view.value.type],
                                  operands=[view.value, view.memref] + view.indices,
                                  attributes=attrs, loc=op.location, ip=ir.InsertionPoint(op))
        op.results[0].replace_all_uses_with(new.results[0])
        op.erase()


def geometry(name, dim):
    from diffgpu._mlir import ir

    return ir.Operation.create(f"gpu.{name}", results=[ir.IndexType.get()], attributes={
        "dimension": ir.Attribute.parse(f"#gpu<dim {'xyz'[dim]}>")}).results[0]


def barrier():
    from diffgpu._mlir import ir

    ir.Operation.create("gpu.barrier")


def _slots(gm, t, globals_):
    """The module's warp-slot array of type `t` (2 x WARP elements), at the
    insertion point."""
    from diffgpu._mlir import ir, memref

    key = str(t)
    shape = C.shared_type(t, 2 * WARP)
    if key not in globals_:
        block = gm.regions[0].blocks[0]
        taken = {sym_name(o) for o in block.operations}
        name = SLOTS.format(key)
        if name not in taken:
            with ir.InsertionPoint.at_block_begin(block), gm.location:
                memref.GlobalOp(name, ir.TypeAttr.get(shape), sym_visibility="private",
                                alignment=16)
        globals_[key] = name
    return memref.get_global(shape, globals_[key])


def _functions(ops) -> list:
    """The functions (gpu.func / func.func) holding `ops`, each once."""
    out = []
    for op in ops:
        fn = op.parent
        while fn is not None and fn.name not in ("gpu.func", "func.func"):
            fn = fn.parent
        if fn is not None and not any(fn == f for f in out):
            out.append(fn)
    return out


def _assert_whole_warps(fn) -> None:
    """A trap at the start of `fn` where its block is not whole warps."""
    from diffgpu._mlir import arith, ir, scf

    block = fn.regions[0].blocks[0]
    with ir.InsertionPoint.at_block_begin(block), fn.location:
        _, n = C.linear_thread(geometry)
        bad = C.cmp("ne", arith.remui(n, C.idx(WARP)), C.idx(0))
        guard = scf.IfOp(bad, [])
        with ir.InsertionPoint(guard.then_block):
            ir.Operation.create("llvm.intr.trap")
            scf.YieldOp([])


def shuffle(mode, v, k):
    """gpu.shuffle of `v` (k: an i32 value), width 32."""
    from diffgpu._mlir import ir

    return ir.Operation.create(
        "gpu.shuffle", results=[v.type, ir.IntegerType.get_signless(1)],
        operands=[v, k, C.i32(WARP)],
        attributes={"mode": ir.Attribute.parse(f"#gpu<shuffle_mode {mode}>")}).results[0]


def butterfly(kind, v):
    for off in C.LEVELS:
        v = C.combine(kind, v, shuffle("xor", v, C.i32(off)))
    return v


def warp_scan(v, lane, reverse):
    """Kogge-Stone inclusive scan over the warp (reverse: suffix sums)."""
    from diffgpu._mlir import arith

    for d in C.SCAN_STEPS:
        y = shuffle("down" if reverse else "up", v, C.i32(d))
        ok = C.cmp("ult", arith.addi(lane, C.idx(d)), C.idx(WARP)) if reverse else \
            C.cmp("uge", lane, C.idx(d))
        v = arith.select(ok, C.combine("sum", y, v), v)
    return v


def _fast(op, lin, n, P, where):
    """The shuffle form (the thread count is a multiple of 32); the warp
    slots are P[32 * parity ..] (where: (parity, barrier after the read))."""
    from diffgpu._mlir import arith, ir, memref, scf

    name, v = op.operation.name, op.value
    t = v.type
    if name == N.SHUFFLE:
        return shuffle(op.mode, v, op.lane)
    if name == N.WARP_REDUCE:
        return butterfly(op.kind, v)
    lane, warp = arith.remui(lin, C.idx(WARP)), arith.divui(lin, C.idx(WARP))
    nw = arith.divui(n, C.idx(WARP))
    base = C.idx(WARP * where[0])
    kind = op.kind if name == N.BLOCK_REDUCE else "sum"
    if name == N.BLOCK_REDUCE:
        mine, writer = butterfly(kind, v), C.idx(0)
    else:
        mine = warp_scan(v, lane, op.reverse)
        writer = C.idx(0 if op.reverse else WARP - 1)
    store = scf.IfOp(C.cmp("eq", lane, writer), [])
    with ir.InsertionPoint(store.then_block):
        memref.store(mine, P, [arith.addi(base, warp)])
        scf.YieldOp([])
    barrier()
    slot = scf.IfOp(C.cmp("ult", lane, nw), [t], has_else=True)
    with ir.InsertionPoint(slot.then_block):
        scf.YieldOp([memref.load(P, [arith.addi(base, lane)])])
    with ir.InsertionPoint(slot.else_block):
        scf.YieldOp([C.identity(kind, t)])
    x = slot.results[0]
    if name == N.BLOCK_REDUCE:
        result = butterfly(kind, x)
    else:
        totals = warp_scan(x, lane, op.reverse)
        if op.reverse:
            other, has = arith.addi(warp, C.idx(1)), C.cmp("ult", arith.addi(warp, C.idx(1)), nw)
        else:
            other, has = arith.subi(warp, C.idx(1)), C.cmp("ugt", warp, C.idx(0))
        i32 = ir.IntegerType.get_signless(32)
        before = shuffle("idx", totals, arith.index_cast(i32, other))
        result = arith.select(has, C.combine("sum", before, mine), mine)
    if where[1]:
        barrier()
    return result


def _lower(op, gm, globals_, where) -> None:
    from diffgpu._mlir import ir

    view = op.opview
    with ir.InsertionPoint(op):
        lin, n = C.linear_thread(geometry)
        slotted = op.name in (N.BLOCK_REDUCE, N.BLOCK_SCAN)
        P = _slots(gm, view.value.type, globals_) if slotted else None
        result = _fast(view, lin, n, P, where)
    op.results[0].replace_all_uses_with(result)
    op.erase()

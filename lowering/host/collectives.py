"""`diffgpu-expand-collectives`: the collectives and `diffgpu.atomic_rmw` of
host-target kernels, before `diffgpu-lower-to-host` (docs/collectives.md).

The CPU runs the threads of a block one after another, so a warp or block
collective cannot exchange registers: each becomes the shared-memory
expansion of lowering/common/collective_ir.py (a store per thread, a
barrier, one thread computing what the GPU's shuffles compute in their
order, a barrier, a load per thread), which `diffgpu-lower-to-host` then
splits at its barriers like any `dg.syncthreads()`. The two staging arrays
per value type are `diffgpu.shared_alloc`s of the kernel:

    %r = "diffgpu.warp_reduce"(%v) {kind = "sum"} : (f32) -> f32
  becomes
    memref.store %v, %S[%lin]; "diffgpu.barrier"()
    scf.if (%lin == 0) { ... R[32 w] = the tree of warp w's 32 values ... }
    "diffgpu.barrier"(); %r = memref.load %R[%lin / 32 * 32]

Calls from a kernel to functions reaching a collective (device functions,
derivatives) are inlined first, so the staging arrays are the kernel's.
`diffgpu.atomic_rmw` becomes a load, max/min (or the new value), a store,
both marked `diffgpu.atomic` for the race detector (as atomic_add: the
threads of a block never interleave on the CPU).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from diffgpu.dialects import names as N
from diffgpu.lowering.common import collective_ir as C
from diffgpu.lowering.common import targets
from diffgpu.lowering.common.ir_util import callee as callee_of, sym_name, top_ops, walk
from diffgpu.lowering.host import inline as host_inline
from diffgpu.lowering.host.racecheck import ATOMIC_ATTR
from diffgpu.lowering.registry import ModulePass, register_pass

COLLECTIVES = N.COLLECTIVES
MAX_ROUNDS = host_inline.MAX_ROUNDS


@register_pass
@dataclass
class ExpandCollectives(ModulePass):
    """Host kernels: collectives through shared memory, atomic_rmw as load/op/store."""

    name: ClassVar[str] = "diffgpu-expand-collectives"
    summary: ClassVar[str] = ("host target: warp/block collectives through shared memory and "
                              "barriers, atomic max/min as load/op/store")

    def run(self, module) -> None:
        from diffgpu._mlir import ir

        host = [f for f in top_ops(module, ("func.func",)) if targets.get_target(f) is not None
                and targets.is_host(targets.get_target(f)) and f.regions[0].blocks]
        for f in host:
            for op in walk(f, (N.ATOMIC_RMW,)):
                self._atomic(op)
        if not any(walk(f, COLLECTIVES) for f in host):
            return
        kernels = [f for f in host if targets.KERNEL_ATTR in f.attributes]
        for f in host:
            for op in walk(f, COLLECTIVES):
                why = C.problem(op.opview)
                if why:
                    self.error(op, why)
        if self._failed:
            return
        reach = host_inline.functions_reaching(host, COLLECTIVES)
        for k in kernels:
            self._inline(k, reach)
        if self._failed:
            return
        # every caller of a function in `reach` is in `reach` too, or a kernel
        # (inlined above): the functions are no longer called
        for f in reach.values():
            if f not in kernels:
                f.erase()
        for k in kernels:
            ops = walk(k, COLLECTIVES)
            if ops:
                with k.location:
                    _expand(k, ops)

    def _inline(self, k, reach) -> None:
        for _ in range(MAX_ROUNDS):
            calls = [c for c in walk(k, ("func.call",)) if callee_of(c) in reach]
            if not calls:
                return
            for c in calls:
                callee = reach[callee_of(c)]
                if callee == k or len(callee.regions[0].blocks) != 1:
                    self.error(c, f"cannot inline '@{callee_of(c)}', which uses collectives, "
                                  "into the kernel (recursion or a body of several blocks)")
                    return
                host_inline.inline_call(c, callee)
        self.error(k, f"calls reaching collectives in '@{sym_name(k)}' nest too deeply "
                      "(recursion?) to be inlined on the host target")

    def _atomic(self, op) -> None:
        from diffgpu._mlir import ir, memref

        view = op.opview
        kind = view.kind
        if kind not in N.RMW_KINDS or len(op.operands) < 2:
            self.error(op, f"'{N.ATOMIC_RMW}' needs a kind of {', '.join(N.RMW_KINDS)}, a "
                           "memref, a value and indices")
            return
        ref, value, indices = view.memref, view.value, view.indices
        with ir.InsertionPoint(op), op.location:
            load = memref.LoadOp(ref, indices)
            new = value if kind == "exch" else C.combine(kind, load.result, value)
            store = memref.StoreOp(new, ref, indices)
        for o in (load, store):
            o.operation.attributes[ATOMIC_ATTR] = ir.UnitAttr.get()
        op.results[0].replace_all_uses_with(load.result)
        op.erase()


def _expand(k, ops) -> None:
    """Replace each collective of kernel `k` by its shared-memory expansion."""
    from diffgpu._mlir import ir
    from diffgpu.dialects import ops as dg

    entry = k.regions[0].blocks[0]
    staging = {}
    for op in ops:
        t = op.results[0].type
        if str(t) not in staging:
            with ir.InsertionPoint.at_block_begin(entry):
                staging[str(t)] = (dg.shared_alloc(C.shared_type(t)),
                                   dg.shared_alloc(C.shared_type(t)))
    for op in ops:
        S, R = staging[str(op.results[0].type)]
        with ir.InsertionPoint(op), op.location:
            lin, n = C.linear_thread()
            r = C.staged(op.opview, S, R, lin, n)
        op.results[0].replace_all_uses_with(r)
        op.erase()

"""Warp-aggregated atomics on the GPU: `diffgpu-warp-atomics`.

Runs inside `gpu.module`s after `diffgpu-lower-to-gpu`. An atomic add whose
result is unused and whose memref and indices are uniform (lowering/facts/uniform.py:
the same element for every lane of a warp) becomes a butterfly sum over the
warp in registers, then one atomic by lane 0:

    memref.atomic_rmw addf %v, %A[%c0] : (f32, memref<?xf32, ...>) -> f32
  becomes
    %mask = llvm.inline_asm has_side_effects "activemask.b32 $0;", "=r" : () -> i32
    %full = arith.cmpi eq, %mask, %c-1_i32 : i32
    scf.if %full {
      %s1, %ok1 = gpu.shuffle xor %v, %c16, %c32 : f32
      %v1 = arith.addf %v, %s1 : f32
      ...                                         // offsets 16, 8, 4, 2, 1
      %lane = gpu.lane_id
      scf.if (%lane == 0) { memref.atomic_rmw addf %v5, %A[%c0] }
    } else {
      memref.atomic_rmw addf %v, %A[%c0]           // lanes not all here: one each
    }

Divergence: the tree runs only when all 32 lanes execute the atomic together
(`activemask` full). Lanes that returned early, were guarded off or are
missing from a partial last warp make the mask partial, and then every lane
adds its own value, as before. If one lane sees a full mask, all 32 lanes are
executing that instruction together and all see it full, so the shuffles
never wait for a lane that took the other branch. The tree adds pairs
(butterfly), so the 32 float values are summed pairwise (error grows with
log2(32), not 32). Float atomics are order-dependent either way
(docs/atomics.md).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from diffgpu.lowering.gpu.ops import AGGREGATED, RMW_ADDF, RMW_ADDI
from diffgpu.lowering.common.ir_util import scalar_name
from diffgpu.lowering.registry import ModulePass, register_pass

WARP = 32
#: element types gpu.shuffle carries to NVVM (ir_util.scalar_name of a type)
SHUFFLE_TYPES = ("f32", "f64", "i32", "i64")


def warp_sum(v):
    """Butterfly sum of `v` over the 32 lanes (every lane gets the total);
    all 32 lanes must execute it. Builds at the current insertion point."""
    from diffgpu._mlir import arith, ir

    i32 = ir.IntegerType.get_signless(32)
    width = arith.constant(i32, WARP)
    add = arith.addf if isinstance(v.type, ir.FloatType) else arith.addi
    offset = WARP // 2
    while offset:
        off = arith.constant(i32, offset)
        shf = ir.Operation.create(
            "gpu.shuffle", results=[v.type, ir.IntegerType.get_signless(1)],
            operands=[v, off, width],
            attributes={"mode": ir.Attribute.parse("#gpu<shuffle_mode xor>")})
        v = add(v, shf.results[0])
        offset //= 2
    return v


def lane_is_zero():
    """i1: this thread is lane 0 of its warp."""
    from diffgpu._mlir import arith, ir

    index = ir.IndexType.get()
    lane = ir.Operation.create("gpu.lane_id", results=[index]).results[0]
    return arith.cmpi(arith.CmpIPredicate.eq, lane, arith.constant(index, 0))


def full_warp():
    """i1: all 32 lanes of the warp execute this point together."""
    from diffgpu._mlir import arith, ir, llvm

    i32 = ir.IntegerType.get_signless(32)
    mask = llvm.inline_asm(i32, [], "activemask.b32 $0;", "=r", has_side_effects=True)
    return arith.cmpi(arith.CmpIPredicate.eq, mask, arith.constant(i32, -1))


def aggregatable(op, uniform) -> bool:
    """A `memref.atomic_rmw addf|addi` with unused result on uniform operands,
    other than a block's sum from diffgpu-aggregate-atomics."""
    from diffgpu._mlir import ir

    if op.name != "memref.atomic_rmw" or len(list(op.results[0].uses)):
        return False
    if (AGGREGATED in op.attributes
            and ir.StringAttr(op.attributes[AGGREGATED]).value == "block"):
        return False  # one thread adds its block's sum
    kind = ir.IntegerAttr(op.attributes["kind"]).value
    if kind not in (RMW_ADDF, RMW_ADDI) or scalar_name(op.operands[0].type) not in SHUFFLE_TYPES:
        return False
    return all(uniform.is_uniform(v) for v in list(op.operands)[1:])


def aggregate(op) -> None:
    """Rewrite the atomic_rmw `op` as in the module docstring."""
    from diffgpu._mlir import ir, scf

    with op.location, ir.InsertionPoint(op):
        branch = scf.IfOp(full_warp(), [], has_else=True)
    with op.location, ir.InsertionPoint(branch.then_block):
        total = warp_sum(op.operands[0])
        first = scf.IfOp(lane_is_zero(), [])
        scf.YieldOp([])
    with op.location:
        clone = op.clone(ip=ir.InsertionPoint(first.then_block))
        clone.operands[0] = total
        with ir.InsertionPoint(first.then_block):
            scf.YieldOp([])
    with op.location, ir.InsertionPoint(branch.else_block):
        op.clone(ip=ir.InsertionPoint(branch.else_block))
        scf.YieldOp([])
    op.erase()


@register_pass
@dataclass
class WarpAtomics(ModulePass):
    """Sum uniform-address atomic adds over each warp before one atomic (module docstring)."""
    name: ClassVar[str] = "diffgpu-warp-atomics"
    summary: ClassVar[str] = ("warp-aggregate atomic adds whose address is uniform and "
                              "result unused (gpu.module functions)")

    def run(self, module) -> None:
        from diffgpu.lowering.facts.uniform import Uniformity, walk

        # Decide first, rewrite after, and touch no handle of an erased op:
        # the bindings give every handle its own Python object (no shared
        # live-op map), so `aggregate` erasing an atomic through one handle
        # leaves any other handle to it dangling (reading it is a use after
        # free). The lists hold only gpu.modules (never erased) and the
        # atomics to rewrite, each erased once through its own handle.
        uniform = Uniformity(module)
        atomics = [inner for gpu_module in walk(module, ("gpu.module",))
                   for inner in walk(gpu_module, ("memref.atomic_rmw",))
                   if aggregatable(inner, uniform)]
        for inner in atomics:
            aggregate(inner)

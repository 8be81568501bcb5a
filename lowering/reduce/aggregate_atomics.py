"""`diffgpu-aggregate-atomics`: one atomic per block for uniform-address adds.

Runs after `diffgpu-autodiff` (and `diffgpu-specialize`) on both targets. A
`diffgpu.atomic_add` is summed over the whole block first when

1. its result is unused and its element type is f32, f64, i32 or i64, or a
   16-bit float (f16, bf16: summed in float32, the block's total rounded
   once at its one add: lowering/common/half.py);
2. it sits in a kernel's body, or in the body of a function whose only
   reference is one `func.call` in a kernel's body (the derivative function
   a reverse-mode kernel calls), under nested `scf.if`s only (no loop in
   between); that kernel is referenced by no op, and both bodies are one
   block each;
3. its memref and indices are uniform (lowering/facts/uniform.py: one value per
   block, e.g. `out[0]`, `out[block_id]`, a scalar argument);
4. no later op of the thread can observe the moved add: after it, inside
   its guards, in the function and in the kernel after the call, only ops
   without memory effects, atomic adds with unused results, accesses to
   thread-private `memref.alloca`s and, in functions whose array arguments
   a launch proved disjoint (`diffgpu.noalias`, lowering/facts/specialize.py),
   accesses to other array arguments;
5. its kernel holds fewer than MAX_BLOCK_SUMS block sums so far.

Rule 5 keeps compile time linear in kernel size. Each block sum adds a
barrier and a shared array; the host lowering splits a kernel into one
phase function per barrier, each taking every shared array, so n block sums
cost n * n arguments there (and n shared arrays exceed the GPU's shared
memory). The gradient of a flat sum of 2,000 terms has 2,000 such adds:
the last MAX_BLOCK_SUMS in program order are summed per block, the others
stay atomic adds (per warp on the GPU: diffgpu-warp-atomics).

The guards become `scf.if`s yielding the value (zero where the add did not
happen); a function hands it to its caller as one more result. Every thread
of the block then reaches the kernel's body and joins the block sum there
(lowering/reduce/block_sum.py: warp shuffles and shared memory on the GPU, shared
memory on the host). The sum is a tree (pairwise), so one float rounding per
block remains sequential at the target (docs/atomics.md).

    scf.if %in {
      %v = ...
      %o = "diffgpu.atomic_add"(%out, %v, %c0) : (memref<?xf32, ...>, f32, index) -> f32
    }
  becomes
    %v2 = scf.if %in -> (f32) { %v = ...; scf.yield %v } else { scf.yield %zero }
    <block sum of %v2>; one thread: "diffgpu.atomic_add"(%out, %sum, %c0)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from diffgpu._mlir import ir

from diffgpu.dialects import ops as dg
from diffgpu.dialects.ops import AtomicAddOp
from diffgpu.lowering.common import explain
from diffgpu.lowering.reduce import hoist as H
from diffgpu.lowering.common import targets as T
from diffgpu.lowering.reduce import grid_sum
from diffgpu.lowering.common import half as HALF
from diffgpu.lowering.reduce.block_sum import block_sum_gpu, block_sum_host
from diffgpu.lowering.gpu.atomics import SHUFFLE_TYPES
from diffgpu.lowering.registry import ModulePass, register_pass
from diffgpu.lowering.facts.uniform import Uniformity, walk

#: marks the atomics this pass emits, never aggregated again by it: "block" (the
#: block's sum; diffgpu-warp-atomics leaves it alone too) or "thread" (the
#: per-thread fallback, which diffgpu-warp-atomics may still sum per warp)
AGGREGATED = "diffgpu.aggregated"
#: rule 5: block sums per kernel (module docstring)
MAX_BLOCK_SUMS = 16
#: rule 1's element types (16-bit floats summed in float32)
_TYPES = SHUFFLE_TYPES + HALF.HALF_TYPES


def candidate(op, uniform, full=frozenset()):
    """The op's Site when it can be block-aggregated (rules 1 to 5), else None.
    `full`: the names of the kernels that hold MAX_BLOCK_SUMS block sums."""
    if (not isinstance(op.operation.opview, AtomicAddOp) or len(list(op.results[0].uses))
            or AGGREGATED in op.attributes or str(op.operands[1].type) not in _TYPES):
        return None
    site = H.site_of(op, uniform)
    if site is None or _name(site.kernel) in full:
        return None
    if not all(uniform.is_uniform(v) for i, v in enumerate(op.operands) if i != 1):
        return None
    return site if H.unobserved(op, op.operands[0], site) else None


def aggregate(op, site) -> None:
    """Hoist `op` out of its guards (and function) and sum it over the block."""
    target_ops = list(op.operands)
    elem = ir.MemRefType(target_ops[0].type).element_type
    with op.location, ir.InsertionPoint(op):
        wide = HALF.wide(op.operands[1])  # a 16-bit add's float32 value
    value, after = H.hoist(wide, site)
    ip = H.after(after or op, site)
    gpu = T.is_gpu(T.get_target(site.kernel))
    with op.location, ip:
        target = [H.materialize(v, ip, site) for i, v in enumerate(target_ops) if i != 1]
        finish = None if HALF.is_half(elem) else grid_sum.plan(site.kernel, target, value.type)

        def add_atomic(total, how="block"):
            if finish is not None:  # across blocks in f64 (lowering/reduce/grid_sum.py)
                finish.add(total, how)
                return
            dg.atomic_add(target[0], HALF.narrow(total, elem), target[1:]).owner.attributes[
                AGGREGATED] = ir.StringAttr.get(how)

        (block_sum_gpu if gpu else block_sum_host)(value, add_atomic)
    op.erase()


@register_pass
@dataclass
class AggregateAtomics(ModulePass):
    """Sum uniform-address atomic adds over the block first (module docstring)."""
    name: ClassVar[str] = "diffgpu-aggregate-atomics"
    summary: ClassVar[str] = ("one atomic per block for uniform-address atomic adds at a "
                              "kernel's top level or under its guards")

    def run(self, module) -> None:
        sums: dict[str, int] = {}  # kernel name -> block sums built in it
        while self._one(module, sums):
            pass
        grid_sum.record(module)
        if explain.active():  # DIFFGPU_EXPLAIN: why the adds left did not qualify
            uniform = Uniformity(module)
            full = {k for k, n in sums.items() if n >= MAX_BLOCK_SUMS}
            walks = [EXPLAIN_WALKS]  # rule 4's check walks the ops after the add
            for op in walk(module):
                why = why_not(op, uniform, full, walks)
                if why:
                    explain.missed(PASS, op, why)

    @staticmethod
    def _one(module, sums) -> bool:
        """Aggregate the last candidate in program order (an earlier one in the
        same guard may become a candidate once this one has left it)."""
        uniform = Uniformity(module)
        full = {k for k, n in sums.items() if n >= MAX_BLOCK_SUMS}
        for op in reversed(walk(module)):
            found = candidate(op, uniform, full)
            if found is not None:
                kernel = _name(found.kernel)
                aggregate(op, found)
                sums[kernel] = sums.get(kernel, 0) + 1
                return True
        return False


def _name(fn) -> str:
    return ir.StringAttr(fn.attributes["sym_name"]).value


#: the short name of this pass in remarks (lowering/common/explain.py)
PASS = "aggregate-atomics"


#: adds whose rule 4 the remarks check (each check walks the ops after the add)
EXPLAIN_WALKS = 16


def why_not(op, uniform, full=frozenset(), walks=None) -> str | None:
    """The rule (module docstring) an atomic add with a uniform-looking
    target fails, for remarks; None for other ops and for adds that qualify
    or were aggregated. `walks`: [how many rule-4 checks may still run]."""
    if (not isinstance(op.operation.opview, AtomicAddOp) or AGGREGATED in op.attributes
            or "diffgpu.stencil" in op.attributes):
        return None
    if len(list(op.results[0].uses)):
        return "the add's old value is used"
    if str(op.operands[1].type) not in _TYPES:
        return f"no block sum for {op.operands[1].type}"
    if not all(uniform.is_uniform(v) for i, v in enumerate(op.operands) if i != 1):
        return None  # a per-thread address: not this pass's (stencil-adjoint, vector-red)
    site = H.site_of(op, uniform)
    if site is None:
        return ("not in a kernel's body or a function called once from it, under "
                "scf.if guards only (a loop or a second call in between)")
    if _name(site.kernel) in full:
        return f"the kernel already holds {MAX_BLOCK_SUMS} block sums (rule 5)"
    if walks is not None:
        if walks[0] <= 0:
            return None
        walks[0] -= 1
    if not H.unobserved(op, op.operands[0], site):
        return ("a later op of the thread may observe the add (a load or store of "
                "an array not proven disjoint)")
    return None

"""Launch-time specialisation: the facts a launch proved, and what they allow.

The runtime (python/diffgpu/runtime/specialize.py) proves facts about one
launch (no two arrays overlap, which arrays are C-contiguous, which
geometry dimensions are 1) and `mark_facts` (lowering/coarsen/mark.py)
records them on the entry kernel as a dictionary attribute, part of the
compiled program's key:

    func.func @k(%y: memref<?xf32, strided<[?], offset: ?>>, ...) attributes {
        diffgpu.kernel, diffgpu.launch_facts = {contiguous = [true, true],
        noalias = true, unit_dims = [1 : i64, 2 : i64]}, diffgpu.target = ...}

Readers of the attribute:
- `diffgpu-autodiff` (autodiff/elision.py): a whole-launch derivative whose
  arrays are distinct arguments of a `noalias` kernel lets several shadows
  skip their atomics, drops the geometry guard of `unit_dims`, and marks the
  derivative function `diffgpu.noalias`;
- `diffgpu-specialize` (below), after autodiff, in functions whose memref
  arguments are proven pairwise disjoint (the `noalias` kernel itself, and
  derivative functions marked `diffgpu.noalias`): a block's loads are issued
  before the stores to other arrays that precede them, so that a thread's
  DRAM round trips overlap instead of waiting on each other (the reverse
  sweep's consuming store `dy = 0` no longer delays the load of `dx`); the
  kernel's arrays that nothing writes (through calls too) are listed in
  `diffgpu.readonly`;
- `diffgpu-nvvm-cleanup` (lowering/gpu/nvvm.py): `noalias` kernel pointers,
  `readonly` ones for arrays the kernel never writes (`ld.global.nc`),
  `align 16` ones for `aligned` arrays, the offset and the strides of
  `contiguous` arrays folded to constants;
- `diffgpu-specialize` also applies `extents` (lowering/facts/specialize_shapes.py):
  `memref.dim` of an array reads its representative's size, in the kernel
  and the functions only it calls, so equal guards become one;
- `diffgpu-index32` (lowering/facts/specialize_shapes.py), after lowering to GPU:
  `index32` kernels' gpu.modules lower `index` to i32; `mark_facts` records
  `index32 = false` unless `index32_safe` holds for the module (integers
  become indices only as subscripts) and no kernel parameter is an index;
- `mark_facts` itself: an eligible elementwise kernel of a 1-D launch whose
  grid x extent divides (`grid_div`) gets `diffgpu.coarsen = 4` (16 for a
  reduction kernel when `grid_div16` holds)
  (lowering/coarsen/coarsen.py; `diffgpu-coarsen` rewrites it, the runtime launches
  a quarter of the blocks).

Functions without these attributes are left exactly as they are: the
generic program (overlapping arrays, in-place kernels) is unchanged.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from diffgpu.lowering.registry import ModulePass, register_pass
from diffgpu.lowering.facts.load_order import _WRITES, order_function
from diffgpu.lowering.facts.specialize_shapes import canonical_dims

from diffgpu.lowering.facts.attrs import FACTS_ATTR, NOALIAS_ATTR, READONLY_ATTR, read_facts


@register_pass
@dataclass
class Specialize(ModulePass):
    """Apply launch facts after autodiff: load order, read-only arrays.

    In a function marked `diffgpu.noalias` (its memref arguments are pairwise
    disjoint: a launch proved it), adjacent `scf.if`s on the same condition
    (the forward and reverse sweeps of an `if i < n`) become one, and in each
    block every `memref.load` moves up past the ops that cannot affect it:
    pure ops, and stores/atomics into a *different* argument or local
    allocation. It stops at its operands' definitions, at a write to its own
    array, at calls, barriers and anything else.

        scf.if %in { %x = load %X[%i]; store %f, %Y[%i] }
        scf.if %in { %d = load %dY[%i]; store %zero, %dY[%i]
                     %a = load %dX[%i]; store %s, %dX[%i] }
      becomes
        scf.if %in { %x = load %X[%i]; %d = load %dY[%i]; %a = load %dX[%i]
                     store %f, %Y[%i]; store %zero, %dY[%i]; store %s, %dX[%i] }

    A kernel with launch facts gets `diffgpu.readonly = [..]`: per argument,
    true for an array that no store or atomic of the kernel or of the
    functions it calls (followed through calls) writes.
    """
    name: ClassVar[str] = "diffgpu-specialize"
    summary: ClassVar[str] = ("apply launch facts: issue loads before the stores to other "
                              "arrays where a launch proved them disjoint; mark read-only arrays")

    def run(self, module) -> None:
        from diffgpu._mlir import ir

        funcs = {}
        for op in module.regions[0].blocks[0].operations:
            op = op.operation
            if op.name == "func.func":
                funcs[op.attributes["sym_name"].value] = op
        written = Written(funcs)
        canonical_dims(funcs, read_facts)
        for f in funcs.values():
            if not f.regions[0].blocks:
                continue
            if NOALIAS_ATTR in f.attributes:
                order_function(f)
            if FACTS_ATTR in f.attributes:
                flags = written.of(f.attributes["sym_name"].value)
                args = list(f.regions[0].blocks[0].arguments)
                f.attributes[READONLY_ATTR] = ir.ArrayAttr.get([
                    ir.BoolAttr.get(isinstance(a.type, ir.MemRefType) and not w)
                    for a, w in zip(args, flags)])


class Written:
    """Which memref arguments of a function may be written (by it or by the
    functions it calls); unknown uses count as writes."""

    def __init__(self, funcs):
        self.funcs, self.memo = funcs, {}

    def of(self, name: str) -> list[bool]:
        from diffgpu._mlir import ir

        if name in self.memo:
            return self.memo[name]
        f = self.funcs[name]
        args = list(f.regions[0].blocks[0].arguments) if f.regions[0].blocks else []
        self.memo[name] = [True] * len(args)  # recursion: assume written
        out = [False] * len(args)
        for k, a in enumerate(args):
            if isinstance(a.type, ir.MemRefType):
                out[k] = self._value_written(a)
        self.memo[name] = out
        return out

    def _value_written(self, v) -> bool:
        from diffgpu._mlir import ir

        for use in v.uses:
            o = use.owner.operation if hasattr(use.owner, "operation") else use.owner
            name = o.name
            if name in ("memref.load", "memref.dim"):
                continue
            if name in _WRITES:
                if use.operand_number == _WRITES[name]:
                    return True
                continue
            if name in ("memref.cast", "memref.subview", "memref.reinterpret_cast"):
                if self._value_written(o.results[0]):
                    return True
                continue
            if name == "func.call":
                callee = ir.FlatSymbolRefAttr(o.attributes["callee"]).value
                if callee not in self.funcs or not self.funcs[callee].regions[0].blocks:
                    return True
                flags = self.of(callee)
                if use.operand_number >= len(flags) or flags[use.operand_number]:
                    return True
                continue
            return True
        return False


from diffgpu.lowering.facts import specialize_shapes  # noqa: E402,F401  (diffgpu-index32)

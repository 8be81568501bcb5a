"""Uniformity: values equal in every thread of a block (hence of a warp).

The atomic aggregation (lowering/aggregate_atomics.py, lowering/gpu_atomics.py)
sums the contributions of several threads before one atomic when they all
target the same element. `is_uniform(v)` is a conservative proof that `v`
has one value per block:

| value | uniform when |
|---|---|
| `arith.constant`, `diffgpu.block_id/block_dim/grid_dim`, `gpu.block_id/...` | always |
| argument of a kernel (`diffgpu.kernel`, `gpu.func ... kernel`) | always (one value per launch) |
| argument of another function | every `func.call` of it passes uniform values (no call: not uniform) |
| `arith.*` / `index_cast` / `select` / `memref.dim` | all operands uniform |
| anything else: loads, `thread_id`, loop variables, results of regions | never |

    %b = "diffgpu.block_id"() {dim = 0 : i64} : () -> index
    %c = arith.constant 4 : index
    %i = arith.muli %b, %c : index              // uniform
    %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
    %j = arith.addi %i, %t : index              // not uniform

Loop variables are not uniform even with uniform bounds: after divergence
lanes of one warp may run different iterations.
"""
from __future__ import annotations

from diffgpu._mlir import ir

from diffgpu.dialects import names as N
from diffgpu.lowering.ir_util import sym_name, walk
from diffgpu.lowering import targets

_ALWAYS = frozenset({"arith.constant", N.BLOCK_ID, N.BLOCK_DIM, N.GRID_DIM,
                     "gpu.block_id", "gpu.block_dim", "gpu.grid_dim"})
_PURE_PREFIX = ("arith.",)
_PURE = frozenset({"memref.dim"})


def _owner(v):
    owner = v.owner
    return owner if isinstance(owner, ir.Block) else owner.operation


def _func_of(block):
    op = block.owner
    return op.operation if op is not None else None


class Uniformity:
    """Memoised uniformity proofs over one module (`module`: builtin.module op).

    Valid until the module is rewritten: the call table holds op handles
    (dangling once their op is erased) and the memo keys values by address
    (which a new op may reuse). Passes decide with one instance, then
    rewrite, then build a new one for the next round."""

    def __init__(self, module):
        self._calls = {}
        self._memo = {}
        self._funcs = {}
        for op in walk(module):
            if op.name in ("func.func", "gpu.func"):
                self._funcs[sym_name(op)] = op
            if "callee" in op.attributes and isinstance(op.attributes["callee"],
                                                         ir.FlatSymbolRefAttr):
                callee = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
                self._calls.setdefault(callee, []).append(op)

    def is_uniform(self, v) -> bool:
        if v in self._memo:  # values hash by the value they wrap
            return self._memo[v]
        self._memo[v] = False  # cycles (recursion) are not uniform
        res = self._compute(v)
        self._memo[v] = res
        return res

    def _compute(self, v) -> bool:
        owner = _owner(v)
        if isinstance(owner, ir.Block):
            return self._argument(owner, ir.BlockArgument(v).arg_number)
        name = owner.name
        if name in _ALWAYS:
            return True
        if name.startswith(_PURE_PREFIX) or name in _PURE:
            return all(self.is_uniform(o) for o in owner.operands)
        return False

    def _argument(self, block, number) -> bool:
        fn = _func_of(block)
        if fn is None or fn.name not in ("func.func", "gpu.func"):
            return False  # a region argument (loop variable, ...)
        if fn.regions[0].blocks[0] != block:
            return False
        if targets.KERNEL_ATTR in fn.attributes or "gpu.kernel" in fn.attributes:
            return True
        name = sym_name(fn)
        calls = self._calls.get(name, [])
        return bool(calls) and all(c.name == "func.call" and self.is_uniform(
            c.operands[number]) for c in calls)

    def references(self, fn) -> list:
        """The ops (`func.call`, ...) naming function `fn` in their `callee`."""
        return list(self._calls.get(sym_name(fn), []))



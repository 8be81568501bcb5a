"""Uniformity: values equal in every thread of a block (hence of a warp).

The atomic aggregation (lowering/reduce/aggregate_atomics.py, lowering/gpu/atomics.py)
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

`Divergence` is the converse, a proof that a value differs between the
threads of a block: it is computed from `diffgpu.thread_id` (through
`arith`/`math` ops, calls, the results of branches and loops whose
condition or trip count is divergent, and loop-carried values). Loads are
not followed (`x[t]` may hold one value everywhere): values neither proof
covers are checked at run time (lowering/checks/barriers.py).

    %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
    %c = arith.cmpi slt, %t, %c16 : index       // divergent
    %v = memref.load %x[%t] : memref<?xf32>      // not divergent (unknown)
"""
from __future__ import annotations

from diffgpu._mlir import ir

from diffgpu.dialects import names as N
from diffgpu.lowering.common.ir_util import callee, sym_name, top_ops, walk
from diffgpu.lowering.common import targets

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




#: ops whose result differs between the threads of a block
_SEEDS = frozenset({N.THREAD_ID, "gpu.thread_id", "gpu.lane_id"})
#: ops whose result is divergent when an operand is
_ARITH_PREFIX = ("arith.", "math.", "index.")


class Divergence:
    """Proofs that values differ between the threads of a block (module
    docstring), per function and per pattern of divergent arguments (a
    device function called with `dg.thread_id(0)` and with a constant is
    analysed twice). Valid until the module is rewritten."""

    def __init__(self, module):
        self._funcs = {sym_name(op): op for op in top_ops(module, ("func.func",))}
        self._memo = {}

    def function(self, fn, flags=None) -> tuple[set, tuple]:
        """(the divergent values of `fn`, which of its results are divergent)
        when the arguments marked in `flags` are (none by default)."""
        args = list(fn.regions[0].blocks[0].arguments)
        flags = tuple(flags) if flags is not None else (False,) * len(args)
        key = (sym_name(fn), flags)
        if key not in self._memo:
            self._memo[key] = (set(), ())  # recursion: nothing proven
            self._memo[key] = self._solve(fn, args, flags)
        return self._memo[key]

    def _solve(self, fn, args, flags) -> tuple[set, tuple]:
        """Propagate along uses from the seeds: each op is looked at again
        only when one of its operands (or of its regions' terminators) has
        become divergent."""
        div = {a for a, f in zip(args, flags) if f}
        rets = []
        for op in walk(fn, _SEEDS | {"func.return"}, include_self=False):
            if op.name == "func.return":
                rets.append(op)
            else:
                div.update(op.results)
        todo = list(div)
        while todo:
            for use in todo.pop().uses:
                op = use.owner.operation
                if op.name in ("scf.yield", "scf.condition"):
                    op = op.parent.operation  # feeds its loop's or branch's values
                for v in self._outputs(op, div):
                    if v not in div:
                        div.add(v)
                        todo.append(v)
        res = tuple(any(r.operands[j] in div for r in rets)
                    for j in range(len(rets[0].operands))) if rets else ()
        return div, res

    def callee(self, op):
        """The defined function a `func.call` calls, or None."""
        fn = self._funcs.get(callee(op))
        return fn if fn is not None and fn.regions[0].blocks else None

    def control(self, op, div) -> str | None:
        """What makes the regions of `op` run in some threads only: "branch"
        (an `scf.if` on a divergent condition), "loop" (a loop whose trip
        count is divergent), or None."""
        if op.name == "scf.if" and op.operands[0] in div:
            return "branch"
        if op.name == "scf.for" and any(v in div for v in list(op.operands)[:3]):
            return "loop"
        if op.name == "scf.while" and _terminator(op, 0).operands[0] in div:
            return "loop"
        return None

    def _outputs(self, op, div) -> list:
        """The results and region arguments of `op` that `div` makes divergent."""
        name = op.name
        if name in _SEEDS:
            return list(op.results)
        if name.startswith(_ARITH_PREFIX):
            return list(op.results) if any(o in div for o in op.operands) else []
        if name == "func.call":
            fn = self.callee(op)
            flags = tuple(o in div for o in op.operands)
            if fn is None:
                return list(op.results) if any(flags) else []
            res = self.function(fn, flags)[1]
            return [r for r, d in zip(op.results, res) if d]
        if name == "scf.if":
            cond = op.operands[0] in div
            yields = [_terminator(op, i) for i in range(len(op.regions))
                      if op.regions[i].blocks]
            return [r for j, r in enumerate(op.results)
                    if cond or any(y.operands[j] in div for y in yields)]
        if name == "scf.for":
            return self._for(op, div)
        if name == "scf.while":
            return self._while(op, div)
        return []

    @staticmethod
    def _for(op, div) -> list:
        lb, ub, step, *init = op.operands
        iv, *iters = op.regions[0].blocks[0].arguments
        step_div = lb in div or step in div
        trip = step_div or ub in div
        out = [iv] if step_div else []
        yld = _terminator(op, 0)
        for j, (a, r) in enumerate(zip(iters, op.results)):
            carried = a in div or init[j] in div or yld.operands[j] in div
            if carried:
                out.append(a)
            if trip or carried:
                out.append(r)
        return out

    @staticmethod
    def _while(op, div) -> list:
        before, after = op.regions[0].blocks[0], op.regions[1].blocks[0]
        cond, yld = _terminator(op, 0), _terminator(op, 1)
        out = [a for j, a in enumerate(before.arguments)
               if op.operands[j] in div or yld.operands[j] in div]
        stop = cond.operands[0] in div
        for j, (a, r) in enumerate(zip(after.arguments, op.results)):
            fwd = cond.operands[1 + j] in div
            if fwd:
                out.append(a)
            if fwd or stop:
                out.append(r)
        return out


def _terminator(op, region: int):
    ops = op.regions[region].blocks[0].operations
    return ops[len(ops) - 1].operation

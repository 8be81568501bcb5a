"""`diffgpu-aggregate-atomics`: one atomic per block for uniform-address adds.

Runs after `diffgpu-autodiff` (and `diffgpu-specialize`) on both targets. A
`diffgpu.atomic_add` is summed over the whole block first when

1. its result is unused and its element type is f32, f64, i32 or i64;
2. it sits in a kernel's body, or in the body of a function whose only
   reference is one `func.call` in a kernel's body (the derivative function
   a reverse-mode kernel calls), under nested `scf.if`s only (no loop in
   between); that kernel is referenced by no op, and both bodies are one
   block each;
3. its memref and indices are uniform (lowering/uniform.py: one value per
   block, e.g. `out[0]`, `out[block_id]`, a scalar argument);
4. no later op of the thread can observe the moved add: after it, inside
   its guards, in the function and in the kernel after the call, only ops
   without memory effects, atomic adds with unused results, accesses to
   thread-private `memref.alloca`s and, in functions whose array arguments
   a launch proved disjoint (`diffgpu.noalias`, lowering/specialize.py),
   accesses to other array arguments.

The guards become `scf.if`s yielding the value (zero where the add did not
happen); a function hands it to its caller as one more result. Every thread
of the block then reaches the kernel's body and joins the block sum there
(lowering/block_sum.py: warp shuffles and shared memory on the GPU, shared
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

from diffgpu._mlir import ir, scf

from diffgpu.dialects import ops as dg
from diffgpu.lowering import targets as T
from diffgpu.lowering.block_sum import block_sum_gpu, block_sum_host, zero
from diffgpu.lowering.gpu_atomics import SHUFFLE_TYPES
from diffgpu.lowering.registry import ModulePass, register_pass
from diffgpu.lowering.specialize import NOALIAS_ATTR
from diffgpu.lowering.uniform import Uniformity, walk

#: ops that may follow the moved add (no memory effects)
_PURE_PREFIX = ("arith.", "math.", "scf.")
_PURE = ("memref.dim", "memref.alloca", "diffgpu.thread_id", "diffgpu.block_id",
         "diffgpu.block_dim", "diffgpu.grid_dim", "func.return", "diffgpu.barrier",
         "diffgpu.shared_alloc")
#: marks the atomics this pass emits, never aggregated again by it: "block" (the
#: block's sum; diffgpu-warp-atomics leaves it alone too) or "thread" (the
#: per-thread fallback, which diffgpu-warp-atomics may still sum per warp)
AGGREGATED = "diffgpu.aggregated"
_ACCESS = {"memref.load": 0, "memref.store": 1}


@dataclass
class Site:
    """Where a candidate add sits: `fn` holds it under the guards `path`
    ([(scf.if, region number)], innermost first); `call` (in `kernel`'s
    body) calls `fn`, or is None when `fn` is the kernel."""
    kernel: object
    fn: object
    call: object
    path: list


def _parent_op(op):
    p = op.parent
    return p.operation if p is not None else None


def _path(op, fn):
    """[(scf.if, region)] from `op` out to `fn`'s body, or None when another
    op (a loop, ...) is in between."""
    path = []
    cur = op
    while True:
        parent = _parent_op(cur)
        if parent is None:
            return None
        if parent == fn:
            return path
        if parent.name != "scf.if":
            return None
        region = 0 if _in_region(cur, parent.regions[0]) else 1
        path.append((parent, region))
        cur = parent


def _in_region(op, region) -> bool:
    return any(op == o.operation for b in region.blocks for o in b.operations)


def _block_ops(op) -> list:
    """The ops of the block holding `op`."""
    for region in _parent_op(op).regions:
        for block in region.blocks:
            ops = [o.operation for o in block.operations]
            if op in ops:
                return ops
    return []


def _is_arg(v) -> bool:
    return isinstance(v.owner, ir.Block)


def _harmless(o, target, noalias) -> bool:
    """Whether `o` (not its nested ops) cannot observe an add to `target`."""
    name = o.name
    if name.startswith(_PURE_PREFIX) or name in _PURE:
        return True
    if name == "diffgpu.atomic_add":
        return not len(list(o.results[0].uses))
    if name in _ACCESS:
        mem = o.operands[_ACCESS[name]]
        if not _is_arg(mem):
            return mem.owner.operation.name == "memref.alloca"
        return noalias and _is_arg(target) and mem != target
    return False


def _silent_after(op, target, noalias, stop) -> bool:
    """Nothing after `op` in its block (nested ops included) can observe an
    add to `target`, nor after each enclosing op up to `stop`'s body."""
    cur = op
    while cur != stop:
        ops = _block_ops(cur)
        for later in ops[ops.index(cur) + 1:]:
            if not all(_harmless(o, target, noalias) for o in walk(later)):
                return False
        cur = _parent_op(cur)
    return True


def _single_block(fn) -> bool:
    return len(fn.regions[0].blocks) == 1


def candidate(op, uniform):
    """The op's Site when it can be block-aggregated (rules 1 to 4), else None."""
    if (op.name != "diffgpu.atomic_add" or len(list(op.results[0].uses))
            or AGGREGATED in op.attributes or str(op.operands[1].type) not in SHUFFLE_TYPES):
        return None
    fn = op
    while fn is not None and fn.name != "func.func":
        fn = _parent_op(fn)
    if fn is None or not _single_block(fn):
        return None
    kernel, call = fn, None
    if T.KERNEL_ATTR not in fn.attributes:
        refs = uniform.references(fn)
        if len(refs) != 1 or refs[0].name != "func.call":
            return None
        call = refs[0]
        kernel = _parent_op(call)
        if kernel is None or kernel.name != "func.func" or not _single_block(kernel):
            return None
    if T.KERNEL_ATTR not in kernel.attributes or uniform.references(kernel):
        return None
    path = _path(op, fn)
    if path is None:
        return None
    if not all(uniform.is_uniform(v) for i, v in enumerate(op.operands) if i != 1):
        return None
    target = op.operands[0]
    if not _silent_after(op, target, NOALIAS_ATTR in fn.attributes, fn):
        return None
    if call is not None:
        outer = target if not _is_arg(target) else call.operands[
            ir.BlockArgument(target).arg_number]
        if not _silent_after(call, outer, NOALIAS_ATTR in kernel.attributes, kernel):
            return None
    return Site(kernel, fn, call, path)


def _materialize(v, ip, site):
    """`v` (a value of `site.fn`) as a value of the kernel's body at `ip`:
    itself when defined there, the call's operand for an argument of the
    function, else a clone of its (pure, uniform) definition."""
    owner = v.owner
    if isinstance(owner, ir.Block):
        if site.call is not None:
            return site.call.operands[ir.BlockArgument(v).arg_number]
        return v
    op = owner.operation
    if _parent_op(op) == site.kernel:
        return v
    operands = [_materialize(o, ip, site) for o in op.operands]
    clone = op.clone(ip=ip)
    for i, o in enumerate(operands):
        clone.operands[i] = o
    return clone.results[list(op.results).index(v)]


def _yield_value(ifop, region, value):
    """Replace `ifop` by a copy with one more result: `value` from region
    `region` (0: then, 1: else), zero from the other. Returns that result."""
    t = value.type
    n_old = len(ifop.results)
    new = scf.IfOp(ifop.operands[0], [r.type for r in ifop.results] + [t], has_else=True,
                   ip=ir.InsertionPoint(ifop), loc=ifop.location)
    for r in (0, 1):
        blocks = ifop.regions[r].blocks
        src = [o.operation for o in blocks[0].operations] if len(blocks) else []
        old_args = list(src[-1].operands) if src else []
        with ifop.location, ir.InsertionPoint(new.regions[r].blocks[0]):
            extra = value if r == region else zero(t)
            term = scf.YieldOp(old_args + [extra]).operation
        for o in src[:-1]:
            o.move_before(term)
        if src:
            src[-1].erase()
    for old, rep in zip(ifop.results, new.results):
        old.replace_all_uses_with(rep)
    ifop.erase()
    return new.results[n_old]


def _return_value(fn, call, value):
    """`fn` returns `value` as one more result, `call` is rebuilt with it;
    returns the call's new result."""
    ret = [o.operation for o in fn.regions[0].blocks[0].operations][-1]
    ftype = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)
    fn.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(
        list(ftype.inputs), list(ftype.results) + [value.type]))
    ir.Operation.create("func.return", operands=list(ret.operands) + [value],
                        loc=ret.location, ip=ir.InsertionPoint(ret))
    ret.erase()
    new = ir.Operation.create(
        "func.call", results=[r.type for r in call.results] + [value.type],
        operands=list(call.operands),
        attributes={a.name: a.attr for a in (call.attributes[i]
                                             for i in range(len(call.attributes)))},
        loc=call.location, ip=ir.InsertionPoint(call))
    for old, rep in zip(call.results, new.results):
        old.replace_all_uses_with(rep)
    call.erase()
    return new, new.results[len(new.results) - 1]


def aggregate(op, site) -> None:
    """Hoist `op` out of its guards (and function) and sum it over the block."""
    value = op.operands[1]
    for ifop, region in site.path:
        value = _yield_value(ifop, region, value)
    target_ops = list(op.operands)
    if site.call is not None:
        site.call, value = _return_value(site.fn, site.call, value)
        after = site.call
    else:
        after = value.owner.operation if site.path else op
    ops = [o.operation for o in site.kernel.regions[0].blocks[0].operations]
    ip = ir.InsertionPoint(ops[ops.index(after) + 1])
    gpu = T.is_gpu(T.get_target(site.kernel))
    with op.location, ip:
        target = [_materialize(v, ip, site) for i, v in enumerate(target_ops) if i != 1]

        def add_atomic(total, how="block"):
            dg.atomic_add(target[0], total, target[1:]).owner.attributes[AGGREGATED] = \
                ir.StringAttr.get(how)

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
        while self._one(module):
            pass

    @staticmethod
    def _one(module) -> bool:
        """Aggregate the last candidate in program order (an earlier one in the
        same guard may become a candidate once this one has left it)."""
        uniform = Uniformity(module)
        for op in reversed(walk(module)):
            found = candidate(op, uniform)
            if found is not None:
                aggregate(op, found)
                return True
        return False

"""Moving an add out of guards and functions, for the block-level passes.

`diffgpu-aggregate-atomics` and `diffgpu-stencil-adjoint` replace adds done
under a kernel's guards (or in the derivative function its body calls) by
code in the kernel's body that every thread of the block reaches: there a
barrier is legal. This module finds such sites, checks that no later op of
the thread can observe the moved add, and moves values out:

    scf.if %in { %v = ...; "diffgpu.atomic_add"(%A, %v, %i) }
  yield_value(if, 0, %v):
    %r = scf.if %in -> (f32) { %v = ...; scf.yield %v } else { scf.yield %zero }
  return_value(fn, call, %r): `fn` returns %r as one more result; the call too.
"""
from __future__ import annotations

from dataclasses import dataclass

from diffgpu._mlir import ir, scf

from diffgpu.dialects import names as N
from diffgpu.lowering.common import targets as T
from diffgpu.lowering.reduce.block_sum import zero
from diffgpu.lowering.common.ir_util import defined_by
from diffgpu.lowering.reduce.grid_sum import SCRATCH_MARK
from diffgpu.lowering.facts.attrs import NOALIAS_ATTR
from diffgpu.lowering.facts.uniform import walk

#: ops that may follow the moved add (no memory effects)
_PURE_PREFIX = ("arith.", "math.", "scf.")
_PURE = ("memref.dim", "memref.alloca", "func.return", N.BARRIER, N.SHARED_ALLOC,
         "gpu.shuffle", "gpu.lane_id", "llvm.fence") + N.GEOMETRY  # fence: grid_sum.py
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


def parent_op(op):
    p = op.parent
    return p.operation if p is not None else None


def path_to(op, fn):
    """[(scf.if, region)] from `op` out to `fn`'s body, or None when another
    op (a loop, ...) is in between."""
    path = []
    cur = op
    while True:
        parent = parent_op(cur)
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
    """Whether `op` is in `region` itself (O(1): no walk of its blocks)."""
    return op.block.region == region


def later_ops(op):
    """The ops after `op` in its block, in order, each found from the one
    before it (O(1): no pass over the ops before `op`, nor a list of the block)."""
    nxt = ir.InsertionPoint.after(op).ref_operation
    while nxt is not None:
        yield nxt.operation
        nxt = ir.InsertionPoint.after(nxt).ref_operation


def terminator(block):
    """The last op of `block` (O(1): no pass over the block)."""
    return ir.InsertionPoint.at_block_terminator(block).ref_operation.operation


def is_arg(v) -> bool:
    return isinstance(v.owner, ir.Block)


def _harmless(o, target, noalias) -> bool:
    """Whether `o` (not its nested ops) cannot observe an add to `target`."""
    name = o.name
    if name.startswith(_PURE_PREFIX) or name in _PURE:
        return True
    if name == N.ATOMIC_ADD:  # the runtime's scratch never aliases an array (grid_sum.py)
        return not len(list(o.results[0].uses)) or SCRATCH_MARK in o.attributes
    if name in _ACCESS:
        mem = o.operands[_ACCESS[name]]
        if _space(mem) != _space(target):
            return True  # shared memory and a global array never overlap
        if not is_arg(mem):
            return defined_by(mem, ("memref.alloca",)) is not None
        return noalias and is_arg(target) and mem != target
    return False


def _space(v):
    ms = ir.MemRefType(v.type).memory_space
    return None if ms is None else str(ms)


def silent_after(op, target, noalias, stop) -> bool:
    """Nothing after `op` in its block (nested ops included) can observe an
    add to `target`, nor after each enclosing op up to `stop`'s body (the
    work is the ops after `op`, not the blocks holding it: a long kernel's
    adds are checked in linear time)."""
    cur = op
    while cur != stop:
        for later in later_ops(cur):
            if not all(_harmless(o, target, noalias) for o in walk(later)):
                return False
        cur = parent_op(cur)
    return True


def single_block(fn) -> bool:
    return len(fn.regions[0].blocks) == 1


def site_of(op, uniform):
    """The Site of `op` (rule 2 of diffgpu-aggregate-atomics: in a kernel's
    body or a function called once from one, under `scf.if`s only), else None."""
    fn = op
    while fn is not None and fn.name != "func.func":
        fn = parent_op(fn)
    if fn is None or not single_block(fn):
        return None
    kernel, call = fn, None
    if T.KERNEL_ATTR not in fn.attributes:
        refs = uniform.references(fn)
        if len(refs) != 1 or refs[0].name != "func.call":
            return None
        call = refs[0]
        kernel = parent_op(call)
        if kernel is None or kernel.name != "func.func" or not single_block(kernel):
            return None
    if T.KERNEL_ATTR not in kernel.attributes or uniform.references(kernel):
        return None
    path = path_to(op, fn)
    if path is None:
        return None
    return Site(kernel, fn, call, path)


def unobserved(op, target, site) -> bool:
    """No later op of the thread, in `site.fn` after `op` and in the kernel
    after the call, can observe an add to `target` (rule 4)."""
    if not silent_after(op, target, NOALIAS_ATTR in site.fn.attributes, site.fn):
        return False
    if site.call is None:
        return True
    outer = target if not is_arg(target) else site.call.operands[
        ir.BlockArgument(target).arg_number]
    return silent_after(site.call, outer, NOALIAS_ATTR in site.kernel.attributes, site.kernel)


def materialize(v, ip, site):
    """`v` (a value of `site.fn`) as a value of the kernel's body at `ip`:
    itself when defined there, the call's operand for an argument of the
    function, else a clone of its (pure, uniform) definition."""
    owner = v.owner
    if isinstance(owner, ir.Block):
        if site.call is not None:
            return site.call.operands[ir.BlockArgument(v).arg_number]
        return v
    op = owner.operation
    if parent_op(op) == site.kernel:
        return v
    operands = [materialize(o, ip, site) for o in op.operands]
    clone = op.clone(ip=ip)
    for i, o in enumerate(operands):
        clone.operands[i] = o
    return clone.results[list(op.results).index(v)]


def yield_value(ifop, region, value):
    """Replace `ifop` by a copy with one more result: `value` from region
    `region` (0: then, 1: else), zero from the other. Returns that result."""
    return yield_values(ifop, region, [value])[0]


def yield_values(ifop, region, values):
    """`yield_value` for several values at once (one copy of `ifop`): their
    new results, in order. The regions' blocks move to the copy whole (O(1)
    per region, not per op: a guard around a long kernel is copied once per
    hoisted add); the other region's zeros open its block."""
    n_old = len(ifop.results)
    new = ir.Operation.create(
        "scf.if", results=[r.type for r in ifop.results] + [v.type for v in values],
        operands=[ifop.operands[0]], regions=2, loc=ifop.location, ip=ir.InsertionPoint(ifop))
    for r in (0, 1):
        blocks = ifop.regions[r].blocks
        if len(blocks):
            block = blocks[0]
            block.append_to(new.regions[r])
            term = terminator(block)
        else:
            block, term = new.regions[r].blocks.append(), None
        with ifop.location, ir.InsertionPoint.at_block_begin(block):
            extra = list(values) if r == region else [zero(v.type) for v in values]
        with ifop.location, (ir.InsertionPoint(term) if term is not None
                             else ir.InsertionPoint(block)):
            scf.YieldOp((list(term.operands) if term is not None else []) + extra)
        if term is not None:
            term.erase()
    for old, rep in zip(ifop.results, new.results):
        old.replace_all_uses_with(rep)
    ifop.erase()
    return list(new.results)[n_old:]


def return_value(fn, call, value):
    """`fn` returns `value` as one more result, `call` is rebuilt with it;
    returns the call's new result."""
    ret = terminator(fn.regions[0].blocks[0])
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


def hoist(value, site):
    """`value` (defined beside the site's op) carried out of the guards and
    the function: (the kernel-level value, the kernel op after which it is
    available, or None when the site is in the kernel's body unguarded).
    The guards and the call of `site` are replaced (`site.call` updated)."""
    for ifop, region in site.path:
        value = yield_value(ifop, region, value)
    if site.call is not None:
        site.call, value = return_value(site.fn, site.call, value)
        return value, site.call
    return value, (value.owner.operation if site.path else None)


def after(op, site):
    """The insertion point right after `op` in the kernel's body (before the
    op that follows it: O(1), no list of the body)."""
    return ir.InsertionPoint.after(op)

"""`diffgpu-aggregate-atomics`: one atomic per block for uniform-address adds.

Runs after `diffgpu-autodiff` on both targets. A `diffgpu.atomic_add` is
summed over the whole block first when

1. its result is unused and its element type is f32, f64, i32 or i64;
2. it sits in a kernel that no op references (no call, no differentiation),
   whose body is one block, directly or under nested `scf.if`s only (no
   loop between it and the kernel's body);
3. its memref and indices are uniform (lowering/uniform.py: one value per
   block, e.g. `out[0]`, `out[block_id]`, a scalar argument);
4. nothing after it inside those `scf.if`s touches memory (moving it to the
   end of the outermost `scf.if` changes no value this thread observes), and
   nothing after that `scf.if` in the kernel does but other atomic adds
   whose result is unused (the block's sum reaches memory after a barrier).

The guards become `scf.if`s yielding the value (zero where the add did not
happen), so every thread of the block reaches the kernel's top level and
joins the block sum there. The sum is a tree (pairwise), so only one float
rounding per block remains sequential: a float32 sum of 2^26 terms in blocks
of 256 stays within about 1e-5 relative (docs/atomics.md).

    scf.if %in {
      %v = ...
      %o = "diffgpu.atomic_add"(%out, %v, %c0) : (memref<?xf32, ...>, f32, index) -> f32
    }
  becomes
    %v2 = scf.if %in -> (f32) { %v = ...; scf.yield %v } else { scf.yield %zero }
    <block sum of %v2>; thread 0: "diffgpu.atomic_add"(%out, %sum, %c0)

The block sum, GPU targets (block size a multiple of 32; else every thread
keeps its own atomic, which `diffgpu-warp-atomics` then sums per warp):
a butterfly `gpu.shuffle` sum per warp, lane 0 stores it in a 32-slot shared
array, a barrier, and warp 0 sums the slots the same way. Host target: each
thread stores its value in a 1024-slot shared array, a barrier, and thread 0
sums it pairwise in place (strides 1, 2, 4, ...), as the threads run one at
a time there.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from diffgpu._mlir import arith, ir, memref, scf

from diffgpu.dialects import ops as dg
from diffgpu.lowering import targets as T
from diffgpu.lowering.gpu_atomics import SHUFFLE_TYPES, WARP, warp_sum
from diffgpu.lowering.registry import ModulePass, register_pass
from diffgpu.lowering.uniform import Uniformity, walk

#: ops that may follow the atomic inside the guards (no memory effects)
_PURE_PREFIX = ("arith.", "math.")
_PURE = ("memref.dim", "diffgpu.thread_id", "diffgpu.block_id", "diffgpu.block_dim",
         "diffgpu.grid_dim", "scf.yield", "func.return")
_SYNC = ("diffgpu.barrier", "diffgpu.shared_alloc")
MAX_THREADS = 1024
#: marks the atomics this pass emits, never aggregated again by it: "block" (the
#: block's sum; diffgpu-warp-atomics leaves it alone too) or "thread" (the
#: per-thread fallback, which diffgpu-warp-atomics may still sum per warp)
AGGREGATED = "diffgpu.aggregated"


def _parent_op(op):
    p = op.parent
    return p.operation if p is not None else None


def _path(op, kernel):
    """[(scf.if, region number)] from the innermost guard out to the kernel's
    body, or None when something else (a loop, ...) is in between."""
    path = []
    cur = op
    while True:
        parent = _parent_op(cur)
        if parent is None:
            return None
        if parent == kernel:
            return path
        if parent.name != "scf.if":
            return None
        region = 0 if _in_region(cur, parent.regions[0]) else 1
        path.append((parent, region))
        cur = parent


def _in_region(op, region) -> bool:
    return any(op == o.operation for b in region.blocks for o in b.operations)


def _quiet_after(op) -> bool:
    """Nothing after `op` in its block touches memory."""
    ops = _block_ops(op)
    return all(o.name.startswith(_PURE_PREFIX) or o.name in _PURE
               for o in ops[ops.index(op) + 1:])


def _silent_rest(op) -> bool:
    """Nothing after `op` (in the kernel's body, nested ops included) reads or
    writes memory, except other atomic adds whose result is unused: the
    block's sum lands in memory some time after the barrier, so a later load
    of the same element by this thread could miss its own contribution."""
    ops = _block_ops(op)
    for top in ops[ops.index(op) + 1:]:
        for o in walk(top):
            if o.name.startswith(_PURE_PREFIX + ("scf.",)) or o.name in _PURE + _SYNC:
                continue
            if o.name == "diffgpu.atomic_add" and not len(list(o.results[0].uses)):
                continue
            return False
    return True


def _block_ops(op) -> list:
    """The ops of the block holding `op`."""
    for region in _parent_op(op).regions:
        for block in region.blocks:
            ops = [o.operation for o in block.operations]
            if op in ops:
                return ops
    return []


def candidate(op, uniform):
    """(kernel, path) when `op` can be block-aggregated (rules 1 to 4), else None."""
    if (op.name != "diffgpu.atomic_add" or len(list(op.results[0].uses))
            or AGGREGATED in op.attributes):
        return None
    if str(op.operands[1].type) not in SHUFFLE_TYPES:
        return None
    kernel = op
    while kernel is not None and kernel.name != "func.func":
        kernel = _parent_op(kernel)
    if (kernel is None or T.KERNEL_ATTR not in kernel.attributes
            or len(kernel.regions[0].blocks) != 1 or uniform.is_referenced(kernel)):
        return None
    path = _path(op, kernel)
    if path is None:
        return None
    if not all(uniform.is_uniform(v) for i, v in enumerate(op.operands) if i != 1):
        return None
    if not _quiet_after(op) or not all(_quiet_after(p) for p, _ in path[:-1]):
        return None
    outer = path[-1][0] if path else op
    if not _silent_rest(outer):
        return None
    return kernel, path


def _materialize(v, ip, kernel):
    """`v`, or a clone of its (pure, uniform) definition at `ip` when it is
    defined inside the guards of `kernel`'s body."""
    owner = v.owner
    if isinstance(owner, ir.Block):
        return v
    op = owner.operation
    if _parent_op(op) == kernel:
        return v
    operands = [_materialize(o, ip, kernel) for o in op.operands]
    clone = op.clone(ip=ip)
    for i, o in enumerate(operands):
        clone.operands[i] = o
    return clone.results[list(op.results).index(v)]


def _zero(t):
    return arith.constant(t, 0.0 if isinstance(t, ir.FloatType) else 0)


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
            extra = value if r == region else _zero(t)
            term = scf.YieldOp(old_args + [extra]).operation
        for o in src[:-1]:
            o.move_before(term)
        if src:
            src[-1].erase()
    for old, rep in zip(ifop.results, new.results):
        old.replace_all_uses_with(rep)
    ifop.erase()
    return new.results[n_old]


def _linear_thread():
    """(linear thread index in the block, threads per block), index."""
    t = [dg.thread_id(d) for d in range(3)]
    b = [dg.block_dim(d) for d in range(3)]
    lin = arith.addi(t[0], arith.muli(b[0], arith.addi(t[1], arith.muli(b[1], t[2]))))
    return lin, arith.muli(b[0], arith.muli(b[1], b[2]))


def _idx(n):
    return arith.constant(ir.IndexType.get(), n)


def _eq(a, b):
    return arith.cmpi(arith.CmpIPredicate.eq, a, b)


def _shared(t, n):
    space = ir.Attribute.parse("#gpu.address_space<workgroup>")
    return dg.shared_alloc(ir.MemRefType.get([n], t, memory_space=space))


def _block_sum_gpu(v, add_atomic):
    lin, n = _linear_thread()
    full = _eq(arith.remui(n, _idx(WARP)), _idx(0))
    branch = scf.IfOp(full, [], has_else=True)
    with ir.InsertionPoint(branch.then_block):
        sh = _shared(v.type, WARP)
        w = warp_sum(v)
        lane, warp = arith.remui(lin, _idx(WARP)), arith.divui(lin, _idx(WARP))
        first = scf.IfOp(_eq(lane, _idx(0)), [])
        with ir.InsertionPoint(first.then_block):
            memref.store(w, sh, [warp])
            scf.YieldOp([])
        dg.barrier()
        lead = scf.IfOp(_eq(warp, _idx(0)), [])
        with ir.InsertionPoint(lead.then_block):
            mine = arith.cmpi(arith.CmpIPredicate.ult, lane, arith.divui(n, _idx(WARP)))
            x = arith.select(mine, memref.load(sh, [lane]), _zero(v.type))
            total = warp_sum(x)
            last = scf.IfOp(_eq(lane, _idx(0)), [])
            with ir.InsertionPoint(last.then_block):
                add_atomic(total)
                scf.YieldOp([])
            scf.YieldOp([])
        scf.YieldOp([])
    with ir.InsertionPoint(branch.else_block):
        add_atomic(v, "thread")
        scf.YieldOp([])


def _block_sum_host(v, add_atomic):
    lin, n = _linear_thread()
    sh = _shared(v.type, MAX_THREADS)
    memref.store(v, sh, [lin])
    dg.barrier()
    first = scf.IfOp(_eq(lin, _idx(0)), [])
    index = ir.IndexType.get()
    with ir.InsertionPoint(first.then_block):
        # for (s = 1; s < n; s *= 2) for (j = 0; j + s < n; j += 2s) sh[j] += sh[j + s]
        loop = scf.WhileOp([index], [_idx(1)])
        before = loop.before.blocks.append(index)
        with ir.InsertionPoint(before):
            s = before.arguments[0]
            scf.ConditionOp(arith.cmpi(arith.CmpIPredicate.ult, s, n), [s])
        after = loop.after.blocks.append(index)
        with ir.InsertionPoint(after):
            s = after.arguments[0]
            s2 = arith.addi(s, s)
            inner = scf.ForOp(_idx(0), arith.subi(n, s), s2)
            with ir.InsertionPoint(inner.body):
                j = inner.induction_variable
                a = memref.load(sh, [j])
                b = memref.load(sh, [arith.addi(j, s)])
                add = arith.addf if isinstance(v.type, ir.FloatType) else arith.addi
                memref.store(add(a, b), sh, [j])
                scf.YieldOp([])
            scf.YieldOp([s2])
        add_atomic(memref.load(sh, [_idx(0)]))
        scf.YieldOp([])


def aggregate(op, kernel, path) -> None:
    """Hoist `op` out of its guards (`path`) and sum it over the block."""
    value = op.operands[1]
    for ifop, region in path:
        value = _yield_value(ifop, region, value)
    after = value.owner.operation if path else op
    ops = [o.operation for o in kernel.regions[0].blocks[0].operations]
    ip = ir.InsertionPoint(ops[ops.index(after) + 1])
    block_sum = _block_sum_gpu if T.is_gpu(T.get_target(kernel)) else _block_sum_host
    with op.location, ip:
        target = [_materialize(v, ip, kernel) for i, v in enumerate(op.operands) if i != 1]

        def add_atomic(total, how="block"):
            dg.atomic_add(target[0], total, target[1:]).owner.attributes[AGGREGATED] = \
                ir.StringAttr.get(how)

        block_sum(value, add_atomic)
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
                aggregate(op, *found)
                return True
        return False

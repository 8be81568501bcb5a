"""The block sum of `diffgpu-aggregate-atomics` (lowering/reduce/aggregate_atomics.py).

`block_sum_gpu(v, add)` / `block_sum_host(v, add)` build, at the current
insertion point of a kernel's body (every thread of the block executes it),
the sum of `v` over the block and call `add(total)` in one thread:

- GPU, block size a multiple of 32: a butterfly `gpu.shuffle` sum per warp,
  lane 0 stores it in a 32-slot shared array, a barrier, warp 0 sums the
  slots the same way and its lane 0 adds; other block sizes: `add(v,
  "thread")` in every thread (`diffgpu-warp-atomics` then sums full warps);
- host: every thread stores `v` in a 1024-slot shared array, a barrier, and
  thread 0 sums it pairwise in place (strides 1, 2, 4, ...): the threads of
  a block run one at a time there.

Both are trees, so a block's float sum is pairwise.
"""
from __future__ import annotations

from diffgpu._mlir import arith, ir, memref, scf

from diffgpu.dialects import ops as dg
from diffgpu.lowering.gpu.atomics import WARP, warp_sum

MAX_THREADS = 1024


def zero(t):
    return arith.constant(t, 0.0 if isinstance(t, ir.FloatType) else 0)


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


def block_sum_gpu(v, add_atomic):
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
            x = arith.select(mine, memref.load(sh, [lane]), zero(v.type))
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


def block_sum_host(v, add_atomic):
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



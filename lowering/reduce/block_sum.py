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


def _pairwise_sum(sh, n, add, base=None):
    """Sum the `n` values at `sh[base ...]` (base None: at sh[0 ...]) pairwise
    into the first: for (s = 1; s < n; s *= 2) for (j = 0; j + s < n; j += 2s)
    sh[base + j] += sh[base + j + s]."""
    index = ir.IndexType.get()
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
            at = j if base is None else arith.addi(base, j)
            a = memref.load(sh, [at])
            b = memref.load(sh, [arith.addi(at, s)])
            memref.store(add(a, b), sh, [at])
            scf.YieldOp([])
        scf.YieldOp([s2])


def block_sum_host(v, add_atomic):
    lin, n = _linear_thread()
    sh = _shared(v.type, MAX_THREADS)
    memref.store(v, sh, [lin])
    dg.barrier()
    first = scf.IfOp(_eq(lin, _idx(0)), [])
    with ir.InsertionPoint(first.then_block):
        _pairwise_sum(sh, n, arith.addf if isinstance(v.type, ir.FloatType) else arith.addi)
        add_atomic(memref.load(sh, [_idx(0)]))
        scf.YieldOp([])




# ---------------------------------------------------------------------------
# several sums at once (lowering/reduce/block_sums.py): one barrier for all
# ---------------------------------------------------------------------------

def _pow2(n: int) -> int:
    p = 1
    while p < n:
        p *= 2
    return p


def _shuffle_xor(v, offset: int):
    i32 = ir.IntegerType.get_signless(32)
    return ir.Operation.create(
        "gpu.shuffle", results=[v.type, ir.IntegerType.get_signless(1)],
        operands=[v, arith.constant(i32, offset), arith.constant(i32, WARP)],
        attributes={"mode": ir.Attribute.parse("#gpu<shuffle_mode xor>")}).results[0]


def warp_sums(values, lane):
    """The warp's sums of `values` (at most 32, one type) with P - 1 + 5 -
    log2(P) shuffles (P: len(values) rounded up to a power of two) instead
    of 5 per value: each butterfly step hands half of a lane's values to its
    partner and keeps the other half, until one value is left, then plain
    butterfly steps. Returns (sum, index): lane `l` holds the sum of
    values[l >> (5 - log2 P)] (`index`, an index value; every lane of a group
    of 32 / P lanes holds the same). All 32 lanes must execute it; `lane`:
    the lane number (index)."""
    t = values[0].type
    p = _pow2(len(values))
    vals = list(values) + [zero(t)] * (p - len(values))
    add = arith.addf if isinstance(t, ir.FloatType) else arith.addi
    offset = WARP // 2
    while len(vals) > 1:  # halving: lanes with this offset's bit keep the upper half
        half = len(vals) // 2
        bit = arith.cmpi(arith.CmpIPredicate.ne, arith.andi(lane, _idx(offset)), _idx(0))
        out = []
        for j in range(half):
            lo, hi = vals[j], vals[j + half]
            recv = _shuffle_xor(arith.select(bit, lo, hi), offset)
            out.append(add(arith.select(bit, hi, lo), recv))
        vals, offset = out, offset // 2
    v = vals[0]
    while offset:  # the lanes of a group hold parts of one sum: plain butterfly
        v = add(v, _shuffle_xor(v, offset))
        offset //= 2
    shift = (WARP // p).bit_length() - 1
    return v, arith.shrui(lane, _idx(shift)), shift


def block_sums_gpu(values, finish, per_thread):
    """The block's sums of `values` (at most 32, one type) with one barrier:
    a transposing warp sum (`warp_sums`), the first lane of each group
    stores its warp's sum in a shared array [32 values x 32 warps], a
    barrier, warp 0 sums the slots of every value the same way. Then
    `finish(total, k)` runs in the one lane of warp 0 holding value k's
    total (k: an index value below len(values)). Blocks whose size is not a
    multiple of 32: `per_thread(v, k)` for each value in every thread
    (k: a Python int)."""
    lin, n = _linear_thread()
    full = _eq(arith.remui(n, _idx(WARP)), _idx(0))
    branch = scf.IfOp(full, [], has_else=True)
    count = len(values)
    with ir.InsertionPoint(branch.then_block):
        t = values[0].type
        sh = _shared(t, WARP * WARP)
        lane, warp = arith.remui(lin, _idx(WARP)), arith.divui(lin, _idx(WARP))
        w, k, shift = warp_sums(values, lane)
        first = arith.andi(_eq(arith.andi(lane, _idx((1 << shift) - 1)), _idx(0)),
                           arith.cmpi(arith.CmpIPredicate.ult, k, _idx(count)))
        store = scf.IfOp(first, [])
        with ir.InsertionPoint(store.then_block):
            memref.store(w, sh, [arith.addi(arith.muli(k, _idx(WARP)), warp)])
            scf.YieldOp([])
        dg.barrier()
        lead = scf.IfOp(_eq(warp, _idx(0)), [])
        with ir.InsertionPoint(lead.then_block):
            mine = arith.cmpi(arith.CmpIPredicate.ult, lane, arith.divui(n, _idx(WARP)))
            parts = [arith.select(mine, memref.load(sh, [arith.addi(_idx(j * WARP), lane)]),
                                  zero(t)) for j in range(count)]
            total, k, shift = warp_sums(parts, lane)
            first = arith.andi(_eq(arith.andi(lane, _idx((1 << shift) - 1)), _idx(0)),
                               arith.cmpi(arith.CmpIPredicate.ult, k, _idx(count)))
            last = scf.IfOp(first, [])
            with ir.InsertionPoint(last.then_block):
                finish(total, k)
                scf.YieldOp([])
            scf.YieldOp([])
        scf.YieldOp([])
    with ir.InsertionPoint(branch.else_block):
        for j, v in enumerate(values):
            per_thread(v, j)
        scf.YieldOp([])


def block_sums_host(values, add_atomic):
    """The host's `block_sum_host` of several values with one barrier: every
    thread stores them in a shared array [len(values) x 1024], thread 0 sums
    each row pairwise and calls `add_atomic(total, j)` for value j."""
    lin, n = _linear_thread()
    t = values[0].type
    sh = _shared(t, MAX_THREADS * len(values))
    for j, v in enumerate(values):
        memref.store(v, sh, [arith.addi(lin, _idx(j * MAX_THREADS))])
    dg.barrier()
    first = scf.IfOp(_eq(lin, _idx(0)), [])
    add = arith.addf if isinstance(t, ir.FloatType) else arith.addi
    with ir.InsertionPoint(first.then_block):
        for j in range(len(values)):
            base = _idx(j * MAX_THREADS)
            _pairwise_sum(sh, n, add, base)
            add_atomic(memref.load(sh, [base]), j)
        scf.YieldOp([])

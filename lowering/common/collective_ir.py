"""The collectives computed through block-shared memory, any block size
(docs/collectives.md). The host target runs every collective this way
(lowering/host/collectives.py); the GPU uses shuffles (lowering/gpu/collectives.py:
it runs collectives on whole warps only).

Every thread of the block executes the expansion (block-uniform control flow,
checked by diffgpu-check-collectives). Two block-shared staging arrays of
1024 elements, `S` and `R`, serve every collective of one value type:

    S[lin] = v; barrier                      every thread contributes
    if lin == 0: R[...] = f(S)   ; barrier   one thread computes (reductions, scans)
    result = R[...]                          every thread reads its result
  shuffles: S[lin] = v; barrier; result = S[src]; barrier

(A barrier sits between each write of S or R and the next read of it by
another thread, so several collectives in a row, or one in a loop, share
the arrays without a race.) The one thread computes exactly what the GPU's
shuffles compute, in their order: a warp's sum is the tree of its 32 lanes
(pairs 16 apart, then 8, 4, 2, 1: the xor butterfly), a block's the same
tree over its warps' sums; a scan is the Kogge-Stone scan of each warp
(offsets 1, 2, 4, 8, 16) plus the scan of the warp totals. Lanes past the
end of the block count as the identity (-0.0 for sums, -inf/+inf for
max/min), and a shuffle from such a lane, or from outside the warp, gives
the thread's own value.

`lin` is the linear thread index tx + bx * (ty + by * tz); its warp is
lin // 32, its lane lin % 32 (as NVIDIA GPUs form warps).
"""
from __future__ import annotations

from diffgpu._mlir import arith, ir, memref, scf
from diffgpu.dialects import names as N
from diffgpu.dialects import ops as dg

WARP = N.WARP_SIZE
MAX_THREADS = 1024
LEVELS = (16, 8, 4, 2, 1)  # the butterfly's offsets
SCAN_STEPS = (1, 2, 4, 8, 16)  # Kogge-Stone's


def idx(n):
    return arith.constant(ir.IndexType.get(), n)


def i32(n):
    return arith.constant(ir.IntegerType.get_signless(32), n)


def is_float(t) -> bool:
    return isinstance(t, ir.FloatType)


def linear_thread(geometry=None):
    """(lin, nthreads) as index values; `geometry(name, dim)` builds
    thread_id / block_dim (default: the dg ops)."""
    geometry = geometry or dg.geometry
    t = [geometry("thread_id", d) for d in range(3)]
    b = [geometry("block_dim", d) for d in range(3)]
    lin = arith.addi(t[0], arith.muli(b[0], arith.addi(t[1], arith.muli(b[1], t[2]))))
    return lin, arith.muli(b[0], arith.muli(b[1], b[2]))


def combine(kind, a, b):
    """kind(a, b): sum, max or min (float max/min propagate NaN)."""
    f = is_float(a.type)
    if kind == "sum":
        return arith.addf(a, b) if f else arith.addi(a, b)
    if kind == "max":
        return arith.maximumf(a, b) if f else arith.maxsi(a, b)
    return arith.minimumf(a, b) if f else arith.minsi(a, b)


def identity(kind, t):
    """The identity of `kind` in type `t` (-0.0 for a float sum: x + -0.0 == x)."""
    if is_float(t):
        return arith.constant(t, {"sum": -0.0, "max": float("-inf"), "min": float("inf")}[kind])
    width = ir.IntegerType(t).width
    return arith.constant(t, {"sum": 0, "max": -2 ** (width - 1), "min": 2 ** (width - 1) - 1}[kind])


def cmp(pred, a, b):
    return arith.cmpi(getattr(arith.CmpIPredicate, pred), a, b)


def for_range(lo, hi):
    """An scf.for from lo to hi, step 1 (the caller fills its body and yield)."""
    return scf.ForOp(lo, hi, idx(1))


def shared_type(t, n=MAX_THREADS):
    space = ir.Attribute.parse("#gpu.address_space<workgroup>")
    return ir.MemRefType.get([n], t, memory_space=space)


# -- what the one thread computes ----------------------------------------------
def _tree(kind, buf, base):
    """buf[base] = the butterfly's reduction of buf[base .. base + 32)."""
    for off in LEVELS:
        loop = for_range(idx(0), idx(off))
        with ir.InsertionPoint(loop.body):
            j = arith.addi(base, loop.induction_variable)
            k = arith.addi(j, idx(off))
            memref.store(combine(kind, memref.load(buf, [j]), memref.load(buf, [k])), buf, [j])
            scf.YieldOp([])


def _pad_copy(kind, src, dst, base, n, t):
    """dst[base + j] = src[base + j] where base + j < n, else the identity (j < 32)."""
    loop = for_range(idx(0), idx(WARP))
    with ir.InsertionPoint(loop.body):
        j = arith.addi(base, loop.induction_variable)
        ok = cmp("ult", j, n)
        guard = scf.IfOp(ok, [t], has_else=True)
        with ir.InsertionPoint(guard.then_block):
            scf.YieldOp([memref.load(src, [j])])
        with ir.InsertionPoint(guard.else_block):
            scf.YieldOp([identity(kind, t)])
        memref.store(guard.results[0], dst, [j])
        scf.YieldOp([])


def _warps(n):
    return arith.divui(arith.addi(n, idx(WARP - 1)), idx(WARP))


def _reduce_warps(kind, S, R, n, t):
    """R[32 w] = reduction of warp w's values (S), for every warp."""
    loop = for_range(idx(0), _warps(n))
    with ir.InsertionPoint(loop.body):
        base = arith.muli(loop.induction_variable, idx(WARP))
        _pad_copy(kind, S, R, base, n, t)
        _tree(kind, R, base)
        scf.YieldOp([])


def _reduce_block(kind, S, R, n, t):
    """R[0] = the block's reduction: the warps' results, then the tree over
    the 32 warp slots (S[0..32), the identity past the last warp)."""
    _reduce_warps(kind, S, R, n, t)
    nw = _warps(n)
    loop = for_range(idx(0), idx(WARP))
    with ir.InsertionPoint(loop.body):
        w = loop.induction_variable
        guard = scf.IfOp(cmp("ult", w, nw), [t], has_else=True)
        with ir.InsertionPoint(guard.then_block):
            scf.YieldOp([memref.load(R, [arith.muli(w, idx(WARP))])])
        with ir.InsertionPoint(guard.else_block):
            scf.YieldOp([identity(kind, t)])
        memref.store(guard.results[0], S, [w])
        scf.YieldOp([])
    _tree(kind, S, idx(0))
    memref.store(memref.load(S, [idx(0)]), R, [idx(0)])


def _scan32(buf, base, reverse):
    """Kogge-Stone inclusive scan of buf[base .. base + 32) in place
    (reverse: suffix sums): new[j] = old[j -+ d] + old[j] for d = 1, 2, .. 16."""
    for d in SCAN_STEPS:
        count = WARP - d
        loop = for_range(idx(0), idx(count))
        with ir.InsertionPoint(loop.body):
            i = loop.induction_variable
            # forward: j from 31 down to d (old values of j - d still there)
            j = arith.subi(idx(WARP - 1), i) if not reverse else i
            src = arith.subi(j, idx(d)) if not reverse else arith.addi(j, idx(d))
            a, b = memref.load(buf, [arith.addi(base, src)]), memref.load(buf, [arith.addi(base, j)])
            memref.store(combine("sum", a, b), buf, [arith.addi(base, j)])
            scf.YieldOp([])


def _scan_block(S, R, n, t, reverse):
    """R[lin] = inclusive prefix (suffix) sum at lin: each warp's scan, plus
    the scan of the warp totals (kept in S[1024 - 32 ..], past every warp
    scan's input, which is read before)."""
    nw = _warps(n)
    tot = idx(MAX_THREADS - WARP)
    loop = for_range(idx(0), nw)
    with ir.InsertionPoint(loop.body):
        base = arith.muli(loop.induction_variable, idx(WARP))
        _pad_copy("sum", S, R, base, n, t)
        _scan32(R, base, reverse)
        scf.YieldOp([])
    loop = for_range(idx(0), idx(WARP))  # the totals: lane 31 (reverse: lane 0)
    with ir.InsertionPoint(loop.body):
        w = loop.induction_variable
        guard = scf.IfOp(cmp("ult", w, nw), [t], has_else=True)
        with ir.InsertionPoint(guard.then_block):
            lane = 0 if reverse else WARP - 1
            scf.YieldOp([memref.load(R, [arith.addi(arith.muli(w, idx(WARP)), idx(lane))])])
        with ir.InsertionPoint(guard.else_block):
            scf.YieldOp([identity("sum", t)])
        memref.store(guard.results[0], S, [arith.addi(tot, w)])
        scf.YieldOp([])
    _scan32(S, tot, reverse)
    loop = for_range(idx(0), n)  # add the other warps' part
    with ir.InsertionPoint(loop.body):
        i = loop.induction_variable
        w = arith.divui(i, idx(WARP))
        if reverse:
            has = cmp("ult", arith.addi(w, idx(1)), nw)
            other = arith.addi(tot, arith.addi(w, idx(1)))
        else:
            has = cmp("ugt", w, idx(0))
            other = arith.addi(tot, arith.subi(w, idx(1)))
        guard = scf.IfOp(has, [])
        with ir.InsertionPoint(guard.then_block):
            memref.store(combine("sum", memref.load(S, [other]), memref.load(R, [i])), R, [i])
            scf.YieldOp([])
        scf.YieldOp([])


def shuffle_source(mode, lane, k):
    """(source lane, in range) of a shuffle; lane, k: index values."""
    if mode == "xor":
        return arith.xori(lane, k), cmp("ult", arith.xori(lane, k), idx(WARP))
    if mode == "up":
        return arith.subi(lane, k), cmp("uge", lane, k)
    if mode == "down":
        src = arith.addi(lane, k)
        return src, cmp("ult", src, idx(WARP))
    src = arith.andi(k, idx(WARP - 1))
    return src, cmp("ult", src, idx(WARP))


# -- the expansion ------------------------------------------------------------------
def staged(op, S, R, lin, n, barrier=None):
    """The result of collective `op` (a dialect OpView) through S and R,
    built at the current insertion point; every thread runs it. `barrier()`
    builds a block barrier (default: diffgpu.barrier)."""
    barrier = barrier or dg.barrier
    name = op.operation.name
    v = op.value
    t = v.type
    memref.store(v, S, [lin])
    barrier()
    if name == N.SHUFFLE:
        k = arith.index_cast(ir.IndexType.get(), op.lane)
        lane, warp = arith.remui(lin, idx(WARP)), arith.divui(lin, idx(WARP))
        src, ok = shuffle_source(op.mode, lane, k)
        at = arith.addi(arith.muli(warp, idx(WARP)), src)
        ok = arith.andi(ok, cmp("ult", at, n))
        guard = scf.IfOp(ok, [t], has_else=True)
        with ir.InsertionPoint(guard.then_block):
            scf.YieldOp([memref.load(S, [at])])
        with ir.InsertionPoint(guard.else_block):
            scf.YieldOp([v])
        barrier()
        return guard.results[0]
    first = scf.IfOp(cmp("eq", lin, idx(0)), [])
    with ir.InsertionPoint(first.then_block):
        if name == N.WARP_REDUCE:
            _reduce_warps(op.kind, S, R, n, t)
        elif name == N.BLOCK_REDUCE:
            _reduce_block(op.kind, S, R, n, t)
        else:
            _scan_block(S, R, n, t, op.reverse)
        scf.YieldOp([])
    barrier()
    if name == N.WARP_REDUCE:
        at = arith.muli(arith.divui(lin, idx(WARP)), idx(WARP))
    elif name == N.BLOCK_REDUCE:
        at = idx(0)
    else:
        at = lin
    return memref.load(R, [at])


def problem(op) -> str | None:
    """Why collective `op` cannot be expanded (malformed IR), or None."""
    o = op.operation
    name = o.name
    if len(o.results) != 1 or not len(o.operands) or o.results[0].type != o.operands[0].type:
        return f"'{name}' takes a value and returns one of its type"
    t = o.operands[0].type
    if not (is_float(t) or (isinstance(t, ir.IntegerType) and ir.IntegerType(t).width in (32, 64))):
        return f"'{name}': unsupported value type {t} (f32, f64, i32 or i64)"
    if name in (N.WARP_REDUCE, N.BLOCK_REDUCE) and op.kind not in N.REDUCE_KINDS:
        return f"'{name}' needs a kind of {', '.join(N.REDUCE_KINDS)}"
    if name == N.SHUFFLE:
        if op.mode not in N.SHUFFLE_MODES or len(o.operands) != 2:
            return f"'{name}' needs a mode of {', '.join(N.SHUFFLE_MODES)} and a lane operand"
        if op.mode != "idx":
            k = constant_lane(op)
            if k is None or not 0 <= k < WARP:
                return (f"'{name}' {{mode = \"{op.mode}\"}}: the offset must be a constant "
                        f"in 0..{WARP - 1}")
    return None


def constant_lane(op):
    """The constant i32 lane/offset operand of a shuffle, or None."""
    owner = op.lane.owner
    if isinstance(owner, ir.Block) or owner.operation.name != "arith.constant":
        return None
    return ir.IntegerAttr(owner.operation.attributes["value"]).value

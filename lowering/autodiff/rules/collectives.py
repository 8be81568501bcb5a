"""Derivative rules of the collectives and of `diffgpu.atomic_rmw`
(docs/collectives.md), one Rule object per op. Reverse rules are the
transposes, built from the same collectives (so the reverse runs in the
same uniform control flow as the forward); forward rules apply the
collective to the tangents.

    warp/block sum      adj(v) += sum(adj(r))               dr = sum(dv)
    warp/block max/min  adj(v) += sum(adj(r)) in the winner  dr = dv of the winner
                        (the lowest lane / linear thread index holding r)
    block_scan          adj(v) += block_scan(adj(r), reverse = !reverse)
    shuffle xor k       adj(v) += shuffle xor k (adj(r))    dr = shuffle(dv)
    shuffle down k      adj(v) += (lane >= k ? up k (adj(r)) : 0)
                                  + (this lane read itself ? adj(r) : 0)
    shuffle up k        the mirror image (down k)
    shuffle idx s       adj(v) of lane j += adj(r) of every lane that read j
                        (s constant: the warp's sum in lane s; else 32 rounds)
    atomic_rmw max/min  in a launch that follows the forward (dg.vjp / dg.jvp: the
                        array's activity "rmw", its primal the final values F
                        with NaN where the original value won; FINAL_ATTR):
                        v == F[i] ? adj(v) += exch(dA[i], 0)    (the first one
                        to exchange takes dA[i], the others 0)
                        v == F[i] ? (o = exch(dA[i], dv); o not NaN ? exch(dA[i], o))
                        (dA[i] NaN where a contribution won: the first one stays)
                        elsewhere no derivative: an error (RMW_WHY)
    (dg.atomic_sub is an atomic_add of -v: adj(v) = -dA[i])

Max/min of a NaN send no adjoint (no lane compares equal to it).
"""
from __future__ import annotations

from diffgpu._mlir import arith, ir, scf
from diffgpu.dialects import names as N
from diffgpu.dialects import ops as dg
from diffgpu.lowering.common import collective_ir as C

from diffgpu.lowering.autodiff import build as B
from diffgpu.lowering.autodiff.rules.partials import Rule

WARP = N.WARP_SIZE
BIG = 2 ** 31 - 1


def _scope(op):
    return "warp" if op.operation.name == N.WARP_REDUCE else "block"


def _lane_ids():
    """(lane, lin, n): index values."""
    lin, n = C.linear_thread()
    return arith.remui(lin, C.idx(WARP)), lin, n


def _winner(op, x, r):
    """i1: this thread holds the winner of max/min `op` (the lowest lane /
    linear thread index whose value equals the result `r`)."""
    lane, lin, _ = _lane_ids()
    me = arith.index_cast(ir.IntegerType.get_signless(32), lane if _scope(op) == "warp" else lin)
    cand = arith.select(B.cmpf("oeq", x, r), me, C.i32(BIG))
    return C.cmp("eq", me, dg.reduce(_scope(op), "min", cand))


def _zero_if(cond, v):
    return arith.select(cond, v, B.zero(v.type))


def _needs(R, op):
    return R.is_active(op.operands[0]) or R.is_active(op.results[0])


# -- reductions -------------------------------------------------------------------
def _reduce_reverse(R, op):
    view = dg.opview(op)
    d = R.get_adj(op.results[0])
    if d is None or not R.is_active(view.value):
        return
    total = dg.reduce(_scope(view), "sum", d)
    if view.kind != "sum":
        total = _zero_if(_winner(view, R.need(view.value), R.need(op.results[0])), total)
    R.add_adj(view.value, total)


def _reduce_tangent(F, op):
    view = dg.opview(op)
    t = F.tangent(view.value)
    if view.kind != "sum":
        t = _zero_if(_winner(view, view.value, op.results[0]), t)
    F.set_tangent(op.results[0], dg.reduce(_scope(view), "sum", t))


# -- scan -----------------------------------------------------------------------
def _scan_reverse(R, op):
    view = dg.opview(op)
    d = R.get_adj(op.results[0])
    if d is not None and R.is_active(view.value):
        R.add_adj(view.value, dg.block_scan(d, reverse=not view.reverse))


def _scan_tangent(F, op):
    view = dg.opview(op)
    F.set_tangent(op.results[0], dg.block_scan(F.tangent(view.value), reverse=view.reverse))


# -- shuffles -------------------------------------------------------------------------
def _shuffle_reverse(R, op):
    view = dg.opview(op)
    d = R.get_adj(op.results[0])
    if d is None or not R.is_active(view.value):
        return
    mode = view.mode
    if mode == "xor":
        R.add_adj(view.value, dg.shuffle("xor", d, R.need(view.lane)))
        return
    if mode == "idx":
        R.add_adj(view.value, _idx_transpose(d, R.need(view.lane), C.constant_lane(view)))
        return
    k = C.constant_lane(view)
    lane, lin, n = _lane_ids()
    kk = C.idx(k)
    # lanes that read their own value in the forward (source out of range/absent)
    if mode == "down":
        own = arith.ori(C.cmp("uge", arith.addi(lane, kk), C.idx(WARP)),
                        C.cmp("uge", arith.addi(lin, kk), n))
        moved = _zero_if(C.cmp("uge", lane, kk), dg.shuffle("up", d, C.i32(k)))
    else:
        own = C.cmp("ult", lane, kk)
        ok = arith.andi(C.cmp("ult", arith.addi(lane, kk), C.idx(WARP)),
                        C.cmp("ult", arith.addi(lin, kk), n))
        moved = _zero_if(ok, dg.shuffle("down", d, C.i32(k)))
    R.add_adj(view.value, (B.V(moved) + _zero_if(own, d)).v)


def _idx_transpose(d, src, const):
    """adj(v) of lane j = sum of d over the lanes i whose shfl_idx read j."""
    lane, lin, n = _lane_ids()
    base = arith.subi(lin, lane)
    if const is not None:
        c = const & (WARP - 1)
        present = C.cmp("ult", arith.addi(base, C.idx(c)), n)
        total = dg.reduce("warp", "sum", d)
        return arith.select(present, _zero_if(C.cmp("eq", lane, C.idx(c)), total), d)
    index = ir.IndexType.get()
    i32 = ir.IntegerType.get_signless(32)
    loop = scf.ForOp(C.idx(0), C.idx(WARP), C.idx(1), [B.zero(d.type)])
    with ir.InsertionPoint(loop.body):
        k = loop.induction_variable
        acc = loop.inner_iter_args[0]
        k32 = arith.index_cast(i32, k)
        dk = dg.shuffle("idx", d, k32)
        sk = arith.andi(arith.index_cast(index, dg.shuffle("idx", src, k32)), C.idx(WARP - 1))
        read = arith.select(C.cmp("ult", arith.addi(base, sk), n), sk, k)  # absent: itself
        hit = arith.andi(C.cmp("eq", read, lane), C.cmp("ult", arith.addi(base, k), n))
        scf.YieldOp([(B.V(acc) + _zero_if(hit, dk)).v])
    return loop.results[0]


def _shuffle_tangent(F, op):
    view = dg.opview(op)
    F.set_tangent(op.results[0], dg.shuffle(view.mode, F.tangent(view.value), view.lane))


# -- atomic max / min ------------------------------------------------------------------
#: why dg.atomic_max/min have no derivative inside a launch (docs/collectives.md)
RMW_WHY = ("which contribution won is known only once every thread of the grid has "
           "done its atomic, so a derivative in the launch of the forward (dg.autodiff / "
           "dg.fwddiff, in a kernel or on the host; a thread of another block may come "
           "later) cannot tell; dg.vjp / dg.jvp / dg.Tape differentiate it in a launch "
           "after the forward (the gradient goes to the value that won) when the array "
           "is updated only by dg.atomic_max, or only by dg.atomic_min, in the kernel's "
           "own body (not loaded, stored, added to or passed to a function); or compute "
           "the maximum with dg.block_max / dg.warp_max")
#: attribute of a generated derivative function: the positions of its "rmw"
#: arguments (array<i64>), whose primal holds the launch's final values
FINAL_ATTR = "diffgpu.rmw_final"


def _rmw_activity(A, op):
    return A.is_dup(op.operands[0]) and A.mark(op.results[0])


def _final_arg(op):
    """Whether the memref of atomic_rmw `op` is an "rmw" argument of the
    generated function holding it (its primal: the final values)."""
    from diffgpu._mlir import ir as _ir

    m = dg.opview(op).memref
    if not isinstance(m, _ir.BlockArgument):
        try:
            m = _ir.BlockArgument(m)
        except (ValueError, TypeError):
            return False
    fn = op.operation.parent
    while fn is not None and fn.name != "func.func":
        fn = fn.parent
    if fn is None or FINAL_ATTR not in fn.attributes:
        return False
    if m.owner != fn.regions[0].blocks[0]:
        return False
    return m.arg_number in list(_ir.DenseI64ArrayAttr(fn.attributes[FINAL_ATTR]))


def _rmw_needs(R, op):
    view = dg.opview(op)
    shadowed = R.is_dup(view.memref)
    if not (R.is_active(view.value) or shadowed):  # shadowed: a constant may win too
        return False
    if shadowed and len(list(op.results[0].uses)):
        R.error(op, f"the old value returned by dg.atomic_{view.kind} ({N.ATOMIC_RMW}) is "
                    "used: its derivative is not supported (use the atomic as a statement)")
        return False
    if not shadowed or view.kind not in ("max", "min") or not _final_arg(op):
        R.error(op, f"dg.atomic_{view.kind} ({N.ATOMIC_RMW}) of an active value or into a "
                    f"shadowed array has no derivative here: {RMW_WHY}")
        return False
    return True


def _won(view, final, value, idx):
    """i1: this contribution equals the final value (NaN where the
    original value won: no contribution equals it)."""
    from diffgpu._mlir import memref

    return B.cmpf("oeq", value, memref.load(final, idx))


def _rmw_reverse(R, op):
    view = dg.opview(op)
    idx = [R.need(i) for i in view.indices]
    v = R.need(view.value)
    won = _won(view, R.need(view.memref), v, idx)
    t = v.type
    branch = scf.IfOp(won, [t], has_else=True)
    with ir.InsertionPoint(branch.then_block):
        scf.YieldOp([dg.atomic_rmw("exch", R.shadow(view.memref), B.zero(t), idx)])
    with ir.InsertionPoint(branch.else_block):
        scf.YieldOp([B.zero(t)])
    if R.is_active(view.value):
        R.add_adj(view.value, branch.results[0])
    op.erase()  # F stays F (max(F, v) = F): the array is only read here


def _rmw_tangent(F, op):
    """The host leaves NaN in the tangent where a contribution wins (rmw.py):
    the first to exchange finds it and keeps its tangent there; a later one
    finds a number and puts it back."""
    view = dg.opview(op)
    idx = [F.val(i) for i in view.indices]
    won = _won(view, F.val(view.memref), F.val(view.value), idx)
    branch = scf.IfOp(won, [], has_else=False)
    with ir.InsertionPoint(branch.then_block):
        sh = F.shadow(view.memref)
        old = dg.atomic_rmw("exch", sh, F.tangent(view.value), idx)
        taken = scf.IfOp(B.cmpf("ord", old, old), [], has_else=False)
        with ir.InsertionPoint(taken.then_block):
            dg.atomic_rmw("exch", sh, old, idx)
            scf.YieldOp([])
        scf.YieldOp([])
    op.erase()  # F stays F (max(F, v) = F): the array is only read here


REVERSE = {
    N.WARP_REDUCE: Rule(_needs, _reduce_reverse, _reduce_tangent),
    N.BLOCK_REDUCE: Rule(_needs, _reduce_reverse, _reduce_tangent),
    N.BLOCK_SCAN: Rule(_needs, _scan_reverse, _scan_tangent),
    N.SHUFFLE: Rule(_needs, _shuffle_reverse, _shuffle_tangent),
    N.ATOMIC_RMW: Rule(_rmw_needs, _rmw_reverse, _rmw_tangent, _rmw_activity),
}

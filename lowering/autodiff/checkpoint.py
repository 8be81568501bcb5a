"""Checkpoints: the reverse of a runtime-length recurrence in bounded memory.

The reverse of a loop needs, at each trip, the forward values of that trip.
remat.py recomputes those that follow from loop-invariant values and the
induction variable; a recurrence `for t in range(n): s = f(s, x[t])` also
needs its carried value s at every trip, and on the tape that is n words:
local memory, then device `malloc`, in proportion to a trip count known only
at run time. Here the carried values are kept instead at C = CHECKPOINTS
evenly spaced trips, in a fixed local array, and the reverse rebuilds the
others by running the loop's body again from the nearest checkpoint:

    forward:  K = max(1, ceildiv(tc, C))                  // trips per segment
              trip t: if t % K == 0 { cp[t / K] = s }      // C slots per value
    reverse:  for k in 0 .. tc: t = tc - 1 - k; seg = t / K; u = t % K
                if first reversed trip of seg:            // once per segment
                  replay seg from cp[seg], keeping s every L trips in buf
                s_t = replay from buf[u / L] for u % L trips
                reverse of the body at trip t, with s = s_t

with L = max(1, ceildiv(K, B)) and B = BUFFER slots: up to C * B trips
(4,096) every trip is replayed once more (L = 1: s_t = buf[u]), about one
more evaluation of the body per trip, as usual for checkpoints; beyond that
a trip replays fewer than L trips of its sub-segment. The memory is
(C + B) words per carried value whatever the trip count: two `memref.alloca`
of constant size, no tape, no heap.

A loop is checkpointed when the reverse needs a carried value (one feeds an
op whose partial reads it, e.g. `sin(s)` or `s * w`), recomputation is on
(DIFFGPU_REMAT; DIFFGPU_CHECKPOINTS=0 turns checkpoints alone off), the
function is not split (no augmented-forward pair), the loop is an `scf.for`
in no other loop, its carried values are floats, integers or indices (no
i1), and every op of its body can be evaluated again: no nested regions,
no calls, no barriers, no tape words, and loads only from read-only arrays
(remat.py); stores and atomic adds whose result is unused are skipped by
the replays. Every other loop keeps its tape.
"""
from __future__ import annotations

from diffgpu import switches
from diffgpu._mlir import arith, ir, memref, scf
from diffgpu.dialects import names as N

from diffgpu.lowering.autodiff import build as B
from diffgpu.lowering.autodiff.remat import FREE, FLOAT_OPS, INT_OPS, LOOP_OPS, enabled
from diffgpu.lowering.autodiff.tape import at_begin, tag_of

CHECKPOINTS = 64
BUFFER = 64
#: ops of a body the replays skip (no results; their reverse needs no value of theirs)
_EFFECTS = ("memref.store", N.ATOMIC_ADD)
#: ops whose partials are constants: a carried value used only by them is not needed
_LINEAR = ("arith.addf", "arith.subf", "arith.negf", "arith.extf", "arith.truncf",
           "scf.yield")


def _pure(op, readonly) -> bool:
    name = op.name
    if tag_of(op) is not None or len(op.regions):
        return False
    if name in _EFFECTS:
        return all(not len(list(r.uses)) for r in op.results)
    if name == "memref.load":
        return op.operands[0] in readonly
    if name == "memref.dim":
        return True
    return name in INT_OPS or name in FLOAT_OPS or name in LOOP_OPS or name in FREE or \
        name == "arith.select"


def _needs_carried(body) -> bool:
    """Some carried value feeds an op whose partials read forward values."""
    return any(use.owner.name not in _LINEAR
               for a in list(body.arguments)[1:] for use in a.uses)


def applies(R, op) -> bool:
    """Whether the reverse of scf.for `op` uses checkpoints (module docstring)."""
    if not (enabled() and switches.on(switches.CHECKPOINTS)) or R.split or \
            R.remat.in_loop(op.operation.block):
        return False
    body = op.regions[0].blocks[0]
    iargs = list(body.arguments)[1:]
    if not iargs or not _needs_carried(body):
        return False
    for a in iargs:
        t = a.type
        if not (B.is_float(t) or B.is_index(t) or
                (B.is_int(t) and ir.IntegerType(t).width >= 8)):
            return False
    readonly = R.remat.readonly
    return all(_pure(o.operation, readonly) for o in list(body.operations)[:-1])


def _replay(R, body, ivs, start, count, state, keep=None):
    """Run the body's ops (stores skipped) `count` times from carried values
    `state`, trip `start + q` at step q; `keep(q, values)` is called before
    each step; returns the carried values after the last step."""
    t = start.type
    loop = scf.ForOp(B.zero(t), count, B.const(t, 1), state)
    with ir.InsertionPoint(loop.body):
        q = loop.induction_variable
        cur = list(loop.inner_iter_args)
        if keep is not None:
            keep(q, cur)
        mapping = {body.arguments[0]: ivs(arith.addi(start, q))}
        mapping.update(zip(list(body.arguments)[1:], cur))
        ops = list(body.operations)
        for o in ops[:-1]:
            if o.operation.name in _EFFECTS or o.operation in R.added:
                continue
            operands = [mapping[u] if u in mapping else R.need(u)
                        for u in o.operation.operands]
            copy = o.operation.clone()
            for k, u in enumerate(operands):
                copy.operands[k] = u
            for r, nr in zip(o.operation.results, copy.results):
                mapping[r] = nr
        scf.YieldOp([mapping.get(u, u) for u in ops[-1].operands])
    return list(loop.results)


def reverse(R, op):
    """The checkpointed reverse of scf.for `op` (module docstring)."""
    body = op.regions[0].blocks[0]
    iv, iargs = body.arguments[0], list(body.arguments)[1:]
    inits = list(op.operands)[3:]
    yld = list(body.operations)[-1]
    t = op.operands[0].type

    def c(value):  # a constant of the induction variable's type
        return B.const(t, value)
    # -- forward: K and the checkpoints ---------------------------------------
    with at_begin(R.tape.fwd_entry), op.location:
        cps = [memref.alloca(ir.MemRefType.get([CHECKPOINTS], a.type), [], []) for a in iargs]
    with ir.InsertionPoint(op), op.location:
        tc_f = B.trip_count(*op.operands[:3])
        k_f = arith.maxsi(arith.ceildivsi(tc_f, c(CHECKPOINTS)), c(1))
    first_op = list(body.operations)[0]
    with ir.InsertionPoint(first_op), op.location:
        trip = arith.divsi(arith.subi(iv, op.operands[0]), op.operands[2])
        at = arith.cmpi(arith.CmpIPredicate.eq, arith.remsi(trip, k_f), c(0))
        keep = scf.IfOp(at)
        with ir.InsertionPoint(keep.then_block):
            slot = _index(arith.divsi(trip, k_f))
            for cp, a in zip(cps, iargs):
                memref.store(a, cp, [slot])
            scf.YieldOp([])
    for o in body.operations:  # not differentiated, not replayed
        if o == first_op:
            break
        R.added.add(o.operation)
    # -- reverse ---------------------------------------------------------------
    lb, step = R.need(op.operands[0]), R.need(op.operands[2])
    tc, K = R.need(tc_f), R.need(k_f)
    L = arith.maxsi(arith.ceildivsi(K, c(BUFFER)), c(1))
    bufs = [memref.alloca(ir.MemRefType.get([BUFFER], a.type), [], []) for a in iargs]
    act = [k for k in range(len(iargs)) if R.is_active(iargs[k])]
    carry0 = [R.adj_or_zero(op.results[k]) for k in act]

    def ivs(trip):  # the induction variable of a trip
        return arith.addi(lb, arith.muli(trip, step))

    loop = scf.ForOp(c(0), tc, c(1), carry0)
    with ir.InsertionPoint(loop.body):
        k_iv = loop.induction_variable
        carries = list(loop.inner_iter_args)
        tr = arith.subi(arith.subi(tc, c(1)), k_iv)
        seg, u = arith.divsi(tr, K), arith.remsi(tr, K)
        start = arith.muli(seg, K)
        last = arith.subi(arith.minsi(arith.addi(start, K), tc), c(1))
        first = arith.cmpi(arith.CmpIPredicate.eq, tr, last)
        fill = scf.IfOp(first)
        with ir.InsertionPoint(fill.then_block):
            seg_i = _index(seg)
            state = [memref.load(cp, [seg_i]) for cp in cps]

            def store_every_l(q, cur):
                at_l = arith.cmpi(arith.CmpIPredicate.eq, arith.remsi(q, L), c(0))
                put = scf.IfOp(at_l)
                with ir.InsertionPoint(put.then_block):
                    i = _index(arith.divsi(q, L))
                    for b, v in zip(bufs, cur):
                        memref.store(v, b, [i])
                    scf.YieldOp([])

            # trips start .. last of the segment: the state before each is kept
            end = _replay(R, body, ivs, start, arith.subi(last, start), state, store_every_l)
            n_last = arith.subi(last, start)
            store_every_l(n_last, end)
            scf.YieldOp([])
        sub = arith.divsi(u, L)
        sub_i = _index(sub)
        from_buf = [memref.load(b, [sub_i]) for b in bufs]
        s_t = _replay(R, body, ivs, arith.addi(start, arith.muli(sub, L)),
                      arith.remsi(u, L), from_buf)
        R.remat.force.add(body)

        def seed():
            R.recompute(iv, lambda: ivs(tr))
            for a, v in zip(iargs, s_t):
                R.recompute(a, lambda v=v: v)
            for j, k in enumerate(act):
                R.add_adj(yld.operands[k], carries[j])

        def finish():
            scf.YieldOp([R.adj_or_zero(iargs[k]) for k in act])

        R.sweep(body, in_loop=True, seed=seed, finish=finish)
    for j, k in enumerate(act):
        R.add_adj(inits[k], loop.results[j])


def _index(v):
    return v if B.is_index(v.type) else arith.index_cast(B.index_type(), v)

"""Derivative rules of the `scf` dialect: reverse regions built by the same
sweep, recursively.

    %r = scf.if %c -> f32 {.. yield %a} else {.. yield %b}
      reverse: scf.if %c { adj(a) += adj(r); reverse(then) } else { ... }
    %r = scf.for %i = %lb to %ub step %s iter_args(%x = %x0) {.. yield %y}
      reverse: scf.for %k = 0 to tripcount iter_args(%dx = adj(r)) {
                 %i = lb + (tc - 1 - k) * s; adj(y) += dx; reverse(body);
                 yield adj(x) }; adj(x0) += result
      (a recurrence whose body can be evaluated again: checkpoints of the
      carried values instead of the tape, checkpoint.py)
    scf.while: the forward sweep counts the iterations N of the `after`
      region; the reverse runs N + 1 steps backwards: step 0 reverses the
      final `before`, step j > 0 reverses `after` then `before`; a counter
      (init, + step per iteration: remat.while_counters) is rebuilt there as
      init + (N - j) * step, like a for loop's induction variable.
    %r = scf.execute_region -> f32 {.. yield %a}
      reverse: scf.execute_region { adj(a) += adj(r); reverse(body) }
    %r = scf.index_switch %k -> f32 case 1 {.. yield %a} default {.. yield %b}
      reverse: scf.index_switch %k case 1 { adj(a) += adj(r); reverse(case) }
               default { adj(b) += adj(r); reverse(default) }
Forward mode: the tangents of results and loop-carried values travel through
one-value slots (memref<T> allocas), so the ops keep their signature. Any
other op with regions that holds active code has no rule: an error.
"""
from __future__ import annotations

from diffgpu._mlir import arith, ir, memref, scf

from diffgpu.lowering.autodiff import build as B
from diffgpu.lowering.autodiff import checkpoint
from diffgpu.lowering.autodiff.rules.partials import Rule
from diffgpu.lowering.autodiff.remat import while_counters


# -- activity: results and loop-carried values, to a fixed point (activity.py) --
def _for_activity(A, op):
    body = op.regions[0].blocks[0]
    yld = body.operations[-1]
    ch = False
    for k, res in enumerate(op.results):
        if A.is_active(op.operands[3 + k]) or A.is_active(yld.operands[k]):
            ch |= A.mark(res)
            ch |= A.mark(body.arguments[1 + k])
    return ch


def _one_region_activity(A, op):
    """scf.if, scf.execute_region, scf.index_switch: a result is active when
    a region yields an active value for it."""
    ch = False
    for region in op.regions:
        for b in region.blocks:
            yld = b.operations[-1]
            if yld.operation.name != "scf.yield":
                continue  # a cf branch: reported by the rule
            for k, res in enumerate(op.results):
                if A.is_active(yld.operands[k]):
                    ch |= A.mark(res)
    return ch


def _while_activity(A, op):
    before = op.regions[0].blocks[0]
    after = op.regions[1].blocks[0]
    cond, yld = before.operations[-1], after.operations[-1]
    ch = False
    for k, a in enumerate(before.arguments):
        if A.is_active(op.operands[k]) or A.is_active(yld.operands[k]):
            ch |= A.mark(a)
    for j, res in enumerate(op.results):
        if A.is_active(cond.operands[1 + j]):
            ch |= A.mark(res)
            ch |= A.mark(after.arguments[j])
    return ch


def _region_needs(R, op):
    if any(R.is_active(r) for r in op.results):
        return True
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                if R.needs(inner):
                    return True
    return False


# -- scf.if -----------------------------------------------------------------
def _if_reverse(R, op):
    cond = R.need(op.operands[0])
    dres = [R.get_adj(r) for r in op.results]
    has_else = len(op.regions[1].blocks) > 0
    rev = scf.IfOp(cond, [], has_else=has_else)
    blocks = [rev.then_block] + ([rev.else_block] if has_else else [])
    for region, rblock in zip(op.regions, blocks):
        fwd = region.blocks[0]
        yld = list(fwd.operations)[-1]

        def seed(yld=yld):
            for k, d in enumerate(dres):
                if d is not None:
                    R.add_adj(yld.operands[k], d)

        with ir.InsertionPoint(rblock):
            R.sweep(fwd, seed=seed, finish=lambda: scf.YieldOp([]))


# -- scf.for ----------------------------------------------------------------
def _for_reverse(R, op):
    if checkpoint.applies(R, op):
        return checkpoint.reverse(R, op)
    lb, ub, step = (R.need(op.operands[i]) for i in range(3))
    body = op.regions[0].blocks[0]
    iv, iargs = body.arguments[0], list(body.arguments)[1:]
    inits = list(op.operands)[3:]
    yld = list(body.operations)[-1]
    act = [k for k in range(len(iargs)) if R.is_active(iargs[k])]
    carry0 = [R.adj_or_zero(op.results[k]) for k in act]
    tc = B.trip_count(lb, ub, step)
    zero, one = B.zero(lb.type), B.const(lb.type, 1)
    loop = scf.ForOp(zero, tc, one, carry0)
    k_iv = loop.induction_variable
    carries = list(loop.inner_iter_args)

    def seed():
        def forward_iv():  # i = lb + (tc - 1 - k) * step
            back = arith.subi(arith.subi(tc, one), k_iv)
            return arith.addi(lb, arith.muli(back, step))
        R.recompute(iv, forward_iv)
        for j, k in enumerate(act):
            R.add_adj(yld.operands[k], carries[j])

    def finish():
        scf.YieldOp([R.adj_or_zero(iargs[k]) for k in act])

    with ir.InsertionPoint(loop.body):
        R.sweep(body, in_loop=True, seed=seed, finish=finish)
    for j, k in enumerate(act):
        R.add_adj(inits[k], loop.results[j])


# -- scf.while --------------------------------------------------------------
def _while_reverse(R, op):
    before, after = op.regions[0].blocks[0], op.regions[1].blocks[0]
    cond = list(before.operations)[-1]
    yld = list(after.operations)[-1]
    # forward: count the executions of `after`
    idx_t = B.index_type()
    slot = R.forward_slot(idx_t)
    with ir.InsertionPoint(op), op.location:
        memref.store(B.idx(0), slot, [])
    with ir.InsertionPoint(list(after.operations)[0]), op.location:
        memref.store(arith.addi(memref.load(slot, []), B.idx(1)), slot, [])
    with ir.InsertionPoint.after(op), op.location:
        count = memref.load(slot, [])
    n = R.need(count)

    counters = while_counters(op)
    act_b = [k for k, a in enumerate(before.arguments) if R.is_active(a)]
    act_c = [j for j, a in enumerate(after.arguments) if R.is_active(a)]
    dres = [R.adj_or_zero(op.results[j]) for j in act_c]
    carry0 = [B.zero(before.arguments[k].type) for k in act_b]
    loop = scf.ForOp(B.idx(0), arith.addi(n, B.idx(1)), B.idx(1), carry0)
    j_iv = loop.induction_variable
    carries = list(loop.inner_iter_args)

    def counter(k, step, t):  # init + (N - j) * step: the t-th execution's value
        def make():
            back = arith.subi(n, j_iv)
            if not B.is_index(t):
                back = arith.index_cast(t, back)
            return arith.addi(R.need(op.operands[k]), arith.muli(back, B.const(t, step)))
        return make

    def rebuild(args, which):
        for k, cs, step in counters:
            for a in ([args[k]] if which == "before" else [args[c] for c in cs]):
                R.recompute(a, counter(k, step, a.type))

    with ir.InsertionPoint(loop.body):
        first = arith.cmpi(arith.CmpIPredicate.eq, j_iv, B.idx(0))
        step = scf.IfOp(first, [after.arguments[j].type for j in act_c], has_else=True)
        with ir.InsertionPoint(step.then_block):
            scf.YieldOp(dres)

        def seed_after():
            rebuild(after.arguments, "after")
            for i, k in enumerate(act_b):
                R.add_adj(yld.operands[k], carries[i])

        with ir.InsertionPoint(step.else_block):
            R.sweep(after, in_loop=True, seed=seed_after,
                    finish=lambda: scf.YieldOp([R.adj_or_zero(after.arguments[j]) for j in act_c]))
        dcond = list(step.results)

        def seed_before():
            rebuild(before.arguments, "before")
            for i, j in enumerate(act_c):
                R.add_adj(cond.operands[1 + j], dcond[i])

        R.sweep(before, in_loop=True, seed=seed_before,
                finish=lambda: scf.YieldOp([R.adj_or_zero(before.arguments[k]) for k in act_b]))
    for i, k in enumerate(act_b):
        R.add_adj(op.operands[k], loop.results[i])


# -- scf.execute_region / scf.index_switch: one region runs, once -----------
def _one_region_needs(R, op):
    for region in op.regions:
        if len(region.blocks) != 1:
            R.error(op, f"no derivative rule for '{op.operation.name}' with "
                        f"{len(region.blocks)} blocks (unstructured control flow)")
            return False
    return _region_needs(R, op)


def _reverse_regions(R, op, pairs):
    """Reverse each forward region of `op` into its block of `pairs`."""
    dres = [R.get_adj(r) for r in op.results]
    for fwd, rblock in pairs:
        yld = list(fwd.operations)[-1]

        def seed(yld=yld):
            for k, d in enumerate(dres):
                if d is not None:
                    R.add_adj(yld.operands[k], d)

        with ir.InsertionPoint(rblock):
            R.sweep(fwd, seed=seed, finish=lambda: scf.YieldOp([]))


def _execute_region_reverse(R, op):
    rev = scf.ExecuteRegionOp([])
    rblock = rev.regions[0].blocks.append()
    _reverse_regions(R, op, [(op.regions[0].blocks[0], rblock)])


def _index_switch_reverse(R, op):
    cases = list(ir.DenseI64ArrayAttr(op.attributes["cases"]))
    rev = scf.IndexSwitchOp([], R.need(op.operands[0]), cases)
    fwd = [region.blocks[0] for region in op.regions]  # default, then the cases
    _reverse_regions(R, op, list(zip(fwd, [rev.default_block] +
                                     [rev.case_block(i) for i in range(len(cases))])))


# -- forward mode: tangents of results and loop-carried values through slots --
def _store_slots(F, slots, values):
    for s, v in zip(slots, values):
        memref.store(F.tangent(v), s, [])


def _load_slots(F, slots, targets):
    for s, v in zip(slots, targets):
        F.set_tangent(v, memref.load(s, []))


def _if_tangent(F, op):
    """Also scf.execute_region and scf.index_switch: one region runs."""
    act = [k for k, r in enumerate(op.results) if F.is_active(r)]
    slots = [F.slot(op.results[k].type) for k in act]
    for region in op.regions:
        for block in region.blocks:
            F.run_block(block)
            yld = list(block.operations)[-1]
            with ir.InsertionPoint(yld):
                _store_slots(F, slots, [yld.operands[k] for k in act])
    with ir.InsertionPoint.after(op):
        _load_slots(F, slots, [op.results[k] for k in act])


def _for_tangent(F, op):
    body = op.regions[0].blocks[0]
    iargs, inits = list(body.arguments)[1:], list(op.operands)[3:]
    act = [k for k, a in enumerate(iargs) if F.is_active(a)]
    slots = [F.slot(iargs[k].type) for k in act]
    with ir.InsertionPoint(op):
        _store_slots(F, slots, [inits[k] for k in act])
    with ir.InsertionPoint(list(body.operations)[0]):
        _load_slots(F, slots, [iargs[k] for k in act])
    F.run_block(body)
    yld = list(body.operations)[-1]
    with ir.InsertionPoint(yld):
        _store_slots(F, slots, [yld.operands[k] for k in act])
    with ir.InsertionPoint.after(op):
        _load_slots(F, slots, [op.results[k] for k in act])


def _while_tangent(F, op):
    before, after = op.regions[0].blocks[0], op.regions[1].blocks[0]
    cond, yld = list(before.operations)[-1], list(after.operations)[-1]
    act_b = [k for k, a in enumerate(before.arguments) if F.is_active(a)]
    act_c = [j for j, a in enumerate(after.arguments) if F.is_active(a)]
    sb = [F.slot(before.arguments[k].type) for k in act_b]
    sc = [F.slot(after.arguments[j].type) for j in act_c]
    with ir.InsertionPoint(op):
        _store_slots(F, sb, [op.operands[k] for k in act_b])
    with ir.InsertionPoint(list(before.operations)[0]):
        _load_slots(F, sb, [before.arguments[k] for k in act_b])
    F.run_block(before)
    with ir.InsertionPoint(cond):
        _store_slots(F, sc, [cond.operands[1 + j] for j in act_c])
    with ir.InsertionPoint(list(after.operations)[0]):
        _load_slots(F, sc, [after.arguments[j] for j in act_c])
    F.run_block(after)
    with ir.InsertionPoint(yld):
        _store_slots(F, sb, [yld.operands[k] for k in act_b])
    with ir.InsertionPoint.after(op):
        _load_slots(F, sc, [op.results[j] for j in act_c])


REVERSE = {
    # one region runs, as for scf.if: results through slots
    "scf.execute_region": Rule(_one_region_needs, _execute_region_reverse, _if_tangent,
                               _one_region_activity),
    "scf.index_switch": Rule(_one_region_needs, _index_switch_reverse, _if_tangent,
                             _one_region_activity),
    "scf.if": Rule(_region_needs, _if_reverse, _if_tangent, _one_region_activity),
    "scf.for": Rule(_region_needs, _for_reverse, _for_tangent, _for_activity),
    "scf.while": Rule(_region_needs, _while_reverse, _while_tangent, _while_activity),
}

"""Block-level control flow of the host barrier lowering (host/barrier.py).

`scf.if`, `scf.for` and `scf.while` ops that contain barriers run once per
block, around the phases of their regions, with a per-thread mask slot of
the threads active in them (i1 kept as i8):

    scf.if %c { A; barrier; B }
  becomes, per block,
    <phase: each thread stores %c>            // into the mask slot
    %any = <or over the block's threads of the mask>
    scf.if %any { <A for the masked threads> ; <B for the masked threads> }

Loops become a block-level `scf.while` that runs while any thread is still
in its loop; counters, bounds, steps and carried values are slots too.
"""
from __future__ import annotations


class ControlFlowMixin:
    """Methods of BarrierLowering that emit block-level code in the entry."""
    def lin_loop(self, ip):
        """`scf.for %lin = 0 to nthreads` at ip; returns (inner ip, %lin)."""
        from diffgpu._mlir import ir, scf

        c = self.ctx
        loop = scf.ForOp(c.zero, c.nthreads, c.one, loc=c.loc, ip=ip)
        scf.YieldOp([], loc=c.loc, ip=ir.InsertionPoint(loop.body))
        return ir.InsertionPoint.at_block_terminator(loop.body), loop.induction_variable

    def make_mask(self, ip, parent, src, negate=False):
        """New mask slot: parent[t] & (src[t] xor negate) (parent None: all)."""
        from diffgpu._mlir import arith

        c = self.ctx
        dst = self.new_slot(self.i1)
        lip, lin = self.lin_loop(ip)
        v = self.load_e(src, lin, lip) if src is not None else \
            arith.ConstantOp(self.i1, 1, loc=c.loc, ip=lip).result
        if negate:
            true = arith.ConstantOp(self.i1, 1, loc=c.loc, ip=lip).result
            v = arith.XOrIOp(v, true, loc=c.loc, ip=lip).result
        if parent is not None:
            v = arith.AndIOp(v, self.load_e(parent, lin, lip), loc=c.loc, ip=lip).result
        self.store_e(v, dst, lin, lip)
        return dst

    def any_active(self, mask, ip):
        """i1: does any thread have its mask set?"""
        from diffgpu._mlir import arith, ir, scf

        c = self.ctx
        false = arith.ConstantOp(self.i1, 0, loc=c.loc, ip=ip).result
        loop = scf.ForOp(c.zero, c.nthreads, c.one, [false], loc=c.loc, ip=ip)
        lip = ir.InsertionPoint(loop.body)
        acc = loop.inner_iter_args[0]
        m = self.load_e(mask, loop.induction_variable, lip)
        scf.YieldOp([arith.OrIOp(acc, m, loc=c.loc, ip=lip).result], loc=c.loc, ip=lip)
        return loop.results[0]

    def arrivals(self, mask, ip):
        """(threads with their mask set, the first without (else nthreads),
        nthreads) as index values: who reaches a barrier (race check)."""
        from diffgpu._mlir import arith, ir, scf

        c = self.ctx
        loop = scf.ForOp(c.zero, c.nthreads, c.one, [c.zero, c.nthreads], loc=c.loc, ip=ip)
        lip = ir.InsertionPoint(loop.body)
        lin, (n, first) = loop.induction_variable, loop.inner_iter_args
        m = self.load_e(mask, lin, lip)
        step = arith.SelectOp(m, c.one, c.zero, loc=c.loc, ip=lip).result
        cand = arith.SelectOp(m, c.nthreads, lin, loc=c.loc, ip=lip).result
        scf.YieldOp([arith.AddIOp(n, step, loc=c.loc, ip=lip).result,
                     arith.MinUIOp(first, cand, loc=c.loc, ip=lip).result], loc=c.loc, ip=lip)
        return loop.results[0], loop.results[1], c.nthreads

    def lower_if(self, op, ip, mask, operand_slots) -> None:
        from diffgpu._mlir import ir, scf

        c = self.ctx
        cond = operand_slots[0]
        res_slots = [self.new_slot(r.type, r, op) for r in op.results]
        for r_i, region in enumerate(op.regions):
            if not region.blocks or (r_i == 1 and len(region.blocks[0].operations) <= 1
                                     and not res_slots):
                continue
            m = cond if mask is None and r_i == 0 else \
                self.make_mask(ip, mask, cond, negate=(r_i == 1))
            branch = scf.IfOp(self.any_active(m, ip), loc=op.location, ip=ip)
            bip = ir.InsertionPoint(branch.then_block)
            scf.YieldOp([], loc=c.loc, ip=bip)
            bip = ir.InsertionPoint.at_block_terminator(branch.then_block)
            self.lower_block(region.blocks[0], bip, m,
                             lambda t: list(zip(t.operands, res_slots)))

    def lower_for(self, op, ip, mask, operand_slots) -> None:
        from diffgpu._mlir import arith, ir

        c = self.ctx
        body = op.regions[0].blocks[0]
        iv = body.arguments[0]
        iv_slot, ub_slot, step_slot, *carried = operand_slots  # lb is the first iv
        self.slots[iv] = iv_slot
        for arg, res, slot in zip(list(body.arguments)[1:], op.results, carried):
            self.slots[arg] = slot
            self.slots[res] = slot
        unsigned = "unsignedCmp" in op.attributes
        loop_mask = [None]

        def before(bip):
            lm = self.new_slot(self.i1)
            lip, lin = self.lin_loop(bip)
            i = self.load_e(iv_slot, lin, lip)
            u = self.load_e(ub_slot, lin, lip)
            pred = arith.CmpIPredicate.ult if unsigned else arith.CmpIPredicate.slt
            v = arith.CmpIOp(pred, i, u, loc=c.loc, ip=lip).result
            if mask is not None:
                v = arith.AndIOp(v, self.load_e(mask, lin, lip), loc=c.loc, ip=lip).result
            self.store_e(v, lm, lin, lip)
            loop_mask[0] = lm
            return self.any_active(lm, bip)

        def after(aip):
            lm = loop_mask[0]
            self.lower_block(body, aip, lm, lambda t: list(zip(t.operands, carried)))
            lip, lin = self.lin_loop(aip)  # iv += step for the active threads
            active = self.load_e(lm, lin, lip)
            from diffgpu._mlir import scf
            guard = scf.IfOp(active, loc=c.loc, ip=lip)
            gip = ir.InsertionPoint(guard.then_block)
            nxt = arith.AddIOp(self.load_e(iv_slot, lin, gip), self.load_e(step_slot, lin, gip),
                               loc=c.loc, ip=gip).result
            self.store_e(nxt, iv_slot, lin, gip)
            scf.YieldOp([], loc=c.loc, ip=gip)

        self.block_while(op, ip, before, after)

    def lower_while(self, op, ip, mask, operand_slots) -> None:
        from diffgpu._mlir import arith

        c = self.ctx
        before_b, after_b = op.regions[0].blocks[0], op.regions[1].blocks[0]
        b_slots = operand_slots
        for arg, slot in zip(before_b.arguments, b_slots):
            self.slots[arg] = slot
        a_slots = [self.new_slot(a.type, a, op) for a in after_b.arguments]
        for res, slot in zip(op.results, a_slots):
            self.slots[res] = slot
        lm = self.make_mask(ip, mask, None)  # threads still in the loop
        cond = self.new_slot(self.i1)

        def before(bip):
            self.lower_block(before_b, bip, lm, lambda t: list(zip(
                list(t.operands), [cond] + a_slots)))
            lip, lin = self.lin_loop(bip)
            v = arith.AndIOp(self.load_e(lm, lin, lip), self.load_e(cond, lin, lip),
                             loc=c.loc, ip=lip).result
            self.store_e(v, lm, lin, lip)
            return self.any_active(lm, bip)

        def after(aip):
            self.lower_block(after_b, aip, lm, lambda t: list(zip(t.operands, b_slots)))

        self.block_while(op, ip, before, after)

    def block_while(self, op, ip, before, after) -> None:
        """A block-level `scf.while` with no carried values."""
        from diffgpu._mlir import ir, scf

        w = scf.WhileOp([], [], loc=op.location, ip=ip)
        bblock = w.regions[0].blocks.append()
        ablock = w.regions[1].blocks.append()
        bip = ir.InsertionPoint(bblock)
        go = before(bip)
        scf.ConditionOp(go, [], loc=op.location, ip=bip)
        aip = ir.InsertionPoint(ablock)
        after(aip)
        scf.YieldOp([], loc=op.location, ip=aip)

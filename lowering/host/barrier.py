"""Barriers on the host: the kernel body as a block-level program of phases.

The CPU runs one emulated thread after another, so `diffgpu.barrier` ("no
thread of the block passes it before every thread has reached it") is
emulated by cutting the per-thread code at barriers. The ops between two
barriers form a *phase*, outlined into `@k__phaseN`; the entry runs, per
block, each phase for every thread before the next phase.

Structured ops that contain barriers (`scf.if`, `scf.for`, `scf.while`) are
not outlined: they become block-level control flow around their phases, with
a per-thread *mask* of the threads that take the branch or are still in the
loop (so divergent branches and loops behave as on a GPU whose exited
threads leave the barrier). A branch or loop iteration runs while any
thread of the block is active in it; each phase inside runs only for the
active threads.

Values live across phases are kept per thread in one spill buffer per block
(`memref<?xi8>`, 8 bytes per thread and slot, viewed as `memref<?xT>` and
indexed by the thread's linear index `tx + bx * (ty + by * tz)`): stored
right after their definition, loaded at the start of each phase using them.
Loop-carried values, loop counters, branch results and masks have slots too.
Constants are re-created instead; function arguments pass to every phase.

    "diffgpu.barrier"() : () -> ()      // at top level: phase 0 | phase 1
    scf.for %i = %a to %b step %c {     // block-level loop, per-thread counters
      ... "diffgpu.barrier"() ...       //   phases of the body, masked
    }

Memrefs live across phases (autodiff's tapes) are kept in per-block buffers
of descriptors, `memref<?xmemref<...>>`, one per value, passed to every phase
after the fixed arguments; the kernel's top-level `memref.alloca`s become
`memref.alloc`s (their memory must outlive their phase), each thread's freed
after the block's last phase.

Each phase function is `@k__phaseN(args..., shared..., %spill: memref<?xi8>,
%lin: index, %nthreads: index, memref buffers...)`. Barriers inside other
region ops, and values of other types live across a barrier, are errors.
"""
from __future__ import annotations

from diffgpu.dialects import names as N
from diffgpu.lowering.host import racecheck as host_racecheck
from diffgpu.lowering.host.barrier_control import ControlFlowMixin
from diffgpu.lowering.common.ir_util import defined_by, isa, walk
from diffgpu.lowering.common.targets import copy_target

BARRIER = N.BARRIER
STRUCTURED = ("scf.if", "scf.for", "scf.while")
SLOT_BYTES = 8


class BarrierError(Exception):
    """Reported by the pass at `op`."""

    def __init__(self, op, message):
        super().__init__(message)
        self.op = op


def has_barrier(op) -> bool:
    return bool(walk(op, (BARRIER,)))


def check_placement(k) -> list:
    """(op, message) for each barrier nested in something we cannot split."""
    errors = []
    for b in walk(k, (BARRIER,)):
        parent = b.parent
        while parent is not None and parent.name != "func.func":
            if parent.name not in STRUCTURED:
                errors.append((b, f"barrier inside '{parent.name}' is not supported on the "
                                  "host target"))
                break
            parent = parent.parent
    return errors


def _func_of(value):
    """The func.func in which `value` is defined."""
    from diffgpu._mlir import ir

    v = value.maybe_downcast()
    op = v.owner.owner if isinstance(v, ir.BlockArgument) else v.owner
    op = op.operation
    while op.name != "func.func":
        op = op.parent
    return op


def _is_scalar(t) -> bool:
    from diffgpu._mlir import ir

    return isa(t, ir.IndexType) or isa(t, ir.IntegerType) or isa(t, ir.FloatType)


class BarrierLowering(ControlFlowMixin):
    """Emit the block-level program of the per-thread function `k`."""

    racecheck = False  # host/racecheck.py: count barrier intervals

    def __init__(self, k, n_args: int, base: str):
        from diffgpu._mlir import ir

        self.k, self.n_args, self.base = k, n_args, base
        self.k_args = list(k.regions[0].blocks[0].arguments)[:n_args]
        self.slots: dict = {}  # value -> slot
        self.slot_types: list = []
        self.slot_buffer: dict = {}  # memref-typed slot -> its index in self.mbufs
        self.mbufs: list = []  # per-block buffers memref<?xmemref<...>> (entry values)
        self.calls: list = []  # (func.call, phase): completed with mbufs at the end
        self.heap: list = []  # top-level allocas made heap allocations
        self.phases: list = []
        self.anchor = k
        self.i1 = ir.IntegerType.get_signless(1)
        self.idx = ir.IndexType.get()

    # Slots -------------------------------------------------------------------
    def new_slot(self, typ, value=None, op=None) -> int:
        from diffgpu._mlir import ir, memref

        is_memref = isa(typ, ir.MemRefType)
        if not (_is_scalar(typ) or is_memref):
            raise BarrierError(op if op is not None else self.k,
                               f"a value of type {typ} is live across a barrier; only "
                               "scalars and memrefs may be on the host target")
        self.slot_types.append(typ)
        slot = len(self.slot_types) - 1
        if is_memref:  # its own per-block buffer of descriptors, an argument of the phases
            c = self.ctx
            t = ir.MemRefType.get([ir.ShapedType.get_dynamic_size()], typ)
            buf = memref.AllocOp(t, [c.nthreads], [], loc=c.loc, ip=self.pre_ip).result
            self.slot_buffer[slot] = len(self.mbufs)
            self.mbufs.append(buf)
            for fn in self.phases:
                self._add_buffer_arg(fn, t)
        if value is not None:
            self.slots[value] = slot
        return slot

    def _add_buffer_arg(self, fn, t) -> None:
        from diffgpu._mlir import ir

        block = fn.regions[0].blocks[0]
        block.add_argument(t, fn.location)
        ft = ir.FunctionType.get([a.type for a in block.arguments], [])
        fn.attributes["function_type"] = ir.TypeAttr.get(ft)

    def _mbuf(self, slot, fn):
        """The buffer of a memref-typed slot: in phase `fn`, or in the entry."""
        k = self.slot_buffer[slot]
        if fn is None:
            return self.mbufs[k]
        return fn.regions[0].blocks[0].arguments[self.n_args + 3 + k]

    def view(self, slot, spill, nthreads, ip, loc):
        """`memref<?xT>` view of a slot in the spill buffer (i1 kept as i8:
        the memref lowering stores whole bytes only)."""
        from diffgpu._mlir import arith, ir, memref

        c = arith.ConstantOp(self.idx, slot * SLOT_BYTES, loc=loc, ip=ip).result
        off = arith.MulIOp(nthreads, c, loc=loc, ip=ip).result
        t = ir.MemRefType.get([ir.ShapedType.get_dynamic_size()], self._storage(slot))
        return memref.ViewOp(t, spill, off, [nthreads], loc=loc, ip=ip).result

    def _storage(self, slot):
        from diffgpu._mlir import ir

        t = self.slot_types[slot]
        return ir.IntegerType.get_signless(8) if t == self.i1 else t

    def load_slot(self, slot, spill, nthreads, index, ip, loc, fn=None):
        from diffgpu._mlir import arith, memref

        if slot in self.slot_buffer:
            return memref.LoadOp(self._mbuf(slot, fn), [index], loc=loc, ip=ip).result
        v = memref.LoadOp(self.view(slot, spill, nthreads, ip, loc), [index],
                          loc=loc, ip=ip).result
        if self.slot_types[slot] == self.i1:
            v = arith.TruncIOp(self.i1, v, loc=loc, ip=ip).result
        return v

    def store_slot(self, value, slot, spill, nthreads, index, ip, loc, fn=None):
        from diffgpu._mlir import arith, memref

        if slot in self.slot_buffer:
            memref.StoreOp(value, self._mbuf(slot, fn), [index], loc=loc, ip=ip)
            return
        ref = self.view(slot, spill, nthreads, ip, loc)
        if self.slot_types[slot] == self.i1:
            value = arith.ExtUIOp(self._storage(slot), value, loc=loc, ip=ip).result
        memref.StoreOp(value, ref, [index], loc=loc, ip=ip)

    # Entry-level (block-level) code -------------------------------------------
    def run(self, ctx) -> None:
        """Emit the block-level program at ctx.ip; `ctx` is to_host's EntryContext;
        `ctx.pre_ip` is where per-block buffers are allocated."""
        from diffgpu._mlir import func, memref

        self.ctx, self.pre_ip = ctx, ctx.pre_ip
        entry = self.k.regions[0].blocks[0]
        self.heap_ops = self.allocas_to_heap(entry)
        self.lower_block(entry, ctx.ip, None, lambda term: [])
        for call, fn in self.calls:  # calls made before later memref slots existed
            have = len(list(call.operands))
            want = self.n_args + 3 + len(self.mbufs)
            if have < want:
                callee = call.attributes["callee"]
                func.CallOp([], callee, list(call.operands) + self.mbufs[have - want:],
                            loc=call.location, ip=self._ip_before(call))
                call.erase()
        for op in self.heap_ops:  # free each thread's heap allocations
            lip, lin = self.lin_loop(ctx.ip)
            memref.DeallocOp(self.load_e(self.slots[op.results[0]], lin, lip),
                             loc=ctx.loc, ip=lip)
        for buf in self.mbufs:
            memref.DeallocOp(buf, loc=ctx.loc, ip=ctx.ip)

    @staticmethod
    def _ip_before(op):
        from diffgpu._mlir import ir
        return ir.InsertionPoint(op)

    def allocas_to_heap(self, entry) -> list:
        """Top-level `memref.alloca`s (autodiff's tapes) become `memref.alloc`s:
        their memory must outlive the phase that allocates it. Each thread's
        allocation is freed after the block's last phase."""
        from diffgpu._mlir import ir

        heap = []
        for op in [o.operation for o in entry.operations]:
            if op.name != "memref.alloca":
                continue
            attrs = {name: op.attributes[name] for name in op.attributes}
            new = ir.Operation.create("memref.alloc", results=[op.results[0].type],
                                      operands=list(op.operands), attributes=attrs,
                                      loc=op.location, ip=ir.InsertionPoint(op))
            op.results[0].replace_all_uses_with(new.results[0])
            op.erase()
            heap.append(new)
        return heap

    def load_e(self, slot, lin, ip):
        c = self.ctx
        return self.load_slot(slot, c.spill, c.nthreads, lin, ip, c.loc, None)

    def store_e(self, value, slot, lin, ip):
        c = self.ctx
        self.store_slot(value, slot, c.spill, c.nthreads, lin, ip, c.loc, None)

    # Phases -------------------------------------------------------------------
    def lower_block(self, block, ip, mask, term_stores) -> None:
        ops = [op.operation for op in block.operations]
        term, body = ops[-1], ops[:-1]
        run = []
        for op in body:
            if op.name == BARRIER:
                self.flush(run, [], ip, mask)
                run = []
                if self.racecheck:  # the next barrier interval; who reached it
                    arrivals = None if mask is None else self.arrivals(mask, ip)
                    host_racecheck.barrier_call(ip, self.ctx.loc, op, arrivals)
            elif op.name in STRUCTURED and has_barrier(op):
                # the op's operands (condition, bounds, initial values) are
                # stored per thread by the phase before it
                slots = [self.new_slot(v.type, op=op) for v in op.operands]
                self.flush(run, list(zip(op.operands, slots)), ip, mask)
                run = []
                getattr(self, "lower_" + op.name.split(".")[1])(op, ip, mask, slots)
            else:
                run.append(op)
        self.flush(run, term_stores(term), ip, mask)

    def flush(self, ops, stores, ip, mask) -> None:
        """Outline `ops` (+ stores of values into slots) into a phase function
        and call it, at `ip`, for every (active) thread of the block."""
        from diffgpu._mlir import func, ir, memref

        if not ops and not stores:
            return
        loc = ops[0].location if ops else self.ctx.loc
        arg_types = [a.type for a in self.k_args]
        spill_t = ir.MemRefType.get([ir.ShapedType.get_dynamic_size()],
                                    ir.IntegerType.get_signless(8))
        ftype = ir.FunctionType.get(arg_types + [spill_t, self.idx, self.idx]
                                    + [b.type for b in self.mbufs], [])
        name = f"{self.base}__phase{len(self.phases)}"
        fn = func.FuncOp(name, ftype, loc=loc, ip=ir.InsertionPoint.after(self.anchor))
        fn.attributes["sym_visibility"] = ir.StringAttr.get("private")
        copy_target(self.k, fn)
        block = fn.add_entry_block(arg_locs=[loc] * len(ftype.inputs))
        for op in ops:
            block.append(op)
        args = list(block.arguments)
        spill, lin, nthreads = args[self.n_args:self.n_args + 3]
        bip = ir.InsertionPoint(block)
        for value, slot in stores:
            self.store_slot(value, slot, spill, nthreads, lin, bip, loc, fn.operation)
        func.ReturnOp([], loc=loc, ip=bip)
        self.phases.append(fn.operation)
        self.anchor = fn.operation
        self.remap(fn)
        for op in ops:  # heap allocations: kept per thread to be freed at block end
            if op in self.heap_ops and op.results[0] not in self.slots:
                self.store_after_def(op.results[0])
        call = self.ctx.call_per_thread(fn.operation, ip, mask, self)
        self.calls.append((call, fn.operation))

    def remap(self, fn) -> None:
        """Operands defined outside `fn`: arguments, re-created constants,
        or loads of their slots at the phase's start."""
        from diffgpu._mlir import ir

        fop = fn.operation
        block = fn.regions[0].blocks[0]
        args = list(block.arguments)
        spill, lin, nthreads = args[self.n_args:self.n_args + 3]
        cache: dict = {}
        start = ir.InsertionPoint.at_block_begin(block)
        for op in walk(fop):
            if op == fop:
                continue
            for i, v in enumerate(list(op.operands)):
                if _func_of(v) == fop:
                    continue
                if v not in cache:
                    cache[v] = self.external(v, fn, args, spill, lin, nthreads, start)
                op.operands[i] = cache[v]

    def external(self, v, fn, args, spill, lin, nthreads, start):
        for j, a in enumerate(self.k_args):
            if v == a:
                return args[j]
        const = defined_by(v, ("arith.constant",))
        if const is not None:
            return const.clone(ip=start).results[0]
        if v not in self.slots:
            self.store_after_def(v)
        return self.load_slot(self.slots[v], spill, nthreads, lin, start, fn.location,
                              fn.operation)

    def store_after_def(self, v) -> None:
        """Give `v` (a result of an op in an earlier phase) a slot, stored
        right after its definition."""
        from diffgpu._mlir import ir

        d = v.maybe_downcast()
        owner = d.owner.operation if isinstance(d, ir.OpResult) else None
        if owner is None or owner.parent is None or owner.parent.name != "func.func" \
                or owner.parent not in self.phases:
            raise BarrierError(self.k, "internal error: a value crossing a barrier has no "
                                       "definition in an earlier phase")
        slot = self.new_slot(v.type, v, owner)
        pf = owner.parent
        pargs = list(pf.regions[0].blocks[0].arguments)
        spill, lin, nthreads = pargs[self.n_args:self.n_args + 3]
        ip = ir.InsertionPoint.after(owner)  # successive inserts keep their order
        self.store_slot(v, slot, spill, nthreads, lin, ip, owner.location, pf)

    def finish(self) -> None:
        """Erase the per-thread function, now split into phases."""
        k = self.k
        for op in walk(k):
            values = list(op.results) + [a for r in op.regions for b in r.blocks
                                         for a in b.arguments]
            for v in values:
                for use in v.uses:
                    if _op_func(use.owner) != k:
                        raise BarrierError(op, "internal error: a value of the kernel is "
                                               "still used by a phase")
        k.erase()


def _op_func(op):
    op = op.operation
    while op.name != "func.func":
        op = op.parent
    return op


def linear_thread(tids, bdim, ip, loc):
    """`tx + bx * (ty + by * tz)` at `ip`."""
    from diffgpu._mlir import arith

    t = arith.MulIOp(bdim[1], tids[2], loc=loc, ip=ip).result
    t = arith.AddIOp(tids[1], t, loc=loc, ip=ip).result
    t = arith.MulIOp(bdim[0], t, loc=loc, ip=ip).result
    return arith.AddIOp(tids[0], t, loc=loc, ip=ip).result

"""The loads-first order of `diffgpu-specialize` (lowering/facts/specialize.py)
in functions whose memref arguments are proven pairwise disjoint.

`order_function(fn)`: adjacent `scf.if`s on one condition become one
(`_fuse_ifs`), values stored into one-value slots and read back right away
are forwarded (`_forward_slots`), then in every block each load of an
argument or local buffer moves up to just below the last op it must follow
(`_hoist_loads`), so that a thread's loads are all in flight before its
stores:

    memref.store %c0, %dy[%i]          %a = memref.load %x[%i]
    %a = memref.load %x[%i]     =>     %b = memref.load %dx[%i]
    %b = memref.load %dx[%i]           memref.store %c0, %dy[%i]

The tables below say which ops are pure and which write which operand;
anything else may write anything (a call, a barrier) and stops the motion.
"""
from __future__ import annotations

from diffgpu.dialects import names as N
from diffgpu.lowering.common.ir_util import precedes, visit_blocks
from diffgpu.lowering.facts.specialize_shapes import cse_pure

_PURE_PREFIXES = ("arith.", "math.", "index.")
_PURE = frozenset(("memref.load", "memref.dim", "memref.alloca", "memref.cast",
                   "scf.yield") + N.GEOMETRY)
#: op -> position of the memref it writes
_WRITES = {"memref.store": 1, N.ATOMIC_ADD: N.ATOMIC_MEMREF, "memref.atomic_rmw": 1}


def order_function(fn) -> None:
    args = list(fn.regions[0].blocks[0].arguments)
    cse_pure(fn)  # guards on one extent (launch fact `extents`) become one value
    visit_blocks(fn, lambda b: _fuse_ifs(b, args))
    slots = set(_slots(fn))  # hashed: one look-up per op
    visit_blocks(fn, lambda b: _forward_slots(b, slots))
    visit_blocks(fn, lambda b: _hoist_loads(b, args))


def _slots(fn) -> list:
    """The rank-0 `memref.alloca`s of `fn` (the tape's one-value slots) used
    only by loads and stores."""
    from diffgpu._mlir import ir

    out = []

    def visit(o):
        o = o.operation
        if o.name == "memref.alloca" and ir.MemRefType(o.results[0].type).rank == 0:
            uses = [u.owner.operation if hasattr(u.owner, "operation") else u.owner
                    for u in o.results[0].uses]
            if all(u.name == "memref.load" or (u.name == "memref.store" and
                                               not u.operands[0] == o.results[0])
                   for u in uses):
                out.append(o.results[0])
        return ir.WalkResult.ADVANCE

    fn.walk(visit, ir.WalkOrder.PRE_ORDER)
    return out


def _forward_slots(block, slots) -> None:
    """In one block, a slot load after a store to that slot (nothing in
    between writing it) is the stored value: the forward sweep's value meets
    the reverse sweep's use directly (`math.sin` and the derivative's
    `math.cos` of one value then share it, see gpu/sincos.py)."""
    from diffgpu._mlir import ir

    last = {}  # slot -> the value last stored into it

    for op in [o.operation for o in block.operations]:
        if op.name == "memref.store" and op.operands[1] in slots:
            last[op.operands[1]] = op.operands[0]
        elif op.name == "memref.load" and op.operands[0] in slots:
            v = last.get(op.operands[0])
            if v is not None:
                op.results[0].replace_all_uses_with(v)
                op.erase()
        elif len(op.regions):  # nested stores to a slot: forget it
            def visit(o):
                o = o.operation
                if o.name == "memref.store":
                    last.pop(o.operands[1], None)
                return ir.WalkResult.ADVANCE
            op.walk(visit, ir.WalkOrder.PRE_ORDER)


def _fuse_ifs(block, args) -> None:
    """`scf.if %c {A}` followed by `scf.if %c {B}` (no results, no else)
    -> `scf.if %c {A; B}`, when the ops M between them (in a derivative: the
    active scalars' slots) commute with B: B then runs before M."""
    ops = [o.operation for o in block.operations]
    prev, between = None, []
    for op in ops:
        if (prev is not None and _plain_if(op) and op.operands[0] == prev.operands[0]
                and (not between or _commute(op, between, prev, args))):
            dst = prev.regions[0].blocks[0]
            dst_yield = list(dst.operations)[-1]
            src_ops = [o.operation for o in op.regions[0].blocks[0].operations][:-1]
            for o in src_ops:
                o.move_before(dst_yield)
            op.erase()
            continue
        if _plain_if(op):
            prev, between = op, []
        elif prev is not None:
            between.append(op)


def _commute(op, between, prev, args) -> bool:
    """May `op` (an scf.if) move up before the ops `between`, to the end of
    `prev`'s body? Its operands must be defined before `prev` (or in it),
    and neither side may write an array or slot the other reads or writes."""
    from diffgpu._mlir import ir

    inner = [op] + [o.operation for o in _nested(op)]
    mine = set(inner)
    for o in inner:
        for v in o.operands:
            if isinstance(v.owner, ir.Block) or v.owner.operation in mine:
                continue
            d = v.owner.operation
            if d.block == prev.block and not precedes(d, prev):
                return False
    w1, r1 = writes_of(op, args), reads_of(op)
    if w1 is None:
        return False
    for o in between:
        w2 = writes_of(o, args)
        if w2 is None:
            return False
        r2 = reads_of(o)
        if any(a == b for a in w1 for b in w2 + r2) or any(a == b for a in w2 for b in r1):
            return False
    return True


def _nested(op) -> list:
    out = []
    for region in op.regions:
        for block in region.blocks:
            for o in block.operations:
                out.append(o)
                out += _nested(o.operation)
    return out


def reads_of(op) -> list:
    """The roots `op` (and its nested ops) loads from."""
    return [root_of(o.operation.operands[0]) for o in [op] + _nested(op)
            if o.operation.name == "memref.load"]


def _plain_if(op) -> bool:
    return (op.name == "scf.if" and len(op.results) == 0
            and len(op.regions[1].blocks) == 0)


def root_of(v):
    """The function argument or local allocation a memref value views."""
    from diffgpu._mlir import ir

    while True:
        owner = v.owner
        if isinstance(owner, ir.Block):
            return v  # a block argument
        o = owner.operation
        if o.name in ("memref.cast", "memref.subview", "memref.reinterpret_cast"):
            v = o.operands[0]
            continue
        return v


def _is_local(root) -> bool:
    from diffgpu._mlir import ir

    owner = root.owner
    if isinstance(owner, ir.Block):
        return False
    return owner.operation.name in ("memref.alloca", "memref.alloc", N.SHARED_ALLOC)


def writes_of(op, args):
    """The roots `op` (and its nested ops) may write; None: anything or a
    synchronisation (stop)."""
    from diffgpu._mlir import ir

    out = []
    stop = []

    def visit(o):
        o = o.operation
        name = o.name
        if name in _WRITES:
            r = root_of(o.operands[_WRITES[name]])
            if any(r == a for a in args) or _is_local(r):
                out.append(r)
            else:
                stop.append(o)
        elif name in _PURE or name.startswith(_PURE_PREFIXES) or name in (
                "scf.if", "scf.for", "scf.while", "scf.condition"):
            pass
        else:
            stop.append(o)
        return ir.WalkResult.ADVANCE

    op.walk(visit, ir.WalkOrder.PRE_ORDER)
    return None if stop else out


def _hoist_loads(block, args) -> None:
    """Move each load of an argument or local buffer up to just below the
    last op it must follow: the ops defining its operands, the last op that
    may write its buffer, the last op whose writes are unknown (a call, a
    barrier, an atomic...) and, for a load of an argument, the last load of
    an argument (loads of arrays keep their program order). Loads that
    follow one op keep their program order among themselves.

    One pass in program order: every op gets a sort key, (its index, 0) for
    ops that stay, (the key's index of its anchor, n) for a moved load, with
    n counting moved loads; the block is then put in key order. Linear in
    the block's length (a scan back from each load was quadratic: 7 s for
    a 1000-term straight-line kernel)."""
    from diffgpu._mlir import ir

    ops = [o.operation for o in block.operations]
    if len(ops) < 3:
        return
    keys = {}  # op -> sort key of an op already placed (ops hash by identity in the IR)
    nothing = (-1, 0)
    last_stop = nothing  # the last op that may write anything
    last_arg_load = nothing  # the last load of an argument
    writes = []  # [(root, key of the last op writing it)]
    moved = 0
    order = []
    for i, op in enumerate(ops):
        key = (i, 0)
        if op.name == "memref.load":
            root = root_of(op.operands[0])
            local = _is_local(root)
            if local or any(root == a for a in args):
                anchor = last_stop if local else max(last_stop, last_arg_load)
                for r, k in writes:
                    if r == root:
                        anchor = max(anchor, k)
                for v in op.operands:
                    if not isinstance(v.owner, ir.Block):
                        anchor = max(anchor, keys.get(v.owner.operation, nothing))
                moved += 1
                key = (anchor[0], moved)
            if not local:
                last_arg_load = max(last_arg_load, key)
        else:
            w = writes_of(op, args)
            if w is None:
                last_stop = key
            else:
                for r in w:
                    writes.append((r, key))
        keys[op] = key
        order.append((key, i, op))
    order.sort(key=lambda t: (t[0], t[1]))
    if [t[1] for t in order] == list(range(len(ops))):
        return
    end = ops[-1]
    assert order[-1][2] == end  # the terminator stays last
    for _, _, op in order[:-1]:
        op.move_before(end)

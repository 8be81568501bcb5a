"""Cancellation on the host: a launch stuck in an endless loop can be stopped.

The CPU runtime runs a launch in a worker thread; on Ctrl-C (SIGINT) the
main thread sets the module's flag `@__dg_host_cancel` (an internal `i64` LLVM global,
whose address `@__dg_host_cancel_addr()` returns through the C interface)
and waits for the worker. The
generated code reads the flag with a volatile load (LLVM may neither hoist
it out of a loop nor fold it) through the tiny `@__dg_host_live() -> i1`,
which LLVM inlines, at these places:

- the condition of every `scf.while` (user loops and the block-level loops
  of the barrier lowering): the loop ends once the flag is set;
- every `scf.for` whose trip count is not a compile-time constant becomes an
  `scf.while` with the same check (a loop of constant trip count ends by
  itself; keeping it an `scf.for` keeps LLVM's unrolling and vectorisation),
  except loops holding a barrier, which the barrier lowering turns into
  block-level loops of the entry (checked there, below);
- the entry (`stop_entry`): its three block loops become `scf.while`
  loops that start a block only while the flag is clear, and its
  block-level `scf.while` loops (the barrier lowering's, also those of a
  `for` holding a barrier) end at the flag. A cancelled launch so leaves
  its block loops at once, however large the grid: no block starts after
  the flag is set (the loops do not step through the blocks left). The
  running block finishes its threads (at most 1024 through a launch; the
  thread loops carry no check), their loops cut short.

    %r = scf.while (%x = %x0) : (i64) -> i64 {
      %c = arith.cmpi slt, %x, %n : i64
      scf.condition(%c) %x : i64
    } do { ... }
  becomes
    %r = scf.while (%x = %x0) : (i64) -> i64 {
      %c = arith.cmpi slt, %x, %n : i64
      %live = func.call @__dg_host_live() : () -> i1
      %c2 = arith.andi %c, %live : i1
      scf.condition(%c2) %x : i64
    } do { ... }

After a cancelled launch the arrays hold whatever the threads wrote so far;
the runtime clears the flag (and the bounds-check status) before the next
launch. Loops marked `diffgpu.no_cancel` are skipped.
"""
from __future__ import annotations

from diffgpu.abi import CANCEL_ADDR_FUNC
from diffgpu.dialects import names as N
from diffgpu.lowering.common.ir_util import defined_by, lookup, walk
from diffgpu.lowering.host.ops import append_runtime

FLAG = "__dg_host_cancel"
LIVE_FUNC = "__dg_host_live"
ADDR_FUNC = CANCEL_ADDR_FUNC
#: loops read the flag once every CHECK_EVERY iterations
CHECK_EVERY = 1024
NO_CANCEL = "diffgpu.no_cancel"


def add_flag(module_op, target) -> None:
    """The flag global and `@__dg_host_live() -> i1` (flag == 0), once."""
    if lookup(module_op, FLAG) is not None:
        return
    text = f"""
    llvm.mlir.global internal @{FLAG}(0 : i64) {{addr_space = 0 : i32}} : i64
    func.func private @{LIVE_FUNC}() -> i1 {{
      %p = llvm.mlir.addressof @{FLAG} : !llvm.ptr
      %v = llvm.load volatile %p {{alignment = 8 : i64}} : !llvm.ptr -> i64
      %z = arith.constant 0 : i64
      %live = arith.cmpi eq, %v, %z : i64
      return %live : i1
    }}
    func.func @{ADDR_FUNC}() -> i64 attributes {{llvm.emit_c_interface}} {{
      %p = llvm.mlir.addressof @{FLAG} : !llvm.ptr
      %a = llvm.ptrtoint %p : !llvm.ptr to i64
      return %a : i64
    }}"""
    append_runtime(module_op, text, target, functions=2)


def live(ip, loc):
    """i1 at `ip`: the launch has not been cancelled."""
    from diffgpu._mlir import func, ir

    return func.CallOp([ir.IntegerType.get_signless(1)], ir.FlatSymbolRefAttr.get(LIVE_FUNC),
                       [], loc=loc, ip=ip).result


def _every(n, ip, loc):
    """i1: `live()`, asked only when `n % CHECK_EVERY == 0` (true otherwise)."""
    from diffgpu._mlir import arith, ir, scf

    i1 = ir.IntegerType.get_signless(1)
    mask = arith.ConstantOp(n.type, CHECK_EVERY - 1, loc=loc, ip=ip).result
    zero = arith.ConstantOp(n.type, 0, loc=loc, ip=ip).result
    low = arith.AndIOp(n, mask, loc=loc, ip=ip).result
    due = arith.CmpIOp(arith.CmpIPredicate.eq, low, zero, loc=loc, ip=ip).result
    ask = scf.IfOp(due, [i1], has_else=True, loc=loc, ip=ip)
    tip = ir.InsertionPoint(ask.then_block)
    scf.YieldOp([live(tip, loc)], loc=loc, ip=tip)
    eip = ir.InsertionPoint(ask.else_block)
    scf.YieldOp([arith.ConstantOp(i1, 1, loc=loc, ip=eip).result], loc=loc, ip=eip)
    return ask.results[0]


def check_while(op) -> None:
    """`op` gets an iteration counter `%n` (an extra i64 carried value) and
    its `scf.condition(%c)` becomes `scf.condition(%c && (n % 1024 != 0 ||
    live()))`: a counter increment per iteration, the flag read every 1024."""
    from diffgpu._mlir import arith, ir, scf

    loc = op.location
    i64 = ir.IntegerType.get_signless(64)
    before, after = op.regions[0].blocks[0], op.regions[1].blocks[0]
    ip = ir.InsertionPoint(op)
    zero = arith.ConstantOp(i64, 0, loc=loc, ip=ip).result
    w = scf.WhileOp([r.type for r in op.results] + [i64], list(op.operands) + [zero],
                    loc=loc, ip=ip)
    nb = w.before.blocks.append(*([a.type for a in before.arguments] + [i64]))
    na = w.after.blocks.append(*([a.type for a in after.arguments] + [i64]))
    for block, new in ((before, nb), (after, na)):
        for old_arg, new_arg in zip(block.arguments, new.arguments):
            old_arg.replace_all_uses_with(new_arg)
        for o in [x.operation for x in block.operations]:
            new.append(o)
    cond = nb.operations[len(nb.operations) - 1].operation
    cip = ir.InsertionPoint(cond)
    n = nb.arguments[len(nb.arguments) - 1]
    ok = arith.AndIOp(cond.operands[0], _every(n, cip, loc), loc=loc, ip=cip).result
    one = arith.ConstantOp(i64, 1, loc=loc, ip=cip).result
    n1 = arith.AddIOp(n, one, loc=loc, ip=cip).result
    scf.ConditionOp(ok, list(cond.operands)[1:] + [n1], loc=cond.location, ip=cip)
    cond.erase()
    yld = na.operations[len(na.operations) - 1].operation
    scf.YieldOp(list(yld.operands) + [na.arguments[len(na.arguments) - 1]],
                loc=yld.location, ip=ir.InsertionPoint(yld))
    yld.erase()
    for old, new in zip(op.results, w.results):
        old.replace_all_uses_with(new)
    w.operation.attributes[NO_CANCEL] = ir.UnitAttr.get()
    op.erase()


def _constant_trip(op) -> bool:
    for v in list(op.operands)[:3]:
        if defined_by(v, ("arith.constant",)) is None:
            return False
    return True


def chunk_for(op) -> None:
    """`scf.for %i = %lb to %ub step %s` -> an `scf.while` over chunks of
    1024 iterations, `%c < %ub && live()`, around the same `scf.for` from %c
    to `%c + min(%ub - %c, 1024 * %s)`: the inner loop keeps its form (and
    LLVM's unrolling and vectorisation), the flag is read once per chunk."""
    from diffgpu._mlir import arith, ir, scf

    loc, ip = op.location, ir.InsertionPoint(op)
    lb, ub, step = list(op.operands)[:3]
    inits = list(op.operands)[3:]
    types = [lb.type] + [v.type for v in inits]
    k = arith.ConstantOp(lb.type, CHECK_EVERY, loc=loc, ip=ip).result
    chunk = arith.MulIOp(step, k, loc=loc, ip=ip).result
    w = scf.WhileOp(types, [lb] + inits, loc=loc, ip=ip)
    before = w.before.blocks.append(*types)
    bip = ir.InsertionPoint(before)
    more = arith.CmpIOp(arith.CmpIPredicate.slt, before.arguments[0], ub, loc=loc,
                        ip=bip).result
    go = arith.AndIOp(more, live(bip, loc), loc=loc, ip=bip).result
    scf.ConditionOp(go, list(before.arguments), loc=loc, ip=bip)
    after = w.after.blocks.append(*types)
    aip = ir.InsertionPoint(after)
    start = after.arguments[0]
    rest = arith.SubIOp(ub, start, loc=loc, ip=aip).result
    take = arith.MinSIOp(rest, chunk, loc=loc, ip=aip).result
    end = arith.AddIOp(start, take, loc=loc, ip=aip).result
    for old, new in zip(op.results, list(w.results)[1:]):
        old.replace_all_uses_with(new)
    yld = scf.YieldOp([end] + list(op.results), loc=loc, ip=aip)
    op.move_before(yld)
    op.operands[0] = start
    op.operands[1] = end
    for j, a in enumerate(list(after.arguments)[1:]):
        op.operands[3 + j] = a
    op.attributes[NO_CANCEL] = ir.UnitAttr.get()
    w.operation.attributes[NO_CANCEL] = ir.UnitAttr.get()


def break_for(op) -> None:
    """`scf.for %i = %lb to %ub step %s` (no carried values) -> an
    `scf.while` that asks `%i < %ub && live()` before every iteration: the
    loop ends as soon as the flag is set, whatever is left of its range."""
    from diffgpu._mlir import arith, ir, scf

    loc, ip = op.location, ir.InsertionPoint(op)
    lb, ub, step = list(op.operands)[:3]
    w = scf.WhileOp([lb.type], [lb], loc=loc, ip=ip)
    before = w.before.blocks.append(lb.type)
    bip = ir.InsertionPoint(before)
    more = arith.CmpIOp(arith.CmpIPredicate.slt, before.arguments[0], ub, loc=loc,
                        ip=bip).result
    go = arith.AndIOp(more, live(bip, loc), loc=loc, ip=bip).result
    scf.ConditionOp(go, [before.arguments[0]], loc=loc, ip=bip)
    after = w.after.blocks.append(lb.type)
    body = op.regions[0].blocks[0]
    body.arguments[0].replace_all_uses_with(after.arguments[0])
    for o in [x.operation for x in body.operations][:-1]:  # all but the yield
        after.append(o)
    aip = ir.InsertionPoint(after)
    scf.YieldOp([arith.AddIOp(after.arguments[0], step, loc=loc, ip=aip).result], loc=loc,
                ip=aip)
    w.operation.attributes[NO_CANCEL] = ir.UnitAttr.get()
    op.erase()


def stop_while(op) -> None:
    """`scf.condition(%c)` of `op` becomes `scf.condition(%c && live())`."""
    from diffgpu._mlir import arith, ir

    before = op.regions[0].blocks[0]
    cond = before.operations[len(before.operations) - 1].operation
    ip = ir.InsertionPoint(cond)
    cond.operands[0] = arith.AndIOp(cond.operands[0], live(ip, op.location),
                                    loc=op.location, ip=ip).result
    op.attributes[NO_CANCEL] = ir.UnitAttr.get()


def stop_entry(entry) -> None:
    """Checks in the entry `entry` (func.func): its block loops z, y, x ask
    before every block (`break_for`), its block-level `scf.while` loops (the
    barrier lowering's) before every iteration (`stop_while`)."""
    for op in walk(entry, ("scf.while",)):
        if NO_CANCEL not in op.attributes:
            stop_while(op)
    for op in walk(entry, ("scf.for",))[:3]:  # z, y, x: the first three in pre-order
        break_for(op)


def instrument_loops(host_funcs) -> None:
    """Checks in the user's loops of `host_funcs` (before the entries exist;
    loops holding a barrier become block-level loops, checked there)."""
    for f in host_funcs:
        whiles = [op for op in walk(f, ("scf.while",)) if NO_CANCEL not in op.attributes
                  and not walk(op, (N.BARRIER,))]
        for op in walk(f, ("scf.for",)):
            if NO_CANCEL not in op.attributes and not _constant_trip(op) \
                    and "unsignedCmp" not in op.attributes \
                    and not walk(op, (N.BARRIER,)):
                chunk_for(op)
        for op in whiles:
            check_while(op)

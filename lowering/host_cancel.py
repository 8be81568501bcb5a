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
  block-level loops (finite: their bounds are fixed when they start);
- the body of the entry's innermost block loop runs only while the flag is
  clear (the remaining blocks are skipped, about a nanosecond each).

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
launch. The entry's thread loops carry no check (a block is short once its
loops have ended); loops marked `diffgpu.no_cancel` are skipped.
"""
from __future__ import annotations

from diffgpu.lowering.host_ops import walk_ops

FLAG = "__dg_host_cancel"
LIVE_FUNC = "__dg_host_live"
ADDR_FUNC = "__dg_host_cancel_addr"
NO_CANCEL = "diffgpu.no_cancel"


def add_flag(module_op, target) -> None:
    """The flag global and `@__dg_host_live() -> i1` (flag == 0), once."""
    from diffgpu._mlir import ir

    body = module_op.regions[0].blocks[0]
    for op in body.operations:
        if "sym_name" in op.operation.attributes and \
                ir.StringAttr(op.operation.attributes["sym_name"]).value == FLAG:
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
    parsed = ir.Module.parse(text, context=module_op.context)
    for op in list(parsed.body.operations):
        op = op.operation
        op.detach_from_parent()
        body.append(op)
    for op in list(body.operations)[-2:]:
        op.operation.attributes["diffgpu.target"] = target


def live(ip, loc):
    """i1 at `ip`: the launch has not been cancelled."""
    from diffgpu._mlir import func, ir

    return func.CallOp([ir.IntegerType.get_signless(1)], ir.FlatSymbolRefAttr.get(LIVE_FUNC),
                       [], loc=loc, ip=ip).result


def check_while(op) -> None:
    """`scf.condition(%c)` of `op` becomes `scf.condition(%c && live)`."""
    from diffgpu._mlir import arith, ir

    cond = op.regions[0].blocks[0].operations[len(op.regions[0].blocks[0].operations) - 1]
    cond = cond.operation
    loc, ip = cond.location, ir.InsertionPoint(cond)
    both = arith.AndIOp(cond.operands[0], live(ip, loc), loc=loc, ip=ip).result
    cond.operands[0] = both


def _constant_trip(op) -> bool:
    from diffgpu._mlir import ir

    for v in list(op.operands)[:3]:
        d = v.maybe_downcast()
        if not (isinstance(d, ir.OpResult) and d.owner.operation.name == "arith.constant"):
            return False
    return True


def for_to_while(op) -> None:
    """`scf.for %i = %lb to %ub step %s iter_args(...)` -> an `scf.while`
    over (%i, iter args...) whose condition is `%i < %ub && live`."""
    from diffgpu._mlir import arith, ir, scf

    loc, ip = op.location, ir.InsertionPoint(op)
    lb, ub, step = list(op.operands)[:3]
    inits = list(op.operands)[3:]
    types = [lb.type] + [v.type for v in inits]
    w = scf.WhileOp(types, [lb] + inits, loc=loc, ip=ip)
    before = w.before.blocks.append(*types)
    bip = ir.InsertionPoint(before)
    iv = before.arguments[0]
    signed = "unsignedCmp" not in op.attributes
    pred = arith.CmpIPredicate.slt if signed else arith.CmpIPredicate.ult
    c = arith.CmpIOp(pred, iv, ub, loc=loc, ip=bip).result
    c = arith.AndIOp(c, live(bip, loc), loc=loc, ip=bip).result
    scf.ConditionOp(c, list(before.arguments), loc=loc, ip=bip)
    after = w.after.blocks.append(*types)
    body = op.regions[0].blocks[0]
    for old, new in zip(body.arguments, after.arguments):
        old.replace_all_uses_with(new)
    for inner in [o.operation for o in body.operations]:
        after.append(inner)
    yld = after.operations[len(after.operations) - 1].operation
    yip = ir.InsertionPoint(yld)
    nxt = arith.AddIOp(after.arguments[0], step, loc=loc, ip=yip).result
    scf.YieldOp([nxt] + list(yld.operands), loc=yld.location, ip=yip)
    yld.erase()
    for old, new in zip(op.results, list(w.results)[1:]):
        old.replace_all_uses_with(new)
    op.erase()


def guard_blocks(loop) -> None:
    """Wrap the body of the entry's innermost block loop in `scf.if live`."""
    from diffgpu._mlir import ir, scf

    body = loop.regions[0].blocks[0]
    ops = [o.operation for o in body.operations]
    ops, term = ops[:-1], ops[-1]
    loc = loop.location
    ip = ir.InsertionPoint(ops[0] if ops else term)
    guard = scf.IfOp(live(ip, loc), [], loc=loc, ip=ip)
    end = scf.YieldOp([], loc=loc, ip=ir.InsertionPoint(guard.then_block)).operation
    for o in ops:
        o.move_before(end)


def instrument_loops(host_funcs) -> None:
    """Checks in the user's loops of `host_funcs` (before the entries exist)."""
    for f in host_funcs:
        whiles = walk_ops(f, ("scf.while",))
        for op in walk_ops(f, ("scf.for",)):
            if NO_CANCEL not in op.attributes and not _constant_trip(op) \
                    and not walk_ops(op, ("diffgpu.barrier",)):
                for_to_while(op)
        for op in whiles:
            if NO_CANCEL not in op.attributes:
                check_while(op)

"""Register tapes for loops with a constant trip count: unroll them first.

A value computed in a loop body reaches the reverse sweep through the tape's
per-thread stack (tape.py): local memory, and device `malloc` once it
outgrows its first words. When the trip count is a constant and the loop is
small, the function about to be differentiated (a clone made by
generate.py) gets the loop unrolled instead: every iteration's values are
then values of one block that runs at most once, which reach the reverse
sweep through one-value slots (`memref.alloca() : memref<f32>`) that LLVM
promotes to registers. No stack, no heap, no local memory.

    %r = scf.for %i = %c0 to %c3 step %c1 iter_args(%s = %s0) -> (f32) {
      %t = math.sin %s : f32
      %n = arith.addf %s, %t : f32
      scf.yield %n : f32
    }
  becomes
    %t0 = math.sin %s0 : f32
    %n0 = arith.addf %s0, %t0 : f32
    %t1 = math.sin %n0 : f32   ...   %n2 = arith.addf %n1, %t2 : f32   // %r -> %n2

Only loops with integer-constant bounds and step, at most MAX_TRIPS
iterations and at most MAX_OPS ops after unrolling (nested loops count
their unrolled size) are unrolled; inner loops first. The primal kernel
keeps its loop (only the derivative's clone is unrolled).
"""
from __future__ import annotations

from diffgpu._mlir import arith, ir
from diffgpu.lowering.common.ir_util import walk

MAX_TRIPS = 32
MAX_OPS = 1024


def _const_int(v):
    owner = v.owner
    if isinstance(owner, ir.Block):
        return None
    op = owner.operation
    if op.name != "arith.constant":
        return None
    attr = op.attributes["value"]
    if not isinstance(attr, ir.IntegerAttr):
        return None
    return ir.IntegerAttr(attr).value


def trip_count(op):
    """The constant trip count of an scf.for, or None."""
    lb, ub, step = (_const_int(op.operands[i]) for i in range(3))
    if lb is None or ub is None or step is None or step <= 0:
        return None
    return max(0, -(-(ub - lb) // step))


def _size(op) -> int:
    return len(walk(op))


def unroll_constant_loops(fn) -> int:
    """Unroll the small constant-trip-count scf.for loops of function `fn`
    (innermost first); returns how many were unrolled."""
    count = 0
    while True:
        loops = []

        def visit(o):
            if o.operation.name == "scf.for":
                loops.append(o.operation)
            return ir.WalkResult.ADVANCE

        fn.operation.walk(visit, ir.WalkOrder.POST_ORDER)  # inner loops first
        for loop in loops:
            tc = trip_count(loop)
            inner = [o for o in loops if o is not loop and _contains(loop, o)]
            if tc is None or tc > MAX_TRIPS or inner:
                continue
            if tc * _size(loop) > MAX_OPS:
                continue
            unroll(loop, tc)
            count += 1
            break  # the walk's list is stale now
        else:
            return count


def _contains(outer, inner) -> bool:
    p = inner.parent
    while p is not None:
        if p == outer:
            return True
        p = p.parent
    return False


def unroll(loop, tc: int) -> None:
    """Replace `loop` (an scf.for with constant bounds, `tc` iterations) by
    `tc` copies of its body."""
    lb, step = _const_int(loop.operands[0]), _const_int(loop.operands[2])
    iv_type = loop.operands[0].type
    values = list(loop.operands)[3:]
    with ir.InsertionPoint(loop), loop.location:
        for k in range(tc):
            iv = arith.constant(iv_type, lb + k * step)
            copy = loop.clone(ip=ir.InsertionPoint(loop))
            body = copy.regions[0].blocks[0]
            args = list(body.arguments)
            args[0].replace_all_uses_with(iv)
            for a, v in zip(args[1:], values):
                a.replace_all_uses_with(v)
            ops = list(body.operations)
            for o in ops[:-1]:
                o.operation.move_before(copy)
            values = list(ops[-1].operands)
            copy.erase()
    for r, v in zip(list(loop.results), values):
        r.replace_all_uses_with(v)
    loop.erase()

"""Calls inside a differentiated function (interprocedural reverse mode).

An active `func.call @g` becomes, in the forward sweep, a call to g's
augmented forward `@__dg_aug_g_<h>` (g's primal, pushing what g's reverse
needs onto the caller's tape, passed as two extra arguments); the reverse
sweep calls `@__dg_revt_g_<h>`, which pops those values, accumulates into
the shadows and returns the gradients of g's active scalar arguments. So g's
reverse never re-runs g nor re-reads memory g (or its caller) overwrote.

    %r = func.call @g(%x, %A)       // forward: func.call @__dg_aug_g_<h>(%x, %A, %tape, %n)
    // reverse: %dx = func.call @__dg_revt_g_<h>(%x, %A, %dA, %dr, %tape, %n)
"""
from __future__ import annotations

from diffgpu._mlir import func, ir

from . import build as B
from .activity import walk_ops
from .partials import Rule


class CallInfo:
    def __init__(self, rev_name, acts, nargs, result_types, grad_types):
        self.rev_name, self.acts, self.nargs = rev_name, acts, nargs
        self.result_types, self.grad_types = result_types, grad_types


def rewrite_calls(R, target, entry):
    """Replace the active calls of the forward sweep by augmented calls."""
    for op in list(R.act.ops):
        if op.operation.name != "func.call":
            continue
        args, results = list(op.operands), list(op.results)
        if not (any(R.is_active(a) or R.is_dup(a) for a in args)
                or any(R.is_active(r) for r in results)):
            continue
        callee = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
        acts = ["dup" if R.is_dup(a) else "active" if R.is_active(a) else "const" for a in args]
        names = R.gen.split(callee, acts, target, op)
        if names is None:
            continue
        aug, rev, grad_types = names
        h, n = R.tape.fwd_holder()
        with ir.InsertionPoint(op), op.location:
            new = func.CallOp([r.type for r in results], ir.FlatSymbolRefAttr.get(aug),
                              args + [h, n])
        for old, nr in zip(results, new.results):
            if R.is_active(old):
                R.act.active.add(nr)
            old.replace_all_uses_with(nr)
        R.call_info[new.operation] = CallInfo(rev, acts, len(args),
                                              [r.type for r in results], grad_types)
        op.operation.erase()
    R.act.ops = walk_ops(entry)


def _call_needs(R, op):
    return op.operation in R.call_info


def _call_reverse(R, op):
    info = R.call_info[op.operation]
    args = list(op.operands)[:info.nargs]
    primals = [R.need(a) for a in args]
    shadows = [R.shadow(a) for a, k in zip(args, info.acts) if k == "dup"]
    seed = [R.adj_or_zero(r) if B.is_float(r.type) else B.zero(r.type) for r in op.results]
    h, n = R.tape.rev_holder()
    call = func.CallOp(list(info.grad_types), ir.FlatSymbolRefAttr.get(info.rev_name),
                       primals + shadows + seed + [h, n])
    grads = iter(call.results)
    for a, k in zip(args, info.acts):
        if k == "active":
            R.add_adj(a, next(grads))


REVERSE = {"func.call": Rule(_call_needs, _call_reverse)}

"""Calls inside a differentiated function (interprocedural reverse mode).

An active `func.call @g` becomes, in the forward sweep, a call to g's
augmented forward `@__dg_aug_g_<h>` (g's primal, pushing what g's reverse
needs onto the caller's tape, passed as two extra arguments); the reverse
sweep calls `@__dg_revt_g_<h>`, which pops those values, accumulates into
the shadows and returns the gradients of g's active scalar arguments. So g's
reverse never re-runs g nor re-reads memory g (or its caller) overwrote.

    %r = func.call @g(%x, %A)       // forward: func.call @__dg_aug_g_<h>(%x, %A, %tape, %n)
    // reverse: %dx = func.call @__dg_revt_g_<h>(%x, %A, %dA, %dr, %tape, %n)

The forward rewrite runs before the sweep (ReverseSweep.augment_calls), which
records a CallInfo per augmented call; the rule reads it back through the
context (`call_info_of`, `reverse_tape_holder`).
"""
from __future__ import annotations

from diffgpu._mlir import func, ir
from diffgpu.dialects import names as N

from diffgpu.lowering.autodiff import build as B
from diffgpu.lowering.autodiff.rules.partials import Rule


class CallInfo:
    def __init__(self, rev_name, acts, nargs, result_types, grad_types):
        self.rev_name, self.acts, self.nargs = rev_name, acts, nargs
        self.result_types, self.grad_types = result_types, grad_types


def _call_needs(R, op):
    return R.call_info_of(op) is not None


def _call_reverse(R, op):
    info = R.call_info_of(op)
    args = list(op.operands)[:info.nargs]
    primals = [R.need(a) for a in args]
    shadows = [R.shadow(a) for a, k in zip(args, info.acts) if k in ("dup", N.DUP32)]
    seed = [R.adj_or_zero(r) if B.is_float(r.type) else B.zero(r.type) for r in op.results]
    h, n = R.reverse_tape_holder()
    call = func.CallOp(list(info.grad_types), ir.FlatSymbolRefAttr.get(info.rev_name),
                       primals + shadows + seed + [h, n])
    grads = iter(call.results)
    for a, k in zip(args, info.acts):
        if k == "active":
            R.add_adj(a, next(grads))


REVERSE = {"func.call": Rule(_call_needs, _call_reverse)}

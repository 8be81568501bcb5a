"""Inlining of generated derivative functions before differentiating again.

A function about to be differentiated (a clone made by generate.py) may call
derivative functions this pass generated earlier (`@__dg_rev_*`, `@__dg_fwd_*`,
the `@__dg_aug_*` / `@__dg_revt_*` pairs of calls). Their bodies are copied
into the clone first, so that every tape word's push and pop, and every slot
they use, sit in the one function the outer derivative is built from
(rules/tape.py, locals.py). Allocations without operands are hoisted to the
clone's entry block: an `alloca` inside a loop would grow the stack at every
iteration. Generated functions are never recursive (generate.py rejects it).

    func.call @__dg_rev_f_1a2b(%x, %d)   ->   <body of @__dg_rev_f_1a2b, its
                                              arguments replaced by %x, %d>
"""
from __future__ import annotations

from diffgpu._mlir import ir

from diffgpu.lowering.common.ir_util import callee as callee_of

from diffgpu.lowering.autodiff.activity import walk_ops

PREFIX = "__dg_"
HOIST = ("memref.alloca",)


def _generated_body(gen, name):
    """@name is a generated function with a body."""
    if not (name or "").startswith(PREFIX):
        return False
    fn = gen.lookup(name)
    return fn is not None and len(fn.regions[0].blocks) > 0


def inline_generated(gen, fn):
    """Inline, transitively, the calls of `fn` to generated functions."""
    entry = fn.regions[0].blocks[0]
    while True:
        calls = [op for op in walk_ops(entry) if _generated_body(gen, callee_of(op))]
        if not calls:
            return
        for call in calls:
            _inline(gen, entry, call)


def _inline(gen, entry, call):
    src = gen.lookup(callee_of(call))
    copy = src.operation.clone(ip=ir.InsertionPoint(gen.body))
    body = copy.regions[0].blocks[0]
    for arg, v in zip(list(body.arguments), list(call.operands)):
        arg.replace_all_uses_with(v)
    ops = list(body.operations)
    ret = ops[-1]
    first = list(entry.operations)[0]
    for op in ops[:-1]:
        if op.operation.name in HOIST and not len(op.operands) \
                and call.operation.block != entry:
            op.operation.move_before(first)
        else:
            op.operation.move_before(call)
    for old, new in zip(list(call.results), list(ret.operands)):
        old.replace_all_uses_with(new)
    call.operation.erase()
    copy.erase()

"""The rewrite of `diffgpu-coarsen` (lowering/coarsen/coarsen.py decides; this
module builds): the group test, the in-range path (the copies, guards known
to hold replaced by their bodies, summed adds added once) and the
out-of-line tail.

    %b = %g * 4
    scf.if (every bound holds for the group) {      _all_hold / _bound_holds
      [scf.if (its nested bounds hold) {]           _copies, known = all guards
        S(%b); S(%b + 1); S(%b + 2); S(%b + 3)      guards replaced by their bodies
      [} else { the 4 copies, nested guards tested }]
    } else { func.call @k__dg_tail(args..., %b) }   _tail_function
"""
from __future__ import annotations

from contextlib import nullcontext

from diffgpu.dialects import names as N
from diffgpu.lowering.coarsen import bounds as B
from diffgpu.lowering.coarsen.reduce import pairwise_sum, reduction_atomic, slot_atomic
from diffgpu.lowering.coarsen.reduce import defining_op as _op
from diffgpu.lowering.common.ir_util import precedes, walk

COARSEN = 4
#: a function LLVM must not inline (lowering/gpu/nvvm.py sets `no_inline`)
NOINLINE_ATTR = "diffgpu.noinline"


def _walk(op) -> list:
    return walk(op, include_self=False)


def _dim(op):
    from diffgpu._mlir import ir
    return ir.IntegerAttr(op.attributes["dim"]).value


def tail_name(entry: str, factor: int) -> str:
    return f"{entry}__dg_tail" + ("" if factor == COARSEN else f"_x{factor}")


def coarsen(fn, found, factor: int) -> None:
    from diffgpu._mlir import arith, func, ir, scf

    gids, guards = found.gids, found.guards
    block = fn.regions[0].blocks[0]
    index = ir.IndexType.get()
    _scale_grid(fn, factor)
    ops = [o.operation for o in block.operations]
    rest = [o for o in ops[:-1] if not _in_gid_chain(o, gids, found.chain)]
    first = guards[0]
    for g in gids:  # a later guard's g (pure geometry arithmetic) moves up
        _hoisted(g, first)
    with ir.InsertionPoint(first), first.location:
        c = arith.constant(index, factor)
        bases = [arith.muli(g, c) for g in gids]
        top = {g: found.known[g] for g in guards}
        all_in = _all_hold([b for bs in top.values() for b in bs], gids, bases, factor)
        nested = _all_hold([b for g, bs in found.known.items() if g not in top for b in bs],
                           gids, bases, factor)
        tail = _tail_function(fn, gids, rest, factor)
        branch = None
        if _sign_test(fn, rest):  # base >= 0 first (always true): see _sign_test
            branch = scf.IfOp(arith.cmpi(arith.CmpIPredicate.sge, bases[0],
                                         arith.constant(index, 0)), [], has_else=True)
            with ir.InsertionPoint(branch.else_block):
                func.CallOp([], ir.FlatSymbolRefAttr.get(tail), list(block.arguments) + bases)
                scf.YieldOp([])
        with ir.InsertionPoint(branch.then_block) if branch else nullcontext():
            inner = scf.IfOp(all_in, [], has_else=True)
            with ir.InsertionPoint(inner.then_block):  # the whole group in range
                if nested is None:
                    _copies(rest, found.known, found, fn, bases, factor)
                else:  # nested bound guards: decided per group too, else tested per copy
                    split = scf.IfOp(nested, [], has_else=True)
                    with ir.InsertionPoint(split.then_block):
                        _copies(rest, found.known, found, fn, bases, factor)
                        scf.YieldOp([])
                    with ir.InsertionPoint(split.else_block):
                        _copies(rest, top, found, fn, bases, factor)
                        scf.YieldOp([])
                scf.YieldOp([])
            with ir.InsertionPoint(inner.else_block):  # the tail: a call (see _tail_function)
                func.CallOp([], ir.FlatSymbolRefAttr.get(tail), list(block.arguments) + bases)
                scf.YieldOp([])
            if branch:
                scf.YieldOp([])
        branch = branch or inner
    # the originals after the new branch (guards, the epilogue, the ops
    # between: each path has its own copies), last first
    later = [o.operation for o in block.operations]
    later = later[later.index(branch.operation) + 1:-1]
    for op in later[::-1]:
        op.erase()


def _sign_test(fn, rest) -> bool:
    """Test the group's first index for `>= 0` before the bounds? With
    32-bit indices (launch fact `index32`) each copy's index `base + k` is
    sign-extended for its address; LLVM turns some of those extensions into
    zero extensions (where the bounds show the index is not negative) and
    not others, and then cannot see that the copies' addresses are
    adjacent: the stencil's gradient stored two `st.global.v2`. Testing
    `base >= 0` first (a thread's index always is) makes every extension
    the same. Not for kernels that sum atomics: the block sums after the
    pass would be built once per path."""
    from diffgpu.lowering.facts.attrs import read_facts

    facts = read_facts(fn) or {}
    return bool(facts.get("index32")) and not any(
        o.name == N.ATOMIC_ADD for op in rest for o in [op] + _walk(op))


def _bound_holds(bound, gids, bases, factor: int):
    """i1 at the insertion point: `bound` holds at the group's end that is
    hardest for it (the last element for an upper bound, else the first),
    hence for every element of the group (lowering/coarsen/bounds.py)."""
    from diffgpu._mlir import arith, ir

    index = ir.IndexType.get()
    g_a, chain = B.monotone_chain(bound.a, gids)
    base = bases[[i for i, g in enumerate(gids) if g == g_a][0]]
    at = arith.addi(base, arith.constant(index, factor - 1)) if bound.upper else base
    mapping = [(g_a, at)]
    for o in chain:  # its constants may sit in a guard's body: recomputed here
        for v in o.operands:
            B.materialize(v, mapping, _clone)
        _clone(o, mapping)
    a = _mapped(bound.a, mapping)
    # (the comparison's operand now: _scale_grid may have replaced a grid_dim(0) there)
    n = B.materialize(bound.cmp.operands[1 if bound.a_lhs else 0], mapping, _clone)
    pred = arith.CmpIPredicate(ir.IntegerAttr(bound.cmp.attributes["predicate"]).value)
    return arith.cmpi(pred, a, n) if bound.a_lhs else arith.cmpi(pred, n, a)


def _all_hold(bounds, gids, bases, factor: int):
    """i1: every bound of `bounds` holds for the whole group (None: none)."""
    from diffgpu._mlir import arith

    out = None
    for bound in bounds:
        ok = _bound_holds(bound, gids, bases, factor)
        out = ok if out is None else arith.andi(out, ok)
    return out


def _copies(rest, known, found, fn, bases, factor: int) -> None:
    """The in-range path: `factor` copies of `rest`, the guards in `known`
    replaced by their bodies; the reduction and slot adds once, of the
    copies' pairwise sum."""
    from diffgpu._mlir import arith, ir

    index = ir.IndexType.get()
    sums = {}  # reduction atomic -> its value in each copy
    for k in range(factor):
        mapping = [(g, arith.addi(b, arith.constant(index, k)))
                   for g, b in zip(found.gids, bases)]
        for o in rest:
            _emit(o, mapping, known, found, fn, sums)
    for atomic, values in sums.items():  # one add of the group's (pairwise) sum
        total = pairwise_sum(values)
        _clone(atomic, [(atomic.operands[1], total)] + mapping)


def _emit(op, mapping, known, found, fn, sums) -> None:
    """One copy of `op` in the in-range path: a guard in `known` (it holds)
    is replaced by its body (its reduction atomics collected in `sums`)."""
    if slot_atomic(op):  # the copies' gradients summed, added once
        sums.setdefault(op, []).append(_mapped(op.operands[1], mapping))
        return
    if op not in known:
        _clone(op, mapping)
        return
    for inner in [x.operation for x in op.regions[0].blocks[0].operations][:-1]:
        if op in found.guards and reduction_atomic(inner, op, fn, found.gids):
            sums.setdefault(inner, []).append(_mapped(inner.operands[1], mapping))
        else:
            _emit(inner, mapping, known, found, fn, sums)


def _scale_grid(fn, factor: int) -> None:
    """grid_dim(0) -> grid_dim(0) * factor: the original launch's extent
    (the runtime launches grid x / factor blocks)."""
    from diffgpu._mlir import arith, ir

    for op in [o.operation for o in fn.regions[0].blocks[0].operations]:
        if op.name == N.GRID_DIM and _dim(op) == 0:
            with ir.InsertionPoint.after(op), op.location:
                scaled = arith.muli(op.results[0], arith.constant(ir.IndexType.get(), factor))
            for use in list(op.results[0].uses):
                user = use.owner.operation
                if user != scaled.owner.operation:
                    user.operands[use.operand_number] = scaled


def _mapped(v, mapping):
    for old, rep in mapping:
        if v == old:
            return rep
    return v


def _hoisted(n, before):
    """`n` (not computed from g), available before op `before`: its defining
    ops (pure, operands not from g) move up when they come later."""
    o = _op(n)
    if o is None or o.block != before.block or precedes(o, before):
        return n
    for v in o.operands:
        _hoisted(v, before)
    o.move_before(before)
    return n


def _tail_function(fn, gids, rest, factor: int) -> str:
    """A device function doing the guarded copies of the group (the launch's
    last, partly out-of-range group): `@<kernel>__dg_tail(kernel arguments...,
    bases...)`, kept out of line (`diffgpu.noinline`): inlined, LLVM would
    merge its last copy with the in-range path's and split their vector
    accesses."""
    from diffgpu._mlir import arith, func, ir

    from diffgpu.lowering.common import targets

    name = tail_name(fn.attributes["sym_name"].value, factor)
    index = ir.IndexType.get()
    ins = [a.type for a in fn.regions[0].blocks[0].arguments] + [index] * len(gids)
    with ir.InsertionPoint(fn), fn.location:
        tail = func.FuncOp(name, ir.FunctionType.get(ins, []))
    tail.attributes["sym_visibility"] = ir.StringAttr.get("private")
    targets.set_target(tail, targets.get_target(fn))
    tail.attributes[NOINLINE_ATTR] = ir.UnitAttr.get()
    entry = tail.add_entry_block()
    targs = list(entry.arguments)
    kargs = list(fn.regions[0].blocks[0].arguments)
    with ir.InsertionPoint(entry), fn.location:
        for k in range(factor):
            mapping = list(zip(kargs, targs))
            mapping += [(g, arith.addi(b, arith.constant(index, k)))
                        for g, b in zip(gids, targs[len(kargs):])]
            for o in rest:
                _clone(o, mapping)
        func.ReturnOp([])
    return name


def _in_gid_chain(op, gids, chain) -> bool:
    """Does `op` only form g (each copy uses its own g instead)?"""
    if any(r == g for r in op.results for g in gids):
        return True
    return op in chain and all(u.owner.operation in chain for r in op.results for u in r.uses)


def _clone(op, mapping: list) -> None:
    """Clone `op` at the current insertion point, its operands (and its
    nested ops') remapped by `mapping` [(old value, new value)]; the clone's
    results join the mapping."""
    from diffgpu._mlir import ir

    new = op.clone(ip=ir.InsertionPoint.current)
    for o in [new] + _walk(new):
        for i, v in enumerate(o.operands):
            for old, rep in mapping:
                if v == old:
                    o.operands[i] = rep
                    break
    mapping.extend(zip(op.results, new.results))

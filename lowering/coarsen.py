"""`diffgpu-coarsen`: each thread of an elementwise kernel handles COARSEN
consecutive elements, so that its loads and stores become vector accesses.

Only where the semantics are provably unchanged. `eligible(fn)` (run by
`mark_facts` on the frontend's IR, before any pass) accepts a kernel when:

- its body is pure index arithmetic (arith, `memref.dim`, geometry) ending
  in ONE guard `scf.if %c` (no else, no results) followed by `return`, with
  `%c = arith.cmpi slt, A, N`, A computed from the global id `g` of
  dimension 0 (`block_id(0) * block_dim(0) + thread_id(0)`) by adding
  constants and `index_cast`s only (A grows with g: A(4t'+3) < N implies
  A(4t'+k) < N) and N not computed from `g`;
- the geometry of dimension 0 is used only to form `g` (no `thread_id(0)`
  alone, no `grid_dim(0)`, no `block_dim(0)` elsewhere);
- the guarded body has no barrier, shared memory, atomic, call or
  derivative op: threads never communicate, so running the bodies of
  threads 4t .. 4t+3 one after the other in one thread is one of the
  executions the original launch allowed.

The launch facts must also hold: a 1-D launch (`unit_dims = [1, 2]`) whose
grid x extent is a multiple of COARSEN (`grid_div`). Then the runtime
launches grid x / COARSEN blocks (the payload's "coarsen") and the pass
rewrites the kernel (thread t' covers g = 4t' .. 4t'+3, exactly the
original threads):

    %g = block_id * block_dim + thread_id            %g = (same)
    %c = arith.cmpi slt, %g, %n                      %b = %g * 4
    scf.if %c { S(%g) }                     =>       scf.if (%b + 3 < %n) { S(%b); S(%b + 1); S(%b + 2); S(%b + 3) }
                                                     else { scf.if (%b < %n) { S(%b) } ... 4 guarded copies }

The unguarded copies sit in one block: with contiguous, 16-byte aligned
arrays (launch facts) LLVM merges their accesses into `ld.global.v4` /
`st.global.v4`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from diffgpu.lowering.registry import ModulePass, register_pass

COARSEN = 4
COARSEN_ATTR = "diffgpu.coarsen"
_GEOM0 = ("diffgpu.thread_id", "diffgpu.block_id", "diffgpu.block_dim", "diffgpu.grid_dim")
_FORBIDDEN = ("diffgpu.barrier", "diffgpu.shared_alloc", "diffgpu.atomic_add", "func.call",
              "diffgpu.autodiff", "diffgpu.fwddiff", "memref.atomic_rmw", "gpu.barrier")
_PREFIX_OK = ("arith.", "index.")


def _op(v):
    from diffgpu._mlir import ir
    owner = v.owner
    return None if isinstance(owner, ir.Block) else owner.operation


def _dim(op):
    from diffgpu._mlir import ir
    return ir.IntegerAttr(op.attributes["dim"]).value


def _walk(op) -> list:
    from diffgpu._mlir import ir
    out = []

    def visit(o):
        out.append(o.operation)
        return ir.WalkResult.ADVANCE

    op.walk(visit, ir.WalkOrder.PRE_ORDER)
    return out[1:]


def analyze(fn):
    """(gids, guard, A, N) of an eligible kernel `fn`, else None (see the
    module docstring). gids: the results forming g; A: the compared value."""
    from diffgpu.lowering.autodiff.elision import global_dim

    block = fn.regions[0].blocks[0]
    ops = [o.operation for o in block.operations]
    if len(ops) < 2 or ops[-1].name != "func.return" or ops[-2].name != "scf.if":
        return None
    guard = ops[-2]
    if len(guard.results) or len(guard.regions[1].blocks):
        return None
    gids = [o.results[0] for o in ops if o.name == "arith.addi" and global_dim(o.results[0]) == 0]
    if not gids:
        return None
    chain = set()
    for g in gids:
        add = _op(g)
        chain.add(add)
        for v in add.operands:
            chain.add(_op(v))
            if _op(v).name == "arith.muli":
                chain.update(_op(w) for w in _op(v).operands)
    for o in ops[:-2]:
        if o.name in _GEOM0 and _dim(o) == 0:
            if o not in chain:
                return None
            if any(u.owner.operation not in chain for u in o.results[0].uses):
                return None  # block_dim(0) (or thread_id(0)) used outside g
        elif not (o.name.startswith(_PREFIX_OK) or o.name in ("memref.dim",) or o.name in _GEOM0):
            return None
    for o in _walk(guard):
        if o.name in _FORBIDDEN or (o.name in _GEOM0 and _dim(o) == 0):
            return None
    cond = _op(guard.operands[0])
    if cond is None or cond.name != "arith.cmpi":
        return None
    from diffgpu._mlir import ir
    pred = ir.IntegerAttr(cond.attributes["predicate"]).value
    if pred != 2:  # slt (arith::CmpIPredicate): A grows with g as a signed value
        return None
    a, n = cond.operands[0], cond.operands[1]
    if _monotone_chain(a, gids) is None or _depends_on(n, gids):
        return None
    return gids, guard, a, n


def _monotone_chain(a, gids):
    """The ops computing `a` from a gid (first to last) when each adds a
    constant or casts index <-> integer (so `a` grows with the gid), else None."""
    chain = []
    v = a
    while not any(v == g for g in gids):
        o = _op(v)
        if o is None or len(chain) > 8:
            return None
        if o.name == "arith.index_cast":
            v = o.operands[0]
        elif o.name == "arith.addi":
            x, y = o.operands[0], o.operands[1]
            if _const(y) is not None:
                v = x
            elif _const(x) is not None:
                v = y
            else:
                return None
        else:
            return None
        chain.append(o)
    return v, chain[::-1]


def _const(v):
    o = _op(v)
    if o is not None and o.name == "arith.index_cast":
        o = _op(o.operands[0])
    return o if o is not None and o.name == "arith.constant" else None


def _depends_on(v, gids) -> bool:
    todo, seen = [v], 0
    while todo and seen < 1000:
        seen += 1
        x = todo.pop()
        if any(x == g for g in gids):
            return True
        o = _op(x)
        if o is not None:
            todo.extend(o.operands)
    return bool(todo)


def eligible(fn) -> bool:
    return analyze(fn) is not None


@register_pass
@dataclass
class Coarsen(ModulePass):
    """See the module docstring: kernels marked `diffgpu.coarsen = N`."""
    name: ClassVar[str] = "diffgpu-coarsen"
    summary: ClassVar[str] = ("give each thread of an eligible elementwise kernel COARSEN "
                              "consecutive elements (launch facts decide)")

    def run(self, module) -> None:
        from diffgpu._mlir import ir
        for op in module.regions[0].blocks[0].operations:
            op = op.operation
            if op.name == "func.func" and COARSEN_ATTR in op.attributes:
                found = analyze(op)
                if found is None:
                    self.error(op, "internal: a kernel marked for coarsening is not eligible")
                    continue
                coarsen(op, found, ir.IntegerAttr(op.attributes[COARSEN_ATTR]).value)


def coarsen(fn, found, factor: int) -> None:
    from diffgpu._mlir import arith, ir, scf

    gids, guard, a, n = found
    block = fn.regions[0].blocks[0]
    ops = [o.operation for o in block.operations]
    rest = [o for o in ops[:-1] if not _in_gid_chain(o, gids)]
    index = ir.IndexType.get()
    with ir.InsertionPoint(guard), guard.location:
        c = arith.constant(index, factor)
        bases = [arith.muli(g, c) for g in gids]
        g_a, chain = _monotone_chain(a, gids)
        base_a = bases[[i for i, g in enumerate(gids) if g == g_a][0]]
        mapping = [(g_a, arith.addi(base_a, arith.constant(index, factor - 1)))]
        for o in chain:  # a of the last element: the fast path's condition
            _clone(o, mapping)
        last_a = [r for v, r in mapping if v == a][0]
        cond = _op(guard.operands[0])
        pred = arith.CmpIPredicate(ir.IntegerAttr(cond.attributes["predicate"]).value)
        all_in = arith.cmpi(pred, last_a, n)
        branch = scf.IfOp(all_in, [], has_else=True)
        for blk, fast in ((branch.then_block, True), (branch.else_block, False)):
            with ir.InsertionPoint(blk):
                for k in range(factor):
                    gk = [arith.addi(b, arith.constant(index, k)) for b in bases]
                    mapping = list(zip(gids, gk))
                    for o in rest:
                        if o == guard and fast:  # the guard holds: its body, inlined
                            for inner in [x.operation for x in
                                          guard.regions[0].blocks[0].operations][:-1]:
                                _clone(inner, mapping)
                        else:
                            _clone(o, mapping)
                scf.YieldOp([])
    guard.erase()


def _in_gid_chain(op, gids) -> bool:
    if op.name in _GEOM0 and _dim(op) == 0:
        return True
    return any(r == g for r in op.results for g in gids) or (
        op.name == "arith.muli" and all(any(u.owner.operation.results[0] == g for g in gids)
                                        for u in op.results[0].uses))


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

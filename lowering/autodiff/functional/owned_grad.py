"""The `grad` rewrite of an input read at several constant offsets of global
ids (`x[r, j]`, `x[r, j + 256]`, ...: owned.py), in a generated reverse
function (kinds.py calls it).

Each offset tuple gets a per-thread register (a rank-0 `memref.alloca`,
zero at entry); the shadow's updates at that offset (their index
`c * gid(d) + k` per component, outside loops: the reverse sweep's
constant-trip loops are unrolled) (`diffgpu.atomic_add`,
a load or a store of the shadow) go to it; at exit each register is stored
once to `shadow[c * gid(d) + k, ...]` when that index is in bounds. The caller
(dg.vjp) guarantees that no two threads share an element (owned.unique)
and zero-fills the gradient when the launch does not reach every element
(owned.covered).

    "diffgpu.atomic_add"(%dx, %e1, %r, %j256)    (%j256 = gid(0) + 256)
  becomes
    %a1[] = %a1[] + %e1           ... and at exit
    scf.if (0 <= gid(0) + 256 < dim(%x, 1) and ...) { memref.store %a1[], %dx[%r, %j256'] }
"""
from __future__ import annotations

from diffgpu._mlir import arith, ir, memref, scf

from diffgpu.dialects import names as N
from diffgpu.dialects import ops as dg_ops
from diffgpu.lowering.autodiff import build as B
from diffgpu.lowering.common import half as HALF
from diffgpu.lowering.autodiff.functional import owned


def _owner(use):
    return use.owner.operation if hasattr(use.owner, "operation") else use.owner


def _indices(op):
    """The index operands of a load, store or atomic_add of the shadow."""
    ops = list(op.operands)
    if op.name == "memref.load":
        return ops[1:]
    if op.name == "memref.store":
        return ops[2:]
    return ops[N.ATOMIC_MEMREF + 2:]


def rewrite(fn, entry, prim, sh, pat):
    """Rewrite `sh`'s uses as above; a text saying why not (nothing changed), or None."""
    dims, offs = tuple(pat["dims"]), [tuple(o) for o in pat["offsets"]]
    scales = tuple(pat.get("scales") or [1] * len(dims))
    uses = []
    for use in sh.uses:
        op, i = _owner(use), use.operand_number
        if op.name == "memref.dim":
            continue
        ok = ((op.name == "memref.load" and i == 0) or (op.name == "memref.store" and i == 1)
              or (op.name == N.ATOMIC_ADD and i == N.ATOMIC_MEMREF
                  and not list(op.results[0].uses)))
        if not ok:
            return f"its shadow is used by '{op.name}'"
        found = owned.offsets(_indices(op), op, fn)
        if (found is None or found[:2] != (dims, scales) or len(found[2]) != 1
                or found[2][0] not in offs):
            return f"its shadow is updated at an index other than its loads' ('{op.name}')"
        uses.append((op, found[2][0]))
    elem = B.memref_elem(sh.type)
    reg = HALF.register_type(elem)  # float32 for a 16-bit shadow: one rounding, written once
    first, last = list(entry.operations)[0], list(entry.operations)[-1]
    accs = {}
    with ir.InsertionPoint(first), fn.location:
        for o in offs:
            accs[o] = memref.alloca(ir.MemRefType.get([], reg), [], [])
            memref.store(B.zero(reg), accs[o], [])
    for op, o in uses:
        acc = accs[o]
        with ir.InsertionPoint(op), op.location:
            if op.name == "memref.load":
                HALF.load_register(op.results[0], acc)
            elif op.name == "memref.store":
                memref.store(HALF.into_register(op.operands[0], reg), acc, [])
            else:
                memref.store(arith.addf(memref.load(acc, []),
                                        HALF.into_register(op.operands[1], reg)), acc, [])
        op.erase()
    with ir.InsertionPoint(last), fn.location:
        gids = [arith.addi(arith.muli(dg_ops.geometry("block_id", d),
                                      dg_ops.geometry("block_dim", d)),
                           dg_ops.geometry("thread_id", d)) for d in dims]
        gids = [g if c == 1 else arith.muli(g, B.idx(c)) for g, c in zip(gids, scales)]
        exts = [memref.dim(prim, B.idx(a)) for a in range(len(dims))]
        for o in offs:
            _write_back(sh, accs[o], gids, exts, o)
    return None


def _write_back(sh, acc, gids, exts, o) -> None:
    i64 = B.i64()
    cond, idx = None, []
    for g, ext, k in zip(gids, exts, o):
        at = arith.addi(g, B.idx(k)) if k else g
        idx.append(at)
        v = arith.index_cast(i64, at)
        c = arith.cmpi(arith.CmpIPredicate.slt, v, arith.index_cast(i64, ext))
        if k < 0:
            c = arith.andi(c, arith.cmpi(arith.CmpIPredicate.sge, v, arith.constant(i64, 0)))
        cond = c if cond is None else arith.andi(cond, c)
    branch = scf.IfOp(cond, [], has_else=False)
    with ir.InsertionPoint(branch.then_block):
        memref.store(HALF.narrow(memref.load(acc, []), B.memref_elem(sh.type)), sh, idx)
        scf.YieldOp([])


__all__ = ["rewrite"]

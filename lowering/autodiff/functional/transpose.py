"""The `grad` kind for a 1-D stencil input: the reverse function transposed
into a gather (every gradient element written once, no atomic, no zero fill).

Reverse mode turns `y[i] = sum_k c_k x[i + k]` into the scatter
`dx[i + k] += c_k dy[i]`. Thread `j` instead computes what each source
thread `i = j - k` would have added to `dx[j]`, for every offset `k`, and
writes `dx[j]` once:

    acc = 0
    <the reverse body as thread j, with its dx adds erased>
    for k in offsets:                  // unrolled: one clone of the body each
      if j - k >= 0 (k > 0) / j - k < grid_dim(0) * block_dim(0) (k < 0):
        <the whole reverse body, as thread j - k>   // its global ids -> j - k
        // its add dx[(j - k) + k] += v becomes acc += v; other offsets' adds
        // and every write outside private allocas are dropped from the clone
    if j < dim(x, 0): dx[j] = acc

(thread j - k exists: the other side of its test holds since thread j
does). Every guard is then an affine bound on the one global id j, so
`diffgpu-coarsen` can give a thread 4 consecutive j: one vector store of
dx, one vector load of dy and its two neighbours.

Each clone replays the source thread's whole computation (its guards, its
tape, its loads of `x` and `dy`), so boundary guards and nonlinear stencils
need no re-derivation: the clone adds exactly what thread `j - k` added to
`dx[j]`. So the adds may lie in different branches (a heat step's interior
`x[i - 1]`, `x[i]`, `x[i + 1]` and its ends' `x[i]`): the clone of offset k
keeps every add at offset k, in whichever branch, and runs the branch its
source thread took. Loads the result does not need (e.g. `x` in a linear stencil) are
removed by canonicalisation; what stays is `dy[j - k]` per offset (cached
neighbours) and one store per element.

Legal (else `transpose` returns False and changes nothing) when
1. `dx` is rank 1 and used only by `memref.dim` and by `diffgpu.atomic_add`s
   with unused results at `gid(0) + k` (k an integer constant, through index
   casts and the tape: stencil_adjoint.offset_of). With no add at all (the
   stencil's value never reaches an active result: `t = x[i + 1]` unused)
   the gradient is zero: `x` loaded only at `gid(0) + k` is enough, and
   each thread writes its `dx[j] = 0`;
2. every op of the function is arithmetic, `scf` control flow, a geometry
   op, a load, a store, an alloca, `memref.dim` or an atomic add (no call,
   no barrier, no shared memory), and no array the function writes (but
   private allocas) is also read in it (so the clones' dropped writes are
   unobservable to them);
3. `thread_id(0)` is used only in global ids `block_id(0) * block_dim(0) +
   thread_id(0)` (so shifting it shifts the thread's identity and nothing
   else).
The caller (`dg.vjp`, python/diffgpu/hostdiff/plan.py) guarantees the rest at launch:
a 1-D launch (other dimensions one thread, one block) whose threads cover
every element of `x` (so every `dx[j]` that receives a contribution has a
thread `j` to write it).
"""
from __future__ import annotations

from diffgpu._mlir import arith, ir, memref, scf

from diffgpu.dialects import names as N
from diffgpu.dialects import ops as dg_ops
from diffgpu.lowering.common.ir_util import walk
from diffgpu.lowering.facts.indices import global_dim, offset_of

from diffgpu.lowering.autodiff import build as B
from diffgpu.lowering.common import half as HALF
from diffgpu.lowering.autodiff.functional import gather

#: op names a transposed function may contain besides arith./math./scf.
_ALLOWED = {"memref.load", "memref.store", "memref.alloca", "memref.dim", "func.return",
            "func.func", N.ATOMIC_ADD} | set(N.GEOMETRY)


def _adds(sh):
    """{add op: k} for the uses of `sh` (rule 1), or None."""
    if ir.MemRefType(sh.type).rank != 1:
        return None
    adds = {}
    for use in sh.uses:
        op = gather.owner(use)
        if op.name == "memref.dim":
            continue
        if (op.name != N.ATOMIC_ADD or use.operand_number != N.ATOMIC_MEMREF
                or list(op.results[0].uses) or len(op.operands) != 3):
            return None
        off = offset_of(op.operands[2])
        if off is None or off[0] != 0:
            return None
        adds[op] = off[1]
    return adds


def _stencil_loads(prim) -> bool:
    """`prim` is loaded, and only at `gid(0) + k` (a 1-D stencil's loads)."""
    loads = [gather.owner(u) for u in prim.uses if gather.owner(u).name == "memref.load"]
    return bool(loads) and all(
        len(op.operands) == 2 and (offset_of(op.operands[1]) or (None,))[0] == 0
        for op in loads)


def plain(fn) -> bool:
    """Every op of `fn` is one rule 2 allows, and rule 3 holds (also asked
    of the primal kernel by lowering/autodiff/functional/access.py before `dg.vjp` picks this
    form)."""
    for op in walk(fn.operation):
        if not (op.name.startswith(("arith.", "math.", "scf.")) or op.name in _ALLOWED):
            return False
        if op.name == N.THREAD_ID and ir.IntegerAttr(op.attributes["dim"]).value == 0:
            for use in op.results[0].uses:
                user = gather.owner(use)
                if user.name != "arith.addi" or global_dim(user.results[0]) != 0:
                    return False
    return True


def _legal_body(fn) -> bool:
    """Rules 2 and 3."""
    if not plain(fn):
        return False
    return not gather.written_and_read(fn)


def transpose(fn, prim, sh) -> bool:
    """Rewrite `fn` (the reverse function, `cot` kinds already applied) so
    that thread j writes the gradient `sh[j]` once; False (nothing changed)
    when the rules of the module docstring do not hold. Other affine
    stencils (2-D, 3-D, flattened, runtime offsets) go to gather.py."""
    adds = _adds(sh)
    if adds is None or (not adds and not _stencil_loads(prim)):
        return gather.transpose(fn, prim, sh) is True
    if not _legal_body(fn):  # also with no add (as dg.vjp's plan asks of the kernel)
        return False
    entry = fn.regions[0].blocks[0]
    offsets = sorted(set(adds.values()))
    with ir.InsertionPoint(fn.operation):  # the untouched body, once per offset
        clones = [fn.operation.clone().operation for _ in offsets]
    elem = HALF.register_type(B.memref_elem(sh.type))  # float32 for a 16-bit shadow
    first = list(entry.operations)[0]
    ret = list(entry.operations)[-1]
    with ir.InsertionPoint(first), fn.location:
        gid = _gid()
        acc = memref.alloca(ir.MemRefType.get([], elem), [], [])
        memref.store(B.zero(elem), acc, [])
    for k, clone in zip(offsets, clones):
        _gather(fn, entry, ret, acc, sh, k, clone, gid)
    for op in adds:
        op.erase()
    with ir.InsertionPoint(ret), fn.location:
        _write_back(prim, sh, acc, gid)
    _erase_dead(fn)  # once for all the clones: a walk per clone is K times the work
    return True


def _gid():
    return arith.addi(arith.muli(dg_ops.geometry("block_id", 0), dg_ops.geometry("block_dim", 0)),
                      dg_ops.geometry("thread_id", 0))


def _gather(fn, entry, ret, acc, sh, k, clone, gid) -> None:
    """Before `ret`: if thread gid - k exists, the body (`clone`, a copy of
    `fn`, consumed) as that thread, adding its contribution to `sh[gid]`
    into `acc`. The clone's global ids become `gid - k` (rule 3: the thread
    id is used only in them), so its index arithmetic stays affine in the
    kernel's one global id (lowering/coarsen/coarsen.py coarsens it). Thread gid - k
    exists when it is >= 0 (k > 0) or below the launch's thread count (k <
    0); the other side holds since thread gid does."""
    i64 = B.i64()
    index = ir.IndexType.get()
    with ir.InsertionPoint(ret), fn.location:
        shifted = arith.subi(gid, arith.constant(index, ir.IntegerAttr.get(index, k)))
        src = arith.index_cast(i64, shifted)
        ok = None
        if k > 0:
            zero = arith.constant(i64, ir.IntegerAttr.get(i64, 0))
            ok = arith.cmpi(arith.CmpIPredicate.sge, src, zero)
        elif k < 0:
            total = arith.muli(dg_ops.geometry("grid_dim", 0), dg_ops.geometry("block_dim", 0))
            ok = arith.cmpi(arith.CmpIPredicate.slt, src, arith.index_cast(i64, total))
        if ok is None:
            at = ret
        else:
            branch = scf.IfOp(ok, [], has_else=False)
            with ir.InsertionPoint(branch.then_block):
                at = scf.YieldOp([])
    centry = clone.regions[0].blocks[0]
    cargs, args = list(centry.arguments), list(entry.arguments)
    csh = cargs[args.index(sh)]
    # the add of offset k (read before the shift)
    gather.keep_own_adds(clone, csh, acc, lambda add: offset_of(add.operands[2]) == (0, k))
    for op in walk(clone):  # its global ids -> gid - k
        if op.name == "arith.addi" and global_dim(op.results[0]) == 0:
            v = shifted
            if op.results[0].type != index:
                with ir.InsertionPoint(op), op.location:
                    v = arith.index_cast(op.results[0].type, shifted)
            op.results[0].replace_all_uses_with(v)
    for a, b in zip(cargs, args):
        a.replace_all_uses_with(b)
    for op in list(centry.operations)[:-1]:
        op.move_before(at)
    clone.erase()


#: ops `_erase_dead` removes when their results are unused
_PURE = ("arith.", "index.")


def _erase_dead(fn) -> None:
    """Remove unused geometry and arithmetic (the clones' old global ids)."""
    changed = True
    while changed:
        changed = False
        for op in reversed(walk(fn.operation)):  # users before their operands
            if (op.name in N.GEOMETRY or op.name.startswith(_PURE)) and len(op.results) and all(
                    not len(list(r.uses)) for r in op.results):
                op.erase()
                changed = True


def _write_back(prim, sh, acc, g) -> None:
    """if gid < dim(prim, 0): sh[gid] = acc."""
    i64 = B.i64()
    ok = arith.cmpi(arith.CmpIPredicate.slt, arith.index_cast(i64, g),
                    arith.index_cast(i64, memref.dim(prim, B.idx(0))))
    branch = scf.IfOp(ok, [], has_else=False)
    with ir.InsertionPoint(branch.then_block):
        memref.store(HALF.narrow(memref.load(acc, []), B.memref_elem(sh.type)), sh, [g])
        scf.YieldOp([])


__all__ = ["plain", "transpose"]

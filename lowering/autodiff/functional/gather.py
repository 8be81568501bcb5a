"""The `grad` kind for a multi-dimensional or flattened affine stencil input:
the reverse function transposed into a gather, every gradient element written
once by one thread (no atomic, no zero fill).

transpose.py does this for 1-D stencils `x[gid(0) + k]` (k constant) on a
launch that covers `x`. Here the shadow adds may sit at any stencil index of
lowering/facts/affine.py: `dx[gid(d0) + o0, gid(d1) + o1, ...]` (2-D, 3-D;
`dx[i + a, j + b]`, a conv2d's image gradient) or a flattened image's
`dx[gid(0) + a * W + b]`, each offset `o` a polynomial of launch-uniform
values (constants, integer arguments, array sizes). The launch need not cover
`dx` (a valid convolution runs one thread per output, fewer than inputs):
each thread walks the elements `p` of its global id's grid-stride sequence
(`p = gid(d) + m * N(d)`, `N(d) = grid_dim(d) * block_dim(d)`, while `p <
dim(dx, pos)`), and for each gathers what the source threads `p - o` gave it:

    <the reverse body as this thread, with its dx adds erased>
    for p0 = gid(d0); p0 < dim(dx, 0); p0 += N(d0):      // once per position
      for p1 = gid(d1); p1 < dim(dx, 1); p1 += N(d1):
        acc = 0
        for o in offsets:                                  // unrolled: a clone each
          s = p - o
          if 0 <= s < N in every position:                 // thread s exists
            <the whole reverse body, as thread s>          // its global ids -> s
            // its add dx[s + o] += v becomes acc += v; other offsets' adds and
            // every write outside private allocas are dropped from the clone
        dx[p] = acc

So a thread whose global id lies inside `dx` writes its element, and the
threads at the grid's high edge also write the elements beyond it (exactly
the ones a valid convolution's last outputs read). Each clone replays the
source's guards, tape and loads, so guards and nonlinear stencils need no
re-derivation; canonicalisation drops the loads the result does not need.

Legal (else `transpose` returns a reason and changes nothing) when
1. `dx` is used only by `memref.dim` and by `diffgpu.atomic_add`s with unused
   results at stencil indices, all with the same dimension per position (or
   by no add at all: the stencil's loads reach no active result, and the
   walk, its dimensions those of the loads of `x`, writes zeros; rules 2
   and 3 are not needed then: there is no replay);
2. transpose.py's rule 2 (only arithmetic, scf, geometry, loads, stores,
   allocas, `memref.dim`, atomic adds; no array both written and read);
3. every `thread_id(d)` and `block_id(d)` of a named dimension is used only
   in that dimension's global ids.
The caller (`dg.vjp`, python/diffgpu/hostdiff/plan.py) guarantees that the
dimensions the index does not name have one thread and one block.
`stencil_dims` is the access analysis's side of rules 1-3, on the primal
kernel with its constant-trip loops unrolled as the derivative has them.
"""
from __future__ import annotations

import contextlib

from diffgpu._mlir import arith, ir, memref, scf

from diffgpu.dialects import names as N
from diffgpu.dialects import ops as dg_ops
from diffgpu.lowering.common import explain
from diffgpu.lowering.common.ir_util import walk
from diffgpu.lowering.facts.affine import Poly, materialize, stencil_index
from diffgpu.lowering.facts.indices import global_dim

from diffgpu.lowering.autodiff import build as B
from diffgpu.lowering.common import half as HALF

#: op names a transposed function may contain besides arith./math./scf.
_ALLOWED = {"memref.load", "memref.store", "memref.alloca", "memref.dim", "func.return",
            "func.func", N.ATOMIC_ADD} | set(N.GEOMETRY)
PASS = "stencil-gather"
#: marks the walk of a gather: another input's gather does not replay it
GATHERED = "diffgpu.gathered"
#: loops whose reverse needs a tape (a stack: memref.cast, device malloc on a GPU)
_LOOPS = ("scf.for", "scf.while")


def owner(use):
    """The op holding the use `use`."""
    return use.owner.operation if hasattr(use.owner, "operation") else use.owner


def is_alloca(v) -> bool:
    """Is `v` a private `memref.alloca`?"""
    return not isinstance(v.owner, ir.Block) and v.owner.operation.name == "memref.alloca"


def written_and_read(fn) -> bool:
    """Is an array other than a private alloca both written and read in `fn`?"""
    written, read = set(), set()
    for op in walk(fn.operation):
        name = op.name
        if name == "memref.store" and not is_alloca(op.operands[1]):
            written.add(op.operands[1])
        elif name == N.ATOMIC_ADD:
            written.add(op.operands[0])
        elif name == "memref.load" and not is_alloca(op.operands[0]):
            read.add(op.operands[0])
    return bool(written & read)


def keep_own_adds(clone, csh, acc, mine) -> None:
    """Erase every write of `clone` outside its private allocas, but turn
    each of its adds into `csh` for which `mine(add)` holds into `acc += value`
    (`mine` sees every add before anything is erased)."""
    drop = []  # (write, whether it is one of `mine`)
    for op in walk(clone):
        if op.name == N.ATOMIC_ADD and op.operands[0] == csh:
            drop.append((op, mine(op)))
        elif op.name == N.ATOMIC_ADD or (op.name == "memref.store"
                                         and not is_alloca(op.operands[1])):
            drop.append((op, False))
    for op, own in drop:
        if own:
            with ir.InsertionPoint(op), op.location:
                value = HALF.into_register(op.operands[1], B.memref_elem(acc.type))
                memref.store(arith.addf(memref.load(acc, []), value), acc, [])
        op.erase()


def _key(offsets) -> tuple:
    return tuple(o.key() for o in offsets)


def _adds(sh):
    """(dims, {add op: offsets key}, {key: offsets}) for the uses of `sh`
    (rule 1), or a reason (str)."""
    dims, adds, polys = None, {}, {}
    for use in sh.uses:
        op = owner(use)
        if op.name == "memref.dim":
            continue
        if op.name != N.ATOMIC_ADD or use.operand_number != N.ATOMIC_MEMREF:
            return f"'{op.name}' uses the gradient"
        if list(op.results[0].uses):
            return "an add's old value is used"
        found = stencil_index(list(op.operands)[2:])
        if not isinstance(found, tuple):
            return found.reason
        d, offs = found
        if dims is None:
            dims = d
        elif d != dims:
            return "the adds use the thread ids in different positions"
        adds[op] = _key(offs)
        polys[_key(offs)] = offs
    return dims, adds, polys


def _load_dims(prim):
    """The dimension per position of the loads of `prim`, all at stencil
    indices with the same dimensions, or a reason (str)."""
    dims = None
    for use in prim.uses:
        op = owner(use)
        if op.name == "memref.dim":
            continue
        if op.name != "memref.load":
            return f"'{op.name}' uses the input"
        found = stencil_index(list(op.operands)[1:])
        if not isinstance(found, tuple):
            return found.reason
        if dims is not None and found[0] != dims:
            return "the loads use the thread ids in different positions"
        dims = found[0]
    return dims if dims is not None else "the input is not loaded"


def _ids_only_in_gids(fn, dims) -> str | None:
    """Rule 3, or the reason it fails."""
    for op in walk(fn.operation):
        if op.name not in (N.THREAD_ID, N.BLOCK_ID):
            continue
        d = ir.IntegerAttr(op.attributes["dim"]).value
        if d not in dims:
            continue
        for use in op.results[0].uses:
            user = owner(use)
            if op.name == N.THREAD_ID:
                ok = user.name == "arith.addi" and global_dim(user.results[0]) == d
            else:
                ok = user.name == "arith.muli" and all(
                    owner(u).name == "arith.addi" and global_dim(owner(u).results[0]) == d
                    for u in user.results[0].uses)
            if not ok:
                return f"the thread or block id of dimension {d} is used outside a global id"
    return None


def _legal_body(fn, dims) -> str | None:
    """Rules 2 and 3, or the reason they fail."""
    for op in walk(fn.operation):
        name = op.name
        if not (name.startswith(("arith.", "math.", "scf.")) or name in _ALLOWED):
            return f"the function holds '{name}'"
    if written_and_read(fn):
        return "an array is both written and read"
    return _ids_only_in_gids(fn, dims)


def loop_free(fn) -> bool:
    """No loop is left in `fn` once its constant-trip loops are unrolled, as
    the derivative unrolls them: the reverse sweep needs no tape stack, so
    the replays hold only the ops rule 2 allows, on every target."""
    from diffgpu.lowering.autodiff.unroll import unroll_constant_loops

    with ir.InsertionPoint(fn.operation):
        clone = fn.operation.clone().operation
    try:
        unroll_constant_loops(clone)
        return not any(op.name in _LOOPS for op in walk(clone))
    finally:
        clone.erase()


def stencil_dims(fn, arg):
    """(dims, constant offsets or None) when every load of kernel argument
    `arg` (a block argument of `fn`) is at a stencil index with the
    dimension per position `dims` once `fn`'s constant-trip loops are
    unrolled, no loop is left (`loop_free`) and rules 2-3 hold of `fn`; else
    None. The constant offsets
    (sorted) are given for a 1-D stencil of integer offsets only: that one
    is transpose.py's."""
    from diffgpu.lowering.autodiff.unroll import unroll_constant_loops

    n = ir.BlockArgument(arg).arg_number
    with ir.InsertionPoint(fn.operation):
        clone = fn.operation.clone().operation
    try:
        unroll_constant_loops(clone)
        if any(op.name in _LOOPS for op in walk(clone)):
            return None  # a loop the derivative keeps: its tape differs by target
        carg = clone.regions[0].blocks[0].arguments[n]
        dims, consts = None, set()
        for use in carg.uses:
            op = owner(use)
            if op.name == "memref.dim":
                continue
            if op.name != "memref.load":
                return None
            found = stencil_index(list(op.operands)[1:])
            if not isinstance(found, tuple) or (dims is not None and found[0] != dims):
                return None
            dims = found[0]
            consts.add(found[1][0].const() if len(found[1]) == 1 else None)
        if dims is None or _legal_body(clone, dims) is not None:
            return None
        return list(dims), (sorted(consts) if None not in consts else None)
    finally:
        clone.erase()


def transpose(fn, prim, sh):
    """Rewrite `fn` so that every element of the gradient `sh` is written once
    (the module docstring); True, or the reason (str) it cannot (nothing
    changed then)."""
    found = _adds(sh)
    if isinstance(found, str):
        return found
    dims, adds, polys = found
    if not adds:  # nothing reaches the gradient: zero, written by the same walk
        dims = _load_dims(prim)
        if isinstance(dims, str):
            return dims
    why = _legal_body(fn, dims) if adds else None  # no add: no replay
    if why is not None:
        return why
    entry = fn.regions[0].blocks[0]
    keys = sorted(polys)
    with ir.InsertionPoint(fn.operation):  # the untouched body, once per offset
        clones = [fn.operation.clone().operation for _ in keys]
    for op in adds:
        op.erase()
    elem = HALF.register_type(B.memref_elem(sh.type))  # float32 for a 16-bit shadow
    first, ret = list(entry.operations)[0], list(entry.operations)[-1]
    index = ir.IndexType.get()
    with ir.InsertionPoint(first), fn.location:
        acc = memref.alloca(ir.MemRefType.get([], elem), [], [])
    with ir.InsertionPoint(ret), fn.location:
        n = {d: arith.muli(dg_ops.geometry("grid_dim", d), dg_ops.geometry("block_dim", d))
             for d in dims}
        gid = {d: arith.addi(arith.muli(dg_ops.geometry("block_id", d),
                                        dg_ops.geometry("block_dim", d)),
                             dg_ops.geometry("thread_id", d)) for d in dims}
        offsets = {k: [materialize(p, fn) for p in polys[k]] for k in keys}
        zero = arith.constant(index, 0)
    with contextlib.ExitStack() as nest:
        nest.enter_context(fn.location)
        nest.enter_context(ir.InsertionPoint(ret))
        p = []
        for pos, d in enumerate(dims):  # the grid-stride walk over dx's elements
            loop = scf.ForOp(gid[d], memref.dim(sh, arith.constant(index, pos)), n[d])
            if pos == 0:  # a later gather's replays leave it out (it writes only sh)
                loop.operation.attributes[GATHERED] = ir.UnitAttr.get()
            p.append(loop.induction_variable)
            with ir.InsertionPoint(loop.body):
                at = scf.YieldOp([])
            nest.enter_context(ir.InsertionPoint(at))
        memref.store(B.zero(elem), acc, [])
        for k, clone in zip(keys, clones):
            src = [arith.subi(p[pos], o) for pos, o in enumerate(offsets[k])]
            ok = None
            for pos, d in enumerate(dims):
                c = arith.andi(arith.cmpi(arith.CmpIPredicate.sge, src[pos], zero),
                               arith.cmpi(arith.CmpIPredicate.slt, src[pos], n[d]))
                ok = c if ok is None else arith.andi(ok, c)
            branch = scf.IfOp(ok, [], has_else=False)
            with ir.InsertionPoint(branch.then_block):
                inner = scf.YieldOp([])
            _replay(fn, entry, acc, sh, k, clone, dict(zip(dims, src)), inner)
        memref.store(HALF.narrow(memref.load(acc, []), B.memref_elem(sh.type)), sh, p)
    _erase_dead(fn)
    explain.applied(PASS, fn.operation, f"gradient gathered over {len(keys)} "
                    f"offset{'s' if len(keys) != 1 else ''} in {len(dims)}-D, no atomics")
    return True


def _replay(fn, entry, acc, sh, k, clone, src, at) -> None:
    """Before `at`: `clone` (a copy of `fn`, consumed) as the thread at
    global ids `src` ({dim: index}), its add of offsets `k` into `sh` going
    to `acc`, its other writes dropped; its allocas move to `fn`'s entry."""
    index = ir.IndexType.get()
    centry = clone.regions[0].blocks[0]
    cargs, args = list(centry.arguments), list(entry.arguments)
    csh = cargs[args.index(sh)]
    for op in list(centry.operations):  # an earlier input's gather: only its writes
        if GATHERED in op.operation.attributes:
            op.operation.erase()
    def mine(add):  # the add of offsets k (read before the shift)
        got = stencil_index(list(add.operands)[2:])
        return isinstance(got, tuple) and _key(got[1]) == k

    keep_own_adds(clone, csh, acc, mine)
    gids = [(op, global_dim(op.results[0])) for op in walk(clone) if op.name == "arith.addi"]
    for op, d in gids:  # its global ids -> the source's
        if d is None or d not in src:
            continue
        v = src[d]
        if op.results[0].type != index:
            with ir.InsertionPoint(op), op.location:
                v = arith.index_cast(op.results[0].type, v)
        op.results[0].replace_all_uses_with(v)
    for a, b in zip(cargs, args):
        a.replace_all_uses_with(b)
    first = list(entry.operations)[0]
    for op in list(centry.operations)[:-1]:
        if op.name == "memref.alloca":
            op.move_before(first)  # entry-block allocas: LLVM keeps them in registers
        else:
            op.move_before(at)
    clone.erase()


def _erase_dead(fn) -> None:
    """Remove unused geometry and arithmetic (the clones' old global ids)."""
    changed = True
    while changed:
        changed = False
        for op in reversed(walk(fn.operation)):
            if (op.name in N.GEOMETRY or op.name.startswith(("arith.", "index."))) and len(
                    op.results) and all(not len(list(r.uses)) for r in op.results):
                op.erase()
                changed = True


__all__ = ["transpose", "stencil_dims", "Poly"]

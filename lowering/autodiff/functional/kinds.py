"""Functional kinds of reverse mode: `cot` and `grad` (for the host's `dg.vjp`).

The sweep differentiates them as `dup` (Enzyme's convention: the adjoint of
an overwritten element is consumed from the shadow, read-only arrays
accumulate into theirs); this step then rewrites the generated function so
that the shadows follow the functional convention, as in JAX's vjp:

| kind   | the array is                           | rewrite                                   |
|--------|----------------------------------------|-------------------------------------------|
| `cot`  | an output stored once: its stores, out-| erase the primal stores (the result is not |
|        | side loops, at one thread-unique index,| needed) and the consuming `shadow = 0`     |
|        | no two on one path (access.py's        | stores: the cotangent is only read (for    |
|        | `stored_once`), or 1-D rows `c * gid + | atomic adds: erase them; it is read anyway)|
|        | k` (rows.py), no other access; or an   |                                            |
|        | in-out array only `diffgpu.atomic_add`ed (unused result) |                          |
| `grad` | an input: only loads, all at one index | its shadow updates go to a per-thread      |
|        | of global ids (`x[i]`, `x[j, i]`)      | register, zero at entry, written once to   |
|        |                                        | `shadow[key]` at exit (when in bounds): the |
|        |                                        | gradient is written, never read            |

A `grad` input read at several offsets of one global id (a 1-D stencil,
`x[i - 1]`, `x[i]`, `x[i + 1]`) is instead transposed into a gather:
transpose.py. One read outside loops at constant offsets that no two
threads share (`x[r, j]`, `x[r, j + 256]`, owned.py: the launch decides)
gets a register per offset instead (owned_grad.py); an output stored so is
`cot` as one stored once.

Both rest on facts the caller guarantees, as `dg.vjp` does at launch: the
geometry dimensions not named in the index have one thread and one block
(so the index is one thread's), a `grad` shadow is a buffer no other
argument shares, and its elements outside the launch's reach are zeroed by
the caller. The structural conditions are checked here (an error otherwise).

    func.func @__dg_rev_square_…(%y, %x, %dy, %dx)       // activity ["cot", "grad"]
      %v = memref.load %x[%g]
      memref.store %p, %y[%g]          // erased
      %d = memref.load %dy[%g]
      memref.store %zero, %dy[%g]      // erased
      "diffgpu.atomic_add"(%dx, %e, %g) // -> %acc[] = %acc[] + %e
  with %acc = memref.alloca() : memref<f32> set to 0 at entry and, at exit,
      scf.if (%g < dim(%x, 0)) { memref.store %acc[], %dx[%g] }
"""
from __future__ import annotations

from diffgpu._mlir import arith, ir, memref, scf

from diffgpu.dialects import names as N
from diffgpu.dialects import ops as dg_ops

from diffgpu.lowering.autodiff import build as B
from diffgpu.lowering.common import half as HALF
from diffgpu.lowering.facts.indices import index_key
from diffgpu.lowering.autodiff.functional.rows import rows_dim
from diffgpu.lowering.autodiff.spec import FUNCTIONAL
from diffgpu.lowering.autodiff.functional.transpose import transpose
from diffgpu.lowering.autodiff.functional import owned, owned_grad
from diffgpu.lowering.autodiff.functional.access import stored_once


def finish(pas, gen) -> None:
    """Rewrite every reverse function generated for functional kinds."""
    for key, made in list(gen.made.items()):
        if key[0] != "rev" or len(key) < 5 or not _functional_part(key[4]):
            continue
        fn = gen.funcs.get(made[0])
        if fn is None:
            continue
        _rewrite(pas, fn, list(key[2]), dict(key[4]))


def _functional_part(part) -> bool:
    """Is `part` the ((argument index, kind), ...) that DiffSpec.key() adds
    for functional kinds?"""
    return (isinstance(part, tuple) and bool(part) and all(
        isinstance(p, tuple) and len(p) == 2 and p[1] in FUNCTIONAL for p in part))


def _owner(use):
    return use.owner.operation if hasattr(use.owner, "operation") else use.owner


def _uses(v):
    return [(_owner(u), u.operand_number) for u in v.uses]


def _rewrite(pas, fn, acts, kinds) -> None:
    entry = fn.regions[0].blocks[0]
    args = list(entry.arguments)
    n = len(acts)
    pos, shadow = n, {}
    for k, a in enumerate(acts):
        if a in ("dup", "dupnoneed", N.DUP32):
            shadow[k] = args[pos]
            pos += 1
    # a stencil's gather replays the body: last, once the other shadows are
    # written (or only read) as the functional kinds have them
    for k, kind in sorted(kinds.items(), key=lambda kv: (
            kv[1] == "grad" and _load_key(args[kv[0]]) is None, kv[0])):
        prim, sh = args[k], shadow[k]
        if kind == "cot":
            _cot(pas, fn, k, prim, sh)
        else:
            _grad(pas, fn, entry, k, prim, sh)


def _bad(pas, op, k, kind, why) -> None:
    pas.error(op, f"argument {k} is '{kind}' but {why}")


def _cot(pas, fn, k, prim, sh) -> None:
    stores, adds = [], []
    for op, i in _uses(prim):
        if op.name == "memref.dim":
            continue
        if op.name == N.ATOMIC_ADD and i == N.ATOMIC_MEMREF and not list(op.results[0].uses):
            adds.append(op)
            continue
        if op.name != "memref.store" or i != 1:
            return _bad(pas, op, k, "cot", f"'{op.name}' uses it (only stores, or only "
                                           "atomic adds, are allowed)")
        stores.append(op)
    if adds and not stores:  # out[k] += v only: the cotangent is read as it is
        for op in adds:
            op.erase()
        return _only_read(pas, k, sh)
    if not stores or adds:
        return _bad(pas, fn.operation, k, "cot",
                    f"it is stored {len(stores)} times and added to {len(adds)} times "
                    "(only stores, or only atomic adds, are needed)")
    one = stored_once(stores, fn) is not None
    if (not one and rows_dim(stores, fn) is None
            and owned.pattern([(op, list(op.operands)[2:]) for op in stores], fn,
                              stores=True) is None):
        return _bad(pas, stores[0], k, "cot",
                    "its stores are neither stored once (outside loops, at one "
                    "thread-unique index of global ids and constants, no two on one "
                    "path) nor rows `c * gid + k` that no two threads share (nor stores "
                    "at distinct constant offsets of global ids)")
    consume = []
    for op, i in _uses(sh):
        if op.name in ("memref.dim", "memref.load"):
            continue
        value = op.operands[0] if op.name == "memref.store" else None
        const = None if value is None or isinstance(value.owner, ir.Block) else value.owner
        if (op.name != "memref.store" or i != 1 or const is None
                or const.operation.name != "arith.constant"):
            return _bad(pas, op, k, "cot", f"its shadow is updated by '{op.name}'")
        consume.append(op)
    for op in stores + consume:
        op.erase()


def _only_read(pas, k, sh) -> None:
    for op, i in _uses(sh):
        if op.name not in ("memref.dim", "memref.load"):
            return _bad(pas, op, k, "cot", f"its shadow is updated by '{op.name}'")


def _load_key(prim):
    """The one index of global ids every load of `prim` uses, else None."""
    keys = {index_key(list(op.operands)[1:]) for op, _ in _uses(prim)
            if op.name == "memref.load"}
    if len(keys) != 1 or None in keys or any(c[0] != "gid" for c in next(iter(keys))):
        return None
    return next(iter(keys))


def _grad(pas, fn, entry, k, prim, sh) -> None:
    for op, i in _uses(prim):
        if op.name not in ("memref.dim", "memref.load"):
            return _bad(pas, op, k, "grad", f"'{op.name}' uses it (only loads are allowed)")
    key = _load_key(prim)
    if key is None:
        if transpose(fn, prim, sh):  # a 1-D stencil: the scatter becomes a gather
            return None
        loads = [op for op, _ in _uses(prim) if op.name == "memref.load"]
        pat = owned.pattern([(op, list(op.operands)[1:]) for op in loads], fn)
        if pat is not None:  # x[r, j], x[r, j + 256], ...: a register per offset
            why = owned_grad.rewrite(fn, entry, prim, sh, pat)
            return _bad(pas, fn.operation, k, "grad", why) if why else None
        return _bad(pas, fn.operation, k, "grad", "its loads are not all at one index made "
                                                  "of global ids, nor a 1-D stencil whose "
                                                  "adjoint transposes into a gather")
    elem = B.memref_elem(sh.type)
    reg = HALF.register_type(elem)  # float32 for a 16-bit shadow: one rounding, written once
    first, last = list(entry.operations)[0], list(entry.operations)[-1]
    guards = _bounds_guards(entry, prim, sh) if [c[1] for c in key] == [0] else None
    with ir.InsertionPoint(first), fn.location:
        acc = memref.alloca(ir.MemRefType.get([], reg), [], [])
        if guards is None:
            memref.store(B.zero(reg), acc, [])
    if guards is not None:  # the kernel's own guard is `x` in bounds: reuse it
        with ir.InsertionPoint.at_block_begin(guards[0].regions[0].blocks[0]), fn.location:
            memref.store(B.zero(reg), acc, [])
    for op, i in _uses(sh):
        if op.name == "memref.dim":
            continue
        with ir.InsertionPoint(op), op.location:
            if op.name == "memref.load":
                HALF.load_register(op.results[0], acc)
            elif op.name == "memref.store" and i == 1:
                memref.store(HALF.into_register(op.operands[0], reg), acc, [])
            elif op.name == N.ATOMIC_ADD and i == N.ATOMIC_MEMREF and not list(op.results[0].uses):
                memref.store(arith.addf(memref.load(acc, []),
                                        HALF.into_register(op.operands[1], reg)), acc, [])
            else:
                return _bad(pas, op, k, "grad", f"its shadow is used by '{op.name}'")
        op.erase()
    if guards is not None:
        then = guards[-1].regions[0].blocks[0]
        gid = _strip_cast(_cmp(guards[-1])[0])
        with ir.InsertionPoint(list(then.operations)[-1]), fn.location:
            memref.store(HALF.narrow(memref.load(acc, []), elem), sh, [gid])
        return
    with ir.InsertionPoint(last), fn.location:
        _write_back(prim, sh, acc, [c[1] for c in key])


def _strip_cast(v):
    while not isinstance(v.owner, ir.Block) and v.owner.operation.name == "arith.index_cast":
        v = v.owner.operation.operands[0]
    return v


def _cmp(if_op):
    """(lhs, rhs) of the `arith.cmpi slt` that `if_op` branches on, or None."""
    c = if_op.operands[0]
    if isinstance(c.owner, ir.Block) or c.owner.operation.name != "arith.cmpi":
        return None
    cmp = c.owner.operation
    if ir.IntegerAttr(cmp.attributes["predicate"]).value != 2:  # slt
        return None
    return cmp.operands[0], cmp.operands[1]


def _bounds_guards(entry, prim, sh):
    """The top-level `scf.if`s of the function branching on the kernel's
    guard `g < dim(prim, 0)` (g the global id of dimension 0, through
    index_casts), when every use of the shadow is inside one of them; else
    None. Inside them the gradient's zero and its write-back add no guard of
    their own: the function keeps the kernel's one guard (what
    diffgpu-coarsen needs to vectorise it)."""
    from diffgpu.lowering.facts.indices import global_dim

    guards, cond = [], None
    for op in entry.operations:
        op = op.operation
        if op.name != "scf.if" or len(op.regions[1].blocks):
            continue
        if cond is not None and cond != op.operands[0]:
            continue
        lr = _cmp(op)
        if lr is None:
            continue
        lhs, rhs = _strip_cast(lr[0]), _strip_cast(lr[1])
        dim = None if isinstance(rhs.owner, ir.Block) else rhs.owner.operation
        if (global_dim(lhs) != 0 or not B.is_index(lhs.type) or dim is None
                or dim.name != "memref.dim" or dim.operands[0] != prim
                or _const_index(dim.operands[1]) != 0):
            continue
        cond = op.operands[0]
        guards.append(op)
    if not guards:
        return None
    for use in sh.uses:
        p = _owner(use)
        while p is not None and p.parent is not None and p.parent.name != "func.func":
            p = p.parent
        if p is None or all(p != g for g in guards):
            return None
    return guards


def _const_index(v):
    if isinstance(v.owner, ir.Block) or v.owner.operation.name != "arith.constant":
        return None
    return ir.IntegerAttr(v.owner.operation.attributes["value"]).value


def _write_back(prim, sh, acc, dims) -> None:
    """if (all gid(d_a) < dim(prim, a)) sh[gid(d_0), ...] = acc: the one
    write of this thread's gradient element."""
    i64 = B.i64()
    cond, idx = None, []
    for axis, d in enumerate(dims):
        g = arith.addi(arith.muli(dg_ops.geometry("block_id", d), dg_ops.geometry("block_dim", d)),
                       dg_ops.geometry("thread_id", d))
        idx.append(g)
        ext = memref.dim(prim, B.idx(axis))
        c = arith.cmpi(arith.CmpIPredicate.slt, arith.index_cast(i64, g),
                       arith.index_cast(i64, ext))
        cond = c if cond is None else arith.andi(cond, c)
    branch = scf.IfOp(cond, [], has_else=False)
    with ir.InsertionPoint(branch.then_block):
        memref.store(HALF.narrow(memref.load(acc, []), B.memref_elem(sh.type)), sh, idx)
        scf.YieldOp([])


__all__ = ["finish"]

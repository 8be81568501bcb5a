"""`diffgpu-coarsen-rows`: a reverse program runs R consecutive blocks of y
in one block, so that the gradients of parameters every row reads are
summed in registers over R rows and added once per block and column.

The reverse of a row kernel written one row per block (`r = gid(1)`, block
y extent 1: layer norm's `Y[r, j] = xhat[r, j] * g[j] + b[j]`) adds into
`dg[j]` and `db[j]` once per row: one global atomic per row and column. The
launch facts (runtime/specialize.py `rows`: block y extent 1, grid y extent
G, R = `rows_factor(G)`, the remainder G % R) let `mark_facts` ask for this
rewrite on a derivative wrapper (`ROWS_ATTR = array<i64: R, G % R>`); the
pass, after `diffgpu-autodiff`, `diffgpu-specialize` (the functional kinds'
write-once dX is already there: plain stores stay plain stores) and
`diffgpu-stencil-adjoint` (which finds its gid(1) + k patterns first),
checks the derivative program (`analyze`) and rewrites it:

    %r = block_id(1) * block_dim(1) + thread_id(1)        (slots: before the loop)
    S(%r)                                     =>   scf.for %k = 0 to %n step 1 {
                                                     S(block_id(1) * R + %k)
                                                     [barrier: explicit shared memory]
                                                   }

with `%n` = R, or G % R in the last block (`block_id(1) == grid_dim(1) - 1`)
when R does not divide G. The runtime launches ceil(G / R) blocks in y
(`record`: the compile's outcome reaches the program's payload as "rows").
`diffgpu-combine-adds` then sums the adds whose indices do not change in
the loop (lowering/reduce/combine_adds.py, rule 2) in iteration arguments
and adds once after it. The loop is not unrolled by us (LLVM decides): its
body is the one-row reverse, whatever R is.

Why it is legal: blocks of the original launch that never communicate run
in any order, one after the other included; running blocks bR .. bR + R - 1
one after another in block b is such an execution. `analyze` accepts a
program (a kernel whose body is one block, after inlining a lone call)
when

- the geometry of y that the rewrite changes appears only as gid(1) =
  block_id(1) * block_dim(1) + thread_id(1): no `grid_dim(1)`, no
  `block_id(1)` of its own (`block_dim(1)` = 1 and `thread_id(1)` = 0 in
  both launches, by the facts: they may be used anywhere, as in the
  shadow of a shared array zeroed by thread (0, 0, 0));
- blocks communicate only through adds: every `diffgpu.atomic_add` has an
  unused result and its array is only added into (or measured); no
  `atomic_rmw`, no calls, no grid sums (calls), no array passed to any op
  but loads, stores, adds and `memref.dim`;
- an array the program both reads and writes is accessed only in its own
  rows (first index a gid(1)): no block reads what another writes;
- some add's indices do not depend on gid(1) (a parameter's gradient):
  otherwise there is nothing to sum and the rewrite only lengthens blocks;
- the launch proved its arrays disjoint (`diffgpu.noalias`: what
  `diffgpu-combine-adds` needs to sum the adds).

A kernel whose body is one call (the derivative wrapper after autodiff) is
analysed through its callee and gets the callee's body only when accepted.
Autodiff's atomic-elision guards (`block_dim(1) == 1 && grid_dim(1) == 1`:
a plain read-modify-write of a parameter's gradient when one thread has the
y extent) are false in every launch with these facts (grid y >= 2), so
`fold_unit_guards` keeps only their atomic branch first.

Shared memory and barriers: the block collectives plan their slots for
loops (lowering/gpu/slot_plan.py: the last collective of a loop body keeps
its barrier; the CPU lowering splits loops at barriers), and a program with
`diffgpu.shared_alloc` or a barrier of its own gets a barrier at the end
of each iteration, so that no thread writes the next row's shared values
while another still reads this row's. A kernel whose grid was folded
(lowering/gpu/ops.py `GRID_FOLD`) gets the fold of the coarsened grid (none
when ceil(G / R) fits the GPU).

Then the loads of the next row are issued an iteration ahead
(lowering/coarsen/prefetch.py: loads of arrays the program never writes,
at the loop body's top level, carried in iteration arguments), so a row's
collectives run with the next row's memory traffic in flight.

`DIFFGPU_EXPLAIN=1` reports `coarsen-rows [applied]` with R (and the loads
moved ahead, or why none), or `[missed]` with the reason.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from diffgpu.dialects import names as N
from diffgpu.lowering.common import explain
from diffgpu.lowering.common.ir_util import walk
from diffgpu.lowering.common.recorder import Recorder
from diffgpu.lowering.coarsen.prefetch import prefetch
from diffgpu.lowering.facts.attrs import NOALIAS_ATTR
from diffgpu.lowering.registry import ModulePass, register_pass

#: the request `mark_facts` puts on a derivative wrapper: array<i64: R, G % R>
ROWS_ATTR = "diffgpu.coarsen_rows"
#: the remarks' pass name
REMARK = "coarsen-rows"
#: the y / z extent a GPU grid may have (lowering/gpu/ops.py HW_GRID_YZ)
HW_GRID_YZ = 65535
#: the fold attribute of lowering/gpu/ops.py (mark_grid_fold)
GRID_FOLD = "diffgpu.grid_fold"
#: ops that may use an array argument
_ACCESS = ("memref.load", "memref.store", "memref.dim", N.ATOMIC_ADD)
_REFUSED = {"func.call": "calls a function", "func.call_indirect": "calls a function",
            N.ATOMIC_RMW: "has an atomic max/min/exchange", "memref.atomic_rmw":
            "has an atomic read-modify-write", "memref.alloc": "allocates memory",
            N.AUTODIFF: "differentiates", N.FWDDIFF: "differentiates"}

_ROWS = Recorder()


def record():
    """Collect {kernel: (R, remainder)} of the kernels this thread's
    compiles coarsen inside (the driver keeps it in the program's payload:
    the launch divides grid y by R)."""
    return _ROWS.record()


def _note(entry: str, rows: tuple) -> None:
    for found in _ROWS.open():
        found[entry] = rows


def _op(v):
    from diffgpu._mlir import ir
    owner = v.owner
    return None if isinstance(owner, ir.Block) else owner.operation


def _dim(op) -> int:
    from diffgpu._mlir import ir
    return ir.IntegerAttr(op.attributes["dim"]).value


def _strip(v):
    """`v` under `arith.index_cast`s."""
    while True:
        op = _op(v)
        if op is None or op.name != "arith.index_cast":
            return v
        v = op.operands[0]


def _slice(v, seen) -> None:
    """The ops `v` is computed from (into `seen`)."""
    stack = [v]
    while stack:
        op = _op(stack.pop())
        if op is None or op in seen:
            continue
        seen.add(op)
        stack.extend(op.operands)


@dataclass
class Found:
    """What `analyze` proved: the gid(1) values, the ops computing them, and
    whether each iteration needs a closing barrier."""
    gids: list
    chain: set
    barrier: bool


def analyze(fn):
    """(Found, None) for a program `fn` the rewrite keeps correct (module
    docstring), else (None, why not)."""
    from diffgpu._mlir import ir
    from diffgpu.lowering.facts.indices import global_dim

    if len(fn.regions[0].blocks) != 1:
        return None, "its body is not one block"
    block = fn.regions[0].blocks[0]
    ops = [o.operation for o in block.operations]
    if not ops or ops[-1].name != "func.return" or len(ops[-1].operands):
        return None, "it does not end in a plain return"
    body = walk(fn, include_self=False)
    for o in body:
        if o.name in _REFUSED:
            return None, _REFUSED[o.name]
    gids = [o.results[0] for o in body
            if o.name == "arith.addi" and global_dim(o.results[0]) == 1]
    chain: set = set()
    for g in gids:
        _slice(g, chain)
    if any(c.name not in ("arith.addi", "arith.muli", "arith.index_cast") + N.GEOMETRY
           for c in chain):
        return None, "its gid(1) is computed from more than the geometry"
    for o in body:
        if o.name in N.GEOMETRY and _dim(o) == 1:
            if o.name == N.GRID_DIM:
                return None, "it reads grid_dim(1)"
            if o.name == N.BLOCK_ID and (o not in chain or any(
                    u.owner.operation not in chain for u in o.results[0].uses)):
                return None, "it reads block_id(1) outside gid(1)"
            # thread_id(1) = 0 and block_dim(1) = 1 in both launches: used freely
        if o.name == N.ATOMIC_ADD and len(list(o.results[0].uses)):
            return None, "an atomic add's result is used"
    if not gids:
        return None, "no gid(1)"
    gid_ops = {_op(g) for g in gids}
    own = {g for g in gids}

    def own_row(access) -> bool:
        idx = list(access.operands)[1 if access.name == "memref.load" else 2:]
        return bool(idx) and any(_strip(idx[0]) == g for g in own)

    for k, arg in enumerate(block.arguments):
        if not isinstance(arg.type, ir.MemRefType):
            continue
        users = [u.owner.operation for u in arg.uses]
        for u, use in zip(users, arg.uses):
            if u.name not in _ACCESS:
                return None, f"argument {k} is passed to {u.name}"
            if u.name == "memref.store" and use.operand_number != 1:
                return None, f"argument {k} is stored as a value"
            if u.name == N.ATOMIC_ADD and use.operand_number != 0:
                return None, f"argument {k} is added as a value"
        if "workgroup" in str(ir.MemRefType(arg.type).memory_space or ""):
            continue  # a shared array (the kernel's, passed down): the block's own
        kinds = {u.name for u in users} - {"memref.dim"}
        if N.ATOMIC_ADD in kinds and kinds != {N.ATOMIC_ADD}:
            return None, f"argument {k} is added into and also read or written"
        if "memref.store" in kinds and "memref.load" in kinds and not all(
                own_row(u) for u in users if u.name in ("memref.load", "memref.store")):
            return None, (f"argument {k} is read and written outside the rows of its "
                          "block's gid(1)")
    shared = any(o.name in (N.SHARED_ALLOC, N.BARRIER, "gpu.barrier") for o in body)
    for o in body:
        if o.name == N.ATOMIC_ADD:
            seen: set = set()
            for v in list(o.operands)[2:]:
                _slice(v, seen)
            if not seen & gid_ops:
                return Found(gids, chain, shared), None
    return None, "no add at an index independent of gid(1): nothing to sum over rows"


def coarsen_rows(fn, found: Found, rows: int, rem: int):
    """The rewrite of the module docstring on kernel `fn` (`analyze`d);
    then the next row's loads are issued an iteration ahead
    (lowering/coarsen/prefetch.py): returns its (loads moved, why not)."""
    from diffgpu._mlir import arith, ir, scf
    from diffgpu.dialects import ops as dg

    block = fn.regions[0].blocks[0]
    ops = [o.operation for o in block.operations]
    # per-thread and per-block slots of a fixed size, wherever they are: one
    # for all iterations (a slot's value from the row before is as undefined
    # as a fresh one's; inside the loop LLVM would grow the stack each time)
    allocas = [o for o in walk(fn, include_self=False)
               if o.name in ("memref.alloca", N.SHARED_ALLOC) and not len(o.operands)
               and not len(o.regions)]
    moved = [o for o in ops[:-1] if o not in allocas]
    index = ir.IndexType.get()
    with fn.location, ir.InsertionPoint(ops[0]):
        c0 = arith.constant(index, 0)
        c1 = arith.constant(index, 1)
        cr = arith.constant(index, rows)
        bid = dg.block_id(1)
        ub = cr
        if rem:
            last = arith.subi(dg.grid_dim(1), c1)
            ub = arith.select(arith.cmpi(arith.CmpIPredicate.eq, bid, last),
                              arith.constant(index, rem), cr)
        loop = scf.ForOp(c0, ub, c1)
        with ir.InsertionPoint(loop.body):
            gid = arith.addi(arith.muli(bid, cr), loop.induction_variable)
            term = scf.YieldOp([])
    for a in allocas:
        a.move_before(loop.operation)
    for o in moved:
        o.move_before(term)
    if found.barrier:
        with fn.location, ir.InsertionPoint(term):
            dg.barrier()
    for g in found.gids:
        new = gid
        if g.type != gid.type:  # a gid(1) computed in i64
            with fn.location, ir.InsertionPoint(term):
                new = arith.index_cast(g.type, gid)
            new.owner.operation.move_after(gid.owner.operation)
        g.replace_all_uses_with(new)
    for op in reversed(walk(loop.operation)):  # the old gid's chain, users first
        if op in found.chain and not any(len(list(r.uses)) for r in op.results):
            op.erase()
    _refold(fn, rows)
    return prefetch(loop)


def _refold(fn, rows: int) -> None:
    """A folded grid's attribute for the grid of ceil(y / R) rows (none
    when that fits the GPU; runtime/args.py `hardware_grid` otherwise)."""
    from diffgpu._mlir import ir
    if GRID_FOLD not in fn.attributes:
        return
    y, z = list(ir.DenseI64ArrayAttr(fn.attributes[GRID_FOLD]))[:2]
    y = -(-y // rows)
    if y <= HW_GRID_YZ and z <= HW_GRID_YZ:
        del fn.attributes[GRID_FOLD]
        return
    fn.attributes[GRID_FOLD] = ir.DenseI64ArrayAttr.get([y, z, *hardware_yz(y, z)])


def hardware_yz(y: int, z: int) -> tuple:
    """(hy, hz) of runtime/args.py `hardware_grid` for a grid of y x z rows."""
    hz = -(-(y * z) // HW_GRID_YZ)
    return -(-(y * z) // hz), hz


def _unit_test(op):
    """True / False for `block_dim(1) == 1` / `grid_dim(1) == 1` (and their
    `!=`) under the rows fact (block y extent 1, grid y extent >= 2), else
    None."""
    from diffgpu._mlir import ir
    from diffgpu.lowering.common.ir_util import const_int
    if op.name != "arith.cmpi":
        return None
    pred = ir.IntegerAttr(op.attributes["predicate"]).value
    if pred not in (0, 1):  # eq, ne
        return None
    a, b = op.operands[0], op.operands[1]
    if const_int(a) == 1:
        a, b = b, a
    g = _op(a)
    if const_int(b) != 1 or g is None or g.name not in (N.BLOCK_DIM, N.GRID_DIM) or _dim(g) != 1:
        return None
    return (g.name == N.BLOCK_DIM) == (pred == 0)


def _known(v):
    """The value of an i1 computed from `_unit_test`s, constants, `andi`
    and `ori`, else None."""
    from diffgpu.lowering.common.ir_util import const_int
    op = _op(v)
    if op is None:
        return None
    if op.name == "arith.constant" and str(v.type) == "i1":
        c = const_int(v)
        return None if c is None else bool(c)
    if op.name in ("arith.andi", "arith.ori"):
        x, y = _known(op.operands[0]), _known(op.operands[1])
        if op.name == "arith.andi":
            return False if False in (x, y) else (True if x is True and y is True else None)
        return True if True in (x, y) else (False if x is False and y is False else None)
    return _unit_test(op)


def fold_unit_guards(fn) -> None:
    """The `scf.if`s (without results) of `fn` whose condition the rows fact
    decides keep only the branch taken: autodiff's atomic-elision guard
    `block_dim(1) == 1 && grid_dim(1) == 1` (lowering/autodiff/elision.py:
    a plain read-modify-write when one thread has the y extent) is false in
    a launch with grid y >= 2, so the adds stay adds (what
    `diffgpu-combine-adds` sums). True of the original launch, so legal
    whether the rows are coarsened or not."""
    while True:  # one at a time: a fold erases ops (a dropped branch's) a walk listed
        found = next(((op, t) for op in walk(fn, include_self=False)
                      if op.name == "scf.if" and not len(op.results)
                      for t in (_known(op.operands[0]),) if t is not None), None)
        if found is None:
            return
        op, taken = found
        region = op.regions[0 if taken else 1]
        if len(region.blocks):
            inner = [o.operation for o in region.blocks[0].operations]
            for o in inner[:-1]:  # not the scf.yield
                o.move_before(op)
        cond = op.operands[0]
        op.erase()
        _erase_dead(cond)


def _erase_dead(v) -> None:
    """Erase the unused pure op computing `v`, and so on up its operands."""
    stack = [v]
    while stack:
        op = _op(stack.pop())
        if (op is None or len(op.regions) or any(len(list(r.uses)) for r in op.results)
                or not (op.name.startswith("arith.") or op.name in N.GEOMETRY)):
            continue
        for w in op.operands:  # once each: an erased value is never looked at again
            if not any(w == x for x in stack):
                stack.append(w)
        op.erase()


def _lone_call(fn, module):
    """(call, callee) when kernel `fn`'s body is one `func.call` without
    results (its operands distinct: arguments of `fn`, or shared arrays
    `fn` allocates for it) and a return, else None."""
    from diffgpu._mlir import ir
    ops = [o.operation for o in fn.regions[0].blocks[0].operations]
    shared = [o for o in ops[:-2] if o.name == N.SHARED_ALLOC and not len(o.operands)]
    if len(ops) != len(shared) + 2 or ops[-2].name != "func.call" or len(ops[-2].results):
        return None
    call = ops[-2]
    if any(u.owner.operation != call for o in shared for u in o.results[0].uses):
        return None
    args = list(fn.regions[0].blocks[0].arguments) + [o.results[0] for o in shared]
    operands = list(call.operands)
    if not all(any(v == a for a in args) for v in operands) or any(
            operands[i] == operands[j] for i in range(len(operands)) for j in range(i)):
        return None  # (one array twice: the callee's arguments would alias)
    name = ir.FlatSymbolRefAttr(call.attributes["callee"]).value
    for o in module.regions[0].blocks[0].operations:
        o = o.operation
        if o.name == "func.func" and ir.StringAttr(o.attributes["sym_name"]).value == name:
            return (call, o) if len(o.regions[0].blocks) == 1 else None
    return None


def _inline(call, callee) -> None:
    """`call` replaced by a copy of `callee`'s body (one block, a plain
    return); the callee stays (for other callers, or symbol-dce)."""
    from diffgpu._mlir import ir
    copy = callee.clone(ip=ir.InsertionPoint(callee))
    body = copy.regions[0].blocks[0]
    for arg, v in zip(list(body.arguments), list(call.operands)):
        arg.replace_all_uses_with(v)
    for o in [x.operation for x in body.operations][:-1]:
        o.move_before(call)
    call.erase()
    copy.erase()


def folded_grid(fold, rows: int) -> tuple:
    """The (y, z) grid fold of a coarsened program (runtime/args.py
    `grid_fold` of the coarsened grid), from the launch's `fold` ((y, z) or ())."""
    if not fold:
        return ()
    y, z = -(-fold[0] // rows), fold[1]
    return () if y <= HW_GRID_YZ and z <= HW_GRID_YZ else (y, z)


@register_pass
@dataclass
class CoarsenRows(ModulePass):
    """See the module docstring: derivative kernels marked ROWS_ATTR (by
    `mark_facts`) are rewritten when `analyze` accepts them; the mark is
    dropped either way (the runtime learns the outcome through `record`)."""
    name: ClassVar[str] = "diffgpu-coarsen-rows"
    summary: ClassVar[str] = ("run R rows of y in one block of a reverse program whose blocks "
                              "only add into shared parameter gradients (launch facts decide)")

    def run(self, module) -> None:
        from diffgpu._mlir import ir
        for op in module.regions[0].blocks[0].operations:
            op = op.operation
            if op.name != "func.func" or ROWS_ATTR not in op.attributes:
                continue
            rows, rem = list(ir.DenseI64ArrayAttr(op.attributes[ROWS_ATTR]))
            del op.attributes[ROWS_ATTR]  # a request; done below or not at all
            if any(o.name in N.DIFF for o in walk(op, include_self=False)):
                continue  # not differentiated (a pipeline without diffgpu-autodiff)
            if NOALIAS_ATTR not in op.attributes:  # combine-adds needs it to sum
                explain.missed(REMARK, op, "the derivative keeps a block per row: the launch "
                               "did not prove its arrays disjoint")
                continue
            lone = _lone_call(op, module)
            callee = None if lone is None else lone[1]
            fold_unit_guards(op if callee is None else callee)
            found, why = analyze(op if callee is None else callee)
            if found is None:
                explain.missed(REMARK, op, f"the derivative keeps a block per row: {why}")
                continue
            if callee is not None:  # accepted: the kernel gets the callee's body
                _inline(*lone)
                found, why = analyze(op)
                if found is None:  # (the same ops, the kernel's arguments)
                    raise ValueError(f"internal: {REMARK}: the inlined derivative of "
                                     f"@{ir.StringAttr(op.attributes['sym_name']).value} "
                                     f"is refused after its callee was accepted: {why}")
            moved, why = coarsen_rows(op, found, rows, rem)
            name = ir.StringAttr(op.attributes["sym_name"]).value
            _note(name, (rows, rem))
            tail = f", the last block {rem}" if rem else ""
            explain.applied(REMARK, op, f"{rows} rows per block (grid y / {rows}{tail}): "
                            "adds at indices independent of gid(1) summed over them")
            if moved:
                explain.applied(REMARK, op, f"{moved} loads of the next row issued an "
                                "iteration ahead (prefetch)")
            else:
                explain.missed(REMARK, op, f"no prefetch of the next row: {why}")


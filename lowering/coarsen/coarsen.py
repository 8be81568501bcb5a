"""`diffgpu-coarsen`: each thread of an elementwise kernel handles COARSEN
consecutive elements, so that its loads and stores become vector accesses.

Only where the semantics are provably unchanged. `eligible(fn)` (run by
`mark_facts` on the frontend's IR, before any pass) accepts a kernel when:

- its body is pure index arithmetic (arith, `memref.dim`, geometry, local
  `memref.alloca` slots and stores into them) and guards `scf.if %c` (no
  else, no results; the last op before `return` is one), each with
  `%c = arith.cmpi slt, A, N`, A computed from the global id `g` of
  dimension 0 (`block_id(0) * block_dim(0) + thread_id(0)`) by adding
  constants and `index_cast`s only (A grows with g: A(4t'+3) < N implies
  A(4t'+k) < N) and N not computed from `g`;
- the geometry of dimension 0 is used only to form `g` (no `thread_id(0)`
  alone, no `grid_dim(0)`, no `block_dim(0)` elsewhere);
- the guarded body has no barrier, shared memory, atomic, call or
  derivative op: threads never communicate, so running the bodies of
  threads 4t .. 4t+3 one after the other in one thread is one of the
  executions the original launch allowed;
- it is memory-bound work: no loop, at most MAX_BODY_OPS ops (a longer
  computation gains nothing from vector access and would grow COARSEN-fold).

A kernel whose body is one `diffgpu.autodiff` of an eligible kernel (no
results; its arrays distinct arguments of the kernel) is eligible too when
the launch proved its arrays disjoint: the derivative function then has one
guard (`diffgpu-specialize` fuses the forward and reverse `scf.if`s of
`noalias` functions), and the pass inlines it into the kernel first.

The launch facts must also hold: a 1-D launch (`unit_dims = [1, 2]`) whose
grid x extent is a multiple of COARSEN (`grid_div`). Then the runtime
launches grid x / COARSEN blocks (the payload's "coarsen") and the pass
rewrites the kernel (lowering/coarsen/rewrite.py; thread t' covers
g = 4t' .. 4t'+3, exactly the original threads):

    %g = block_id * block_dim + thread_id            %g = (same)
    %c = arith.cmpi slt, %g, %n                      %b = %g * 4
    scf.if %c { S(%g) }                     =>       scf.if (%b + 3 < %n) { S(%b); S(%b + 1); S(%b + 2); S(%b + 3) }
                                                     else { scf.if (%b < %n) { S(%b) } ... 4 guarded copies }

A reduction kernel -- the same, but with atomic adds to one element under
the guard (lowering/coarsen/reduce.py) -- is eligible with `noalias` facts:
coarsened by REDUCE_COARSEN (`grid_div16`) or COARSEN, its copies' values
summed in registers and added once per thread. `factor_for` picks the
factor; the tail's name carries it when it is not COARSEN (`factor_in_ptx`).

Guards may be conjunctions of lower and upper bounds on g (Python's
short-circuit `and` included; lowering/coarsen/bounds.py): the group is in
range when every bound holds at the group's end that is hardest for it
(the first element for a lower bound, the last for an upper one). Guards
nested directly in such a guard (the gathered stencil gradient's replays)
are decided per group in a test of their own inside the in-range path:
when they hold, every copy is unguarded; otherwise the copies keep their
runtime tests (a rarely true nested guard does not send groups to the
tail). `grid_dim(0)` and `block_dim(0)` may appear outside g at the top
level: the pass rewrites `grid_dim(0)` to `grid_dim(0) * factor`.

A derivative wrapper with Active scalars ends, after its last guard, with
the slot adds of their gradients (`coarsen_reduce.slot_epilogue`: marked
by the frontend, the runtime sums every slot): the copies' gradients are
summed in registers and added once, into the coarsened block's slot.

With several guards, the fast path needs each guard to hold for the group. The unguarded copies sit in one block: with contiguous, 16-byte aligned
arrays (launch facts) LLVM merges their accesses into `ld.global.v4` /
`st.global.v4`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from diffgpu.dialects import names as N
from diffgpu.lowering.coarsen import bounds as B
from diffgpu.lowering.common.ir_util import walk
from diffgpu.lowering.coarsen.reduce import (REDUCE_COARSEN, reduction_atomic, slot_atomic,
                                            slot_epilogue)
from diffgpu.lowering.coarsen.reduce import defining_op as _op
from diffgpu.lowering.coarsen.rewrite import COARSEN, NOINLINE_ATTR, coarsen, tail_name  # noqa: F401
from diffgpu.lowering.registry import ModulePass, register_pass
from diffgpu.lowering.facts.attrs import COARSEN_ATTR, NOALIAS_ATTR
from diffgpu.lowering.facts.specialize import order_function

_GEOM0 = N.GEOMETRY
_FORBIDDEN = (N.BARRIER, N.SHARED_ALLOC, N.ATOMIC_ADD, "func.call",
              "memref.atomic_rmw", "gpu.barrier") + N.DIFF
_PREFIX_OK = ("arith.", "index.")
#: dimension-0 extents a kernel may use outside g (block_dim(0) is kept,
#: grid_dim(0) becomes grid_dim(0) * factor)
_EXTENTS = (N.BLOCK_DIM, N.GRID_DIM)
_LOOPS = ("scf.for", "scf.while")
#: larger guarded bodies are compute-bound: coarsening buys no vector access
MAX_BODY_OPS = 256


def _dim(op):
    from diffgpu._mlir import ir
    return ir.IntegerAttr(op.attributes["dim"]).value


def _walk(op) -> list:
    return walk(op, include_self=False)


@dataclass
class Found:
    """What `analyze` proved. gids: the results forming g; guards: the
    top-level guards in order (a derivative function may have several);
    known: {guard: [Bound]} for every guard decided per group (the
    top-level ones, and those directly in a known guard's body); chain: the
    ops computing the gids; epilogue: the ops after the last guard (the
    Active scalars' slot adds, coarsen_reduce.slot_epilogue)."""
    gids: list
    guards: list
    known: dict
    chain: set
    epilogue: list


def analyze(fn, reduce: bool = False):
    """A `Found` for an eligible kernel `fn`, else None (see the module
    docstring). `reduce`: also accept reduction atomics
    (`reduction_atomic`; the caller has proved the arrays disjoint)."""
    from diffgpu.lowering.facts.indices import global_dim

    block = fn.regions[0].blocks[0]
    ops = [o.operation for o in block.operations]
    if len(ops) < 2 or ops[-1].name != "func.return":
        return None
    at = [i for i, o in enumerate(ops) if o.name == "scf.if" and _is_guard(o)]
    if not at:
        return None
    epilogue = ops[at[-1] + 1:-1]  # after the last guard: the slot adds only
    if epilogue and not slot_epilogue(epilogue, fn):
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
    guards = []
    for o in ops[:at[-1] + 1]:
        if o.name == "scf.if":
            if _is_guard(o):
                guards.append(o)
            elif not _is_condition(o):
                return None
        elif o.name in _GEOM0 and _dim(o) == 0:
            if o.name in _EXTENTS:
                continue  # the same in the coarsened launch (grid_dim: rewritten)
            if o not in chain or any(u.owner.operation not in chain for u in o.results[0].uses):
                return None  # thread_id(0) or block_id(0) used outside g
        elif not (o.name.startswith(_PREFIX_OK) or o.name in ("memref.dim", "memref.alloca")
                  or o.name in _GEOM0 or _local_store(o) or _local_load(o)):
            return None
    body = [o for guard in guards for o in _walk(guard)]
    if len(body) > MAX_BODY_OPS or any(o.name in _LOOPS for o in body):
        return None  # compute-heavy: nothing to vectorise, code size x COARSEN
    known = {}
    for guard in guards:
        for o in _walk(guard):
            if reduce and reduction_atomic(o, guard, fn, gids):
                continue
            if o.name in _FORBIDDEN or (o.name in _GEOM0 and _dim(o) == 0):
                return None
        if not _decide(guard, gids, fn, known):
            return None
    return Found(gids, guards, known, chain, epilogue)


def _is_guard(o) -> bool:
    return not len(o.results) and not len(o.regions[1].blocks)


def _is_condition(o) -> bool:
    """A top-level `scf.if` computing an i1 from pure ops (a short-circuit
    `and`; `coarsen_bounds.bounds` reads it where a guard uses it)."""
    return len(o.results) == 1 and str(o.results[0].type) == "i1" and all(
        x.name.startswith(_PREFIX_OK) or x.name in ("memref.dim", "scf.yield")
        for x in _walk(o))


def _decide(guard, gids, fn, known) -> bool:
    """Record the bounds of `guard` and of the guards directly in its body
    (recursively) that are bounds too; False when `guard`'s are not."""
    found = B.bounds(guard.operands[0], gids, fn)
    if found is None:
        return False
    known[guard] = found
    for o in guard.regions[0].blocks[0].operations:
        o = o.operation
        if o.name == "scf.if" and _is_guard(o):
            _decide(o, gids, fn, known)  # not a bound: it stays a runtime test
    return True


def _local_load(op) -> bool:
    """A load from a `memref.alloca` (a per-thread slot: a derivative
    function reads an Active scalar's gradient between its guards)."""
    if op.name != "memref.load":
        return False
    o = _op(op.operands[0])
    return o is not None and o.name == "memref.alloca"


def _local_store(op) -> bool:
    """A store into a `memref.alloca` (a per-thread slot: derivative
    functions zero their adjoint slots up front)."""
    if op.name != "memref.store":
        return False
    o = _op(op.operands[1])
    return o is not None and o.name == "memref.alloca"


def eligible(fn, module=None, noalias=False) -> bool:
    """Is kernel `fn` eligible? (a derivative wrapper: only with `noalias`
    facts, its callee looked up in `module`)."""
    if analyze(fn) is not None:
        return True
    callee = _autodiff_callee(fn, module) if noalias and module is not None else None
    return callee is not None and analyze(callee) is not None


def _autodiff_callee(fn, module):
    """The function a lone `diffgpu.autodiff` (distinct argument operands)
    of kernel `fn` differentiates, else None. Its results (Active scalars'
    gradients) may only go to their slot adds (`slot_epilogue`)."""
    from diffgpu.dialects.ops import AutodiffOp

    block = fn.regions[0].blocks[0]
    ops = list(block.operations)
    if len(ops) < 2 or not isinstance(ops[0], AutodiffOp):
        return None
    if not _results_to_slots(ops[0].operation, [o.operation for o in ops[1:-1]], fn):
        return None
    args = list(block.arguments)
    operands = list(ops[0].operands)
    if not all(any(v == a for a in args) for v in operands) or any(
            operands[i] == operands[j] for i in range(len(operands)) for j in range(i)):
        return None
    name = ops[0].callee
    for o in module.body.operations:
        o = o.operation
        if o.name == "func.func" and o.attributes["sym_name"].value == name:
            return o if o.regions[0].blocks else None
    return None


def _results_to_slots(producer, epilogue, fn) -> bool:
    """No results and nothing after `producer`, or results used only as the
    values of slot adds in a `slot_epilogue`."""
    if not len(producer.results):
        return not epilogue
    return slot_epilogue(epilogue, fn) and all(
        slot_atomic(u.owner.operation) and u.operand_number == 1
        for r in producer.results for u in r.uses)


def inline_lone_call(fn, module) -> None:
    """A kernel whose body is one `func.call` (a derivative wrapper after
    autodiff; its results, if any, going to slot adds) gets the callee's
    body instead."""
    from diffgpu._mlir import ir

    block = fn.regions[0].blocks[0]
    ops = [o.operation for o in block.operations]
    if len(ops) < 2 or ops[0].name != "func.call":
        return
    call = ops[0]
    if not _results_to_slots(call, ops[1:-1], fn):
        return
    name = ir.FlatSymbolRefAttr(call.attributes["callee"]).value
    src = next((o.operation for o in module.regions[0].blocks[0].operations
                if o.operation.name == "func.func"
                and o.operation.attributes["sym_name"].value == name), None)
    if src is None or not src.regions[0].blocks:
        return
    copy = src.clone(ip=ir.InsertionPoint(fn))
    body = copy.regions[0].blocks[0]
    for arg, v in zip(list(body.arguments), list(call.operands)):
        arg.replace_all_uses_with(v)
    inner = [x.operation for x in body.operations]
    if len(inner[-1].operands) != len(call.results):
        copy.erase()
        return
    for o in inner[:-1]:
        o.move_before(call)
    for r, v in zip(list(call.results), list(inner[-1].operands)):
        r.replace_all_uses_with(v)
    call.erase()
    copy.erase()


@register_pass
@dataclass
class Coarsen(ModulePass):
    """See the module docstring: kernels marked `diffgpu.coarsen = N` (by
    `mark_facts`) are rewritten when the analysis of the differentiated
    module still accepts them; otherwise the mark is dropped (the runtime
    reads the outcome from the PTX: `factor_in_ptx`)."""
    name: ClassVar[str] = "diffgpu-coarsen"
    summary: ClassVar[str] = ("give each thread of an eligible elementwise kernel COARSEN "
                              "consecutive elements (launch facts decide)")

    def run(self, module) -> None:
        from diffgpu._mlir import ir
        for op in module.regions[0].blocks[0].operations:
            op = op.operation
            if op.name == "func.func" and COARSEN_ATTR in op.attributes:
                factor = ir.IntegerAttr(op.attributes[COARSEN_ATTR]).value
                del op.attributes[COARSEN_ATTR]  # a request; done below or not at all
                if _autodiff_free(op):
                    inline_lone_call(op, module)
                found = analyze(op, reduce=NOALIAS_ATTR in op.attributes)
                if found is not None:
                    coarsen(op, found, factor)
                    op.attributes[COARSEN_ATTR] = ir.IntegerAttr.get(
                        ir.IntegerType.get_signless(64), factor)
                    if NOALIAS_ATTR in op.attributes:  # the copies' loads first, too
                        order_function(op)


def _autodiff_free(fn) -> bool:
    """No diffgpu.autodiff/fwddiff left (the pass runs after autodiff)."""
    return not any(o.name in N.DIFF for o in _walk(fn))


from diffgpu.lowering.coarsen import rows as _rows  # noqa: E402,F401  (registers diffgpu-coarsen-rows)


def factor_in_ptx(ptx: str, entry: str) -> int:
    """The coarsening a compiled kernel got: its tail function (always
    called, never inlined; `__dg_tail` for COARSEN, `__dg_tail_x<F>` for
    another factor) is in the PTX exactly when the pass rewrote it."""
    import re
    m = re.search(rf"\.func\s+(\([^)]*\)\s*)?{re.escape(entry)}__dg_tail(_x(\d+))?\b", ptx)
    return 1 if m is None else int(m.group(3) or COARSEN)


def factor_for(fn, module, noalias: bool, grid_div: bool, grid_div16: bool) -> int:
    """The coarsening `mark_facts` asks for: REDUCE_COARSEN for a kernel
    that is eligible only through its reduction atomics (`noalias` launch,
    grid x a multiple of REDUCE_COARSEN), COARSEN for the others (grid x a
    multiple of COARSEN), 1 for none. A derivative wrapper of a reduction
    kernel gets COARSEN: its reverse writes a gradient element per element,
    and 4 v4 stores per thread 64 bytes apart cost more than the shared
    cotangent load saves (H200, 2^26 float32, bench/reduce_variants.py: the
    sum of squares' `dg.vjp` 129 us by 4, 201 us by 16; its
    Enzyme-convention gradient 192 us by 4, 275 us by 16)."""
    plain = eligible(fn, module, noalias)
    callee = _autodiff_callee(fn, module) if noalias and module is not None else None
    found = None if plain or not noalias else analyze(fn if callee is None else callee,
                                                      reduce=True)
    reduces = found is not None
    if reduces and callee is None and grid_div16 and sum(
            len(_walk(guard)) for guard in found.guards) <= MAX_BODY_OPS // 4:
        return REDUCE_COARSEN  # (a longer body would grow 16-fold: factor 4 then)
    return COARSEN if (plain or reduces) and grid_div else 1

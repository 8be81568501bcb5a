"""Launch-time specialisation: the facts a launch proved, and what they allow.

The runtime (python/diffgpu/runtime/specialize.py) proves facts about one
launch (no two arrays overlap, which arrays are C-contiguous, which
geometry dimensions are 1) and `mark_facts` records them on the entry
kernel as a dictionary attribute, part of the compiled program's key:

    func.func @k(%y: memref<?xf32, strided<[?], offset: ?>>, ...) attributes {
        diffgpu.kernel, diffgpu.launch_facts = {contiguous = [true, true],
        noalias = true, unit_dims = [1 : i64, 2 : i64]}, diffgpu.target = ...}

Readers of the attribute:
- `diffgpu-autodiff` (autodiff/elision.py): a whole-launch derivative whose
  arrays are distinct arguments of a `noalias` kernel lets several shadows
  skip their atomics, drops the geometry guard of `unit_dims`, and marks the
  derivative function `diffgpu.noalias`;
- `diffgpu-specialize` (below), after autodiff, in functions whose memref
  arguments are proven pairwise disjoint (the `noalias` kernel itself, and
  derivative functions marked `diffgpu.noalias`): a block's loads are issued
  before the stores to other arrays that precede them, so that a thread's
  DRAM round trips overlap instead of waiting on each other (the reverse
  sweep's consuming store `dy = 0` no longer delays the load of `dx`); the
  kernel's arrays that nothing writes (through calls too) are listed in
  `diffgpu.readonly`;
- `diffgpu-nvvm-cleanup` (lowering/gpu_nvvm.py): `noalias` kernel pointers,
  `readonly` ones for arrays the kernel never writes (`ld.global.nc`),
  `align 16` ones for `aligned` arrays, the offset and the strides of
  `contiguous` arrays folded to constants;
- `diffgpu-specialize` also applies `extents` (lowering/specialize_shapes.py):
  `memref.dim` of an array reads its representative's size, in the kernel
  and the functions only it calls, so equal guards become one;
- `diffgpu-index32` (lowering/specialize_shapes.py), after lowering to GPU:
  `index32` kernels' gpu.modules lower `index` to i32; `mark_facts` records
  `index32 = false` unless `index32_safe` holds for the module (integers
  become indices only as subscripts) and no kernel parameter is an index;
- `mark_facts` itself: an eligible elementwise kernel of a 1-D launch whose
  grid x extent divides (`grid_div`) gets `diffgpu.coarsen = 4` (16 for a
  reduction kernel when `grid_div16` holds)
  (lowering/coarsen.py; `diffgpu-coarsen` rewrites it, the runtime launches
  a quarter of the blocks).

Functions without these attributes are left exactly as they are: the
generic program (overlapping arrays, in-place kernels) is unchanged.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from diffgpu.dialects import names as N
from diffgpu.lowering.registry import ModulePass, register_pass
from diffgpu.lowering.specialize_shapes import canonical_dims, cse_pure, index32_safe

FACTS_ATTR = "diffgpu.launch_facts"
NOALIAS_ATTR = "diffgpu.noalias"
READONLY_ATTR = "diffgpu.readonly"


def mark_facts(text: str, entry: str, facts) -> str:
    """`text` (diffgpu IR) with the launch facts (runtime Facts) recorded on
    the kernel `entry`."""
    from diffgpu import compiler
    from diffgpu._mlir import ir

    with compiler.context(), ir.Location.unknown():  # the driver's: no new context
        module = ir.Module.parse(text)
        for op in module.body.operations:
            op = op.operation
            if op.name == "func.func" and op.attributes["sym_name"].value == entry:
                ftype = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
                ranks = [ir.MemRefType(t).rank if isinstance(t, ir.MemRefType) else -1
                         for t in ftype.inputs]
                text = facts.attribute_text()[:-1] + ", ranks = [" + ", ".join(
                    f"{r} : i64" for r in ranks) + "]}"
                if getattr(facts, "index32", False) and (any(  # an index parameter: i64 packed
                        isinstance(t, ir.IndexType) for t in ftype.inputs) or not index32_safe(
                        [o.operation for o in module.body.operations
                         if o.operation.name == "func.func"])):
                    text = text.replace("index32 = true", "index32 = false")
                op.attributes[FACTS_ATTR] = ir.Attribute.parse(text)
                if facts.noalias:
                    op.attributes[NOALIAS_ATTR] = ir.UnitAttr.get()
                if getattr(facts, "grid_div", False) and facts.unit_dims == (1, 2):
                    from diffgpu.lowering import coarsen
                    factor = coarsen.factor_for(op, module, facts.noalias, True,
                                                getattr(facts, "grid_div16", False))
                    if factor > 1:
                        op.attributes[coarsen.COARSEN_ATTR] = ir.IntegerAttr.get(
                            ir.IntegerType.get_signless(64), factor)
                break
        else:
            raise ValueError(f"no function @{entry} to specialise")
        return compiler.hand_over(module)  # the driver compiles it without a re-parse


def coarsen_factor(text: str) -> int:
    """The coarsening `mark_facts` chose for a module's kernel (1: none),
    read from the functions' attribute; the runtime divides the grid's x
    extent by it (reading it from the PTX's tail function)."""
    from diffgpu import compiler
    from diffgpu._mlir import ir
    from diffgpu.lowering import coarsen
    from diffgpu.lowering.ir_util import int_attr, top_ops

    with compiler.context(), ir.Location.unknown():
        module = ir.Module.parse(text)
    return max((int_attr(f, coarsen.COARSEN_ATTR, 1) for f in top_ops(module, ("func.func",))),
               default=1)


def read_facts(fn) -> dict | None:
    """{"noalias": bool, "contiguous": [bool], "unit_dims": (int,), "ranks":
    [int]} (rank -1: a scalar) of a function marked by `mark_facts`, else None."""
    from diffgpu._mlir import ir

    if FACTS_ATTR not in fn.attributes:
        return None
    d = ir.DictAttr(fn.attributes[FACTS_ATTR])
    return {"noalias": bool(ir.BoolAttr(d["noalias"]).value),
            "contiguous": [bool(ir.BoolAttr(a).value) for a in ir.ArrayAttr(d["contiguous"])],
            "aligned": ([bool(ir.BoolAttr(a).value) for a in ir.ArrayAttr(d["aligned"])]
                        if "aligned" in d else []),
            "unit_dims": tuple(ir.IntegerAttr(a).value for a in ir.ArrayAttr(d["unit_dims"])),
            "ranks": [ir.IntegerAttr(a).value for a in ir.ArrayAttr(d["ranks"])],
            "extents": ([[ir.IntegerAttr(r).value for r in ir.ArrayAttr(e)]
                         for e in ir.ArrayAttr(d["extents"])] if "extents" in d else []),
            "index32": "index32" in d and bool(ir.BoolAttr(d["index32"]).value)}


# ---------------------------------------------------------------------------
# diffgpu-specialize
# ---------------------------------------------------------------------------

#: ops that neither write memory nor synchronise
_PURE_PREFIXES = ("arith.", "math.", "index.")
_PURE = frozenset(("memref.load", "memref.dim", "memref.alloca", "memref.cast",
                   "scf.yield") + N.GEOMETRY)
#: op -> position of the memref it writes
_WRITES = {"memref.store": 1, N.ATOMIC_ADD: N.ATOMIC_MEMREF, "memref.atomic_rmw": 1}


@register_pass
@dataclass
class Specialize(ModulePass):
    """Apply launch facts after autodiff: load order, read-only arrays.

    In a function marked `diffgpu.noalias` (its memref arguments are pairwise
    disjoint: a launch proved it), adjacent `scf.if`s on the same condition
    (the forward and reverse sweeps of an `if i < n`) become one, and in each
    block every `memref.load` moves up past the ops that cannot affect it:
    pure ops, and stores/atomics into a *different* argument or local
    allocation. It stops at its operands' definitions, at a write to its own
    array, at calls, barriers and anything else.

        scf.if %in { %x = load %X[%i]; store %f, %Y[%i] }
        scf.if %in { %d = load %dY[%i]; store %zero, %dY[%i]
                     %a = load %dX[%i]; store %s, %dX[%i] }
      becomes
        scf.if %in { %x = load %X[%i]; %d = load %dY[%i]; %a = load %dX[%i]
                     store %f, %Y[%i]; store %zero, %dY[%i]; store %s, %dX[%i] }

    A kernel with launch facts gets `diffgpu.readonly = [..]`: per argument,
    true for an array that no store or atomic of the kernel or of the
    functions it calls (followed through calls) writes.
    """
    name: ClassVar[str] = "diffgpu-specialize"
    summary: ClassVar[str] = ("apply launch facts: issue loads before the stores to other "
                              "arrays where a launch proved them disjoint; mark read-only arrays")

    def run(self, module) -> None:
        from diffgpu._mlir import ir

        funcs = {}
        for op in module.regions[0].blocks[0].operations:
            op = op.operation
            if op.name == "func.func":
                funcs[op.attributes["sym_name"].value] = op
        written = Written(funcs)
        canonical_dims(funcs, read_facts)
        for f in funcs.values():
            if not f.regions[0].blocks:
                continue
            if NOALIAS_ATTR in f.attributes:
                order_function(f)
            if FACTS_ATTR in f.attributes:
                flags = written.of(f.attributes["sym_name"].value)
                args = list(f.regions[0].blocks[0].arguments)
                f.attributes[READONLY_ATTR] = ir.ArrayAttr.get([
                    ir.BoolAttr.get(isinstance(a.type, ir.MemRefType) and not w)
                    for a, w in zip(args, flags)])


class Written:
    """Which memref arguments of a function may be written (by it or by the
    functions it calls); unknown uses count as writes."""

    def __init__(self, funcs):
        self.funcs, self.memo = funcs, {}

    def of(self, name: str) -> list[bool]:
        from diffgpu._mlir import ir

        if name in self.memo:
            return self.memo[name]
        f = self.funcs[name]
        args = list(f.regions[0].blocks[0].arguments) if f.regions[0].blocks else []
        self.memo[name] = [True] * len(args)  # recursion: assume written
        out = [False] * len(args)
        for k, a in enumerate(args):
            if isinstance(a.type, ir.MemRefType):
                out[k] = self._value_written(a)
        self.memo[name] = out
        return out

    def _value_written(self, v) -> bool:
        from diffgpu._mlir import ir

        for use in v.uses:
            o = use.owner.operation if hasattr(use.owner, "operation") else use.owner
            name = o.name
            if name in ("memref.load", "memref.dim"):
                continue
            if name in _WRITES:
                if use.operand_number == _WRITES[name]:
                    return True
                continue
            if name in ("memref.cast", "memref.subview", "memref.reinterpret_cast"):
                if self._value_written(o.results[0]):
                    return True
                continue
            if name == "func.call":
                callee = ir.FlatSymbolRefAttr(o.attributes["callee"]).value
                if callee not in self.funcs or not self.funcs[callee].regions[0].blocks:
                    return True
                flags = self.of(callee)
                if use.operand_number >= len(flags) or flags[use.operand_number]:
                    return True
                continue
            return True
        return False


def order_function(fn) -> None:
    args = list(fn.regions[0].blocks[0].arguments)
    cse_pure(fn)  # guards on one extent (launch fact `extents`) become one value
    _visit_blocks(fn, lambda b: _fuse_ifs(b, args))
    slots = _slots(fn)
    _visit_blocks(fn, lambda b: _forward_slots(b, slots))
    _visit_blocks(fn, lambda b: _hoist_loads(b, args))


def _slots(fn) -> list:
    """The rank-0 `memref.alloca`s of `fn` (the tape's one-value slots) used
    only by loads and stores."""
    from diffgpu._mlir import ir

    out = []

    def visit(o):
        o = o.operation
        if o.name == "memref.alloca" and ir.MemRefType(o.results[0].type).rank == 0:
            uses = [u.owner.operation if hasattr(u.owner, "operation") else u.owner
                    for u in o.results[0].uses]
            if all(u.name == "memref.load" or (u.name == "memref.store" and
                                               not u.operands[0] == o.results[0])
                   for u in uses):
                out.append(o.results[0])
        return ir.WalkResult.ADVANCE

    fn.walk(visit, ir.WalkOrder.PRE_ORDER)
    return out


def _forward_slots(block, slots) -> None:
    """In one block, a slot load after a store to that slot (nothing in
    between writing it) is the stored value: the forward sweep's value meets
    the reverse sweep's use directly (`math.sin` and the derivative's
    `math.cos` of one value then share it, see gpu_sincos.py)."""
    from diffgpu._mlir import ir

    last = []  # [(slot, value)]

    def find(slot):
        for s, v in last:
            if s == slot:
                return v
        return None

    def forget(slot):
        last[:] = [(s, v) for s, v in last if not s == slot]

    for op in [o.operation for o in block.operations]:
        if op.name == "memref.store" and any(op.operands[1] == s for s in slots):
            forget(op.operands[1])
            last.append((op.operands[1], op.operands[0]))
        elif op.name == "memref.load" and any(op.operands[0] == s for s in slots):
            v = find(op.operands[0])
            if v is not None:
                op.results[0].replace_all_uses_with(v)
                op.erase()
        elif len(op.regions):  # nested stores to a slot: forget it
            def visit(o):
                o = o.operation
                if o.name == "memref.store":
                    forget(o.operands[1])
                return ir.WalkResult.ADVANCE
            op.walk(visit, ir.WalkOrder.PRE_ORDER)


def _visit_blocks(op, fn) -> None:
    for region in op.regions:
        for block in region.blocks:
            fn(block)
            for inner in block.operations:
                _visit_blocks(inner.operation, fn)


def _fuse_ifs(block, args) -> None:
    """`scf.if %c {A}` followed by `scf.if %c {B}` (no results, no else)
    -> `scf.if %c {A; B}`, when the ops M between them (in a derivative: the
    active scalars' slots) commute with B: B then runs before M."""
    ops = [o.operation for o in block.operations]
    prev, between = None, []
    for op in ops:
        if (prev is not None and _plain_if(op) and op.operands[0] == prev.operands[0]
                and (not between or _commute(op, between, prev, args))):
            dst = prev.regions[0].blocks[0]
            dst_yield = list(dst.operations)[-1]
            src_ops = [o.operation for o in op.regions[0].blocks[0].operations][:-1]
            for o in src_ops:
                o.move_before(dst_yield)
            op.erase()
            continue
        if _plain_if(op):
            prev, between = op, []
        elif prev is not None:
            between.append(op)


def _commute(op, between, prev, args) -> bool:
    """May `op` (an scf.if) move up before the ops `between`, to the end of
    `prev`'s body? Its operands must be defined before `prev` (or in it),
    and neither side may write an array or slot the other reads or writes."""
    from diffgpu._mlir import ir

    inner = [op] + [o.operation for o in _nested(op)]
    mine = set(inner)
    for o in inner:
        for v in o.operands:
            if isinstance(v.owner, ir.Block) or v.owner.operation in mine:
                continue
            d = v.owner.operation
            if d.block == prev.block and not _before_op(d, prev):
                return False
    w1, r1 = _writes(op, args), _reads(op)
    if w1 is None:
        return False
    for o in between:
        w2 = _writes(o, args)
        if w2 is None:
            return False
        r2 = _reads(o)
        if any(a == b for a in w1 for b in w2 + r2) or any(a == b for a in w2 for b in r1):
            return False
    return True


def _nested(op) -> list:
    out = []
    for region in op.regions:
        for block in region.blocks:
            for o in block.operations:
                out.append(o)
                out += _nested(o.operation)
    return out


def _reads(op) -> list:
    """The roots `op` (and its nested ops) loads from."""
    return [_root(o.operation.operands[0]) for o in [op] + _nested(op)
            if o.operation.name == "memref.load"]


def _before_op(a, b) -> bool:
    for o in a.block.operations:
        if o.operation == a:
            return True
        if o.operation == b:
            return False
    return False


def _plain_if(op) -> bool:
    return (op.name == "scf.if" and len(op.results) == 0
            and len(op.regions[1].blocks) == 0)


def _root(v):
    """The function argument or local allocation a memref value views."""
    from diffgpu._mlir import ir

    while True:
        owner = v.owner
        if isinstance(owner, ir.Block):
            return v  # a block argument
        o = owner.operation
        if o.name in ("memref.cast", "memref.subview", "memref.reinterpret_cast"):
            v = o.operands[0]
            continue
        return v


def _is_local(root) -> bool:
    from diffgpu._mlir import ir

    owner = root.owner
    if isinstance(owner, ir.Block):
        return False
    return owner.operation.name in ("memref.alloca", "memref.alloc", N.SHARED_ALLOC)


def _writes(op, args):
    """The roots `op` (and its nested ops) may write; None: anything or a
    synchronisation (stop)."""
    from diffgpu._mlir import ir

    out = []
    stop = []

    def visit(o):
        o = o.operation
        name = o.name
        if name in _WRITES:
            r = _root(o.operands[_WRITES[name]])
            if any(r == a for a in args) or _is_local(r):
                out.append(r)
            else:
                stop.append(o)
        elif name in _PURE or name.startswith(_PURE_PREFIXES) or name in (
                "scf.if", "scf.for", "scf.while", "scf.condition"):
            pass
        else:
            stop.append(o)
        return ir.WalkResult.ADVANCE

    op.walk(visit, ir.WalkOrder.PRE_ORDER)
    return None if stop else out


def _hoist_loads(block, args) -> None:
    """Move each load of an argument or local buffer up to just below the
    last op it must follow: the ops defining its operands, the last op that
    may write its buffer, the last op whose writes are unknown (a call, a
    barrier, an atomic...) and, for a load of an argument, the last load of
    an argument (loads of arrays keep their program order). Loads that
    follow one op keep their program order among themselves.

    One pass in program order: every op gets a sort key, (its index, 0) for
    ops that stay, (the key's index of its anchor, n) for a moved load, with
    n counting moved loads; the block is then put in key order. Linear in
    the block's length (a scan back from each load was quadratic: 7 s for
    a 1000-term straight-line kernel)."""
    from diffgpu._mlir import ir

    ops = [o.operation for o in block.operations]
    if len(ops) < 3:
        return
    keys = {}  # op -> sort key of an op already placed (ops hash by identity in the IR)
    nothing = (-1, 0)
    last_stop = nothing  # the last op that may write anything
    last_arg_load = nothing  # the last load of an argument
    writes = []  # [(root, key of the last op writing it)]
    moved = 0
    order = []
    for i, op in enumerate(ops):
        key = (i, 0)
        if op.name == "memref.load":
            root = _root(op.operands[0])
            local = _is_local(root)
            if local or any(root == a for a in args):
                anchor = last_stop if local else max(last_stop, last_arg_load)
                for r, k in writes:
                    if r == root:
                        anchor = max(anchor, k)
                for v in op.operands:
                    if not isinstance(v.owner, ir.Block):
                        anchor = max(anchor, keys.get(v.owner.operation, nothing))
                moved += 1
                key = (anchor[0], moved)
            if not local:
                last_arg_load = max(last_arg_load, key)
        else:
            w = _writes(op, args)
            if w is None:
                last_stop = key
            else:
                for r in w:
                    writes.append((r, key))
        keys[op] = key
        order.append((key, i, op))
    order.sort(key=lambda t: (t[0], t[1]))
    if [t[1] for t in order] == list(range(len(ops))):
        return
    end = ops[-1]
    assert order[-1][2] == end  # the terminator stays last
    for _, _, op in order[:-1]:
        op.move_before(end)


from diffgpu.lowering import specialize_shapes  # noqa: E402,F401  (diffgpu-index32)

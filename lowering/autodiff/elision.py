"""Atomic elision: where the reverse sweep may accumulate into a shadow with a
plain load/add/store instead of `diffgpu.atomic_add`.

Two threads may collide on a shadow element, so the reverse of a load is an
atomic by default. It becomes a plain read-modify-write only when the
analysis proves that every element of the shadow a thread touches is touched
by no other thread of the launch:

1. Whole launch: the derivative function is the one called by a
   `diffgpu.autodiff` op in a kernel that does nothing else with memory (the
   host API's wrapper kernel: only `diffgpu.atomic_add`s into arrays that are
   not operands of the op). Then no other code of the launch touches the
   shadows while the reverse sweep runs. Derivatives of calls (split
   functions) and ops inside user kernels keep their atomics.
2. Thread-unique index: every index component is the global id of one
   dimension, `block_id(d) * block_dim(d) + thread_id(d)` (operands in any
   order, in index or i64 arithmetic, through `index_cast`s) or an integer
   constant, and at least one component is a global id. The map from a
   thread to that tuple is injective when the dimensions not named in it
   have one thread (block_dim(d) == grid_dim(d) == 1): a runtime guard,
   uniform across the launch, picks the plain update then and the atomic
   otherwise; with all three dimensions named, no guard is emitted.
3. One key for all shadows: every access (load, store, atomic_add) of every
   shadowed array of the same memory space uses the SAME index tuple, and no
   other use (a call, anything else but `memref.dim`) passes such an array
   on. Shadows of distinct arguments may overlap in memory, so the arrays are
   judged together; an array accessed at `i` and `i + 1`, at a loop variable,
   through an index array, at `i // 2`, at `thread_id` alone, at a constant
   only, or handed to a call keeps every atomic of its group. Shared memory
   (workgroup) shadows always keep theirs.
4. One accumulating shadow: two arrays both read (x[i] * w[i]) could have
   shadows overlapping at an offset (dw = dx[1:]), where thread i's plain
   update of dw[i] would meet thread i + 1's of dx[i + 1]: with more than one
   shadow of the group receiving accumulations, all keep their atomics --
   unless the launch proved its arrays disjoint (5).
   (Overlapping shadows where one is also written already race through the
   plain consume store, elided or not.)
5. Launch facts (lowering/facts/specialize.py): when the wrapper kernel carries
   `diffgpu.launch_facts` with `noalias` and the op's arrays are distinct
   arguments of that kernel, no two shadows overlap, so any number of them
   may accumulate plainly, and rule 3 judges each shadow on its own (a
   shadow read at `out[0]` no longer keeps the atomics of one updated at
   `x[gid]`); the derivative function is marked `diffgpu.noalias` (for
   `diffgpu-specialize`). Dimensions in `unit_dims` have one thread and one
   block: the guard does not check them.

Out-of-bounds indices are undefined behaviour of the primal too (a 2-D
`A[i, j]` with `j` past the row would alias the next row) and shadows whose
strides make distinct indices overlap (stride 0) are not supported.

    %g = arith.addi (arith.muli %bid, %bdim), %tid : index     // dim 0
    %a = memref.load %A[%g]                                     // only access
  reverse, instead of "diffgpu.atomic_add"(%dA, %d, %g):
    %one = (block_dim(1) == 1 && grid_dim(1) == 1 && ... dim 2)
    scf.if %one { %o = memref.load %dA[%g]; memref.store (%o + %d), %dA[%g] }
    else { "diffgpu.atomic_add"(%dA, %d, %g) }
"""
from __future__ import annotations

from diffgpu._mlir import arith, ir, memref, scf

from diffgpu.lowering.common import targets
from diffgpu.dialects import names as N
from diffgpu.dialects import ops as dg_ops

from diffgpu.lowering.autodiff import build as B
from diffgpu.lowering.common.ir_util import walk_block as walk_ops
from diffgpu.lowering.facts.indices import index_key

#: op -> (position of the memref, position of the first index)
_ACCESS = {"memref.load": (0, 1), "memref.store": (1, 2),
           N.ATOMIC_ADD: (N.ATOMIC_MEMREF, N.ATOMIC_FIRST_INDEX)}


def _use_key(use):
    op = use.owner.operation if hasattr(use.owner, "operation") else use.owner
    name = op.name
    if name == "memref.dim":
        return "skip"
    pos = _ACCESS.get(name)
    if pos is None or use.operand_number != pos[0]:
        return None
    return index_key(list(op.operands)[pos[1]:])


def _space(v):
    ms = ir.MemRefType(v.type).memory_space
    return None if ms is None else str(ms)


def analyze(dup, is_active, launch=None):
    """{memref: dims the guard must check (tuple)} for the shadowed arrays
    `dup` whose accumulations may skip the atomic (rules 2 to 5);
    `is_active(value)` tells the loads that accumulate; `launch` the op's
    `Launch` (rule 5)."""
    disjoint = isinstance(launch, Launch) and launch.noalias
    unit = launch.unit_dims if isinstance(launch, Launch) else ()
    if disjoint:
        for v in dup:  # a shadowed argument: its block's parent is the function
            if isinstance(v.owner, ir.Block):
                fn = v.owner.owner
                fn = getattr(fn, "operation", fn)
                fn.attributes["diffgpu.noalias"] = ir.UnitAttr.get()
                break
    groups = {}
    for i, m in enumerate(dup):
        if B.is_memref(m.type):  # disjoint shadows: each one its own group (rule 5)
            groups.setdefault((_space(m), i if disjoint else None), []).append(m)
    plan = {}
    for (space, _), arrays in groups.items():
        if space is not None:
            continue  # shared memory: keep the atomics
        keys, accumulating = set(), set()
        for m in arrays:
            for use in m.uses:
                k = _use_key(use)
                if k != "skip":
                    keys.add(k)
                op = use.owner.operation if hasattr(use.owner, "operation") else use.owner
                if op.name == "memref.load" and is_active(op.results[0]):
                    accumulating.add(m)
        if len(keys) != 1 or None in keys or (len(accumulating) > 1 and not disjoint):
            continue
        (key,) = keys
        named = {c[1] for c in key if c[0] == "gid"}
        guard = tuple(d for d in range(3) if d not in named and d not in unit)
        plan.update({m: guard for m in arrays})
    return plan


class Launch:
    """Rule 1 holds for an op (truthy), with what rule 5's launch facts prove:
    `noalias` (its arrays are distinct arguments of a kernel whose arrays
    are disjoint) and `unit_dims`. Hashable; prints "launch" without facts."""

    def __init__(self, noalias: bool = False, unit_dims: tuple = ()):
        self.noalias, self.unit_dims = noalias, tuple(unit_dims)

    def _key(self):
        return (self.noalias, self.unit_dims)

    def __eq__(self, other):
        return isinstance(other, Launch) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __str__(self):
        if not (self.noalias or self.unit_dims):
            return "launch"
        return f"launch noalias={int(self.noalias)} unit_dims={self.unit_dims}"


def _launch_facts(op, fn) -> Launch:
    from diffgpu.lowering.facts.attrs import read_facts

    facts = read_facts(fn)
    if facts is None:
        return Launch()
    entry_args = list(fn.regions[0].blocks[0].arguments)
    arrays = [v for v in op.operation.operands if B.is_memref(v.type)]
    distinct = all(any(v == a for a in entry_args) for v in arrays) and all(
        not (arrays[i] == arrays[j]) for i in range(len(arrays)) for j in range(i))
    return Launch(facts["noalias"] and distinct, facts["unit_dims"])


def whole_launch(op, funcs):
    """Rule 1: `op` (a diffgpu.autodiff) sits in a kernel that nothing calls
    or differentiates (`funcs`: name -> func.func of the module) and whose
    other ops touch no memory but atomic_adds into arrays that are not its
    operands. A `Launch` (with rule 5's facts) when it holds, else False."""
    fn = op.operation.parent
    while fn is not None and fn.name != "func.func":
        fn = fn.parent
    if fn is None or targets.KERNEL_ATTR not in fn.attributes:
        return False
    name = ir.StringAttr(fn.attributes["sym_name"]).value
    for other in funcs.values():
        for region in other.regions:
            for block in region.blocks:
                for o in walk_ops(block):
                    if ("callee" in o.attributes and
                            ir.FlatSymbolRefAttr(o.attributes["callee"]).value == name):
                        return False
    mine = set(op.operation.operands)
    for other in walk_ops(fn.regions[0].blocks[0]):
        o = other.operation
        if o == op.operation or not any(B.is_memref(v.type) for v in o.operands):
            continue
        if o.name == "memref.dim":
            continue
        if o.name != N.ATOMIC_ADD or o.operands[0] in mine:
            return False
    return _launch_facts(op, fn)


def accumulate(shadow, d, idx, guard):
    """shadow[idx] += d: plain when `guard` is () , atomic when None, else
    plain under the runtime check that the dimensions in `guard` have one
    thread and one block. `d` (float32 for a 16-bit element: B.adjoint_type)
    is rounded once to a 16-bit shadow's type: by the atomic, or after the
    float32 add of the plain update."""
    elem = B.memref_elem(shadow.type)

    def atomic():
        dg_ops.atomic_add(shadow, B.cast_float(d, elem), idx)

    def plain():
        old = memref.load(shadow, idx)
        new = arith.addf(B.cast_float(old, d.type), d)
        memref.store(B.cast_float(new, elem), shadow, idx)

    if guard is None:
        return atomic()
    if not guard:
        return plain()
    one, cond = B.idx(1), None
    for dim in guard:
        for name in ("block_dim", "grid_dim"):
            c = arith.cmpi(arith.CmpIPredicate.eq, dg_ops.geometry(name, dim), one)
            cond = c if cond is None else arith.andi(cond, c)
    branch = scf.IfOp(cond, [], has_else=True)
    with ir.InsertionPoint(branch.then_block):
        plain()
        scf.YieldOp([])
    with ir.InsertionPoint(branch.else_block):
        atomic()
        scf.YieldOp([])

"""Reduction kernels for `diffgpu-coarsen` (lowering/coarsen/coarsen.py): a thread
that covers REDUCE_COARSEN consecutive elements sums its uniform-address
atomic adds in registers and adds once.

A kernel whose only cross-thread interaction is `diffgpu.atomic_add` to one
element (`reduction_atomic`) runs, coarsened, the bodies of threads
16t .. 16t+15 one after another in thread t (one execution the original
launch allowed); their adds then move to the end of the group as one add of
their pairwise sum. That changes only the order of the float additions,
which atomics never fixed (docs/atomics.md), and nothing can observe the
moved adds: the array is touched by no other op of the kernel, and the
launch proved the arrays disjoint (`diffgpu.noalias`).

    scf.if (%b + 15 < %n) {
      %v0 = ...(%b); ... %v15 = ...(%b + 15)
      %s = arith.addf (arith.addf %v0, %v1) ...     (a balanced tree)
      "diffgpu.atomic_add"(%out, %s, %c0)
    } else { func.call @k__dg_tail_x16(...) }      (one guarded add each)

`diffgpu-aggregate-atomics` then sums `%s` over the block: one add per
4096 elements with blocks of 256.
"""
from __future__ import annotations

from diffgpu.dialects import names as N

#: elements per thread of a reduction kernel: its atomics become one per
#: REDUCE_COARSEN elements before the block sum
REDUCE_COARSEN = 16
#: the element types whose adds are summed in registers
_TYPES = ("f32", "f64", "i32", "i64")


def defining_op(v):
    """The op defining `v`, None for a block argument."""
    from diffgpu._mlir import ir
    owner = v.owner
    return None if isinstance(owner, ir.Block) else owner.operation


def depends_on(v, gids) -> bool:
    """Is `v` computed from one of `gids` (or too deep to tell)?"""
    todo, seen = [v], 0
    while todo and seen < 1000:
        seen += 1
        x = todo.pop()
        if any(x == g for g in gids):
            return True
        o = defining_op(x)
        if o is not None:
            todo.extend(o.operands)
    return bool(todo)


def _invariant(v, fn) -> bool:
    """Is `v` the same in every copy of the body: computed from constants,
    arguments of `fn` and sizes by arithmetic only (a loaded index could
    change between copies: the combined add would miss the first ones)?"""
    todo, seen = [v], 0
    while todo:
        seen += 1
        x = todo.pop()
        o = defining_op(x)
        if o is None:
            if x.owner != fn.regions[0].blocks[0]:
                return False
            continue
        if seen > 64 or not (o.name.startswith(("arith.", "index.")) or o.name == "memref.dim"):
            return False
        todo.extend(o.operands)
    return True


def reduction_atomic(op, guard, fn, gids) -> bool:
    """Is `op` an atomic add the coarsened thread may sum in a register
    first? Its result is unused, it sits directly in the body of `guard`
    (it runs whenever the guard holds), its array is an argument of `fn`
    used by atomic adds only (no load can see the moved add),
    its indices are arithmetic on constants, sizes and arguments (one
    address for all threads and copies)
    and its value is a float or integer scalar."""
    from diffgpu._mlir import ir
    if op.name != N.ATOMIC_ADD or len(list(op.results[0].uses)):
        return False
    if op.parent.name != "scf.if" or op.parent != guard:
        return False
    mem = op.operands[0]
    if not isinstance(mem.owner, ir.Block) or mem.owner != fn.regions[0].blocks[0]:
        return False
    if any(depends_on(v, gids) or not _invariant(v, fn) for v in list(op.operands)[2:]):
        return False
    if str(op.operands[1].type) not in _TYPES:
        return False
    return all(u.owner.operation.name == N.ATOMIC_ADD and u.operand_number == 0
               for u in mem.uses)


def pairwise_sum(values):
    """A balanced tree of adds (one rounding path of depth log2(len))."""
    from diffgpu._mlir import arith
    while len(values) > 1:
        add = arith.addf if str(values[0].type).startswith("f") else arith.addi
        pairs = [add(values[i], values[i + 1]) for i in range(0, len(values) - 1, 2)]
        values = pairs + (values[-1:] if len(values) % 2 else [])
    return values[0]


def slot_atomic(op) -> bool:
    """The add of an Active scalar's gradient into its slot buffer (marked
    by the host-API derivative kernel, frontend/diff_kernel.py), result
    unused. The runtime sums every slot, so a coarsened thread may add its
    copies' gradients once, into the slot of its own (coarsened) block."""
    return (op.name == N.ATOMIC_ADD and N.ACTIVE_SLOTS_ATTR in op.attributes
            and not len(list(op.results[0].uses)))


#: ops a derivative kernel runs after its last guard (the slot epilogue)
_EPILOGUE_OK = ("arith.", "index.")


def slot_epilogue(ops, fn) -> bool:
    """Are `ops` (a kernel's top-level ops after its derivative call or last
    guard) only the Active scalars' slot adds and what they need: reads of
    the thread's private one-value slots (its gradients), stores into them,
    arithmetic, sizes and geometry, where thread_id(0) is absent and
    block_id(0) feeds the slot indices only (a coarsened launch renumbers
    the blocks; the slot does not matter)? The slot buffers are arguments
    of `fn` touched by slot adds (and their sizes) only."""
    for op in ops:
        name = op.name
        if slot_atomic(op):
            mem = op.operands[0]
            if not _argument(mem, fn) or not all(
                    (slot_atomic(u.owner.operation) and u.operand_number == 0)
                    or u.owner.operation.name == "memref.dim" for u in mem.uses):
                return False
            if str(op.operands[1].type) not in _TYPES:
                return False
        elif name == N.THREAD_ID and _dim(op) == 0:
            return False
        elif name == N.BLOCK_ID and _dim(op) == 0:
            if not _feeds_slot_index(op):
                return False
        elif name in ("memref.load", "memref.store"):
            slot = defining_op(op.operands[0 if name == "memref.load" else 1])
            if slot is None or slot.name != "memref.alloca":
                return False
        elif not (name.startswith(_EPILOGUE_OK) or name == "memref.dim" or name in N.GEOMETRY):
            return False
    return True


def _dim(op) -> int:
    from diffgpu._mlir import ir
    return ir.IntegerAttr(op.attributes["dim"]).value


def _argument(v, fn) -> bool:
    from diffgpu._mlir import ir
    return isinstance(v.owner, ir.Block) and v.owner == fn.regions[0].blocks[0]


def _feeds_slot_index(op) -> bool:
    """Every use of `op`'s result, through arithmetic, is a slot add's index."""
    todo, seen = [op], 0
    while todo:
        seen += 1
        o = todo.pop()
        if seen > 64:
            return False
        for use in o.results[0].uses:
            user = use.owner.operation
            if slot_atomic(user) and use.operand_number >= 2:
                continue
            if not user.name.startswith(_EPILOGUE_OK) or len(user.results) != 1:
                return False
            todo.append(user)
    return True

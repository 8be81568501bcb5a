"""The cross-block finish of `diffgpu-aggregate-atomics`: block sums of a float32
add to one launch-wide element meet in float64 scratch, and the last block adds
their total once.

After the block sum (lowering/reduce/block_sum.py), one float32 rounding per block
would remain sequential at the target, in the order the blocks finish
(docs/atomics.md, "Accuracy"). Where every block adds to the same element,
the block sums instead meet in float64 scratch, in two levels so that no
address takes more than blocks / 64 atomics (one address taking one add
and one counted arrival per block serialised them at the L2 and held every
block's fence behind that queue):

- block b belongs to group g = b % 64 (GROUPS; consecutive blocks, which
  run at the same time, in different groups); it adds its sum, widened to
  f64, to the group's accumulator, fences, and counts itself at the group's
  counter (each accumulator and counter on its own 128-byte line);
- the block that counts the group full (group g holds blocks / 64 blocks,
  one more where g < blocks % 64) takes the group's total (an atomic read,
  then minus what it read), adds it to the top accumulator, fences, and
  counts the group at the top counter; it zeroes the group's counter;
- the block that counts the last group (min(blocks, 64) groups) takes the
  top total, rounds it to f32 once and adds it to the target with one
  atomic (an add, like the original: the target keeps what was there), and
  zeroes the top counter.

So the scratch is zero again for the next launch on that stream, with no
memset per launch, and its size does not depend on the grid (abi.py,
scratch_sizes: 65 lines of accumulators and 65 of counters per sum).

    (one thread per block, %s: the block's pairwise f32 sum)
    %g = (linear block id) % 64
    "diffgpu.atomic_add"(%acc, arith.extf %s, 16 * %g)
    llvm.fence syncscope("device") acq_rel              (GPU only)
    %old = "diffgpu.atomic_add"(%count, 1, 16 * %g) : (..., i64, index) -> i64
    scf.if (%old == size(%g) - 1) {
      "diffgpu.atomic_add"(%count, -size(%g), 16 * %g); llvm.fence ...
      %p = "diffgpu.atomic_add"(%acc, 0.0, 16 * %g)      (a read)
      "diffgpu.atomic_add"(%acc, -%p, 16 * %g); "diffgpu.atomic_add"(%acc, %p, 1024)
      llvm.fence ...; %top = "diffgpu.atomic_add"(%count, 1, 1024)
      scf.if (%top == min(blocks, 64) - 1) {
        llvm.fence ...; %t = (read and zero %acc[1024]); zero %count[1024]
        "diffgpu.atomic_add"(%out, arith.truncf %t, %i)
      }
    }

Applies when the add's value is f32, its array is an argument of the kernel
and its indices are launch-uniform (constants, kernel arguments, array
sizes, `grid_dim`, `block_dim` and arithmetic on them: never `block_id`, a
loaded value or a thread id: then the blocks' adds go to one element), and
the kernel carries launch facts (`diffgpu.launch_facts`, lowering/facts/specialize.py):
only the runtime's own launches specialise, and only they pass the scratch;
the generic program (what other launchers such as `dg.jax`'s custom call
run) keeps the per-block f32 add. Not for f64 (an f64 accumulator adds
nothing) nor integers (exact in any order).

The kernel takes the scratch as two trailing arguments (abi.py, SCRATCH_ATTR:
`acc: memref<?xf64>`, `count: memref<?xi64>`), slot k (words from
k * ACC_WORDS and k * COUNT_WORDS) for its k-th such sum.
Every block counts itself exactly once: the block sum sits where every
thread of the block arrives (guards and early returns yield a zero there).
Blocks whose size is not a multiple of 32 (the block sum's per-thread
fallback on the GPU) add each thread's value in f64, fence, meet at a
barrier, and thread 0 counts the block.
"""
from __future__ import annotations

from diffgpu._mlir import arith, ir, scf

from diffgpu.abi import SCRATCH_ATTR, SCRATCH_GROUPS as GROUPS, SCRATCH_STRIDE as STRIDE
from diffgpu.abi import scratch_entries, scratch_sizes
from diffgpu.dialects import names as N
from diffgpu.dialects import ops as dg
from diffgpu.lowering.common import targets as T
from diffgpu.lowering.facts.attrs import FACTS_ATTR

#: scratch words of one slot: accumulators, counters (abi.scratch_sizes)
ACC_WORDS, COUNT_WORDS = scratch_sizes(1)
#: kernel attribute: grid sums built in it so far (its scratch slots)
SLOTS_ATTR = "diffgpu.grid_sums"
#: marks the atomics on the scratch: no array of the kernel's caller is
#: touched by them (lowering/reduce/hoist.py lets a later add move past them)
SCRATCH_MARK = "diffgpu.scratch"
#: ops a launch-uniform index may be built from (with arith.* and kernel arguments)
_LAUNCH_UNIFORM = frozenset({"arith.constant", "memref.dim", N.GRID_DIM, N.BLOCK_DIM})
_MARK = "diffgpu.aggregated"  # lowering/aggregate_atomics.AGGREGATED (no import cycle)
#: False: every block sum keeps its per-block f32 add (the design before the
#: finish). Only bench/reduce_variants.py clears it, around builds of its own
#: that bypass the program cache, to time the finish against its absence.
ENABLED = True


def launch_uniform(v, kernel) -> bool:
    """Is `v` one value for the whole launch: built from the kernel's
    arguments, constants, sizes and the launch geometry by arithmetic?"""
    todo, seen = [v], 0
    while todo:
        x = todo.pop()
        seen += 1
        owner = x.owner
        if isinstance(owner, ir.Block):
            if owner != kernel.regions[0].blocks[0]:
                return False
            continue
        op = owner.operation
        if seen > 64 or not (op.name.startswith("arith.") or op.name in _LAUNCH_UNIFORM):
            return False
        todo.extend(op.operands)
    return True


def _eligible(kernel, target, value_type) -> bool:
    if not ENABLED or FACTS_ATTR not in kernel.attributes \
            or not isinstance(value_type, ir.F32Type):
        return False
    mem = target[0]
    if not isinstance(mem.owner, ir.Block) or mem.owner != kernel.regions[0].blocks[0]:
        return False
    return all(launch_uniform(i, kernel) for i in target[1:])


def plan(kernel, target, value_type):
    """A GridSum finishing the block sums of an add to `target` (memref,
    indices: values of the kernel's body), or None where the per-block add
    stays."""
    return GridSum(kernel, target) if _eligible(kernel, target, value_type) else None


def plan_many(kernel, targets, value_type):
    """A GridSum finishing the block sums of adds to each of `targets`
    (consecutive scratch slots; `add(total, "block", k)` with k the index
    value of the target, lowering/reduce/block_sums.py), or None."""
    if not all(_eligible(kernel, t, value_type) for t in targets):
        return None
    return GridSum(kernel, targets[0], targets)


class GridSum:
    """One grid sum: slot `k` of the kernel's scratch (added on first use)."""

    def __init__(self, kernel, target, targets=None):
        self.kernel, self.target = kernel, target
        self.targets = targets  # several: slots slot .. slot + len - 1, picked by `k`
        self.gpu = T.is_gpu(T.get_target(kernel))
        used = ir.IntegerAttr(kernel.attributes[SLOTS_ATTR]).value \
            if SLOTS_ATTR in kernel.attributes else 0
        if not used:
            _add_scratch_args(kernel)
        self.slot = used
        kernel.attributes[SLOTS_ATTR] = ir.IntegerAttr.get(
            ir.IntegerType.get_signless(64), used + (len(targets) if targets else 1))
        self.k = None
        args = kernel.regions[0].blocks[0].arguments
        self.acc, self.count = args[len(args) - 2], args[len(args) - 1]

    def add(self, total, how: str = "block", k=None) -> None:
        """At the insertion point: the block's share `total`; `how` "block"
        (one thread of the block runs this) or "thread" (every thread, with
        its own value); `k`: for several targets, which one (an index value:
        its slot's atomics are the same code for every target, so the lanes
        holding different targets' sums run them side by side)."""
        self.k = k
        g = arith.remui(_linear_block(), _index(GROUPS))
        acc = arith.addi(self._base(ACC_WORDS), arith.muli(g, _index(STRIDE)))
        wide = arith.extf(ir.F64Type.get(), total)
        _mark(dg.atomic_add(self.acc, wide, [acc]), how)
        self._fence()
        if how == "block":
            self._arrive(g)
            return
        dg.barrier()
        first = scf.IfOp(arith.cmpi(arith.CmpIPredicate.eq, _linear_thread(), _index(0)), [])
        with ir.InsertionPoint(first.then_block):
            self._arrive(g)
            scf.YieldOp([])

    def _arrive(self, g) -> None:
        """Count the block in its group `g`; the block completing the group
        counts the group at the top counter; the block completing the top
        finishes."""
        i64 = ir.IntegerType.get_signless(64)
        base = self._base(COUNT_WORDS)
        cnt = arith.addi(base, arith.muli(g, _index(STRIDE)))
        old = dg.atomic_add(self.count, arith.constant(i64, 1), [cnt])
        _mark(old, "block")
        gd = [dg.grid_dim(d) for d in range(3)]
        blocks = arith.muli(gd[0], arith.muli(gd[1], gd[2]))
        # group g holds the blocks b < blocks with b % GROUPS == g
        extra = arith.cmpi(arith.CmpIPredicate.ult, g, arith.remui(blocks, _index(GROUPS)))
        size = arith.addi(arith.divui(blocks, _index(GROUPS)),
                          arith.select(extra, _index(1), _index(0)))
        size = arith.index_cast(i64, size)
        done = scf.IfOp(arith.cmpi(arith.CmpIPredicate.eq, old,
                                   arith.subi(size, arith.constant(i64, 1))), [])
        with ir.InsertionPoint(done.then_block):
            # every arrival of the group has happened: its counter back to 0;
            # its accumulator's total moves to the top accumulator
            _mark(dg.atomic_add(self.count, arith.subi(arith.constant(i64, 0), size), [cnt]),
                  "block")
            self._fence()
            acc = arith.addi(self._base(ACC_WORDS), arith.muli(g, _index(STRIDE)))
            top_acc = self._base(ACC_WORDS, GROUPS * STRIDE)
            part = self._take(acc)
            _mark(dg.atomic_add(self.acc, part, [top_acc]), "block")
            self._fence()
            top = self._base(COUNT_WORDS, GROUPS * STRIDE)
            old_top = dg.atomic_add(self.count, arith.constant(i64, 1), [top])
            _mark(old_top, "block")
            groups = arith.index_cast(i64, arith.minui(blocks, _index(GROUPS)))
            last = arith.cmpi(arith.CmpIPredicate.eq, old_top,
                              arith.subi(groups, arith.constant(i64, 1)))
            branch = scf.IfOp(last, [])
            with ir.InsertionPoint(branch.then_block):
                # the last group: the total, the top counter back to 0
                self._fence()
                total = self._take(top_acc)
                _mark(dg.atomic_add(self.count, arith.subi(arith.constant(i64, 0), groups),
                                    [top]), "block")
                narrow = arith.truncf(ir.F32Type.get(), total)
                self._finish(narrow)
                scf.YieldOp([])
            scf.YieldOp([])

    def _base(self, words: int, extra: int = 0):
        """Word `extra` of this sum's slot in a scratch array of `words`
        words per slot (an index value; a constant for a single sum)."""
        if self.k is None:
            return _index(self.slot * words + extra)
        first = arith.muli(arith.addi(_index(self.slot), self.k), _index(words))
        return arith.addi(first, _index(extra)) if extra else first

    def _finish(self, narrow) -> None:
        """The one add of the launch's total to the target (the target `k`'s)."""
        if self.k is None:
            _mark(dg.atomic_add(self.target[0], narrow, list(self.target[1:])), "block",
                  scratch=False)
            return
        for j, t in enumerate(self.targets):
            mine = scf.IfOp(arith.cmpi(arith.CmpIPredicate.eq, self.k, _index(j)), [])
            with ir.InsertionPoint(mine.then_block):
                _mark(dg.atomic_add(t[0], narrow, list(t[1:])), "block", scratch=False)
                scf.YieldOp([])

    def _take(self, at):
        """Read the accumulator at word `at` (an atomic add of 0: from the
        L2, where the other blocks' adds landed) and subtract what was read,
        leaving it zero; the value read."""
        t = dg.atomic_add(self.acc, arith.constant(ir.F64Type.get(), 0.0), [at])
        _mark(t, "block")
        _mark(dg.atomic_add(self.acc, arith.negf(t), [at]), "block")
        return t

    def _fence(self) -> None:
        """Order this thread's earlier global accesses before its later ones
        for the whole GPU (`fence.acq_rel.gpu`); the host runs one block at a
        time and needs none."""
        if self.gpu:
            ir.Operation.create("llvm.fence", attributes={
                "ordering": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 6),  # acq_rel
                "syncscope": ir.StringAttr.get("device")})


def record(module) -> None:
    """The module's SCRATCH_ATTR: the scratch slots of each kernel with grid
    sums (read by compiler.py for the GPU descriptors and by the host runtime)."""
    slots = {}
    for op in module.regions[0].blocks[0].operations:
        op = op.operation
        if op.name == "func.func" and SLOTS_ATTR in op.attributes:
            slots[ir.StringAttr(op.attributes["sym_name"]).value] = \
                ir.IntegerAttr(op.attributes[SLOTS_ATTR]).value
    if slots:
        module.attributes[SCRATCH_ATTR] = ir.ArrayAttr.get(
            [ir.StringAttr.get(s) for s in scratch_entries(slots)])


def scratch_of(module) -> dict:
    """{kernel: slots} recorded on `module` (any stage: the attribute stays)."""
    from diffgpu.abi import parse_scratch
    op = getattr(module, "operation", module)
    if SCRATCH_ATTR not in op.attributes:
        return {}
    return parse_scratch(ir.StringAttr(a).value for a in ir.ArrayAttr(op.attributes[SCRATCH_ATTR]))


def _add_scratch_args(kernel) -> None:
    """Append `acc: memref<?xf64>` and `count: memref<?xi64>` to the kernel."""
    block = kernel.regions[0].blocks[0]
    layout = ir.Attribute.parse("strided<[?], offset: ?>")
    types = [ir.MemRefType.get([ir.ShapedType.get_dynamic_size()], t, layout)
             for t in (ir.F64Type.get(), ir.IntegerType.get_signless(64))]
    for t in types:
        block.add_argument(t, kernel.location)
    ftype = ir.FunctionType(ir.TypeAttr(kernel.attributes["function_type"]).value)
    kernel.attributes["function_type"] = ir.TypeAttr.get(
        ir.FunctionType.get(list(ftype.inputs) + types, list(ftype.results)))
    if "arg_attrs" in kernel.attributes:
        attrs = list(ir.ArrayAttr(kernel.attributes["arg_attrs"]))
        kernel.attributes["arg_attrs"] = ir.ArrayAttr.get(
            attrs + [ir.DictAttr.get({}) for _ in types])


def _mark(value, how: str, scratch: bool = True) -> None:
    value.owner.attributes[_MARK] = ir.StringAttr.get(how)
    if scratch:
        value.owner.attributes[SCRATCH_MARK] = ir.UnitAttr.get()


def _index(n):
    return arith.constant(ir.IndexType.get(), n)


def _linear_block():
    b = [dg.block_id(d) for d in range(3)]
    g = [dg.grid_dim(d) for d in range(3)]
    return arith.addi(b[0], arith.muli(g[0], arith.addi(b[1], arith.muli(g[1], b[2]))))


def _linear_thread():
    t = [dg.thread_id(d) for d in range(3)]
    b = [dg.block_dim(d) for d in range(3)]
    return arith.addi(t[0], arith.muli(b[0], arith.addi(t[1], arith.muli(b[1], t[2]))))


def with_scratch(kernels: dict, module) -> dict:
    """The kernels' argument descriptors (gpu_ptx.kernel_abi, taken before
    the pipeline) with `("scratch", slots)` appended where the pipeline gave
    a kernel scratch arguments: the descriptors then predict the PTX entry's
    parameters again."""
    from diffgpu.abi import SCRATCH_KIND
    slots = scratch_of(module)
    return {k: list(d) + ([(SCRATCH_KIND, slots[k])] if k in slots else [])
            for k, d in kernels.items()}

"""`diffgpu-block-sums`: several uniform-address adds at one site summed over the
block together, with one barrier.

`diffgpu-aggregate-atomics` sums one add over the block at a time: two warp
butterflies (10 shuffles), a barrier and a shared array each, and stops at
MAX_BLOCK_SUMS per kernel (a conv2d's 25 filter taps: 16 block sums, 9 adds
left to the warp path). This pass runs right before it and takes the adds
that it would take one by one (aggregate_atomics.candidate: uniform target,
unused result, a site where a barrier can follow, nothing later observing
them) in groups: the candidates of one kernel with the same site (the same
function and call) and value type, up to 32 per group, groups of two or more
only. A group becomes

- GPU: a transposing warp sum (block_sum.warp_sums: 32 values in 31
  shuffles, each lane left holding one value's warp sum), one store per
  value and warp into a [32 x 32] shared array, one barrier, the same warp
  sum in warp 0 over the warps' slots, and one add per value by the lane
  holding its total (the lanes of different values run side by side). With
  launch facts and float32 values the adds meet in float64 scratch across
  blocks (grid_sum.py: one slot per value, the same code for every lane).
  Blocks whose size is not a multiple of 32 (every block of such a launch)
  add each thread's values with plain atomics instead;
- host: one shared array of 1024 slots per value, one barrier, thread 0
  sums each pairwise (block_sum.block_sums_host).

A kernel takes at most MAX_BLOCK_SUMS groups (barriers), as aggregate-atomics
takes at most that many single sums, and only the last MAX_CHECKS uniform
adds of a function (in program order) are looked at: compile time stays
linear (each look walks the ops after the add). The sums
are trees, as aggregate-atomics' are (one float rounding per block and value
sequential at the target; float64 across blocks with the finish).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from diffgpu._mlir import arith, ir, scf

from diffgpu.dialects import names as N
from diffgpu.dialects import ops as dg
from diffgpu.lowering.common import explain
from diffgpu.lowering.common import targets as T
from diffgpu.lowering.facts.uniform import Uniformity, walk
from diffgpu.lowering.reduce import grid_sum
from diffgpu.lowering.reduce import hoist as H
from diffgpu.lowering.reduce.aggregate_atomics import AGGREGATED, MAX_BLOCK_SUMS, candidate
from diffgpu.lowering.reduce.block_sum import block_sums_gpu, block_sums_host
from diffgpu.lowering.registry import ModulePass, register_pass

#: values summed together at most (one per lane of the transposing warp sum)
GROUP = 32
#: uniform adds per function looked at (compile time linear in the kernel)
MAX_CHECKS = 2 * GROUP
#: kernel attribute: groups built in it so far
GROUPS_ATTR = "diffgpu.block_sum_groups"
PASS = "block-sums"


def _name(fn) -> str:
    return ir.StringAttr(fn.attributes["sym_name"]).value


def _anchor(op, site) -> int:
    """The position in the kernel's body of the op the add's value leaves
    through (the call, or the outermost guard), -1 when the add is there."""
    top = site.call if site.call is not None else (site.path[-1][0] if site.path else None)
    if top is None:
        return -1
    ops = [o.operation for o in site.kernel.regions[0].blocks[0].operations]
    return ops.index(top.operation if hasattr(top, "operation") else top)


def _groups(module, uniform):
    """[[op]]: the candidates of one kernel, function, value type and anchor
    (`_anchor`: every hoist rebuilds that op, so the group's values all end
    as its results), in program order, at most GROUP each, two or more;
    the last MAX_CHECKS uniform adds of each kernel in program order are
    looked at (each check walks the ops after the add)."""
    found, checked = {}, {}
    for op in reversed(walk(module)):
        if op.name != N.ATOMIC_ADD or not all(
                uniform.is_uniform(v) for i, v in enumerate(op.operands) if i != 1):
            continue  # the cheap test first: most adds are per-thread
        fn = _function(op)
        if checked.get(fn, 0) >= MAX_CHECKS:
            if checked[fn] == MAX_CHECKS:
                checked[fn] += 1
                explain.missed(PASS, op, f"only the last {MAX_CHECKS} uniform adds of a "
                               "function are grouped; this one and those before it are "
                               "left to aggregate-atomics")
            continue
        checked[fn] = checked.get(fn, 0) + 1
        site = candidate(op, uniform)
        if site is None:
            continue
        key = (_name(site.kernel), _name(site.fn), str(op.operands[1].type),
               _anchor(op, site))
        found.setdefault(key, []).insert(0, op)
    out = []
    for ops in found.values():
        for i in range(0, len(ops), GROUP):
            chunk = ops[i:i + GROUP]
            if len(chunk) >= 2:
                out.append(chunk)
    return out


def _function(op) -> str:
    while op is not None and op.name != "func.func":
        op = H.parent_op(op)
    return _name(op) if op is not None else ""


def _used(kernel) -> int:
    return ir.IntegerAttr(kernel.attributes[GROUPS_ATTR]).value \
        if GROUPS_ATTR in kernel.attributes else 0


def rewrite(module, group) -> None:
    """Sum the adds `group` (candidates of one site) over the block together."""
    entries, after = [], None
    for op in group:
        site = H.site_of(op, Uniformity(module))  # the guards and the call are new each time
        value, after = H.hoist(op.operands[1], site)
        entries.append((op, ir.OpResult(value).result_number if after is not None else value))
    if after is not None:  # later hoists rebuilt the op: earlier values by position
        res = list(after.results)
        entries = [(op, res[v] if isinstance(v, int) else v) for op, v in entries]
    last = group[-1]
    ip = H.after(after if after is not None else last, site)
    kernel = site.kernel
    gpu = T.is_gpu(T.get_target(kernel))
    with last.location, ip:
        targets = [[H.materialize(v, ip, site) for i, v in enumerate(op.operands) if i != 1]
                   for op, _ in entries]
        values = [v for _, v in entries]
        finish = grid_sum.plan_many(kernel, targets, values[0].type)

        def add_k(total, k):  # k: an index value (the lane's target), or an int
            if finish is not None:
                finish.add(total, "block", k if not isinstance(k, int)
                           else arith.constant(ir.IndexType.get(), k))
                return
            if isinstance(k, int):
                _atomic(targets[k], total, "block")
                return
            for j, t in enumerate(targets):
                mine = arith.cmpi(arith.CmpIPredicate.eq, k,
                                  arith.constant(ir.IndexType.get(), j))
                branch = scf.IfOp(mine, [])
                with ir.InsertionPoint(branch.then_block):
                    _atomic(t, total, "block")
                    scf.YieldOp([])

        def per_thread(v, j):  # blocks not a multiple of 32: a plain add per thread
            _atomic(targets[j], v, "block")  # (no warp sum of it: no shuffles)

        if gpu:
            block_sums_gpu(values, add_k, per_thread)
        else:
            block_sums_host(values, add_k)
    explain.applied(PASS, last, f"{len(group)} adds summed over the block together "
                    "(one barrier)")
    for op, _ in entries:
        op.erase()
    kernel.attributes[GROUPS_ATTR] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64),
                                                        _used(kernel) + 1)


def _atomic(target, total, how) -> None:
    dg.atomic_add(target[0], total, target[1:]).owner.attributes[AGGREGATED] = \
        ir.StringAttr.get(how)


@register_pass
@dataclass
class BlockSums(ModulePass):
    """Sum several uniform-address adds of one site over the block together."""
    name: ClassVar[str] = "diffgpu-block-sums"
    summary: ClassVar[str] = ("several uniform-address atomic adds at one site summed over "
                              "the block with one barrier (before diffgpu-aggregate-atomics)")

    def run(self, module) -> None:
        # one walk finds the groups (a walk per rewrite would be quadratic in
        # a long kernel); a rewrite moves ops without cloning them, so the
        # other groups' ops stay valid and are checked again before theirs
        groups = _groups(module, Uniformity(module))
        for group in reversed(groups):  # the last first, as aggregate-atomics does
            uniform = Uniformity(module)
            sites = [candidate(op, uniform) for op in group]
            if any(s is None for s in sites):
                continue
            if _used(sites[0].kernel) >= MAX_BLOCK_SUMS:
                explain.missed(PASS, group[-1], f"the kernel already holds {MAX_BLOCK_SUMS} "
                               "groups (one barrier each)")
                continue
            rewrite(module, group)
        grid_sum.record(module)

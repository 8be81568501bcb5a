"""`diffgpu-chunk-blocks`: long blocks nested into `scf.execute_region`s, so
that `convert-scf-to-cf` takes time linear in the block.

`convert-scf-to-cf` lowers an `scf.if` by splitting its block after it: the
ops that follow move to a new block, one at a time. A block holding N ifs
(the CPU's bounds check wraps every load and store in one, host/bounds.py)
moves N * N / 2 ops: 4,000 ifs took about 5 s, 8,000 four times that. This pass,
run just before `convert-scf-to-cf`, cuts every block of more than
2 * CHUNK_OPS ops into chunks of CHUNK_OPS ops, each nested in the one
before:

    op1 ... op64                          op1 ... op64
    op65 ... op128               =>       %r = scf.execute_region -> (f32) {
    ...                                     op65 ... op128
    scf.yield %v                            %s = scf.execute_region -> (f32) { ... }
                                            scf.yield %s
                                          }
                                          scf.yield %r

so a split moves at most one chunk and one op. Values flow into the nested
chunks unchanged (an `execute_region` sees its parents' values); only the
terminator's operands defined in a nested chunk come out, as results. Each op
moves once. Operand-free `memref.alloca`s stay in the block, moved to its
start (an alloca in a lowered region would run, and take stack, once per
pass through it). Only blocks of functions and scf ops that are alone in
their region are cut (no other block can use their values).
`convert-scf-to-cf` lowers the execute_regions back into plain blocks: the
same ops, joined by unconditional branches. Nothing may run in between: a
greedy rewrite asks of each execute_region whether it is dead, a walk of all
the chunks nested in it (quadratic again).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from diffgpu.lowering.common.ir_util import visit_blocks
from diffgpu.lowering.passes import ModulePass, register_pass

#: ops per chunk: a split in a chunk moves at most this many ops
CHUNK_OPS = 64


def _stays(op) -> bool:
    """An op left in the block: a static alloca (needs no operand)."""
    return op.name == "memref.alloca" and not len(op.operands)


def _code(block) -> bool:
    """A block of a function or an scf op: code ending in a terminator (not
    a module's list of functions)."""
    name = block.owner.operation.name
    return name in ("func.func", "gpu.func") or name.startswith("scf.")


def chunk_block(block, size: int = CHUNK_OPS) -> int:
    """Nest the ops of `block` past the first `size` into execute_regions of
    `size` ops (module docstring); returns how many it made."""
    from diffgpu._mlir import ir, scf

    ops = [o.operation for o in block.operations]
    if len(ops) - 1 <= 2 * size or len(block.region.blocks) != 1 or not _code(block):
        return 0
    term, body = ops[-1], [o for o in ops[:-1] if not _stays(o)]
    chunks = [body[k:k + size] for k in range(0, len(body), size)]
    if len(chunks) < 2:
        return 0
    for op in ops[:-1]:  # the allocas first: no split moves them
        if _stays(op):
            op.move_before(body[0])
    chunk_of = {op: k for k, chunk in enumerate(chunks) for op in chunk}
    outs = {}  # terminator operand defined in a nested chunk -> that chunk
    for v in term.operands:
        if not isinstance(v.owner, ir.Block) and chunk_of.get(v.owner.operation, 0):
            outs[v] = chunk_of[v.owner.operation]
    loc, ip, regions = term.location, ir.InsertionPoint(term), []
    for k in range(1, len(chunks)):  # region k holds chunk k, then region k + 1
        mine = [v for v, c in outs.items() if c >= k]
        er = scf.ExecuteRegionOp([v.type for v in mine], loc=loc, ip=ip)
        inner = ir.Block.create_at_start(er.regions[0])
        regions.append((er, inner, mine))
        ip = ir.InsertionPoint(inner)
    for k, (_, inner, mine) in enumerate(regions, start=1):
        nxt = regions[k] if k < len(regions) else None
        inside = {v: r for v, r in zip(nxt[2], nxt[0].results)} if nxt else {}
        end = scf.YieldOp([inside.get(v, v) for v in mine], loc=loc, ip=ir.InsertionPoint(inner))
        anchor = nxt[0].operation if nxt else end.operation
        for op in chunks[k]:
            op.move_before(anchor)
    er, _, mine = regions[0]
    for v, r in zip(mine, er.results):
        term.replace_uses_of_with(v, r)
    return len(regions)


@register_pass
@dataclass
class ChunkBlocks(ModulePass):
    """See the module docstring; `ops`: the chunk size (CHUNK_OPS)."""
    ops: int = CHUNK_OPS
    name: ClassVar[str] = "diffgpu-chunk-blocks"
    summary: ClassVar[str] = ("nest long blocks into scf.execute_regions of CHUNK_OPS ops, so "
                              "that convert-scf-to-cf is linear in the block")

    def run(self, module) -> None:
        if self.ops < 1:
            self.fail(module, f"diffgpu-chunk-blocks: ops must be at least 1, got {self.ops}")
        blocks = []
        visit_blocks(module, blocks.append)
        for b in blocks:
            chunk_block(b, self.ops)

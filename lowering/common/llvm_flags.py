"""`diffgpu-drop-wrap-flags`: make LLVM-dialect index arithmetic safe for
negative strides.

MLIR's memref lowering marks `index * stride`, the offset additions and the
element GEP `nuw` (no unsigned wrap), which makes any access through a
negative stride (`A[::-1]`) poison. diffgpu arrays may have any strides, so
these ops are rebuilt without wrap flags. The Python bindings can neither read
nor set those properties, so `nsw`/`inbounds` go too.

    %o = llvm.mul %i, %s overflow<nsw, nuw> : i64    =>    %o = llvm.mul %i, %s : i64

Used at the end of `diffgpu-to-host` and, inside gpu.modules, by
`diffgpu-nvvm-cleanup`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from diffgpu.lowering.common.ir_util import apply_patterns
from diffgpu.lowering.passes import ModulePass, register_pass

#: ops whose `nuw` flag MLIR's memref lowering sets on index arithmetic
WRAP_OPS = ("llvm.mul", "llvm.add", "llvm.getelementptr")


def drop_wrap_flags(op) -> None:
    """Rebuild every WRAP_OPS op nested in `op` without its flags (one
    pattern per op name: ir_util.apply_patterns)."""
    apply_patterns(op, {name: without_flags for name in WRAP_OPS})


def without_flags(op, rewriter) -> None:
    """Pattern: `op` rebuilt from its operands and visible attributes (the
    flags are not visible, so they are dropped)."""
    op = op.operation
    replace_op(op, rewriter, op.name, {k: op.attributes[k] for k in op.attributes})


def replace_op(op, rewriter, name: str, attributes: dict) -> None:
    """Replace `op` through `rewriter` (a PatternRewriter) by a `name` op with
    the same operands, result types and location, and the given attributes."""
    from diffgpu._mlir import ir

    with rewriter.ip:
        new = ir.Operation.create(name, results=[r.type for r in op.results],
                                  operands=list(op.operands), attributes=attributes,
                                  loc=op.location)
    rewriter.replace_op(op, new)


@register_pass
@dataclass
class DropWrapFlags(ModulePass):
    """See the module docstring."""
    name: ClassVar[str] = "diffgpu-drop-wrap-flags"
    summary: ClassVar[str] = ("drop nuw/nsw flags of LLVM index arithmetic, so that negative "
                              "strides are defined")

    def run(self, module) -> None:
        drop_wrap_flags(module)

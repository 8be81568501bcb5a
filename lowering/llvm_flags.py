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

from diffgpu.lowering.ir_util import walk
from diffgpu.lowering.registry import ModulePass, register_pass

#: ops whose `nuw` flag MLIR's memref lowering sets on index arithmetic
WRAP_OPS = ("llvm.mul", "llvm.add", "llvm.getelementptr")


def drop_wrap_flags(op) -> None:
    """Rebuild every WRAP_OPS op nested in `op` without its flags."""
    for o in walk(op, WRAP_OPS):  # rebuilt from operands and visible attributes: no flags
        replace_op(o, o.name, {k: o.attributes[k] for k in o.attributes})


def replace_op(op, name: str, attributes: dict) -> None:
    """Replace `op` by a `name` op with the same operands, result types and
    location, and the given attributes."""
    from diffgpu._mlir import ir

    new = ir.Operation.create(name, results=[r.type for r in op.results],
                              operands=list(op.operands), attributes=attributes,
                              loc=op.location, ip=ir.InsertionPoint(op))
    for old, rep in zip(op.results, new.results):
        old.replace_all_uses_with(rep)
    op.erase()


@register_pass
@dataclass
class DropWrapFlags(ModulePass):
    """See the module docstring."""
    name: ClassVar[str] = "diffgpu-drop-wrap-flags"
    summary: ClassVar[str] = ("drop nuw/nsw flags of LLVM index arithmetic, so that negative "
                              "strides are defined")

    def run(self, module) -> None:
        drop_wrap_flags(module)

"""The diffgpu dialect: IRDL definition (diffgpu.irdl.mlir) and op builders.

`make_context()` returns an MLIR context with every upstream dialect and the
diffgpu dialect loaded; all of diffgpu's compiler code uses it.
"""
from __future__ import annotations

import os

IRDL_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "diffgpu.irdl.mlir")

#: names of the ops our dialect defines (without the `diffgpu.` prefix)
GEOMETRY_OPS = ("thread_id", "block_id", "block_dim", "grid_dim")
MAX_DIFF_ARGS = 16  # argument groups of diffgpu.autodiff / diffgpu.fwddiff


def irdl_source() -> str:
    with open(IRDL_PATH, encoding="utf-8") as f:
        return f.read()


def make_context():
    """A fresh `ir.Context` with upstream dialects and `diffgpu` loaded."""
    from diffgpu._mlir import ir, irdl

    ctx = ir.Context()
    ctx.allow_unregistered_dialects = False
    with ctx, ir.Location.unknown():
        irdl.load_dialects(ir.Module.parse(irdl_source()))
    return ctx

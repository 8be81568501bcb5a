"""The diffgpu dialect: IRDL definition (diffgpu.irdl.mlir), op names and
layouts (names.py, no MLIR), typed op classes and builders (ops.py).

`make_context()` returns an MLIR context with every upstream dialect and the
diffgpu dialect loaded, and the typed op classes registered; all of diffgpu's
compiler code uses it. Importing this package imports no MLIR.

May import: the foundation modules of diffgpu (the MLIR bindings through
diffgpu._mlir) only.
"""
from __future__ import annotations

import os

IRDL_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "diffgpu.irdl.mlir")



def irdl_source() -> str:
    with open(IRDL_PATH, encoding="utf-8") as f:
        return f.read()


def make_context():
    """A fresh `ir.Context` with upstream dialects and `diffgpu` loaded."""
    from diffgpu._mlir import ir, irdl
    from diffgpu.dialects import ops  # noqa: F401  (registers the typed op classes)

    ctx = ir.Context()
    ctx.allow_unregistered_dialects = False
    with ctx, ir.Location.unknown():
        irdl.load_dialects(ir.Module.parse(irdl_source()))
    return ctx

"""`diffgpu.stop_gradient` once the derivatives are made: its operand.

`dg.stop_gradient(v)` (JAX's `lax.stop_gradient`) is `v` for the primal and
a constant for differentiation: the op is inactive (rules/diffgpu.py
INACTIVE), so the activity analysis stops at it, the reverse sweep gives
its operand no adjoint and forward mode gives its result a zero tangent. A
max or an index computed from active data through it costs no reverse
work. The op stays in the generated functions while the pass runs (a
derivative differentiated again sees it too); at the end of
`diffgpu-autodiff` every one is replaced by its operand, so no later pass
meets it.

    %m = "diffgpu.stop_gradient"(%x) : (f32) -> f32      // uses of %m -> %x
"""
from __future__ import annotations

from diffgpu.dialects.ops import StopGradientOp

from diffgpu.lowering.autodiff.activity import walk_ops


def erase_stop_gradients(module) -> int:
    """Replace every diffgpu.stop_gradient of `module` by its operand; how many."""
    found = [op for op in walk_ops(module.regions[0].blocks[0])
             if isinstance(op, StopGradientOp)]
    for op in found:
        op.results[0].replace_all_uses_with(op.x)
        op.operation.erase()
    return len(found)

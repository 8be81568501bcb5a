"""`dg.stop_gradient(v)`: v for the primal, a constant for derivatives.

As JAX's `lax.stop_gradient`: the value is unchanged, but differentiation
treats it as a constant, so no adjoint flows back into what it was computed
from and its tangent is zero. A maximum or a normaliser computed from
active data and used as a constant costs no reverse work:

    m = dg.stop_gradient(dg.max(x[i], x[j]))   ->  "diffgpu.stop_gradient"(%m) : (f32) -> f32
    y[i] = dg.exp(x[i] - m)                        d y / d x[i] = y (m held constant)

A float scalar becomes one `diffgpu.stop_gradient` op (inactive in
lowering/autodiff/rules/diffgpu.py, replaced by its operand after
differentiation: lowering/autodiff/stop_gradient.py); an integer or boolean
carries no derivative anyway and is returned as it is.
"""
from __future__ import annotations

from diffgpu.dialects import names as N


class StopGradientMixin:
    def builtin_stop_gradient(self, node):
        (arg,) = self.call_args(node, 1, 1, "stop_gradient")
        v = self.eval_scalar(arg, "argument of stop_gradient()")
        t = v.type
        if not t.is_float:
            return v
        x = self.em.value(v, t)
        return self.em.op(f'"{N.STOP_GRADIENT}"({x.ref}) : ({t.ty}) -> {t.ty}', t)

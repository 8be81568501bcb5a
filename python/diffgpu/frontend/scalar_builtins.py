"""Scalar builtins lowered to compositions of arith/math ops (or a diffgpu
special-math op): `dg.sign`, `dg.step`, `dg.clamp`, `dg.lerp`,
`dg.smoothstep`, `dg.frac`, `dg.rint`, `dg.mod`, `dg.erfinv`, `dg.erfcinv`,
and numpy's `np.sign`, `np.clip`, `np.rint`, `np.fmod`.

Each is exact as written (python/diffgpu/builtins.py SCALAR_FUNCTIONS has
the definitions, which follow NVIDIA Warp's), so its derivative is the
derivative of the composition: the rules of the ops it is made of
(lowering/autodiff/rules/). `erfinv`/`erfcinv` are one op each, with their
own rule (rules/diffgpu.py), expanded after autodiff
(lowering/common/special_math.py).

    dg.clamp(x, lo, hi)   ->  arith.maxnumf %lo, %x ; arith.minnumf %m, %hi
    dg.mod(a, b)          ->  arith.remf %a, %b        (C fmod: sign of a)
"""
from __future__ import annotations

from diffgpu.dialects import names as N
from diffgpu.frontend.source import FrontendError
from diffgpu.frontend.types_infer import Scalar, promote

#: numpy functions this mixin lowers -> method
NUMPY_SCALAR = {"sign": "np_sign", "clip": "np_clip", "rint": "builtin_rint",
                "fmod": "builtin_mod"}


class ScalarBuiltinMixin:
    # helpers -----------------------------------------------------------------
    def _scalars(self, node, name, n, floats=True):
        """The `n` arguments of `name`, converted to their common type (a float
        type when `floats`: ints go to float64, as for the math functions)."""
        vals = [self.eval_scalar(a, f"argument of {name}()")
                for a in self.call_args(node, n, n, name)]
        t = vals[0].type
        for v in vals[1:]:
            t = promote(t, v.type)
        if t.ty == "i1" or (floats and not t.is_float):
            t = Scalar("f64", t.weak)
        return [self.em.value(v, t) for v in vals], t

    def _c(self, value, t):
        return self.em.constant(value, t.strong())

    def _arith(self, opname, t, *xs):
        return self.em.op(f"{opname} {', '.join(x.ref for x in xs)} : {t.ty}", t)

    def _less(self, x, y, t):
        pred = "arith.cmpf olt" if t.is_float else "arith.cmpi slt"
        return self.em.op(f"{pred}, {x.ref}, {y.ref} : {t.ty}", Scalar("i1"))

    def _select(self, c, a, b, t):
        return self.em.op(f"arith.select {c.ref}, {a.ref}, {b.ref} : {t.ty}", t)

    # Warp's sign and step ------------------------------------------------------
    def builtin_sign(self, node):
        """-1 where x < 0, else 1 (also for 0 and NaN)."""
        (x,), t = self._scalars(node, "sign", 1, floats=False)
        neg = self._less(x, self._c(0, t), t)
        return self._select(neg, self._c(-1, t), self._c(1, t), t)

    def builtin_step(self, node):
        """1 where x < 0, else 0."""
        (x,), t = self._scalars(node, "step", 1, floats=False)
        neg = self._less(x, self._c(0, t), t)
        return self._select(neg, self._c(1, t), self._c(0, t), t)

    def np_sign(self, node):
        """numpy's sign: -1, 0 or 1, NaN for NaN (constants: derivative 0)."""
        (x,), t = self._scalars(node, "np.sign", 1, floats=False)
        zero = self._c(0, t)
        neg, pos = self._less(x, zero, t), self._less(zero, x, t)
        r = self._select(pos, self._c(1, t), zero, t)
        r = self._select(neg, self._c(-1, t), r, t)
        if t.is_float:
            nan = self.em.op(f"arith.cmpf uno, {x.ref}, {x.ref} : {t.ty}", Scalar("i1"))
            r = self._select(nan, self._c(float("nan"), t), r, t)
        return r

    # clamping and interpolation ----------------------------------------------
    def builtin_clamp(self, node):
        """min(max(lo, x), hi), NaN-ignoring like C's fmin/fmax (Warp's
        definition); the gradient goes to the operand returned, x on ties."""
        (x, lo, hi), t = self._scalars(node, "clamp", 3, floats=False)
        mx, mn = ("arith.maxnumf", "arith.minnumf") if t.is_float else \
            ("arith.maxsi", "arith.minsi")
        return self._arith(mn, t, self._arith(mx, t, lo, x), hi)

    def np_clip(self, node):
        """np.clip(x, lo, hi) on scalars: NaN propagates (np.maximum/minimum);
        a bound of None is left out."""
        args = self.call_args(node, 3, 3, "np.clip")
        bounds = [None if self._is_none(a) else a for a in args[1:]]
        if bounds == [None, None]:
            raise FrontendError("np.clip() needs at least one bound that is not None", node)
        vals = [self.eval_scalar(a, "argument of np.clip()")
                for a in [args[0]] + [b for b in bounds if b is not None]]
        t = vals[0].type
        for v in vals[1:]:
            t = promote(t, v.type)
        if t.ty == "i1":
            t = Scalar("i64", t.weak)
        xs = [self.em.value(v, t) for v in vals]
        r, rest = xs[0], xs[1:]
        mx, mn = ("arith.maximumf", "arith.minimumf") if t.is_float else \
            ("arith.maxsi", "arith.minsi")
        if bounds[0] is not None:
            r = self._arith(mx, t, rest.pop(0), r)  # bound first: ties go to x
        if bounds[1] is not None:
            r = self._arith(mn, t, r, rest.pop(0))
        return r

    def _is_none(self, argnode):
        import ast
        return isinstance(argnode, ast.Constant) and argnode.value is None

    def builtin_lerp(self, node):
        """a * (1 - t) + b * t."""
        (a, b, s), t = self._scalars(node, "lerp", 3)
        one_m = self._arith("arith.subf", t, self._c(1.0, t), s)
        return self._arith("arith.addf", t, self._arith("arith.mulf", t, a, one_m),
                           self._arith("arith.mulf", t, b, s))

    def builtin_smoothstep(self, node):
        """u = clamp((x - e0) / (e1 - e0), 0, 1); u * u * (3 - 2 * u)."""
        (e0, e1, x), t = self._scalars(node, "smoothstep", 3)
        u = self._arith("arith.divf", t, self._arith("arith.subf", t, x, e0),
                        self._arith("arith.subf", t, e1, e0))
        u = self._arith("arith.minnumf", t,
                        self._arith("arith.maxnumf", t, self._c(0.0, t), u), self._c(1.0, t))
        three_m = self._arith("arith.subf", t, self._c(3.0, t),
                              self._arith("arith.mulf", t, self._c(2.0, t), u))
        return self._arith("arith.mulf", t, self._arith("arith.mulf", t, u, u), three_m)

    # rounding and remainders --------------------------------------------------
    def builtin_frac(self, node):
        """x - trunc(x): the fractional part, with the sign of x."""
        (x,), t = self._scalars(node, "frac", 1)
        return self._arith("arith.subf", t, x, self._arith("math.trunc", t, x))

    def builtin_rint(self, node):
        """Nearest integer, ties to even, as a float (np.rint)."""
        (x,), t = self._scalars(node, "rint", 1)
        return self._arith("math.roundeven", t, x)

    def builtin_mod(self, node):
        """Remainder of truncated division (C fmod, Warp's mod): sign of a.
        Integers: C's `%` (arith.remsi)."""
        (a, b), t = self._scalars(node, "mod", 2, floats=False)
        return self._arith("arith.remf" if t.is_float else "arith.remsi", t, a, b)

    # special functions ----------------------------------------------------------
    def builtin_erfinv(self, node):
        return self._special(node, "erfinv", N.ERFINV)

    def builtin_erfcinv(self, node):
        return self._special(node, "erfcinv", N.ERFCINV)

    def _special(self, node, name, op):
        (x,), t = self._scalars(node, name, 1)
        return self.em.op(f'"{op}"({x.ref}) : ({t.ty}) -> {t.ty}', t)

"""The builtins of vectors, matrices and quaternions (vectors.py holds the
values): constructors (`dg.vec3`, `dg.mat33`, `dg.quat`, `dg.identity`,
`dg.quat_identity`) and `dg.dot, cross, length, length_sq, normalize, outer,
transpose, determinant, inverse, trace, skew, quat_mul, quat_rotate,
quat_rotate_inv, quat_inverse, quat_from_axis_angle, quat_to_matrix`, with
the semantics of NVIDIA Warp's builtins of the same names.

All are written out in scalar ops. Where the composed derivative would be
infinite or NaN although the function is fine, a guarded form is used (the
"double select" of vectors.VectorMixin.guarded): `length(v)` and
`normalize(v)` at v == 0 (value 0, gradient 0, as Warp), `inverse(m)` of a
singular matrix (value 0, as Warp, gradient 0).
"""
from __future__ import annotations

from diffgpu.frontend.source import FrontendError
from diffgpu.frontend.values import Const, VecV, describe
from diffgpu.frontend.vector_arrays import SHAPES

ZERO = Const(0.0, Const.of(0.0).type)
ONE = Const(1.0, Const.of(1.0).type)


class VectorBuiltinMixin:
    # constructors -------------------------------------------------------------------
    def construct(self, name, node):
        kind, shape = SHAPES[name]
        n = shape[0] * (shape[1] if len(shape) == 2 else 1)
        args = self.call_args(node, 0, n, name)
        vals = [self.visit(a) for a in args]
        if not vals:
            return self.make_vec(kind, shape, [ZERO] * n)
        if all(isinstance(v, VecV) for v in vals):
            return self._from_vectors(kind, shape, vals, args, name)
        if kind == "quat" and len(vals) == 2 and isinstance(vals[0], VecV):
            xyz = vals[0]
            if xyz.shape != (3,) or xyz.kind != "vec":
                raise FrontendError(f"quat(xyz, w) needs a vec3 xyz, got {describe(xyz)}",
                                    args[0])
            return self.make_vec(kind, shape, list(xyz.items) +
                                 [self.scalar(vals[1], args[1], "w of quat()")])
        scalars = [self.scalar(v, a, f"component of {name}()") for v, a in zip(vals, args)]
        if len(scalars) == 1 and kind == "vec":
            return self.make_vec(kind, shape, scalars * n)
        if len(scalars) != n:
            forms = {"vec": f"{n} components, one scalar, or nothing",
                     "quat": "x, y, z, w; a vec3 and w; or nothing",
                     "mat": f"{n} components, {shape[0]} row vectors, or nothing"}
            raise FrontendError(f"{name}() takes {forms[kind]}; got {len(scalars)} "
                                "scalar(s)", node)
        return self.make_vec(kind, shape, scalars)

    def _from_vectors(self, kind, shape, vals, args, name):
        if kind == "mat":
            r, c = shape
            if len(vals) != r or any(v.kind != "vec" or v.shape != (c,) for v in vals):
                raise FrontendError(f"{name}() takes {r} row vectors of {c} components, "
                                    f"got {', '.join(describe(v) for v in vals)}", args[0])
            return self.make_vec(kind, shape, [x for v in vals for x in v.items])
        v = vals[0]
        if len(vals) != 1 or v.kind == "mat" or v.shape != shape:
            raise FrontendError(f"{name}() of {describe(v)}: the sizes differ", args[0])
        return self.make_vec(kind, shape, list(v.items))

    def builtin_identity(self, node):
        (a,) = self.call_args(node, 1, 1, "identity")
        n = self.const_int(a, "identity() size")
        if n not in (2, 3, 4):
            raise FrontendError(f"identity() size must be 2, 3 or 4, got {n}", a)
        return self.make_vec("mat", (n, n), [ONE if i == j else ZERO
                                             for i in range(n) for j in range(n)])

    def builtin_quat_identity(self, node):
        self.call_args(node, 0, 0, "quat_identity")
        return self.make_vec("quat", (4,), [ZERO, ZERO, ZERO, ONE])

    # products ----------------------------------------------------------------------------
    def _two_same(self, node, name, kinds=("vec", "quat")):
        a_node, b_node = self.call_args(node, 2, 2, name)
        a = self.vec_arg(a_node, f"first argument of {name}()", kinds)
        b = self.vec_arg(b_node, f"second argument of {name}()", kinds)
        if a.shape != b.shape or a.kind != b.kind:
            raise FrontendError(f"{name}() of {describe(a)} and {describe(b)}: the shapes "
                                "differ", node)
        return a, b

    def dot(self, a, b, node):
        return self.s_add([self.s_mul(x, y, node) for x, y in zip(a.items, b.items)], node)

    def builtin_dot(self, node):
        a, b = self._two_same(node, "dot")
        return self.dot(a, b, node)

    def cross(self, a, b, node):
        (ax, ay, az), (bx, by, bz) = a, b
        m, sub = self.s_mul, lambda p, q: self.binop("-", p, q, node)
        return [sub(m(ay, bz, node), m(az, by, node)), sub(m(az, bx, node), m(ax, bz, node)),
                sub(m(ax, by, node), m(ay, bx, node))]

    def builtin_cross(self, node):
        a, b = self._two_same(node, "cross", ("vec",))
        if a.shape != (3,):
            raise FrontendError(f"cross() needs two vec3, got {describe(a)}", node)
        return self.like(a, self.cross(a.items, b.items, node))

    def builtin_outer(self, node):
        a_node, b_node = self.call_args(node, 2, 2, "outer")
        a = self.vec_arg(a_node, "first argument of outer()", ("vec",))
        b = self.vec_arg(b_node, "second argument of outer()", ("vec",))
        return self.make_vec("mat", (a.shape[0], b.shape[0]),
                             [self.s_mul(x, y, node) for x in a.items for y in b.items])

    # norms -------------------------------------------------------------------------------
    def _one_vec(self, node, name, kinds=("vec", "quat")):
        (a,) = self.call_args(node, 1, 1, name)
        return self.vec_arg(a, f"argument of {name}()", kinds)

    def builtin_length_sq(self, node):
        v = self._one_vec(node, "length_sq")
        return self.dot(v, v, node)

    def builtin_length(self, node):
        """sqrt(dot(v, v)), 0 with gradient 0 at v == 0."""
        v = self._one_vec(node, "length")
        nz, safe = self.guarded(self.dot(v, v, node), node)
        return self.s_select(nz, self.s_math("sqrt", safe), Const(0.0, safe.type))

    def normalize(self, v, node):
        """v / length(v); the zero vector (gradient 0) at v == 0, as Warp."""
        nz, safe = self.guarded(self.dot(v, v, node), node)
        r = self.s_math("sqrt", safe)
        zero = Const(0.0, r.type)
        return self.like(v, [self.s_select(nz, self.binop("/", x, r, node), zero)
                             for x in v.items])

    def builtin_normalize(self, node):
        return self.normalize(self._one_vec(node, "normalize"), node)

    # matrices ------------------------------------------------------------------------------
    def _square(self, node, name):
        m = self._one_vec(node, name, ("mat",))
        if m.shape[0] != m.shape[1]:
            raise FrontendError(f"{name}() needs a square matrix, got {describe(m)}", node)
        return m

    def builtin_transpose(self, node):
        return self.transpose(self._one_vec(node, "transpose", ("mat",)))

    def builtin_trace(self, node):
        m = self._square(node, "trace")
        n = m.shape[0]
        return self.s_add([m.items[i * n + i] for i in range(n)], node)

    def det(self, items, n, node):
        """Determinant of the n x n row-major `items` (cofactor expansion, row 0)."""
        if n == 1:
            return items[0]
        if n == 2:
            a, b, c, d = items
            return self.binop("-", self.s_mul(a, d, node), self.s_mul(b, c, node), node)
        terms = []
        for j in range(n):
            minor = self.minor(items, n, 0, j)
            t = self.s_mul(items[j], self.det(minor, n - 1, node), node)
            terms.append(t if j % 2 == 0 else self.s_neg(t, node))
        return self.s_add(terms, node)

    @staticmethod
    def minor(items, n, i, j):
        return [items[r * n + c] for r in range(n) if r != i for c in range(n) if c != j]

    def builtin_determinant(self, node):
        m = self._square(node, "determinant")
        return self.det(list(m.items), m.shape[0], node)

    def builtin_inverse(self, node):
        """adj(m) / det(m); the zero matrix where det(m) == 0 (as Warp), with
        gradient 0 there."""
        m = self._square(node, "inverse")
        n, items = m.shape[0], list(m.items)
        nz, safe = self.guarded(self.det(items, n, node), node)
        inv = self.binop("/", Const(1.0, safe.type), safe, node)
        out = []
        for i in range(n):
            for j in range(n):  # inverse[i, j] = cofactor[j, i] / det
                c = self.det(self.minor(items, n, j, i), n - 1, node)
                c = c if (i + j) % 2 == 0 else self.s_neg(c, node)
                out.append(self.s_select(nz, self.s_mul(c, inv, node), Const(0.0, safe.type)))
        return self.like(m, out)

    def builtin_skew(self, node):
        v = self.vec_arg(self.call_args(node, 1, 1, "skew")[0], "argument of skew()",
                       ("vec",), (3,))
        x, y, z = v.items
        neg = lambda a: self.s_neg(a, node)  # noqa: E731
        return self.make_vec("mat", (3, 3), [ZERO, neg(z), y, z, ZERO, neg(x),
                                             neg(y), x, ZERO])

    # quaternions ----------------------------------------------------------------------------
    def _quat(self, argnode, name):
        return self.vec_arg(argnode, f"argument of {name}()", ("quat",))

    def builtin_quat_mul(self, node):
        a, b = self._two_same(node, "quat_mul", ("quat",))
        (ax, ay, az, aw), (bx, by, bz, bw) = a.items, b.items
        m = lambda p, q: self.s_mul(p, q, node)  # noqa: E731
        s = lambda *t: self.s_add(list(t), node)  # noqa: E731
        sub = lambda p, q: self.binop("-", p, q, node)  # noqa: E731
        return self.like(a, [
            sub(s(m(aw, bx), m(bw, ax), m(ay, bz)), m(by, az)),
            sub(s(m(aw, by), m(bw, ay), m(az, bx)), m(bz, ax)),
            sub(s(m(aw, bz), m(bw, az), m(ax, by)), m(bx, ay)),
            sub(sub(sub(m(aw, bw), m(ax, bx)), m(ay, by)), m(az, bz))])

    def rotate(self, q, v, node, inverse=False):
        """Warp's quat_rotate: v (2w^2 - 1) + 2w (q.xyz x v) + 2 q.xyz (q.xyz . v);
        quat_rotate_inv subtracts the cross term."""
        qv, w = list(q.items[:3]), q.items[3]
        c = self.cross(qv, list(v.items), node)
        a = self.binop("-", self.s_mul(self.s_mul(w, w, node), Const.of(2.0), node),
                       Const.of(1.0), node)
        d = self.s_mul(self.s_add([self.s_mul(x, y, node) for x, y in zip(qv, v.items)],
                                  node), Const.of(2.0), node)
        w2 = self.s_mul(w, Const.of(2.0), node)
        out = []
        for k in range(3):
            cross_term = self.s_mul(c[k], w2, node)
            t = self.s_mul(v.items[k], a, node)
            t = self.binop("-" if inverse else "+", t, cross_term, node)
            out.append(self.binop("+", t, self.s_mul(qv[k], d, node), node))
        return self.make_vec("vec", (3,), out)

    def _quat_vec(self, node, name):
        q_node, v_node = self.call_args(node, 2, 2, name)
        return (self._quat(q_node, name),
                self.vec_arg(v_node, f"second argument of {name}()", ("vec",), (3,)))

    def builtin_quat_rotate(self, node):
        return self.rotate(*self._quat_vec(node, "quat_rotate"), node)

    def builtin_quat_rotate_inv(self, node):
        return self.rotate(*self._quat_vec(node, "quat_rotate_inv"), node, inverse=True)

    def builtin_quat_inverse(self, node):
        (a,) = self.call_args(node, 1, 1, "quat_inverse")
        q = self._quat(a, "quat_inverse")
        x, y, z, w = q.items
        return self.like(q, [self.s_neg(x, node), self.s_neg(y, node), self.s_neg(z, node), w])

    def builtin_quat_from_axis_angle(self, node):
        """(axis sin(angle/2), cos(angle/2)); the axis is used as given (Warp
        does not normalize it either)."""
        a_node, t_node = self.call_args(node, 2, 2, "quat_from_axis_angle")
        axis = self.vec_arg(a_node, "axis of quat_from_axis_angle()", ("vec",), (3,))
        angle = self.eval_scalar(t_node, "angle of quat_from_axis_angle()")
        half = self.binop("*", angle, Const.of(0.5), node)
        s, c = self.s_math("sin", half), self.s_math("cos", half)
        return self.make_vec("quat", (4,), [self.s_mul(x, s, node) for x in axis.items] + [c])

    def builtin_quat_to_matrix(self, node):
        """The rotation matrix of a unit quaternion (its columns rotate the axes)."""
        (a,) = self.call_args(node, 1, 1, "quat_to_matrix")
        q = self._quat(a, "quat_to_matrix")
        cols = []
        for k in range(3):
            e = self.make_vec("vec", (3,), [ONE if j == k else ZERO for j in range(3)])
            cols.append(self.rotate(q, e, node).items)
        return self.make_vec("mat", (3, 3), [cols[j][i] for i in range(3) for j in range(3)])


def _ctor(name):
    def method(self, node):
        return self.construct(name, node)
    method.__name__ = f"builtin_{name}"
    return method


for _name in SHAPES:
    setattr(VectorBuiltinMixin, f"builtin_{_name}", _ctor(_name))

"""Vector, matrix and quaternion builtins and operators (frontend/vectors.py,
vector_builtins.py): values against numpy references, and both derivative
modes against finite differences with dg.gradcheck, in float64 and float32.

Each case is a @dg.func on vectors read with dg.load_*, its result written
with dg.store; the kernel is made per case from the func and the loaders.
"""
import numpy as np
import pytest

import diffgpu as dg

LOAD = {2: dg.load_vec2, 3: dg.load_vec3, 4: dg.load_vec4, (2, 2): dg.load_mat22,
        (3, 3): dg.load_mat33, (4, 4): dg.load_mat44, "q": dg.load_quat}
SHAPE = {2: (2,), 3: (3,), 4: (4,), (2, 2): (2, 2), (3, 3): (3, 3), (4, 4): (4, 4), "q": (4,)}


def kernel1(f, la):
    @dg.kernel
    def k(out, a):
        i = dg.global_id(0)
        if i < a.shape[0]:
            dg.store(out, i, f(la(a, i)))
    return k


def kernel2(f, la, lb):
    @dg.kernel
    def k(out, a, b):
        i = dg.global_id(0)
        if i < a.shape[0]:
            dg.store(out, i, f(la(a, i), lb(b, i)))
    return k


# --- the functions under test, and their numpy references -------------------------
@dg.func
def f_add(a, b):
    return a + b - b * 0.5


@dg.func
def f_cw(a, b):
    return a * b + a / (b * b + dg.vec4(1.0))


@dg.func
def f_scale(a):
    return -(2.0 * a) * 3.0 + a / 4.0


@dg.func
def f_dot(a, b):
    return dg.dot(a, b)


@dg.func
def f_cross(a, b):
    return dg.cross(a, b)


@dg.func
def f_length(a):
    return dg.length(a)


@dg.func
def f_length_sq(a):
    return dg.length_sq(a)


@dg.func
def f_normalize(a):
    return dg.normalize(a)


@dg.func
def f_outer(a, b):
    return dg.outer(a, b)


@dg.func
def f_matvec(m, v):
    return m @ v


@dg.func
def f_vecmat(m, v):
    return v @ m


@dg.func
def f_matmat(m, n):
    return m @ n - n


@dg.func
def f_transpose(m):
    return dg.transpose(m)


@dg.func
def f_det(m):
    return dg.determinant(m)


@dg.func
def f_inverse(m):
    return dg.inverse(m)


@dg.func
def f_trace(m):
    return dg.trace(m)


@dg.func
def f_index(m):
    return dg.vec3(m[0, 1], m[2][0], m[1][1] * m[2, 2])


@dg.func
def f_skew(a, b):
    return dg.skew(a) @ b


@dg.func
def f_quat_mul(p, q):
    return dg.quat_mul(p, q)


@dg.func
def f_quat_rotate(q, v):
    return dg.quat_rotate(dg.normalize(q), v)


@dg.func
def f_quat_rotate_inv(q, v):
    return dg.quat_rotate_inv(dg.normalize(q), v)


@dg.func
def f_quat_inverse(q):
    return dg.quat_inverse(q) * 2.0


@dg.func
def f_axis_angle(a, b):
    return dg.quat_from_axis_angle(a, b[0] + b[1])


@dg.func
def f_quat_to_matrix(q):
    return dg.quat_to_matrix(dg.normalize(q))


def _qmul(p, q):
    x1, y1, z1, w1 = p
    x2, y2, z2, w2 = q
    return np.array([w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2, w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
                     w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2, w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2])


def _rot(q, v):
    q = q / np.linalg.norm(q)
    qv = np.concatenate([v, [0.0]])
    conj = np.array([-q[0], -q[1], -q[2], q[3]])
    return _qmul(_qmul(q, qv), conj)[:3]


def _rot_mat(q):
    return np.stack([_rot(q, e) for e in np.eye(3)], axis=1)


def _skew(a):
    return np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])


CASES = {  # name: (func, input kinds, numpy reference on one row)
    "add vec3": (f_add, (3, 3), lambda a, b: a + b - b * 0.5),
    "add mat22": (f_add, ((2, 2), (2, 2)), lambda a, b: a + b - b * 0.5),
    "cw vec4": (f_cw, (4, 4), lambda a, b: a * b + a / (b * b + 1.0)),
    "scale vec2": (f_scale, (2,), lambda a: -(2.0 * a) * 3.0 + a / 4.0),
    "scale mat33": (f_scale, ((3, 3),), lambda a: -(2.0 * a) * 3.0 + a / 4.0),
    "dot vec3": (f_dot, (3, 3), np.dot),
    "dot quat": (f_dot, ("q", "q"), np.dot),
    "cross": (f_cross, (3, 3), np.cross),
    "length vec3": (f_length, (3,), np.linalg.norm),
    "length vec4": (f_length, (4,), np.linalg.norm),
    "length_sq": (f_length_sq, (3,), lambda a: a @ a),
    "normalize vec3": (f_normalize, (3,), lambda a: a / np.linalg.norm(a)),
    "normalize vec2": (f_normalize, (2,), lambda a: a / np.linalg.norm(a)),
    "outer": (f_outer, (3, 2), np.outer),
    "matvec 33": (f_matvec, ((3, 3), 3), lambda m, v: m @ v),
    "matvec 44": (f_matvec, ((4, 4), 4), lambda m, v: m @ v),
    "vecmat 22": (f_vecmat, ((2, 2), 2), lambda m, v: v @ m),
    "matmat 33": (f_matmat, ((3, 3), (3, 3)), lambda m, n: m @ n - n),
    "transpose": (f_transpose, ((3, 3),), np.transpose),
    "determinant 22": (f_det, ((2, 2),), np.linalg.det),
    "determinant 33": (f_det, ((3, 3),), np.linalg.det),
    "determinant 44": (f_det, ((4, 4),), np.linalg.det),
    "inverse 22": (f_inverse, ((2, 2),), np.linalg.inv),
    "inverse 33": (f_inverse, ((3, 3),), np.linalg.inv),
    "inverse 44": (f_inverse, ((4, 4),), np.linalg.inv),
    "trace": (f_trace, ((3, 3),), np.trace),
    "index": (f_index, ((3, 3),), lambda m: np.array([m[0, 1], m[2, 0], m[1, 1] * m[2, 2]])),
    "skew": (f_skew, (3, 3), lambda a, b: _skew(a) @ b),
    "quat_mul": (f_quat_mul, ("q", "q"), _qmul),
    "quat_rotate": (f_quat_rotate, ("q", 3), _rot),
    "quat_rotate_inv": (f_quat_rotate_inv, ("q", 3),
                        lambda q, v: _rot(np.array([-q[0], -q[1], -q[2], q[3]]), v)),
    "quat_inverse": (f_quat_inverse, ("q",),
                     lambda q: 2.0 * np.array([-q[0], -q[1], -q[2], q[3]])),
    "quat_from_axis_angle": (f_axis_angle, (3, 2), lambda a, b: np.concatenate(
        [a * np.sin((b[0] + b[1]) / 2), [np.cos((b[0] + b[1]) / 2)]])),
    "quat_to_matrix": (f_quat_to_matrix, ("q",), _rot_mat),
}
N = 2


def _setup(name, dtype, seed=0):
    f, kinds, ref = CASES[name]
    rng = np.random.default_rng(seed)
    ins = []
    for kd in kinds:
        x = rng.uniform(-1.0, 1.0, (N,) + SHAPE[kd])
        if kd in ((2, 2), (3, 3), (4, 4)):
            x += 2.0 * np.eye(SHAPE[kd][0])  # well conditioned (inverse)
        ins.append(x.astype(dtype))
    want = np.array([ref(*(x[i].astype(np.float64) for x in ins)) for i in range(N)])
    k = (kernel1 if len(kinds) == 1 else kernel2)(f, *(LOAD[kd] for kd in kinds))
    return k, ins, want


_KERNELS = {}


def _kernel(name):
    """One kernel per case for both dtypes (specializations of one @dg.kernel)."""
    if name not in _KERNELS:
        _KERNELS[name] = _setup(name, np.float64)[0]
    return _KERNELS[name]


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_values(name, dtype):
    _, ins, want = _setup(name, dtype)
    out = np.zeros(want.shape, dtype)
    _kernel(name)[1, N](out, *ins)
    tol = 1e-12 if dtype == np.float64 else 2e-5
    np.testing.assert_allclose(out, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradcheck_float64(name):
    _, ins, want = _setup(name, np.float64)
    out = np.zeros(want.shape)
    assert dg.gradcheck(_kernel(name)[1, N], dg.Duplicated(out, np.zeros_like(out)),
                        *(dg.Duplicated(x, np.zeros_like(x)) for x in ins))


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradcheck_float32(name):
    """float32: central differences with a step the rounding leaves room for."""
    _, ins, want = _setup(name, np.float32)
    out = np.zeros(want.shape, np.float32)
    assert dg.gradcheck(_kernel(name)[1, N], dg.Duplicated(out, np.zeros_like(out)),
                        *(dg.Duplicated(x, np.zeros_like(x)) for x in ins),
                        eps=1e-2, atol=2e-2, rtol=2e-2)

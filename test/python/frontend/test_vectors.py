"""Vector values as variables: branches, loops (carried), augmented and
component assignment, @dg.func arguments and results (and tuples of them),
atomics, the guarded points (length/normalize at 0, inverse of a singular
matrix: finite gradients as in Warp), and the IR they lower to."""
import numpy as np
import pytest

import diffgpu as dg


@dg.func
def two(a, b):
    return a + b, dg.cross(a, b)


@dg.func
def pick(a, b, s):
    if s > 0.0:
        return a
    return b * s


@dg.kernel
def k_flow(out, x, s):
    i = dg.global_id(0)
    if i < x.shape[0]:
        p = dg.load_vec3(x, i)
        acc = dg.vec3()
        for j in range(3):
            acc += p * s
            acc[1] = acc[1] * 0.5
            acc.z += 1.0
        if acc[0] > 0.0:
            acc = -acc
        else:
            acc[2] -= p.x
        u, c = two(acc, p)
        w = pick(u, c, s)
        m = dg.mat33(u, c, w)
        m[0, 0] += 1.0
        dg.store(out, i, m @ p)


def _flow_ref(x, s):
    out = np.zeros_like(x)
    for i, p in enumerate(x):
        acc = np.zeros(3)
        for _ in range(3):
            acc = acc + p * s
            acc[1] *= 0.5
            acc[2] += 1.0
        if acc[0] > 0:
            acc = -acc
        else:
            acc[2] -= p[0]
        u, c = acc + p, np.cross(acc, p)
        w = u if s > 0 else c * s
        m = np.stack([u, c, w])
        m[0, 0] += 1.0
        out[i] = m @ p
    return out


@pytest.mark.parametrize("s", [0.7, -0.4])
def test_control_flow_values_and_gradients(s):
    x = np.random.default_rng(1).uniform(-1, 1, (4, 3))
    out = np.zeros_like(x)
    k_flow[1, 4](out, x, s)
    np.testing.assert_allclose(out, _flow_ref(x, s), rtol=1e-12, atol=1e-12)
    assert dg.gradcheck(k_flow[1, 4], dg.Duplicated(out, np.zeros_like(out)),
                        dg.Duplicated(x, np.zeros_like(x)), dg.Active(s))


@dg.kernel
def k_norms(out, x):
    i = dg.global_id(0)
    if i < x.shape[0]:
        p = dg.load_vec3(x, i)
        n = dg.normalize(p)
        out[i, 0] = dg.length(p) + n[0] + n[1] + n[2]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_length_and_normalize_at_zero(dtype):
    """Warp: length(0) = 0 and normalize(0) = 0, both with gradient 0 (not NaN)."""
    x = np.array([[0.0, 0.0, 0.0], [3.0, 4.0, 0.0]], dtype)
    out = np.zeros((2, 1), dtype)
    k_norms[1, 2](out, x)
    np.testing.assert_allclose(out[:, 0], [0.0, 5.0 + 0.6 + 0.8], rtol=1e-6)
    g = dg.vjp(k_norms[1, 2], out, x, cotangents={"out": np.ones_like(out)})["x"]
    assert np.all(np.isfinite(g))
    np.testing.assert_array_equal(g[0], 0.0)
    p = x[1].astype(np.float64)
    l = np.linalg.norm(p)
    want = p / l + (np.ones(3) - p * p.sum() / l ** 2) / l
    np.testing.assert_allclose(g[1], want, rtol=1e-5)
    t = dg.jvp(k_norms[1, 2], out, x, tangents={"x": np.ones_like(x)})["out"]
    assert np.all(np.isfinite(t)) and t[0, 0] == 0.0
    np.testing.assert_allclose(t[1, 0], want.sum(), rtol=1e-5)


@dg.kernel
def k_inverse(out, m):
    i = dg.global_id(0)
    if i < m.shape[0]:
        dg.store(out, i, dg.inverse(dg.load_mat22(m, i)))


def test_inverse_of_singular_matrix_is_zero_with_zero_gradient():
    m = np.array([[[1.0, 2.0], [2.0, 4.0]], [[2.0, 1.0], [0.0, 1.0]]])
    out = np.zeros_like(m)
    k_inverse[1, 2](out, m)
    np.testing.assert_array_equal(out[0], 0.0)
    np.testing.assert_allclose(out[1], np.linalg.inv(m[1]))
    g = dg.vjp(k_inverse[1, 2], out, m, cotangents={"out": np.ones_like(out)})["m"]
    assert np.all(np.isfinite(g)) and np.all(g[0] == 0.0)


@dg.kernel
def k_atomic(f, idx, x):
    i = dg.global_id(0)
    if i < x.shape[0]:
        p = dg.load_vec3(x, i)
        dg.atomic_add(f, idx[i], p * dg.length(p))


def test_atomic_add_of_a_vector():
    x = np.random.default_rng(2).uniform(-1, 1, (6, 3))
    idx = np.array([0, 1, 0, 1, 1, 0], np.int64)
    f = np.zeros((2, 3))
    k_atomic[1, 8](f, idx, x)
    want = np.zeros((2, 3))
    np.add.at(want, idx, x * np.linalg.norm(x, axis=1, keepdims=True))
    np.testing.assert_allclose(f, want, rtol=1e-12)
    assert dg.gradcheck(k_atomic[1, 8], dg.Duplicated(np.zeros((2, 3)), np.zeros((2, 3))),
                        dg.Const(idx), dg.Duplicated(x, np.zeros_like(x)))


@dg.kernel
def k_leading(out, last, x):
    i = dg.global_id(0)
    if i < x.shape[0]:
        for j in range(2):
            v = dg.load_vec2(x, (i, j))
            dg.store(out, (i, 1 - j), dg.vec2(v.y, v.x))
        dg.store(last, -1, dg.load_vec2(x, (-1, -1)))


def test_loads_and_stores_with_several_leading_indices():
    x = np.arange(12.0).reshape(3, 2, 2)
    out = np.zeros_like(x)
    last = np.zeros((2, 2))
    k_leading[1, 3](out, last, x)
    np.testing.assert_array_equal(last[-1], x[-1, -1])
    np.testing.assert_array_equal(out, x[:, ::-1, ::-1])


def test_ir_is_scalar_ops_with_the_guarded_sqrt():
    """Vectors are scalarised: a load_vec3 is three memref.load, length a
    guarded sqrt (select on the squared length, then on the root)."""
    x = np.zeros((2, 3))
    ir = k_norms.ir(np.zeros((2, 1)), x)
    body = ir[ir.index("func.func @k_norms"):]
    assert body.count("memref.load") == 3
    assert body.count("math.sqrt") == 2  # length's and normalize's (CSE'd later)
    assert "arith.cmpf une" in body and body.count("arith.select") >= 5
    assert "vector." not in body and "diffgpu.length" not in body


@dg.kernel
def k_select(out, x, s):
    i = dg.global_id(0)
    if i < x.shape[0]:
        p = dg.load_vec3(x, i)
        q = p * s if p[0] > 0.0 else -p       # no load or call: selects
        r = dg.load_vec3(x, i) * 2.0 if p[1] > 0.0 else dg.normalize(q)  # an scf.if
        dg.store(out, i, q + r)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_conditional_expression_of_vectors(dtype):
    x = np.random.default_rng(3).uniform(-1, 1, (8, 3)).astype(dtype)
    out = np.zeros_like(x)
    k_select[1, 8](out, x, dtype(1.5))
    q = np.where(x[:, :1] > 0, x * 1.5, -x)
    r = np.where(x[:, 1:2] > 0, 2 * x, q / np.linalg.norm(q, axis=1, keepdims=True))
    np.testing.assert_allclose(out, q + r, rtol=1e-6)
    if dtype == np.float64:
        assert dg.gradcheck(k_select[1, 8], dg.Duplicated(out, np.zeros_like(out)),
                            dg.Duplicated(x, np.zeros_like(x)), dg.Active(1.5))


@dg.kernel
def k_matvec(out, m, v):
    i = dg.global_id(0)
    if i < m.shape[0]:
        dg.store(out, i, dg.load_mat33(m, i) @ dg.load_vec3(v, i))


@dg.kernel
def k_len(out):
    out[0] = len(dg.vec4()) * 10 + len(dg.identity(3))


def test_len_of_vectors_and_matrices():
    out = np.zeros(1, np.int64)
    k_len[1, 1](out)
    assert out[0] == 43


def test_matvec_costs_nine_products_and_six_sums():
    """Scalarised: a mat33 @ vec3 is 9 mulf and 6 addf, nothing else."""
    ir = k_matvec.ir(np.zeros((2, 3)), np.zeros((2, 3, 3)), np.zeros((2, 3)))
    body = ir[ir.index("func.func @k_matvec"):]
    assert body.count("arith.mulf") == 9 and body.count("arith.addf") == 6
    assert body.count("memref.load") == 12 and body.count("memref.store") == 3


@dg.kernel
def k_while(out, x):
    i = dg.global_id(0)
    if i < x.shape[0]:
        p = dg.load_vec2(x, i)
        n = 0
        while dg.length(p) < 10.0:
            p = p * 2.0 + dg.vec2(1.0, 0.0)
            n += 1
            if n >= 20:
                break
        dg.store(out, i, p)


def test_vectors_carried_through_while_with_break_float32():
    x = np.array([[0.5, 0.25], [0.0, 0.0], [20.0, 1.0]], np.float32)
    out = np.zeros_like(x)
    k_while[1, 3](out, x)
    want = []
    for p in x.astype(np.float64):
        n = 0
        while np.linalg.norm(p) < 10 and n < 20:
            p = p * 2 + [1.0, 0.0]
            n += 1
        want.append(p)
    np.testing.assert_allclose(out, want, rtol=1e-6)
    assert out.dtype == np.float32


@dg.func
def spring_energy(xi, xj, rest, ke):
    return 0.5 * ke * (dg.length(xi - xj) - rest) ** 2


@dg.kernel
def k_forces(f, x, pairs, rest, ke):
    """Forces as minus the gradient of an energy of vec3 arguments (in-kernel
    dg.autodiff with respect to vectors)."""
    s = dg.global_id(0)
    if s < pairs.shape[0]:
        i = pairs[s, 0]
        j = pairs[s, 1]
        gi, gj = dg.autodiff(spring_energy, dg.Active(dg.load_vec3(x, i)),
                             dg.Active(dg.load_vec3(x, j)), rest[s], ke)
        dg.atomic_add(f, i, -gi)
        dg.atomic_add(f, j, -gj)


@dg.kernel
def k_directional(out, x, dx):
    """Forward mode with a vector tangent: d length(v) along dv."""
    i = dg.global_id(0)
    if i < x.shape[0]:
        v = dg.load_vec3(x, i)
        dv = dg.load_vec3(dx, i)
        out[i] = dg.fwddiff(norm, dg.Duplicated(v, dv))


@dg.func
def norm(v):
    return dg.length(v)


def test_in_kernel_autodiff_with_respect_to_vectors():
    x = np.array([[0.0, 0.0, 0.0], [2.0, 0.0, 0.0], [2.0, 2.0, 1.0]])
    pairs = np.array([[0, 1], [1, 2]])
    rest = np.array([1.0, 1.5])
    f = np.zeros_like(x)
    k_forces[1, 2](f, x, pairs, rest, 10.0)
    want = np.zeros_like(x)
    for (i, j), r in zip(pairs, rest):
        d = x[i] - x[j]
        l = np.linalg.norm(d)
        fs = 10.0 * (l - r) * d / l
        want[i] -= fs
        want[j] += fs
    np.testing.assert_allclose(f, want, rtol=1e-12)
    assert dg.gradcheck(k_forces[1, 2], dg.Duplicated(np.zeros_like(x), np.zeros_like(x)),
                        dg.Duplicated(x, np.zeros_like(x)), dg.Const(pairs),
                        dg.Duplicated(rest, np.zeros_like(rest)), dg.Active(10.0))


def test_in_kernel_fwddiff_with_a_vector_tangent():
    rng = np.random.default_rng(5)
    x, dx = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))
    out = np.zeros(4)
    k_directional[1, 4](out, x, dx)
    want = (x * dx).sum(axis=1) / np.linalg.norm(x, axis=1)
    np.testing.assert_allclose(out, want, rtol=1e-12)

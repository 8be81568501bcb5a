"""Eleven NVIDIA Warp kernels that use vec3/mat33/quat, ported with dg.vec3,
dg.mat33, dg.quat (test/python/kernels_warp_vectors.py): their values against
numpy references (or, for the force kernels, the conservation of momentum
their forces obey), and both derivative modes against finite differences
(dg.gradcheck), float64 and float32."""
import numpy as np
import pytest

import diffgpu as dg
from kernels_warp_vectors import CONST_PARAMS, PORTS


def _activities(args, name):
    acts = []
    for k, a in enumerate(args):
        if k in CONST_PARAMS.get(name, ()):
            acts.append(dg.Const(a))
        elif isinstance(a, np.ndarray) and a.dtype.kind == "f":
            acts.append(dg.Duplicated(a, np.zeros_like(a)))
        elif isinstance(a, np.ndarray):
            acts.append(dg.Const(a))
        else:
            acts.append(dg.Active(a))
    return acts


def _run(name, dtype, seed=0):
    kernel, make, outs, n = PORTS[name]
    args = make(np.random.default_rng(seed), dtype=dtype)
    kernel[1, n](*args)
    return args, [args[i] for i in outs]


@pytest.mark.parametrize("name", sorted(PORTS))
def test_gradcheck_float64(name):
    kernel, make, outs, n = PORTS[name]
    args = make(np.random.default_rng(0), dtype=np.float64)
    assert dg.gradcheck(kernel[1, n], *_activities(args, name))


@pytest.mark.parametrize("name", sorted(PORTS))
def test_gradcheck_float32(name):
    kernel, make, outs, n = PORTS[name]
    args = make(np.random.default_rng(0), dtype=np.float32)
    assert dg.gradcheck(kernel[1, n], *_activities(args, name), eps=1e-2, atol=5e-2, rtol=5e-2)


@pytest.mark.parametrize("name", sorted(PORTS))
def test_float32_matches_float64(name):
    _, out64 = _run(name, np.float64)
    _, out32 = _run(name, np.float32)
    for a, b in zip(out32, out64):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", ["eval_springs", "eval_triangles", "eval_bending",
                                  "eval_tetrahedra"])
def test_internal_forces_sum_to_zero(name):
    """Forces of springs, membranes, bending and tetrahedra are internal: they
    sum to zero over the vertices (and are not all zero)."""
    _, (f,) = _run(name, np.float64)
    assert np.abs(f).max() > 1e-3
    np.testing.assert_allclose(f.sum(axis=0), 0.0, atol=1e-12)


def _qmul(p, q):
    x1, y1, z1, w1 = p
    x2, y2, z2, w2 = q
    return np.array([w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2, w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
                     w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2, w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2])


def _rot(q, v, inverse=False):
    conj = np.array([-q[0], -q[1], -q[2], q[3]])
    a, b = (conj, q) if inverse else (q, conj)
    return _qmul(_qmul(a, np.concatenate([v, [0.0]])), b)[:3]


def test_integrate_particles_values():
    args, (x1, v1) = _run("integrate_particles", np.float64)
    x, v, f, w, g, dt = args[:6]
    want_v = v + (f * w[:, None] + g * (w > 0)[:, None]) * dt
    np.testing.assert_allclose(v1, want_v, rtol=1e-13)
    np.testing.assert_allclose(x1, x + want_v * dt, rtol=1e-13)


def test_eval_springs_values():
    args, (f,) = _run("eval_springs", np.float64)
    x, v, idx, rest, ke, kd = args[:6]
    want = np.zeros_like(x)
    for s in range(len(rest)):
        i, j = idx[2 * s], idx[2 * s + 1]
        d = x[i] - x[j]
        l = np.linalg.norm(d)
        fs = d / l * (ke[s] * (l - rest[s]) + kd[s] * np.dot(d / l, v[i] - v[j]))
        want[i] -= fs
        want[j] += fs
    np.testing.assert_allclose(f, want, rtol=1e-12, atol=1e-14)


def test_integrate_bodies_values():
    args, (x1, r1, v1, w1) = _run("integrate_bodies", np.float64)
    p, q, v, w, f, t, m_inv, inertia, inv_inertia, g, dt = args[:11]
    for b in range(len(p)):
        vb = v[b] + (f[b] * m_inv[b] + g * (m_inv[b] > 0)) * dt
        wb = _rot(q[b], w[b], inverse=True)
        tb = _rot(q[b], t[b], inverse=True) - np.cross(wb, inertia[b] @ wb)
        wn = _rot(q[b], wb + inv_inertia[b] @ tb * dt)
        r = q[b] + _qmul(np.concatenate([wn, [0.0]]), q[b]) * 0.5 * dt
        np.testing.assert_allclose(v1[b], vb, rtol=1e-12)
        np.testing.assert_allclose(w1[b], wn, rtol=1e-12)
        np.testing.assert_allclose(r1[b], r / np.linalg.norm(r), rtol=1e-12)
        np.testing.assert_allclose(x1[b], p[b] + vb * dt, rtol=1e-12)


def test_transform_points_values():
    args, (out,) = _run("transform_points", np.float64)
    pts, q, t, b = args[:4]
    want = np.array([_rot(q[b[i]], pts[i]) + t[b[i]] for i in range(len(pts))])
    np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-14)


def test_mesh_normals_areas_values():
    args, (normals, area) = _run("mesh_normals_areas", np.float64)
    x, tris = args[:2]
    n = np.cross(x[tris[:, 1]] - x[tris[:, 0]], x[tris[:, 2]] - x[tris[:, 0]])
    want = np.zeros_like(x)
    for k in range(3):
        np.add.at(want, tris[:, k], n)
    np.testing.assert_allclose(normals, want, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(area[0], 0.5 * np.linalg.norm(n, axis=1).sum(), rtol=1e-12)


def test_eval_joint_frames_values():
    args, (cq, cx) = _run("eval_joint_frames", np.float64)
    axis, angle, parent, _, _, offset = args
    for i in range(len(angle)):
        a = axis[i] / np.linalg.norm(axis[i])
        jq = np.concatenate([a * np.sin(angle[i] / 2), [np.cos(angle[i] / 2)]])
        q = _qmul(parent[i], jq)
        np.testing.assert_allclose(cq[i], q, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(cx[i], _rot(q, offset[i]), rtol=1e-12, atol=1e-14)


def test_inverse_solve_loss_values():
    args, (loss,) = _run("inverse_solve_loss", np.float64)
    m, b = args[:2]
    want = sum(np.linalg.solve(m[i], b[i]) @ b[i] + 0.1 * np.trace(m[i] @ m[i].T)
               for i in range(len(m)))
    np.testing.assert_allclose(loss[0], want, rtol=1e-12)


def test_ground_contact_only_touching_particles_get_forces():
    args, (f,) = _run("eval_particle_ground_contacts", np.float64)
    x, radius = args[0], args[2]
    touching = x[:, 1] - radius < 0
    assert touching.any() and (~touching).any()
    assert np.all(f[~touching] == 0.0) and np.all(f[touching, 1] > 0.0)


@pytest.mark.parametrize("name", sorted(PORTS))
def test_float32_gradients_match_float64(name):
    """dg.vjp in float32 against float64 (whose gradients gradcheck verifies
    against finite differences): a tighter check of float32 than its own
    finite differences allow."""
    kernel, make, outs, n = PORTS[name]
    grads = []
    for dtype in (np.float64, np.float32):
        args = make(np.random.default_rng(0), dtype=dtype)
        cot = {kernel.arg_names[k]: np.ones_like(args[k]) for k in outs}
        wrt = [kernel.arg_names[k] for k, a in enumerate(args)
               if k not in outs and k not in CONST_PARAMS.get(name, ())
               and isinstance(a, np.ndarray) and a.dtype.kind == "f"]
        g = dg.vjp(kernel[1, n], *args, cotangents=cot)
        grads.append({w: np.asarray(g[w], np.float64) for w in wrt if w in g})
    g64, g32 = grads
    assert g64 and g64.keys() == g32.keys()
    for w in g64:
        scale = max(1.0, float(np.abs(g64[w]).max()))
        np.testing.assert_allclose(g32[w], g64[w], rtol=1e-3, atol=1e-4 * scale, err_msg=w)

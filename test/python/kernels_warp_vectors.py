"""Kernels of NVIDIA Warp (warp.sim and Warp's gradient tests) that use
vec3/mat33/quat, ported to diffgpu with dg.vec3/dg.mat33/dg.quat as a Warp
user would write them: arrays of vec3 are (N, 3) arrays, of mat33 (N, 3, 3),
of quat (N, 4) in x, y, z, w order; `wp.tid()` is `dg.global_id(0)` with a
bounds test; `wp.atomic_sub(f, i, v)` is `dg.atomic_add(f, i, -v)`. Warp's
`wp.mat33(a, b, c)` of vectors takes them as columns, ours as rows: the ports
transpose where Warp builds from columns.

Used by test/python/frontend/test_warp_vector_ports.py (values, gradients
against finite differences) and scripts/gpu_cases/vectors.py.
"""
import numpy as np

import diffgpu as dg


@dg.kernel
def integrate_particles(x, v, f, w, gravity, dt, x_new, v_new):
    """warp.sim integrator_euler.integrate_particles."""
    tid = dg.global_id(0)
    if tid < x.shape[0]:
        x0 = dg.load_vec3(x, tid)
        v0 = dg.load_vec3(v, tid)
        f0 = dg.load_vec3(f, tid)
        inv_mass = w[tid]
        g = dg.load_vec3(gravity)
        active = 1.0 if inv_mass > 0.0 else 0.0  # wp.step(-inv_mass)
        v1 = v0 + (f0 * inv_mass + g * active) * dt
        x1 = x0 + v1 * dt
        dg.store(x_new, tid, x1)
        dg.store(v_new, tid, v1)


@dg.kernel
def eval_springs(x, v, spring_indices, spring_rest, spring_ke, spring_kd, f):
    """warp.sim integrator_euler.eval_springs."""
    tid = dg.global_id(0)
    if tid < spring_rest.shape[0]:
        i = spring_indices[tid * 2 + 0]
        j = spring_indices[tid * 2 + 1]
        ke = spring_ke[tid]
        kd = spring_kd[tid]
        rest = spring_rest[tid]
        xi = dg.load_vec3(x, i)
        xj = dg.load_vec3(x, j)
        vi = dg.load_vec3(v, i)
        vj = dg.load_vec3(v, j)
        xij = xi - xj
        vij = vi - vj
        l = dg.length(xij)
        l_inv = 1.0 / l
        dir = xij * l_inv
        c = l - rest
        dcdt = dg.dot(dir, vij)
        fs = dir * (ke * c + kd * dcdt)
        dg.atomic_add(f, i, -fs)
        dg.atomic_add(f, j, fs)


@dg.kernel
def eval_triangles(x, v, indices, pose, k_mu, k_lambda, f):
    """warp.sim eval_triangles (the membrane and area terms): `pose` holds the
    inverse rest shape (N, 2, 2)."""
    tid = dg.global_id(0)
    if tid < indices.shape[0]:
        i = indices[tid, 0]
        j = indices[tid, 1]
        k = indices[tid, 2]
        x0 = dg.load_vec3(x, i)
        x1 = dg.load_vec3(x, j)
        x2 = dg.load_vec3(x, k)
        x10 = x1 - x0
        x20 = x2 - x0
        Dm = dg.load_mat22(pose, tid)
        inv_rest_area = dg.determinant(Dm) * 2.0
        rest_area = 1.0 / inv_rest_area
        mu = k_mu * rest_area
        lam = k_lambda * rest_area
        F1 = x10 * Dm[0, 0] + x20 * Dm[1, 0]
        F2 = x10 * Dm[0, 1] + x20 * Dm[1, 1]
        P1 = F1 * mu
        P2 = F2 * mu
        f1 = P1 * Dm[0, 0] + P2 * Dm[0, 1]
        f2 = P1 * Dm[1, 0] + P2 * Dm[1, 1]
        alpha = 1.0 + mu / lam
        n = dg.cross(x10, x20)
        area = dg.length(n) * 0.5
        c = area * inv_rest_area - alpha
        n = dg.normalize(n)
        dcdq = dg.cross(x20, n) * inv_rest_area * 0.5
        dcdr = dg.cross(n, x10) * inv_rest_area * 0.5
        f_area = lam * c
        f1 += dcdq * f_area
        f2 += dcdr * f_area
        f0 = f1 + f2
        dg.atomic_add(f, i, f0)
        dg.atomic_add(f, j, -f1)
        dg.atomic_add(f, k, -f2)


@dg.kernel
def eval_bending(x, v, indices, rest, ke, kd, f):
    """warp.sim eval_bending: the dihedral angle of two triangles sharing the
    edge x3-x4, its elastic and damping forces."""
    tid = dg.global_id(0)
    if tid < indices.shape[0]:
        x1 = dg.load_vec3(x, indices[tid, 0])
        x2 = dg.load_vec3(x, indices[tid, 1])
        x3 = dg.load_vec3(x, indices[tid, 2])
        x4 = dg.load_vec3(x, indices[tid, 3])
        v1 = dg.load_vec3(v, indices[tid, 0])
        v2 = dg.load_vec3(v, indices[tid, 1])
        v3 = dg.load_vec3(v, indices[tid, 2])
        v4 = dg.load_vec3(v, indices[tid, 3])
        n1 = dg.cross(x3 - x1, x4 - x1)
        n2 = dg.cross(x4 - x2, x3 - x2)
        n1_length = dg.length(n1)
        n2_length = dg.length(n2)
        if n1_length < 1.0e-6 or n2_length < 1.0e-6:
            return
        rcp_n1 = 1.0 / n1_length
        rcp_n2 = 1.0 / n2_length
        cos_theta = dg.dot(n1, n2) * rcp_n1 * rcp_n2
        n1 = n1 * rcp_n1 * rcp_n1
        n2 = n2 * rcp_n2 * rcp_n2
        e = x4 - x3
        e_hat = dg.normalize(e)
        e_length = dg.length(e)
        s = 1.0 if dg.dot(dg.cross(n2, n1), e_hat) >= 0.0 else -1.0  # wp.sign
        angle = dg.acos(cos_theta) * s
        d1 = n1 * e_length
        d2 = n2 * e_length
        d3 = n1 * dg.dot(x1 - x4, e_hat) + n2 * dg.dot(x2 - x4, e_hat)
        d4 = n1 * dg.dot(x3 - x1, e_hat) + n2 * dg.dot(x3 - x2, e_hat)
        f_elastic = ke * (angle - rest[tid])
        f_damp = kd * (dg.dot(d1, v1) + dg.dot(d2, v2) + dg.dot(d3, v3) + dg.dot(d4, v4))
        f_total = -e_length * (f_elastic + f_damp)
        dg.atomic_add(f, indices[tid, 0], d1 * f_total)
        dg.atomic_add(f, indices[tid, 1], d2 * f_total)
        dg.atomic_add(f, indices[tid, 2], d3 * f_total)
        dg.atomic_add(f, indices[tid, 3], d4 * f_total)


@dg.kernel
def eval_tetrahedra(x, indices, pose, k_mu, k_lambda, f):
    """warp.sim eval_tetrahedra (neo-Hookean, without damping): `pose` holds
    the inverse rest shape Dm (N, 3, 3)."""
    tid = dg.global_id(0)
    if tid < indices.shape[0]:
        i = indices[tid, 0]
        j = indices[tid, 1]
        k = indices[tid, 2]
        l = indices[tid, 3]
        x0 = dg.load_vec3(x, i)
        x10 = dg.load_vec3(x, j) - x0
        x20 = dg.load_vec3(x, k) - x0
        x30 = dg.load_vec3(x, l) - x0
        Dm = dg.load_mat33(pose, tid)
        inv_rest_volume = dg.determinant(Dm) * 6.0
        rest_volume = 1.0 / inv_rest_volume
        alpha = 1.0 + k_mu / k_lambda - k_mu / (4.0 * k_lambda)
        Ds = dg.transpose(dg.mat33(x10, x20, x30))  # Warp: the edges as columns
        F = Ds @ Dm
        col1 = dg.vec3(F[0, 0], F[1, 0], F[2, 0])
        col2 = dg.vec3(F[0, 1], F[1, 1], F[2, 1])
        col3 = dg.vec3(F[0, 2], F[1, 2], F[2, 2])
        Ic = dg.dot(col1, col1) + dg.dot(col2, col2) + dg.dot(col3, col3)
        P = F * k_mu * (1.0 - 1.0 / (Ic + 1.0))
        H = P @ dg.transpose(Dm)
        f1 = dg.vec3(H[0, 0], H[1, 0], H[2, 0])
        f2 = dg.vec3(H[0, 1], H[1, 1], H[2, 1])
        f3 = dg.vec3(H[0, 2], H[1, 2], H[2, 2])
        J = dg.determinant(F)
        s = inv_rest_volume / 6.0
        dJdx1 = dg.cross(col2, col3) * s
        dJdx2 = dg.cross(col3, col1) * s
        dJdx3 = dg.cross(col1, col2) * s
        f_volume = (J - alpha) * k_lambda
        f1 = f1 + dJdx1 * f_volume
        f2 = f2 + dJdx2 * f_volume
        f3 = f3 + dJdx3 * f_volume
        f0 = -(f1 + f2 + f3)
        dg.atomic_add(f, i, -f0 * rest_volume)
        dg.atomic_add(f, j, -f1 * rest_volume)
        dg.atomic_add(f, k, -f2 * rest_volume)
        dg.atomic_add(f, l, -f3 * rest_volume)


@dg.kernel
def integrate_bodies(body_p, body_q, body_v, body_w, body_f, body_t, inv_mass, inertia,
                     inv_inertia, gravity, dt, p_new, q_new, v_new, w_new):
    """warp.sim integrate_bodies: semi-implicit Euler of a rigid body, its
    orientation a quaternion (positions, orientations and velocities as
    separate arrays; Warp packs them into transforms and spatial vectors)."""
    tid = dg.global_id(0)
    if tid < body_p.shape[0]:
        x0 = dg.load_vec3(body_p, tid)
        r0 = dg.load_quat(body_q, tid)
        v0 = dg.load_vec3(body_v, tid)
        w0 = dg.load_vec3(body_w, tid)
        f0 = dg.load_vec3(body_f, tid)
        t0 = dg.load_vec3(body_t, tid)
        m_inv = inv_mass[tid]
        I = dg.load_mat33(inertia, tid)
        I_inv = dg.load_mat33(inv_inertia, tid)
        active = 1.0 if m_inv > 0.0 else 0.0  # wp.nonzero(inv_mass)
        v1 = v0 + (f0 * m_inv + dg.load_vec3(gravity) * active) * dt
        wb = dg.quat_rotate_inv(r0, w0)
        tb = dg.quat_rotate_inv(r0, t0) - dg.cross(wb, I @ wb)
        w1 = dg.quat_rotate(r0, wb + I_inv @ tb * dt)
        r1 = dg.normalize(r0 + dg.quat_mul(dg.quat(w1, 0.0), r0) * 0.5 * dt)
        x1 = x0 + v1 * dt
        dg.store(p_new, tid, x1)
        dg.store(q_new, tid, r1)
        dg.store(v_new, tid, v1)
        dg.store(w_new, tid, w1)


@dg.kernel
def eval_particle_ground_contacts(x, v, radius, ke, kd, kf, mu, ground, f):
    """warp.sim eval_particle_ground_contacts: penalty contact with the plane
    dot(n, x) + d = 0, Coulomb-limited friction."""
    tid = dg.global_id(0)
    if tid < x.shape[0]:
        px = dg.load_vec3(x, tid)
        pv = dg.load_vec3(v, tid)
        n = dg.vec3(ground[0], ground[1], ground[2])
        c = min(dg.dot(n, px) + ground[3] - radius[tid], 0.0)
        if c >= 0.0:
            return
        vn = dg.dot(n, pv)
        jn = c * ke
        jd = min(vn, 0.0) * kd
        fn = jn + jd
        vt = pv - n * vn
        vs = dg.length(vt)
        vt = dg.normalize(vt)
        ft = min(vs * kf, mu * abs(fn))
        dg.atomic_add(f, tid, -(n * fn + vt * ft))


@dg.kernel
def transform_points(points, body_q, body_p, body_index, out):
    """Points of a body moved to the world frame (warp.sim's shape transform,
    wp.transform_point): out = rotate(q, p) + t."""
    tid = dg.global_id(0)
    if tid < points.shape[0]:
        b = body_index[tid]
        q = dg.load_quat(body_q, b)
        t = dg.load_vec3(body_p, b)
        dg.store(out, tid, dg.quat_rotate(q, dg.load_vec3(points, tid)) + t)


@dg.kernel
def mesh_normals_areas(x, tris, normals, area):
    """A mesh kernel (Warp's cloth/mesh examples): each triangle's area into
    `area` and its area-weighted normal onto its three vertices."""
    tid = dg.global_id(0)
    if tid < tris.shape[0]:
        i = tris[tid, 0]
        j = tris[tid, 1]
        k = tris[tid, 2]
        a = dg.load_vec3(x, i)
        n = dg.cross(dg.load_vec3(x, j) - a, dg.load_vec3(x, k) - a)
        dg.atomic_add(area, 0, 0.5 * dg.length(n))
        dg.atomic_add(normals, i, n)
        dg.atomic_add(normals, j, n)
        dg.atomic_add(normals, k, n)


@dg.func
def joint_rotation(axis, angle, parent):
    return dg.quat_mul(parent, dg.quat_from_axis_angle(dg.normalize(axis), angle))


@dg.kernel
def eval_joint_frames(axis, angle, parent_q, child_q, child_x, offset):
    """A revolute joint's child frame (warp.sim eval_articulation_fk, one joint):
    the child's orientation and its rotated offset, from the joint angle."""
    tid = dg.global_id(0)
    if tid < angle.shape[0]:
        q = joint_rotation(dg.load_vec3(axis, tid), angle[tid], dg.load_quat(parent_q, tid))
        R = dg.quat_to_matrix(q)
        dg.store(child_q, tid, q)
        dg.store(child_x, tid, R @ dg.load_vec3(offset, tid))


@dg.kernel
def inverse_solve_loss(m, b, loss):
    """Warp's gradient tests of matrix builtins (test_mat inverse / mul): the
    loss sum_i dot(inverse(M_i) b_i, b_i) + trace(M_i M_i^T)."""
    tid = dg.global_id(0)
    if tid < m.shape[0]:
        M = dg.load_mat33(m, tid)
        v = dg.load_vec3(b, tid)
        y = dg.inverse(M) @ v
        dg.atomic_add(loss, 0, dg.dot(y, v) + 0.1 * dg.trace(M @ dg.transpose(M)))


# ---------------------------------------------------------------------------
# inputs (numpy Generator -> the arguments, all float64 unless `dtype`)

def _f(rng, *shape, lo=-1.0, hi=1.0, dtype=np.float64):
    return rng.uniform(lo, hi, shape).astype(dtype)


def integrate_particles_args(rng, n=6, dtype=np.float64):
    w = _f(rng, n, lo=0.5, hi=2.0, dtype=dtype)
    w[0] = 0.0  # a fixed particle
    return [_f(rng, n, 3, dtype=dtype), _f(rng, n, 3, dtype=dtype), _f(rng, n, 3, dtype=dtype),
            w, np.array([0.0, -9.8, 0.0], dtype), dtype(0.01),
            np.zeros((n, 3), dtype), np.zeros((n, 3), dtype)]


def eval_springs_args(rng, dtype=np.float64):
    x = _f(rng, 5, 3, dtype=dtype)
    idx = np.array([0, 1, 1, 2, 2, 3, 3, 4, 0, 4], np.int64)
    return [x, _f(rng, 5, 3, dtype=dtype), idx, _f(rng, 5, lo=0.2, hi=0.8, dtype=dtype),
            _f(rng, 5, lo=1.0, hi=2.0, dtype=dtype), _f(rng, 5, lo=0.1, hi=0.2, dtype=dtype),
            np.zeros((5, 3), dtype)]


def _grid_mesh(rng, dtype):
    xs = np.array([[i, j, 0.0] for j in range(3) for i in range(3)], np.float64)
    x = (xs + 0.1 * rng.standard_normal(xs.shape)).astype(dtype)
    tris = []
    for j in range(2):
        for i in range(2):
            a, b, c, d = j * 3 + i, j * 3 + i + 1, (j + 1) * 3 + i, (j + 1) * 3 + i + 1
            tris += [[a, b, d], [a, d, c]]
    return x, np.array(tris, np.int64)


def eval_triangles_args(rng, dtype=np.float64):
    x, tris = _grid_mesh(rng, dtype)
    rest = x.astype(np.float64)
    pose = []
    for i, j, k in tris:
        D = np.stack([rest[j, :2] - rest[i, :2], rest[k, :2] - rest[i, :2]], axis=1)
        pose.append(np.linalg.inv(D))
    x = (x + 0.05 * rng.standard_normal(x.shape)).astype(dtype)
    return [x, _f(rng, len(x), 3, dtype=dtype), tris, np.array(pose, dtype), dtype(2.0),
            dtype(5.0), np.zeros(x.shape, dtype)]


def eval_bending_args(rng, dtype=np.float64):
    x = np.array([[0.0, 0.0, 0.0], [1.0, 1.0, 0.9], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0],
                  [2.0, 0.5, 0.8], [-1.0, 0.6, 0.2]]) + 0.05 * rng.standard_normal((6, 3))
    idx = np.array([[0, 1, 2, 3], [4, 0, 1, 2]], np.int64)
    return [x.astype(dtype), _f(rng, 6, 3, dtype=dtype), idx,
            np.array([0.1, -0.2], dtype), dtype(1.5), dtype(0.1), np.zeros((6, 3), dtype)]


def eval_tetrahedra_args(rng, dtype=np.float64):
    rest = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0],
                     [1.0, 1.0, 1.0]])
    idx = np.array([[0, 1, 2, 3], [1, 2, 3, 4]], np.int64)
    pose = [np.linalg.inv(np.stack([rest[j] - rest[i], rest[k] - rest[i], rest[l] - rest[i]],
                                   axis=1)) for i, j, k, l in idx]
    x = rest + 0.05 * rng.standard_normal(rest.shape)
    return [x.astype(dtype), idx, np.array(pose, dtype), dtype(1.0), dtype(4.0),
            np.zeros((5, 3), dtype)]


def _unit_quats(rng, n):
    q = rng.standard_normal((n, 4))
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def _spd(rng, n):
    a = rng.standard_normal((n, 3, 3)) * 0.3
    return np.einsum("nij,nkj->nik", a, a) + np.eye(3)


def integrate_bodies_args(rng, n=3, dtype=np.float64):
    inertia = _spd(rng, n)
    z = lambda *s: np.zeros(s, dtype)  # noqa: E731
    return [_f(rng, n, 3, dtype=dtype), _unit_quats(rng, n).astype(dtype),
            _f(rng, n, 3, dtype=dtype), _f(rng, n, 3, dtype=dtype), _f(rng, n, 3, dtype=dtype),
            _f(rng, n, 3, dtype=dtype), np.array([1.0, 0.5, 0.0][:n] + [1.0] * (n - 3), dtype),
            inertia.astype(dtype), np.linalg.inv(inertia).astype(dtype),
            np.array([0.0, -9.8, 0.0], dtype), dtype(0.05), z(n, 3), z(n, 4), z(n, 3), z(n, 3)]


def ground_contact_args(rng, n=6, dtype=np.float64):
    x = _f(rng, n, 3, dtype=dtype)
    x[:, 1] = np.linspace(-0.3, 0.4, n)  # some in contact, some not
    return [x, _f(rng, n, 3, dtype=dtype), np.full(n, 0.1, dtype), dtype(100.0), dtype(2.0),
            dtype(5.0), dtype(0.5), np.array([0.0, 1.0, 0.0, 0.0], dtype),
            np.zeros((n, 3), dtype)]


def transform_points_args(rng, n=5, dtype=np.float64):
    return [_f(rng, n, 3, dtype=dtype), _unit_quats(rng, 2).astype(dtype),
            _f(rng, 2, 3, dtype=dtype), np.array([0, 1, 1, 0, 1][:n], np.int64),
            np.zeros((n, 3), dtype)]


def mesh_args(rng, dtype=np.float64):
    x, tris = _grid_mesh(rng, dtype)
    x[:, 2] += (0.2 * rng.standard_normal(len(x))).astype(dtype)
    return [x, tris, np.zeros(x.shape, dtype), np.zeros(1, dtype)]


def joint_args(rng, n=3, dtype=np.float64):
    return [_f(rng, n, 3, dtype=dtype), _f(rng, n, lo=-3.0, hi=3.0, dtype=dtype),
            _unit_quats(rng, n).astype(dtype), np.zeros((n, 4), dtype), np.zeros((n, 3), dtype),
            _f(rng, n, 3, dtype=dtype)]


def inverse_loss_args(rng, n=3, dtype=np.float64):
    m = rng.standard_normal((n, 3, 3)) * 0.3 + 2.0 * np.eye(3)
    return [m.astype(dtype), _f(rng, n, 3, dtype=dtype), np.zeros(1, dtype)]


#: parameters held constant in gradient checks: an inverse mass of 0 (a fixed
#: particle or body) switches gravity off, a step that finite differences cross
CONST_PARAMS = {"integrate_particles": (3,), "integrate_bodies": (6,)}

#: name -> (kernel, args(rng, dtype), outputs (parameter indices), threads)
PORTS = {
    "integrate_particles": (integrate_particles, integrate_particles_args, (6, 7), 6),
    "eval_springs": (eval_springs, eval_springs_args, (6,), 5),
    "eval_triangles": (eval_triangles, eval_triangles_args, (6,), 8),
    "eval_bending": (eval_bending, eval_bending_args, (6,), 2),
    "eval_tetrahedra": (eval_tetrahedra, eval_tetrahedra_args, (5,), 2),
    "integrate_bodies": (integrate_bodies, integrate_bodies_args, (11, 12, 13, 14), 3),
    "eval_particle_ground_contacts": (eval_particle_ground_contacts, ground_contact_args,
                                      (8,), 6),
    "transform_points": (transform_points, transform_points_args, (4,), 5),
    "mesh_normals_areas": (mesh_normals_areas, mesh_args, (2, 3), 8),
    "eval_joint_frames": (eval_joint_frames, joint_args, (3, 4), 3),
    "inverse_solve_loss": (inverse_solve_loss, inverse_loss_args, (2,), 3),
}

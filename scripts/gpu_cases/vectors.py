"""Vector, matrix and quaternion values (dg.vec3, dg.mat33, dg.quat): the eleven
Warp ports of test/python/kernels_warp_vectors.py, float32, launched and
differentiated in both modes (the CPU's results expected), plus
integrate_particles and integrate_bodies over a thousand elements, whose
launch is coarsened by 4 on the GPU (the vec3 rows of four threads merged
into ld.global.v4), and rows of 4 float32 / 2 float64 copied through
dg.load_vec4 / dg.load_vec2 and dg.store in layouts that take the vector
path of diffgpu-vector-access (aligned rows) and its scalar one (a view
starting 4 bytes in, a row stride of 6 floats), launched and reversed."""
from __future__ import annotations

import numpy as np

import diffgpu as dg
from kernels_warp_vectors import (CONST_PARAMS, PORTS, integrate_bodies, integrate_bodies_args,
                                  integrate_particles, integrate_particles_args)


@dg.kernel
def rows4(out, x, s):
    i = dg.global_id(0)
    if i < x.shape[0]:
        q = dg.load_vec4(x, i)
        dg.store(out, i, q * s + dg.vec4(q.w, q.z, q.y, q.x))


@dg.kernel
def rows2(out, x, s):
    i = dg.global_id(0)
    if i < x.shape[0]:
        p = dg.load_vec2(x, i)
        dg.store(out, i, p * (s * p.y))


def _layout(rng, n, width, layout, dtype):
    """(n, width) rows: contiguous; a view starting one element in; every
    other row of a wider array (a larger row stride)."""
    base = rng.standard_normal((2 * n, width + 2)).astype(dtype)
    if layout == "contiguous":
        return np.ascontiguousarray(base[:n, :width])
    if layout == "offset":
        return base[:n, 1:width + 1]
    return base[::2, :width]


def _rows_cases():
    out = []
    for kernel, width, dtype in ((rows4, 4, np.float32), (rows2, 2, np.float64)):
        for layout in ("contiguous", "offset", "strided"):
            def make(r, width=width, dtype=dtype, layout=layout):
                return [np.zeros((1000, width), dtype), _layout(r, 1000, width, layout, dtype),
                        dtype(1.5)]

            def make_rev(r, make=make):
                o, x, s = make(r)
                return [dg.Duplicated(o, r.standard_normal(o.shape).astype(o.dtype)),
                        dg.Duplicated(x, np.zeros_like(x)), dg.Active(s)]
            name = f"vectors {kernel.name} {np.dtype(dtype).name} {layout}"
            out.append((name, kernel, 8, 128, "launch", make, None))
            out.append((name + " reverse", kernel, 8, 128, "reverse", make_rev, None))
    return out


def _activities(args, mode, const, rng):
    """Reverse: random seeds on every float array (the outputs' cotangents, the
    inputs' accumulators start at 0 where only read); forward: random tangents,
    float scalars held constant."""
    acts = []
    for k, a in enumerate(args):
        if k in const or not isinstance(a, np.ndarray) and mode == "forward":
            acts.append(dg.Const(a))
        elif isinstance(a, np.ndarray) and a.dtype.kind == "f":
            acts.append(dg.Duplicated(a, rng.standard_normal(a.shape).astype(a.dtype)))
        elif isinstance(a, np.ndarray):
            acts.append(dg.Const(a))
        else:
            acts.append(dg.Active(a))
    return acts


def _make(args_fn, mode, const, **kw):
    def make(rng):
        args = args_fn(rng, dtype=np.float32, **kw)
        return args if mode == "launch" else _activities(args, mode, const, rng)
    return make


def cases():
    out = []
    for name, (kernel, args_fn, _, n) in PORTS.items():
        const = CONST_PARAMS.get(name, ())
        for mode in ("launch", "reverse", "forward"):
            out.append((f"vectors {name} {mode}", kernel, 1, max(32, n), mode,
                        _make(args_fn, mode, const), None))
    for name, kernel, args_fn in (("integrate_particles", integrate_particles,
                                   integrate_particles_args),
                                  ("integrate_bodies", integrate_bodies, integrate_bodies_args)):
        for mode in ("launch", "reverse", "forward"):
            out.append((f"vectors {name} n=1024 {mode}", kernel, 8, 128, mode,
                        _make(args_fn, mode, CONST_PARAMS[name], n=1024), None))
    return out + _rows_cases()

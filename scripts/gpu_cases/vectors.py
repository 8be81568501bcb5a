"""Vector, matrix and quaternion values (dg.vec3, dg.mat33, dg.quat): the eleven
Warp ports of test/python/kernels_warp_vectors.py, float32, launched and
differentiated in both modes (the CPU's results expected), plus
integrate_particles and integrate_bodies over a thousand elements, whose
launch is coarsened by 4 on the GPU (the vec3 rows of four threads merged
into ld.global.v4)."""
from __future__ import annotations

import numpy as np

import diffgpu as dg
from kernels_warp_vectors import (CONST_PARAMS, PORTS, integrate_bodies, integrate_bodies_args,
                                  integrate_particles, integrate_particles_args)


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
    return out

"""The scalar builtins (frontend/scalar_builtins.py: dg.sign ... dg.erfcinv,
np.sign/clip/rint/fmod) on the GPU, float32 and float64: launches against
numpy references (erfinv/erfcinv: the CPU's result, the same expansion on
libdevice's erf/erfc), and reverse and forward mode against the CPU."""
from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "test", "python"))
import kernels_scalar_builtins as K  # noqa: E402

N = 1024
#: kernel name -> sample range of each argument (smooth points for the derivatives)
RANGES = {
    "sign": [(-2, 2)], "step": [(-2, 2)], "clamp": [(-2, 2), (-1, -0.5), (0.5, 1)],
    "lerp": [(-2, 2), (-2, 2), (-0.5, 1.5)], "smoothstep": [(-2, -1), (1, 2), (-1.5, 1.5)],
    "frac": [(-3, 3)], "rint": [(-3, 3)], "mod": [(-5, 5), (0.5, 2)],
    "erfinv": [(-0.999, 0.999)], "erfcinv": [(0.001, 1.999)],
    "np_sign": [(-2, 2)], "np_clip": [(-2, 2), (-1, -0.5), (0.5, 1)], "np_rint": [(-3, 3)],
    "np_fmod": [(-5, 5), (0.5, 2)],
}
REFS = {
    "sign": lambda x: np.where(x < 0, -1.0, 1.0), "step": lambda x: np.where(x < 0, 1.0, 0.0),
    "clamp": lambda x, lo, hi: np.fmin(np.fmax(lo, x), hi),
    "lerp": lambda a, b, t: a * (1 - t) + b * t,
    "frac": lambda x: x - np.trunc(x), "rint": np.rint, "mod": np.fmod,
    "np_sign": np.sign, "np_clip": np.clip, "np_rint": np.rint, "np_fmod": np.fmod,
}
SMOOTH = ("clamp", "lerp", "smoothstep", "frac", "mod", "erfinv", "erfcinv", "np_clip")


def _args(r, name, dt):
    return [r.uniform(lo, hi, N).astype(dt) for lo, hi in RANGES[name]]


def _launch(name, dt):
    def make(r):
        return _args(r, name, dt) + [np.zeros(N, dt)]
    ref = None
    if name in REFS:
        def ref(*args, f=REFS[name]):  # ref(*args): the arguments' copies
            args[-1][:] = f(*args[:-1])
    return make, ref


def _diff(name, dt):
    import diffgpu as dg

    def make(r):
        xs = _args(r, name, dt)
        return [dg.Duplicated(x, r.uniform(-1, 1, N).astype(dt)) for x in xs] + [
            dg.Duplicated(np.zeros(N, dt), r.uniform(-1, 1, N).astype(dt))]
    return make


def cases():
    out = []
    for dt in (np.float32, np.float64):
        tn = np.dtype(dt).name
        for name in RANGES:
            k = getattr(K, f"k_{name}")
            make, ref = _launch(name, dt)
            out.append((f"scalar builtin {name} {tn}", k, N // 256, 256, "launch", make, ref))
            if name in SMOOTH:
                for mode in ("reverse", "forward"):
                    out.append((f"scalar builtin {name} {mode} {tn}", k, N // 256, 256, mode,
                                _diff(name, dt), None))
    return out

"""16-bit float arrays in a `dg.Tape` (numpy float16 and ml_dtypes' bfloat16
here; CuPy float16 and torch float16 / bfloat16 CUDA tensors take the same
path on the GPU: scripts/gpu_tape_check.py's torch rows): recorded programs'
gradients within 16-bit rounding of the float32 tape's, checkpointed ones
bitwise equal to the unlimited tape's, the results in the arrays' dtype.
(Programs chosen to cover ping-pong and in-place steps, dg.copy, a partly
written output (dg.autodiff's reverse) and an index array.)"""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
import tape_programs as P  # noqa: E402

#: max |16-bit - float32| / max(1, max |float32|): every program of
#: tape_programs.py was below 5e-3 in float16 and 3e-2 in bfloat16
TOL = {"float16": 1e-2, "bfloat16": 6e-2}
PROGRAMS = ("heat_pingpong", "mass_spring", "copies", "partial_outputs", "indexed")


def _dtype(name):
    if name == "bfloat16":
        ml_dtypes = pytest.importorskip("ml_dtypes")
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def _half(inputs, dtype):
    return {k: v.astype(dtype) if v.dtype.kind == "f" else v for k, v in inputs.items()}


def _grads(name, inputs, **opts):
    tape, a = P.taped(name, inputs, **opts)
    return tape, tape.gradient(a["loss"], wrt=[a[w] for w in P.WRT[name]])


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", PROGRAMS)
def test_16bit_tape_matches_float32_to_16bit_rounding(name, dtype):
    dt = _dtype(dtype)
    base = P.make(name, dtype=np.float32)
    _, want = _grads(name, base)
    tape, got = _grads(name, _half(base, dt))
    assert tape.stats["snapshots"] > 0 or name == "copies"
    for w, g, r in zip(P.WRT[name], got, want):
        assert g.dtype == dt and g.shape == r.shape, (w, g.dtype)
        err = float(np.max(np.abs(g.astype(np.float64) - r)))
        assert err <= TOL[dtype] * max(1.0, float(np.max(np.abs(r)))), (name, w, err)
        assert np.any(g != 0) or not np.any(r != 0), (name, w)
    _, ckpt = _grads(name, _half(base, dt), checkpoints=2)
    for g, c in zip(got, ckpt):
        np.testing.assert_array_equal(c.view(np.uint16), g.view(np.uint16))

"""float16 arrays in a `dg.Tape` (numpy here; CuPy and torch float16 CUDA
tensors take the same path on the GPU: scripts/gpu_tape_check.py's torch
rows, with bfloat16): every recorded program's gradients within 16-bit
rounding of the float32 tape's, checkpointed ones bitwise equal to the
unlimited tape's, and the results in float16."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
import tape_programs as P  # noqa: E402

#: max |float16 - float32| / max(1, max |float32|) (all programs: below 5e-3)
TOL = 1e-2


def _half(inputs):
    return {k: v.astype(np.float16) if v.dtype.kind == "f" else v for k, v in inputs.items()}


def _grads(name, inputs, **opts):
    tape, a = P.taped(name, inputs, **opts)
    return tape, tape.gradient(a["loss"], wrt=[a[w] for w in P.WRT[name]])


@pytest.mark.parametrize("name", sorted(P.PROGRAMS))
def test_float16_tape_matches_float32_within_rounding(name):
    base = P.make(name, dtype=np.float32)
    _, want = _grads(name, base)
    tape, got = _grads(name, _half(base))
    assert all(op.items() for op in tape.operations if op.kind == "launch")
    for w, g, r in zip(P.WRT[name], got, want):
        assert g.dtype == np.float16 and g.shape == r.shape, (w, g.dtype)
        err = float(np.max(np.abs(g.astype(np.float64) - r)))
        assert err <= TOL * max(1.0, float(np.max(np.abs(r)))), (name, w, err)
        assert np.any(g != 0) or not np.any(r != 0), (name, w)
    if name != "solver":  # (its host loop: as many steps as ran)
        _, ckpt = _grads(name, _half(base), checkpoints=2)
        for g, c in zip(got, ckpt):
            np.testing.assert_array_equal(c, g)

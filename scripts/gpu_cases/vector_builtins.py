"""Every vector, matrix and quaternion builtin and operator on its own: each
case of test/python/frontend/test_vector_builtins.py's CASES (+, -, *, / of
vectors and matrices, scaling, dot, cross, length, length_sq, normalize,
outer, @ of matrix and vector, vector and matrix, two matrices, transpose,
determinant, inverse, trace, indexing, skew, quat_mul, quat_rotate,
quat_rotate_inv, quat_inverse, quat_from_axis_angle, quat_to_matrix), in
float32 and float64, launched and differentiated in reverse mode
(dg.autodiff, random cotangents of `out`) and forward mode (dg.fwddiff,
random tangents of the inputs); the CPU's results expected. Small: 40 rows
(one thread each) in 2 blocks of 32, the last threads out of bounds.

The kernels are the test file's own (its `_kernel(name)`: one @dg.kernel per
case, float32 and float64 its two specialisations), imported by path as
scripts/gpu_check_cases.py imports test files."""
from __future__ import annotations

import numpy as np

import diffgpu as dg
from gpu_check_cases import test_module

ROWS, GRID, BLOCK = 40, 2, 32
DTYPES = (np.float32, np.float64)
MODES = ("launch", "reverse", "forward")
MATRICES = ((2, 2), (3, 3), (4, 4))


def _inputs(T, kinds, rng, dtype):
    """ROWS rows per input kind, uniform in [-1, 1] (matrices plus 2 I: well
    conditioned, as the test's own inputs)."""
    ins = []
    for kd in kinds:
        x = rng.uniform(-1.0, 1.0, (ROWS,) + T.SHAPE[kd])
        if kd in MATRICES:
            x += 2.0 * np.eye(T.SHAPE[kd][0])
        ins.append(x.astype(dtype))
    return ins


def _make(T, name, out_shape, dtype, mode):
    _, kinds, _ = T.CASES[name]

    def make(rng):
        ins = _inputs(T, kinds, rng, dtype)
        out = np.zeros((ROWS,) + out_shape, dtype)
        if mode == "launch":
            return [out] + ins
        if mode == "reverse":
            return [dg.Duplicated(out, rng.standard_normal(out.shape).astype(dtype))] + \
                [dg.Duplicated(x, np.zeros_like(x)) for x in ins]
        return [dg.Duplicated(out, np.zeros_like(out))] + \
            [dg.Duplicated(x, rng.standard_normal(x.shape).astype(dtype)) for x in ins]
    return make


def cases():
    T = test_module("test_vector_builtins.py", "test_vector_builtins_gpu_cases")
    if T is None:
        return []
    out = []
    for name in sorted(T.CASES):
        kernel = T._kernel(name)
        out_shape = T._setup(name, np.float64)[2].shape[1:]  # one row's result
        for dtype in DTYPES:
            for mode in MODES:
                out.append((f"vector_builtins {name} {np.dtype(dtype).name} {mode}", kernel,
                            GRID, BLOCK, mode, _make(T, name, out_shape, dtype, mode), None))
    return out

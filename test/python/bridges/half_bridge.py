"""What test_torch16.py and test_jax16.py share: 16-bit test values, and the
check that a 16-bit result is its float32 reference rounded once.

The operators take float16 / bfloat16 arrays, compute in float32 and store
(outputs) or accumulate then round once (gradients) in the array's dtype, so
each element of a result is the float32 computation on the same 16-bit
values (and the same 16-bit cotangents) rounded to the dtype: within one unit
in the last place of it. Accumulating a gradient in 16 bits instead fails
that by far on the gather, whose x[0] sums 3584 cotangents.
"""
import numpy as np

from interop_kernels import GATHER, numpy16

#: a 16-bit float's spacing relative to its magnitude: 2^-(mantissa bits)
ULP = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7}
#: the gather's indices: the first ones all 0, the rest spread over 1..7
GATHER_ZEROS = 3584


def values(shape, dtype: str, seed: int) -> np.ndarray:
    """Normal float32 values that are exact in `dtype`."""
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return x.astype(numpy16(dtype)).astype(np.float32)


def assert_rounded(got, want, dtype: str, what="") -> None:
    """Each element of `got` (a 16-bit result, any array) within one unit in
    the last place of `want` (the float32 reference), relative to the
    element, with a floor of 2^-8 of the largest (sums that cancel)."""
    got = np.asarray(got, np.float64)
    want = np.asarray(want, np.float64)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    scale = np.abs(want) + 2.0 ** -8 * np.max(np.abs(want))
    err = float(np.max(np.abs(got - want) / scale))
    assert err <= ULP[dtype], (what, dtype, err)


def gather_case(dtype: str):
    """(x, idx, cotangent of y, x's exact gradient) of the gather: 16-bit
    values as float32, int32 indices, the gradient summed in float64."""
    n, m = GATHER
    idx = np.concatenate([np.zeros(GATHER_ZEROS, np.int32),
                          1 + np.arange(m - GATHER_ZEROS, dtype=np.int32) % (n - 1)])
    cot = (np.float32(0.001) * (1 + np.arange(m) % 3)).astype(numpy16(dtype))
    cot = cot.astype(np.float32)
    grad = np.zeros(n)
    np.add.at(grad, idx, cot.astype(np.float64))
    return values(n, dtype, 3), idx, cot, grad


def gpu_entries(cache_dir) -> dict:
    """{entry name: [payload]} of the GPU programs in the disk cache
    `cache_dir` (DIFFGPU_CACHE_DIR)."""
    import json
    import os

    entries = {}
    root = os.path.join(cache_dir, "v1")
    for f in os.listdir(root):
        with open(os.path.join(root, f), "rb") as fh:
            data = fh.read()
        payload = json.loads(data[data.find(b"\n") + 1:])
        if payload.get("kind") == "gpu":
            entries.setdefault(payload["entry"], []).append(payload)
    return entries

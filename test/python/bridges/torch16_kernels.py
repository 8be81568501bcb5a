"""Kernels and calls of test_torch_bf16_gpu.py: torch float16 / bfloat16 CUDA
tensors (and float32 ones for the tape) as diffgpu arguments, checked on the
GPU against the CPU's results on numpy arrays (ml_dtypes' bfloat16).

    # here (MLIR, no GPU): the CPU results into DIR/torch16.npz and every
    # program the GPU calls select into DIR/cache (for sm_90)
    python test/python/bridges/torch16_kernels.py --prepare .gpucache [--chip sm_90]

Each call (CALLS) is `fn(xp, arrays) -> [results]` on arrays made from the
same float32 values (exact in 16 bits) on both machines: numpy (ml_dtypes)
here, torch CUDA tensors there. Importing this imports neither torch nor CuPy.
"""
from __future__ import annotations

import os
import sys

import numpy as np

if __name__ == "__main__":  # from a checkout (the GPU machine has no pip install)
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.dirname(os.path.abspath(__file__))))), "scripts"))
    import repo_imports
    repo_imports.bootstrap()

import diffgpu as dg  # noqa: E402

B = 128
N = 1000


@dg.kernel
def scale_add(y, x, a):
    """y[i] += a x[i]^2 (a 16-bit in-out array and input)."""
    i = dg.global_id(0)
    if i < len(x):
        y[i] = y[i] + a * x[i] * x[i]


@dg.kernel
def gather2(out, x, idx):
    """out[i] = 2 x[idx[i]]: the vjp's dx adds many threads into few elements."""
    i = dg.global_id(0)
    if i < len(out):
        out[i] = 2.0 * x[idx[i]]


@dg.kernel
def softplus_loss(loss, x):
    """loss[0] += sum log(1 + exp(x)) (a float32 loss of a 16-bit input)."""
    i = dg.global_id(0)
    if i < len(x):
        dg.atomic_add(loss, 0, dg.log(1.0 + dg.exp(x[i])))


def _values(seed: int, n: int, dtype: str) -> np.ndarray:
    """float32 values exact in `dtype` (the same on both machines)."""
    x = np.random.default_rng(seed).uniform(-1.5, 1.5, n).astype(np.float32)
    return to_numpy16(x, dtype).astype(np.float32)


def to_numpy16(x32: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "bfloat16":
        import ml_dtypes
        return x32.astype(ml_dtypes.bfloat16)
    return x32.astype(dtype)


def inputs(dtype: str) -> dict:
    """The float32 values of every array of the calls, for one 16-bit dtype."""
    return {"x": _values(1, N, dtype), "y": _values(2, N, dtype),
            "g": _values(3, N, dtype), "x2": _values(4, 2 * N, dtype),
            "y2": _values(5, 2 * N, dtype),
            "idx": (np.arange(N) * 7 % 13).astype(np.int32)}


GRID = (N + B - 1) // B


def c_launch(m, a):
    y = a["y"]
    scale_add[GRID, B](y, a["x"], np.float32(0.75))
    return [y]


def c_launch_strided(m, a):  # views: every second element
    y = a["y2"][::2]
    scale_add[GRID, B](y, a["x2"][1::2], np.float32(-0.5))
    return [a["y2"]]


def c_vjp(m, a):
    grads = dg.vjp(scale_add[GRID, B], a["y"], a["x"], np.float32(0.75),
                   cotangents={"y": a["g"]})
    return [grads["y"], grads["x"]]


def c_vjp_gather(m, a):
    out = m.zeros_like(a["x"])
    grads = dg.vjp(gather2[GRID, B], out, a["x"], a["idx"], cotangents={"out": a["g"]})
    return [grads["x"]]


def c_autodiff(m, a):  # host-level reverse mode with the caller's 16-bit shadows
    loss, dloss = m.zeros32(1), m.ones32(1)
    dx = m.zeros_like(a["x"])
    dg.autodiff(softplus_loss[GRID, B], dg.Duplicated(loss, dloss), dg.Duplicated(a["x"], dx))
    return [loss, dx]


#: name -> call
CALLS = {"launch": c_launch, "launch_strided": c_launch_strided, "vjp": c_vjp,
         "vjp_gather": c_vjp_gather, "autodiff": c_autodiff}
DTYPES16 = ("float16", "bfloat16")


class NumpyArrays:
    """The array makers of the calls, numpy / ml_dtypes (the CPU)."""

    def __init__(self, dtype):
        self.dtype = dtype

    def make(self, values: dict) -> dict:
        return {k: v.copy() if v.dtype.kind == "i" else to_numpy16(v, self.dtype)
                for k, v in values.items()}

    def zeros_like(self, x):
        return np.zeros_like(x)

    def zeros32(self, n):
        return np.zeros(n, np.float32)

    def ones32(self, n):
        return np.ones(n, np.float32)


def as32(x) -> np.ndarray:
    """A result as a float32 numpy array (numpy, CuPy, torch, 0-d)."""
    if hasattr(x, "detach"):  # torch
        return x.detach().float().cpu().numpy()
    if hasattr(x, "get"):  # CuPy
        x = x.get()
    return np.asarray(x).astype(np.float32)


def expected_key(call: str, dtype: str, k: int) -> str:
    return f"{call}/{dtype}/{k}"


def prepare(directory: str, chip: str) -> int:
    """The CPU's results into directory/torch16.npz; the GPU programs of the
    same calls into directory/cache, specialised to the launch facts of
    these arrays and generic (a GPU run whose facts differ falls back to it)."""
    import diffgpu.driver.launch as L
    from diffgpu.interop import compile_only

    os.makedirs(directory, exist_ok=True)
    os.environ["DIFFGPU_CACHE_DIR"] = os.path.join(os.path.abspath(directory), "cache")
    expected = {}
    for dtype in DTYPES16:
        m = NumpyArrays(dtype)
        for name, call in CALLS.items():
            for k, r in enumerate(call(m, m.make(inputs(dtype)))):
                expected[expected_key(name, dtype, k)] = as32(r)
            with compile_only(chip):
                call(m, m.make(inputs(dtype)))
                saved = L.facts_for
                L.facts_for = lambda *args, **kwargs: None
                try:
                    call(m, m.make(inputs(dtype)))
                finally:
                    L.facts_for = saved
    np.savez(os.path.join(directory, "torch16.npz"), **expected)
    print(f"prepared {len(expected)} results of {len(CALLS)} calls x {len(DTYPES16)} dtypes "
          f"for {chip} in {directory}")
    return 0


def main(argv) -> int:
    import argparse

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--prepare", metavar="DIR", required=True)
    p.add_argument("--chip", default="sm_90")
    ns = p.parse_args(argv)
    return prepare(ns.prepare, ns.chip)


if __name__ == "__main__":
    # the kernels under their module's name, as the tests import them (cache keys)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import torch16_kernels
    sys.exit(torch16_kernels.main(sys.argv[1:]))

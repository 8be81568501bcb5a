"""GPU tests (marked `gpu`; conftest.py skips them without CuPy or a GPU).

They run from a cache compiled beforehand on a machine without a GPU:
`scripts/gpu_check.py --prepare DIR` (DIR from $DIFFGPU_GPU_CHECK_DIR, default
`.gpucache` in the repo) also compiles the signatures below (`prepare`).
Where MLIR is missing the tests read DIR's cache; where it is present they
compile what they need.

- `test_gpu_check_cache` runs `scripts/gpu_check.py --run DIR` (every case);
- the others launch kernels of this file on CuPy arrays.
"""
import importlib.util
import os
import subprocess
import sys

import numpy as np
import pytest

import diffgpu as dg

pytestmark = pytest.mark.gpu
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
HAS_MLIR = importlib.util.find_spec("mlir") is not None
needs_mlir = pytest.mark.skipif(not HAS_MLIR, reason="compiling needs the MLIR bindings")
CHECK_DIR = os.environ.get("DIFFGPU_GPU_CHECK_DIR", os.path.join(REPO, ".gpucache"))


@pytest.fixture(autouse=True)
def prepared_cache(monkeypatch):
    """Without MLIR, kernels come from the prepared cache."""
    if not HAS_MLIR:
        if not os.path.isdir(os.path.join(CHECK_DIR, "cache")):
            pytest.skip(f"no MLIR and no prepared cache in {CHECK_DIR}")
        monkeypatch.setenv("DIFFGPU_CACHE_DIR", os.path.join(CHECK_DIR, "cache"))


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # also from gpu_check.py
from kernels_seed import axpy, df, f, sq  # noqa: E402,F401  (defined once)


def prepare(chip: str) -> None:
    """Compile every signature the tests below launch (gpu_check --prepare)."""
    from diffgpu.driver.launch import get_program
    from diffgpu.types import ArrayType, ScalarType

    def arr(d):
        return ArrayType(d, 1)
    f32, f64 = "float32", "float64"
    get_program(axpy, (arr(f32), arr(f32), ScalarType(f32)), chip)
    get_program(axpy, (arr(f64), arr(f64), ScalarType(f64)), chip)
    get_program(df, (arr(f32), arr(f32)), chip)
    get_program(sq, (arr(f32), arr(f32), ScalarType(f64)), chip,
                ("reverse", ("dup", "dup", "active")))
    # the replayed calls below, as a GPU launch of them selects their programs
    # (specialised for the launch facts, and the generic ones as a fallback)
    from diffgpu.interop import compile_only
    from diffgpu.runtime import specialize
    old = specialize.ENABLED
    try:
        for enabled in (True, False):
            specialize.ENABLED = enabled
            with compile_only(chip):
                y, x, g = _replay_arrays(np)
                _replay_vjp(y, x, g)
                _replay_autodiff(y, x, g.copy(), np.zeros_like(x))
    finally:
        specialize.ENABLED = old


REPLAY_N = 1000


def _replay_arrays(xp):
    x = xp.asarray(np.linspace(-1, 1, REPLAY_N, dtype=np.float32))
    g = xp.asarray(np.linspace(0, 1, REPLAY_N, dtype=np.float32))
    return xp.zeros(REPLAY_N, np.float32), x, g


def _replay_vjp(y, x, g):
    return dg.vjp(sq[4, 256], y, x, 2.0, cotangents={"y": g})


def _replay_autodiff(y, x, dy, dx):
    return dg.autodiff(sq[4, 256], dg.Duplicated(y, dy), dg.Duplicated(x, dx), dg.Active(2.0))


def test_gpu_check_cache():
    # every prepared case matches its reference on the GPU, without MLIR
    d = CHECK_DIR
    if not os.path.exists(os.path.join(d, "manifest.json")):
        pytest.skip(f"no prepared cache in {d} (scripts/gpu_check.py --prepare {d})")
    out = subprocess.run([sys.executable, os.path.join(REPO, "scripts", "gpu_check.py"),
                          "--run", d], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]


def test_axpy_cupy_matches_numpy():
    import cupy
    rng = np.random.default_rng(0)
    A, B = rng.standard_normal((2, 5000)).astype(np.float32)
    dA, dB = cupy.asarray(A), cupy.asarray(B)
    axpy[40, 128](dA, dB, np.float32(0.5))
    np.testing.assert_allclose(dA.get(), A + np.float32(0.5) * B, rtol=1e-6)


def test_cupy_views_keep_their_strides():
    import cupy
    base = cupy.zeros(40, cupy.float64)
    view = base[::-4]                    # negative, non-unit stride
    axpy[1, 32](view, cupy.ones(10), 2.0)
    want = np.zeros(40)
    want[::-4] = 2.0
    np.testing.assert_array_equal(base.get(), want)


def test_seed_on_gpu():
    import cupy
    A = cupy.full(1, 3.0, cupy.float32)
    dA = cupy.ones(1, cupy.float32)
    df[1, 1](A, dA)
    assert A.get().tolist() == [9.0] and dA.get().tolist() == [6.0]


def test_host_autodiff_on_gpu():
    import cupy
    x = cupy.asarray(np.linspace(-1, 1, 300, dtype=np.float32))
    y, dy = cupy.zeros(300, cupy.float32), cupy.ones(300, cupy.float32)
    dx = cupy.zeros(300, cupy.float32)
    (da,) = dg.autodiff(sq[3, 128], dg.Duplicated(y, dy), dg.Duplicated(x, dx), dg.Active(2.0))
    xh = x.get()
    np.testing.assert_allclose(dx.get(), 4.0 * xh, rtol=1e-5)
    # a 0-d device array of the scalar's type (a Python float: float64), summed on the GPU
    assert isinstance(da, cupy.ndarray) and da.shape == () and da.dtype == cupy.float64
    np.testing.assert_allclose(float(da), np.sum(xh.astype(np.float64) ** 2), rtol=1e-5)


def test_mixed_devices_rejected():
    import cupy
    A = np.ones(4, np.float32)
    with pytest.raises(dg.LaunchError, match="mixes host"):
        axpy[1, 4](A, cupy.ones(4, cupy.float32), 1.0)
    assert A.tolist() == [1.0] * 4


@needs_mlir
def test_ir_defaults_to_the_device_chip():
    import cupy
    A = cupy.ones(4, cupy.float32)
    cc = cupy.cuda.Device().compute_capability
    assert f'chip = "sm_{cc}"' in axpy.ir(A, A, 1.0, stage="gpu")


def test_replayed_vjp_and_autodiff_on_gpu():
    """Calls with one key: the first plans, the second packs, the later ones
    replay the packed launch with the fresh buffers' pointers swapped in
    (python/diffgpu/hostdiff/replay.py). Every call's results are right, and a
    result kept from one call is not overwritten by the next."""
    import cupy

    from diffgpu.driver.launch import STATS

    y, x, g = _replay_arrays(cupy)
    xh, gh = x.get().astype(np.float64), g.get().astype(np.float64)
    want_x, want_a = 2 * 2.0 * xh * gh, float(np.sum(xh * xh * gh))
    reuse = STATS["vjp_reuse"]
    kept = []
    for _ in range(5):
        grads = _replay_vjp(y, x, g)
        kept.append(grads["x"])
        np.testing.assert_allclose(grads["x"].get(), want_x, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(float(grads["a"]), want_a, rtol=1e-5)
    assert STATS["vjp_reuse"] - reuse == 4
    assert len({int(k.data.ptr) for k in kept}) == len(kept)
    for k in kept:
        np.testing.assert_allclose(k.get(), want_x, rtol=1e-5, atol=1e-7)
    assert float(cupy.abs(y).max()) == 0.0  # outputs not written
    dy, dx = cupy.empty_like(g), cupy.empty_like(x)
    reuse = STATS["autodiff_reuse"]
    for _ in range(4):  # the same arrays each call: refilled in place
        dy[...] = g
        dx[...] = 0
        (da,) = _replay_autodiff(y, x, dy, dx)
        np.testing.assert_allclose(dx.get(), want_x, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(float(da), want_a, rtol=1e-5)
        assert float(cupy.abs(dy).max()) == 0.0  # the written array's adjoint consumed
    assert STATS["autodiff_reuse"] - reuse == 3

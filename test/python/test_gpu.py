"""GPU tests (marked `gpu`; conftest.py skips them without CuPy or a GPU).

Two kinds:
- `test_gpu_check_cache`: runs `scripts/gpu_check.py --run` on a cache
  prepared beforehand on a machine without a GPU (`--prepare DIR`; DIR from
  $DIFFGPU_GPU_CHECK_DIR, default `.gpucache` in the repo); no MLIR needed;
- the others compile on the spot, so they also need MLIR (skipped without).
"""
import importlib.util
import os
import subprocess
import sys

import numpy as np
import pytest

import diffgpu as dg

pytestmark = pytest.mark.gpu
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
needs_mlir = pytest.mark.skipif(importlib.util.find_spec("mlir") is None,
                                reason="compiling needs the MLIR bindings")


@dg.kernel
def axpy(A, B, a):
    i = dg.global_id(0)
    if i < len(A):
        A[i] = A[i] + a * B[i]


@dg.kernel
def f(A):
    A[0] *= A[0]


@dg.kernel
def df(A, dA):
    dg.autodiff(f, dg.Duplicated(A, dA))


@dg.kernel
def sq(y, x, a):
    i = dg.global_id(0)
    if i < len(x):
        y[i] = a * x[i] * x[i]


def test_gpu_check_cache():
    # every prepared case matches its reference on the GPU, without MLIR
    d = os.environ.get("DIFFGPU_GPU_CHECK_DIR", os.path.join(REPO, ".gpucache"))
    if not os.path.exists(os.path.join(d, "manifest.json")):
        pytest.skip(f"no prepared cache in {d} (scripts/gpu_check.py --prepare {d})")
    out = subprocess.run([sys.executable, os.path.join(REPO, "scripts", "gpu_check.py"),
                          "--run", d], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]


@needs_mlir
def test_axpy_cupy_matches_numpy():
    import cupy
    rng = np.random.default_rng(0)
    A, B = rng.standard_normal((2, 5000)).astype(np.float32)
    dA, dB = cupy.asarray(A), cupy.asarray(B)
    axpy[40, 128](dA, dB, np.float32(0.5))
    np.testing.assert_allclose(dA.get(), A + np.float32(0.5) * B, rtol=1e-6)


@needs_mlir
def test_cupy_views_keep_their_strides():
    import cupy
    base = cupy.zeros(40, cupy.float64)
    view = base[::-4]                    # negative, non-unit stride
    axpy[1, 32](view, cupy.ones(10), 2.0)
    want = np.zeros(40)
    want[::-4] = 2.0
    np.testing.assert_array_equal(base.get(), want)


@needs_mlir
def test_seed_on_gpu():
    import cupy
    A = cupy.full(1, 3.0, cupy.float32)
    dA = cupy.ones(1, cupy.float32)
    df[1, 1](A, dA)
    assert A.get().tolist() == [9.0] and dA.get().tolist() == [6.0]


@needs_mlir
def test_host_autodiff_on_gpu():
    import cupy
    x = cupy.asarray(np.linspace(-1, 1, 300, dtype=np.float32))
    y, dy = cupy.zeros(300, cupy.float32), cupy.ones(300, cupy.float32)
    dx = cupy.zeros(300, cupy.float32)
    (da,) = dg.autodiff(sq[3, 128], dg.Duplicated(y, dy), dg.Duplicated(x, dx), dg.Active(2.0))
    xh = x.get()
    np.testing.assert_allclose(dx.get(), 4.0 * xh, rtol=1e-5)
    np.testing.assert_allclose(da, np.sum(xh.astype(np.float64) ** 2), rtol=1e-5)


@needs_mlir
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

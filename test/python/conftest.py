"""pytest setup: a private cache directory, and the `gpu` marker's skips."""
import os
import tempfile

import pytest

# Tests never touch the user's ~/.cache/diffgpu; set before diffgpu is used.
if "DIFFGPU_TEST_KEEP_CACHE" not in os.environ:
    os.environ["DIFFGPU_CACHE_DIR"] = tempfile.mkdtemp(prefix="diffgpu-test-cache-")


def _gpu_reason():
    try:
        import cupy
    except Exception as exc:  # ImportError, or a broken CUDA install
        return f"CuPy not importable ({type(exc).__name__})"
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return "no CUDA device"
    except Exception as exc:
        return f"no usable CUDA device ({type(exc).__name__})"
    return None


def pytest_collection_modifyitems(config, items):
    gpu_items = [it for it in items if it.get_closest_marker("gpu")]
    if not gpu_items:
        return
    reason = _gpu_reason()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=f"GPU test: {reason}")
    for it in gpu_items:
        it.add_marker(skip)

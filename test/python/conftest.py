"""pytest setup: a private cache directory, the `gpu` marker's skips, and
imports from the repo where diffgpu is not installed (the GPU machine)."""
import os
import shutil
import sys
import tempfile

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


sys.path.insert(0, os.path.join(REPO, "scripts"))
import repo_imports  # noqa: E402

repo_imports.bootstrap()

# Tests verify the IR after every pass, so that a pass leaving invalid IR
# fails there (the compile driver otherwise verifies once, at the end).
os.environ.setdefault("DIFFGPU_VERIFY_EACH", "1")

# CPU programs are JIT-compiled at LLVM O0 here (DIFFGPU_OPT, diffgpu/switches.py):
# about half the JIT time of the users' default O2, with the same results
# (diffgpu emits no fast-math flags). O2 runs where it matters most: the
# gradient fuzz (test_fuzz_gradients.py, fresh kernels per case) and the
# tests that compare the levels or read them (test_compile_scaling.py,
# test_host_opt.py) set it themselves.
os.environ.setdefault("DIFFGPU_OPT", "0")

# Tests never touch the user's ~/.cache/diffgpu; set before diffgpu is used
# (DIFFGPU_TEST_KEEP_CACHE=1 keeps the caller's DIFFGPU_CACHE_DIR instead).
_TEST_CACHE = None
if "DIFFGPU_TEST_KEEP_CACHE" not in os.environ:
    _TEST_CACHE = tempfile.mkdtemp(prefix="diffgpu-test-cache-")
    os.environ["DIFFGPU_CACHE_DIR"] = _TEST_CACHE


def pytest_unconfigure(config):
    if _TEST_CACHE is not None:
        shutil.rmtree(_TEST_CACHE, ignore_errors=True)


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


@pytest.fixture
def kinds(monkeypatch):
    """The reverse kinds of every `dg.vjp` launch, in order; new gradient
    buffers NaN-filled (an element the derivative does not write stays NaN)."""
    import numpy as np

    from diffgpu.hostdiff import buffers, replay
    seen = []
    run = replay.Recipe.run

    def spy(self, args, seeds, first):
        if self.mode == "reverse":
            seen.append(list(self.diff[1]))
        return run(self, args, seeds, first)

    def nan_like(a):
        out = buffers.xp_of(a).empty(*buffers._shape_dtype(a))
        out[...] = np.nan
        return out
    monkeypatch.setattr(replay.Recipe, "run", spy)
    monkeypatch.setattr(buffers, "empty_like", nan_like)
    return seen

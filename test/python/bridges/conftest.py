"""What the bridge tests share: CPU tests need MLIR (its JIT), and the GPU
fixtures of torch (`cuda`) and JAX (`jax_cuda`), which on a GPU machine
without MLIR point diffgpu at the cache `python test/python/interop_kernels.py
--prepare .gpucache` wrote (DIFFGPU_GPU_CHECK_DIR/cache)."""
import importlib.util
import os

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
HAS_MLIR = importlib.util.find_spec("mlir") is not None


@pytest.fixture(autouse=True)
def _cpu_needs_mlir(request):
    """On a GPU machine without MLIR only the `gpu` tests (prepared cache) run."""
    if not HAS_MLIR and request.node.get_closest_marker("gpu") is None:
        pytest.skip("CPU tests compile with MLIR's JIT, not installed here")


def _prepared_cache(monkeypatch) -> None:
    """Without MLIR: the prepared cache, or a skip saying how to make it."""
    if HAS_MLIR:
        return
    cache = os.path.join(os.environ.get("DIFFGPU_GPU_CHECK_DIR", os.path.join(REPO, ".gpucache")),
                         "cache")
    if not os.path.isdir(cache):
        pytest.skip(f"no MLIR and no prepared cache in {cache} "
                    "(python test/python/interop_kernels.py --prepare .gpucache)")
    monkeypatch.setenv("DIFFGPU_CACHE_DIR", cache)


@pytest.fixture
def cuda(monkeypatch):
    """torch's first CUDA device (skips without one)."""
    import torch

    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA device")
    _prepared_cache(monkeypatch)
    return torch.device("cuda", 0)


@pytest.fixture
def jax_cuda(monkeypatch):
    """JAX on its CUDA backend (skips without one)."""
    import jax

    try:
        on_gpu = jax.default_backend() == "gpu"
    except RuntimeError:
        on_gpu = False
    if not on_gpu:
        pytest.skip("jax has no CUDA backend here (pip install 'jax[cuda13]')")
    _prepared_cache(monkeypatch)


@pytest.fixture
def cuda_lowering(monkeypatch):
    """`install(registrations, legacy)`: dg.jax lowers for "cuda" on this
    machine, with a recorder in place of jaxlib's kernel-call library (a
    plugin registering `registrations`, and the legacy target if `legacy`)
    and an sm_90 chip; returns the list the recorder fills with (kernel,
    (grid x, y, z, parameters)) per kernel call."""
    import types

    import diffgpu.bridges.jax_gpu as jg
    import diffgpu.jax as dgj

    def install(registrations=("triton_kernel_call_ffi",), legacy=True):
        calls = []

        class Call:
            def __init__(self, kernel, *grid_and_params):
                calls.append((kernel, grid_and_params))

            def to_proto(self, name, meta):
                return name.encode()
        lib = types.SimpleNamespace(
            TritonKernel=lambda *a: a, TritonKernelCall=Call,
            create_array_parameter=lambda *a: ("array",),
            create_scalar_parameter=lambda value, dtype: (value, dtype),
            registrations=lambda: {name: {} for name in registrations})
        if legacy:
            lib.get_custom_call = lambda: None
        monkeypatch.setattr(jg.kernel_call, "library", lambda: lib)
        monkeypatch.setattr(jg, "_chip", lambda: ("sm_90", 90))
        monkeypatch.setattr(dgj, "_on_gpu", lambda: True)
        return calls
    return install

"""A cached launch goes one way through diffgpu's modules (docs/architecture.md,
"A launch, one way"): the user's entry (api.py), the fast path
(runtime/fastpath.py), the runtime that runs it, and never back into a
module it left. Traced with sys.setprofile: the diffgpu file of each Python
call, consecutive repeats merged ("stays")."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import diffgpu as dg
from diffgpu.driver.launch import STATS
from diffgpu.errors import user_facing
from diffgpu.runtime import gpu

sys.path.insert(0, os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "bench"))
import launch_overhead as LO  # noqa: E402  (the CuPy stand-in)
import vjp_overhead as VO  # noqa: E402  (its allocations)
from kernels_elementwise import saxpy, square  # noqa: E402  (defined once)

PKG = os.path.dirname(dg.__file__) + os.sep
#: the code of `errors.user_facing`'s wrapper, which every public entry runs
#: through (it only re-raises our errors without our frames)
BOUNDARY = user_facing(lambda: None).__code__  # one code object for every decoration


def stays(fn) -> list[str]:
    """The diffgpu modules `fn()` calls into, in order, repeats merged."""
    seq: list[str] = []

    def profile(frame, event, arg):
        if event == "call":
            f = frame.f_code.co_filename
            if frame.f_code is BOUNDARY:  # the user API's error boundary, not a stay
                return
            if f.startswith(PKG):
                name = f[len(PKG):]
                if not seq or seq[-1] != name:
                    seq.append(name)
    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return seq


def returns(seq) -> list[str]:
    """The modules entered again after they were left."""
    return [m for i, m in enumerate(seq) if m in seq[:i]]


def launches(o, x, y):
    launcher = saxpy[1, 256]
    return lambda: launcher(o, 2.0, x, y)


def test_a_cached_cpu_launch_is_one_way():
    o, x, y = (np.ones(256, np.float32) for _ in range(3))
    run = launches(o, x, y)
    for _ in range(3):
        run()
    before = STATS["fast_reuse"]
    seq = stays(run)
    assert STATS["fast_reuse"] == before + 1
    assert returns(seq) == []
    assert seq[:3] == ["api.py", "runtime/fastpath.py", "runtime/cpu.py"]
    assert "driver/launch.py" not in seq and len(seq) <= 5, seq
    np.testing.assert_allclose(o, 2.0 * x + y)


def test_kernel_getitem_then_call_reenters_only_the_api():
    o, x, y = (np.ones(256, np.float32) for _ in range(3))
    for _ in range(3):
        saxpy[1, 256](o, 2.0, x, y)
    seq = stays(lambda: saxpy[1, 256](o, 2.0, x, y))
    # the user's two entries: kernel[grid, block] (its geometry checked), then the call
    assert seq[:3] == ["api.py", "runtime/args.py", "api.py"]
    assert returns(seq) == ["api.py"], seq  # the tracer sees a return


def test_a_miss_goes_to_the_slow_binder_once():
    o, x, y = (np.ones(256, np.float32) for _ in range(3))
    run = launches(o, x, y)
    run()
    o2 = np.ones(256, np.float32)  # a new key with a known token: bind, then run
    seq = stays(launches(o2, x, y))
    assert seq.count("driver/launch.py") == 1, seq
    assert seq.index("driver/launch.py") < seq.index("runtime/cpu.py")


@pytest.mark.skipif(not gpu.available(), reason="needs CuPy and a GPU")
def test_a_cached_gpu_launch_is_one_way():
    import cupy
    o, x, y = (cupy.ones(256, cupy.float32) for _ in range(3))
    run = launches(o, x, y)
    for _ in range(3):
        run()
    seq = stays(run)
    assert returns(seq) == [], seq
    assert seq[:3] == ["api.py", "runtime/fastpath.py", "runtime/gpu.py"]
    assert len(seq) <= 4, seq


def vjps(xp):
    y, x, ybar = xp.zeros(64, xp.float32), xp.ones(64, xp.float32), xp.ones(64, xp.float32)
    launcher = square[1, 64]
    return lambda: dg.vjp(launcher, y, x, cotangents={"y": ybar})


def test_a_replayed_cpu_vjp_is_one_way():
    run = vjps(np)
    for _ in range(3):
        run()
    before = STATS["vjp_reuse"]
    seq = stays(run)
    assert STATS["vjp_reuse"] == before + 1
    assert returns(seq) == [], seq
    assert seq[:4] == ["functional.py", "runtime/fastpath.py", "hostdiff/replay.py",
                       "runtime/cpu.py"] and len(seq) <= 6, seq


def test_a_replayed_vjp_with_a_scalar_gradient_sums_it_last():
    o, x, y, obar = (np.ones(256, np.float32) for _ in range(4))
    launcher = saxpy[1, 256]

    def run():
        return dg.vjp(launcher, o, 2.0, x, y, cotangents={"o": obar})
    for _ in range(3):
        run()
    seq = stays(run)
    assert returns(seq) == [], seq
    assert seq[-1] == "hostdiff/buffers.py"  # the slot sum, after the launch
    assert run()["a"] == pytest.approx(256.0)


@pytest.mark.skipif(not gpu.available(), reason="needs CuPy and a GPU")
def test_a_replayed_gpu_vjp_is_one_way():
    import cupy
    run = vjps(cupy)
    for _ in range(3):
        run()
    seq = stays(run)
    assert returns(seq) == [], seq
    assert seq[:3] == ["functional.py", "runtime/fastpath.py", "hostdiff/replay.py"]
    assert len(seq) <= 6, seq


# ---------------------------------------------------------------------------
# the GPU path without a GPU: bench/launch_overhead.py's CuPy stand-in (the
# kernels compile for sm_90 here and their launches do nothing)
# ---------------------------------------------------------------------------

@pytest.fixture
def standin(monkeypatch):
    VO.install_standin()  # launch_overhead's stand-in, with allocations
    monkeypatch.setattr(gpu, "_chips", {0: "sm_90"})
    yield
    sys.modules.pop("cupy", None)


@dg.kernel
def one_way_saxpy(o, a, x, y):  # its own kernels: the stand-in's functions stay with their programs
    i = dg.global_id(0)
    if i < len(o):
        o[i] = a * x[i] + y[i]


@dg.kernel
def one_way_square(y, x):
    i = dg.global_id(0)
    if i < len(x):
        y[i] = x[i] * x[i]


def test_a_cached_standin_gpu_launch_is_one_way(standin):
    o, x, y = (LO.StandinArray(np.ones(256, np.float32)) for _ in range(3))
    launcher = one_way_saxpy[1, 256]
    for _ in range(3):
        launcher(o, 2.0, x, y)
    before = STATS["fast_reuse"]
    seq = stays(lambda: launcher(o, 2.0, x, y))
    assert STATS["fast_reuse"] == before + 1
    assert returns(seq) == [], seq
    assert seq == ["api.py", "runtime/fastpath.py", "runtime/gpu.py"]


def test_a_replayed_standin_gpu_vjp_is_one_way(standin):
    y, x, ybar = (LO.StandinArray(np.ones(256, np.float32)) for _ in range(3))
    launcher = one_way_square[1, 256]

    def run():
        return dg.vjp(launcher, y, x, cotangents={"y": ybar})
    for _ in range(3):
        run()
    before = STATS["vjp_reuse"]
    seq = stays(run)
    assert STATS["vjp_reuse"] == before + 1
    assert returns(seq) == [], seq
    assert seq == ["functional.py", "runtime/fastpath.py", "hostdiff/replay.py",
                   "runtime/gpu.py"]

"""The launch fast path (runtime/fastpath.py): a signature's full checks run
once; later launches check per-value properties only, pick the program for
their launch facts and reuse the packed arguments. Bad launches after a good
one with the same token still get the full path's errors."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import diffgpu as dg
from diffgpu.runtime import fastpath

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "bench"))
import launch_overhead as LO  # noqa: E402  (the CuPy stand-in)


@dg.kernel
def axpy(y, x, a):
    i = dg.global_id(0)
    if i < len(y):
        y[i] = y[i] + a * x[i]


def _entry(kernel):
    (entry,) = kernel._fast.values()
    return entry


def test_second_launch_takes_the_fast_path(monkeypatch):
    y, x = np.zeros(8, np.float32), np.ones(8, np.float32)
    axpy[1, 8](y, x, 2.0)
    assert len(axpy._fast) == 1
    # the full checks must not run again
    import diffgpu.driver.launch as L
    monkeypatch.setattr(L, "infer_signature", lambda *a, **k: pytest.fail("full path"))
    axpy[1, 8](y, x, 2.0)
    axpy[1, 8](y[::2], x[::2], 1.0)  # other strides: still fast, generic strides
    assert np.array_equal(y, [5, 4, 5, 4, 5, 4, 5, 4])


@pytest.mark.parametrize("bad, match", [
    (lambda y, x: (np.ndarray((3,), np.float32, buffer=np.zeros(32, np.uint8), strides=(5,)),
                   x[:3], 1.0), "byte stride 5"),
    (lambda y, x: (_readonly(y), x, 1.0), "read-only"),
    (lambda y, x: (y, x, 2**70), "does not fit in int64"),
])
def test_bad_values_after_a_good_launch_get_full_errors(bad, match):
    @dg.kernel
    def inc(y, x, a):
        i = dg.global_id(0)
        if i < len(y):
            y[i] = y[i] + a * x[i]

    y, x = np.zeros(4, np.float32), np.ones(4, np.float32)
    inc[1, 4](y, x, 1.0 if "int64" not in match else 1)
    with pytest.raises(dg.LaunchError, match=match):
        inc[1, 4](*bad(y, x))


def _readonly(a):
    a = a.copy()
    a.flags.writeable = False
    return a


def test_aliasing_changes_the_program_not_the_result():
    y, x = np.zeros(8, np.float32), np.arange(8, dtype=np.float32)
    axpy[1, 8](y, x, 1.0)
    progs = dict(_entry(axpy).programs)
    z = np.arange(8, dtype=np.float32)
    axpy[1, 8](z, z, 1.0)  # y is x: facts without noalias, another program
    assert len(_entry(axpy).programs) == len(progs) + 1
    assert np.array_equal(z, 2 * np.arange(8, dtype=np.float32))


def test_fast_facts_equal_full_facts(monkeypatch):
    """The program a repeated launch runs (stand-in GPU: every fact counts)
    is the one for the launch facts of its arguments."""
    from diffgpu.driver.launch import facts_for
    from diffgpu.runtime import gpu
    from diffgpu.runtime.args import infer_signature

    @dg.kernel  # its own kernel: the stand-in's functions stay with its programs
    def axpy_facts(y, x, a):
        i = dg.global_id(0)
        if i < len(y):
            y[i] = y[i] + a * x[i]

    LO.install_standin()
    monkeypatch.setattr(gpu, "_chips", {0: "sm_90"})
    buf = np.zeros(64, np.float32)
    cases = [(buf[:16], buf[16:32]), (buf[:16], buf[8:24]), (buf[::2], buf[1::2]),
             (buf[:0], buf[:16]), (buf[::-1][:16], buf[40:56]), (buf[10:26], buf[::4])]
    try:
        for y, x in cases:
            args = (LO.StandinArray(y), LO.StandinArray(x), 1.0)
            for _ in range(3):
                axpy_facts[1, 16](*args)
            ready = axpy_facts._fast.hot[fastpath.launch_key(args, (1, 1, 1), (16, 1, 1))]
            full = facts_for(args, infer_signature(args).types, "sm_90", (1, 1, 1),
                             (16, 1, 1))
            assert ready.program.payload["facts"] == (full and full.key()), (y.strides,
                                                                               x.strides)
    finally:
        sys.modules.pop("cupy", None)


def test_programs_dropped_restart_the_fast_path():
    y, x = np.zeros(4, np.float32), np.ones(4, np.float32)
    axpy[1, 4](y, x, 1.0)
    axpy._programs.clear()
    axpy[1, 4](y, x, 1.0)  # full path again (the cache tests count disk hits)
    assert axpy._programs and np.array_equal(y, [2, 2, 2, 2])


def test_geometry_cache_keeps_bool_errors():
    from diffgpu.runtime.args import check_geometry
    assert check_geometry(4, (8, 2)) == ((4, 1, 1), (8, 2, 1))
    assert check_geometry(4, (8, 2)) == ((4, 1, 1), (8, 2, 1))
    with pytest.raises(dg.LaunchError, match="bool"):
        check_geometry(True, 1)
    check_geometry((1,), (1,))
    with pytest.raises(dg.LaunchError, match="must be an int, got True"):
        check_geometry((1,), (True,))


def test_standin_device_launch_packs_once(monkeypatch):
    """The GPU path with a CuPy stand-in: the kernel function is called
    with the packed ABI (3 + 2r words per array), kept from the second
    launch on the same arrays."""
    calls = LO.install_standin()
    from diffgpu.runtime import gpu
    monkeypatch.setattr(gpu, "_chips", {0: "sm_90"})
    host = [np.zeros(64, np.float32), np.ones(64, np.float32)]
    dev = [LO.StandinArray(h) for h in host]
    packs = []
    real = gpu.pack_fast
    monkeypatch.setattr(gpu, "pack_fast", lambda *a: packs.append(1) or real(*a))
    try:
        for _ in range(3):
            axpy[1, 64](dev[0], dev[1], 0.5)
        other = LO.StandinArray(np.zeros(64, np.float32))
        axpy[1, 64](other, dev[1], 0.5)
    finally:
        sys.modules.pop("cupy", None)
    from diffgpu.lowering.gpu.nvvm import entry_param_count
    (prog,) = [p for p in axpy._programs.values() if p.kind == "gpu"]
    assert prog.gpu.lean == (True, True, False)  # contiguous arrays: pointer + size
    assert calls == [entry_param_count(prog.gpu.ptx, "axpy")] * 4 == [5] * 4
    assert len(packs) == 3  # checked level, the key's second launch (kept), the new array


def test_lean_abi_matches_the_ptx_parameters():
    """Every layout the runtime packs has as many words as the PTX entry
    has parameters: contiguous, strided, mixed, 2-D, scalars."""
    from diffgpu.lowering.gpu.nvvm import entry_param_count
    from diffgpu.driver.compiler import has_nvptx
    from diffgpu.runtime import gpu
    if not has_nvptx():
        pytest.skip("these MLIR bindings have no NVPTX backend")

    @dg.kernel
    def mixed(c, a, b, s):
        i = dg.global_id(0)
        j = dg.global_id(1)
        if i < c.shape[0]:
            if j < c.shape[1]:
                c[i, j] = a[i, j] * s + b[j]

    cases = [(np.zeros((8, 6), np.float32), np.ones((8, 6), np.float32),
              np.ones(6, np.float32), 2.0),
             (np.zeros((8, 6), np.float32), np.ones((6, 8), np.float32).T,
              np.ones(12, np.float32)[::2], 2.0)]
    for args in cases:
        from diffgpu.driver.launch import build_payload, facts_for
        from diffgpu.runtime.args import infer_signature
        types = infer_signature(args).types
        facts = facts_for(args, types, "sm_90", (1, 1, 1), (8, 8, 1))
        payload, _ = build_payload(mixed, types, "sm_90", facts=facts)
        prog = gpu.GpuProgram(payload["ptx"], payload["entry"], payload["abi"],
                              payload.get("lean"))
        dev = [LO.StandinArray(a) if isinstance(a, np.ndarray) else a for a in args]
        packed = gpu.pack_fast(dev, types, prog.lean)
        assert len(packed) == entry_param_count(payload["ptx"], "mixed"), payload.get("lean")

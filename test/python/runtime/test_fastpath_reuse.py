"""The launch fast path's reuse level (runtime/fastpath.py): a launch whose
key (types, dtypes, data pointers, shapes, strides, writeable flags, GPUs,
scalar values, geometry) equals an earlier one's runs the kept program and
packed arguments with no checks; anything that changes the key, in place or
through another array at the same address, goes through the checks again."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import diffgpu as dg
from diffgpu.driver.launch import STATS
from diffgpu.runtime import fastpath

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "bench"))
import launch_overhead as LO  # noqa: E402  (the CuPy stand-in)


def _counts():
    return STATS["fast_reuse"], STATS["fast_checked"]


def _since(before):
    now = _counts()
    return now[0] - before[0], now[1] - before[1]


@dg.kernel
def rows(a):
    i = dg.global_id(0)
    j = dg.global_id(1)
    if i < a.shape[0]:
        if j < a.shape[1]:
            a[i, j] = float(i) * 10.0 + float(j)


@dg.kernel
def iota(y):
    i = dg.global_id(0)
    if i < len(y):
        y[i] = float(i)


@dg.kernel
def setv(y, v):
    i = dg.global_id(0)
    if i < len(y):
        y[i] = v


def test_repeated_launch_reuses_everything(monkeypatch):
    from diffgpu.runtime.cpu import HostProgram

    y = np.zeros(8, np.float32)
    iota[1, 8](y)  # full checks
    before = _counts()
    iota[1, 8](y)  # checked level
    assert _since(before) == (0, 1)
    iota[1, 8](y)  # the key's second launch: its packed arguments are kept
    monkeypatch.setattr(fastpath, "check_values", lambda *a: pytest.fail("checks ran"))
    monkeypatch.setattr(HostProgram, "pack", lambda *a: pytest.fail("packed again"))
    y[:] = -1
    for _ in range(3):
        iota[1, 8](y)
    assert _since(before) == (4, 1)
    assert np.array_equal(y, np.arange(8))


def test_reshape_in_place_rechecks():
    a = np.zeros(8, np.float32).reshape(2, 4)
    for _ in range(3):
        rows[1, (4, 4)](a)
    assert np.array_equal(a, [[0, 1, 2, 3], [10, 11, 12, 13]])
    a.shape = (4, 2)  # same object, pointer, dtype and ndim
    before = _counts()
    rows[1, (4, 4)](a)
    assert _since(before) == (0, 1)
    assert np.array_equal(a, [[0, 1], [10, 11], [20, 21], [30, 31]])


def test_writeable_flag_flipped_in_place_gets_the_full_error():
    y = np.zeros(8, np.float32)
    for _ in range(3):
        iota[1, 8](y)
    y.flags.writeable = False
    with pytest.raises(dg.LaunchError, match=r"argument 0 \('y'\): read-only array"):
        iota[1, 8](y)
    y.flags.writeable = True
    y[:] = 0
    iota[1, 8](y)
    assert np.array_equal(y, np.arange(8))


def test_same_pointer_other_layout_is_not_reused():
    buf = np.zeros(16, np.float32)
    for _ in range(3):
        iota[1, 8](buf[:8])  # a new view object each time, the same key: reused
    buf[:] = 0
    strided = buf[::2]  # the same data pointer, shape and dtype; stride 8 bytes
    assert strided.__array_interface__["data"][0] == buf.__array_interface__["data"][0]
    before = _counts()
    iota[1, 8](strided)
    assert _since(before) == (0, 1)
    assert np.array_equal(buf[::2], np.arange(8)) and not buf[1::2].any()


def test_freed_pointer_reused_by_another_layout():
    """A new array at a freed array's address (forced: both view one buffer)
    with another shape: the checks and the packing run again."""
    buf = np.zeros(32, np.float32)
    for _ in range(3):
        rows[1, (8, 8)](buf[:8].reshape(2, 4))
    buf[:] = 0
    rows[1, (8, 8)](buf[:8].reshape(4, 2))
    assert np.array_equal(buf[:8].reshape(4, 2), [[0, 1], [10, 11], [20, 21], [30, 31]])


def test_negative_zero_is_not_zero():
    y = np.ones(4, np.float64)
    for _ in range(3):
        setv[1, 4](y, 0.0)
    assert not np.signbit(y).any()
    setv[1, 4](y, -0.0)  # == 0.0, but other bits
    assert np.signbit(y).all()


def test_bad_scalar_after_reuse_gets_the_full_error():
    y = np.zeros(4, np.float64)

    @dg.kernel
    def seti(y, n):
        i = dg.global_id(0)
        if i < len(y):
            y[i] = float(n)

    for _ in range(3):
        seti[1, 4](y, 3)
    with pytest.raises(dg.LaunchError, match="integer 1180591620717411303424 does not fit"):
        seti[1, 4](y, 2**70)


def test_race_detector_switched_on_after_reuse():
    @dg.kernel
    def racy(y):
        i = dg.global_id(0)
        if i < len(y):
            y[0] = float(i)

    y = np.zeros(4, np.float32)
    for _ in range(3):
        racy[1, 4](y)
    with dg.racecheck():
        with pytest.raises(dg.RaceError):
            racy[1, 4](y)
    racy[1, 4](y)  # and off again: the unchecked program


def test_changing_scalars_keep_at_most_hot_max_keys():
    y = np.zeros(4, np.float64)
    for v in range(fastpath._HOT_MAX + 10):
        setv[1, 4](y, float(v) + 0.5)
    assert np.all(y == fastpath._HOT_MAX + 9.5)
    assert 0 < len(setv._fast.hot) <= fastpath._HOT_MAX


# ---------------------------------------------------------------------------
# device arrays (the CuPy stand-in of bench/launch_overhead.py: nothing runs)
# ---------------------------------------------------------------------------

@pytest.fixture
def standin(monkeypatch):
    from diffgpu.runtime import gpu
    calls = LO.install_standin()
    monkeypatch.setattr(gpu, "_chips", {0: "sm_90", 1: "sm_90"})
    packs = []
    real = gpu.pack_fast
    monkeypatch.setattr(gpu, "pack_fast", lambda *a: packs.append(1) or real(*a))
    yield calls, packs
    sys.modules.pop("cupy", None)


def _on(gpu_id, host):
    a = LO.StandinArray(host)
    a.device = LO._Dev()
    a.device.id = gpu_id
    return a


@dg.kernel
def dev_axpy(y, x, a):  # its own kernel: the stand-in's functions stay with its programs
    i = dg.global_id(0)
    if i < len(y):
        y[i] = y[i] + a * x[i]


def test_device_launch_reused_and_rechecked_on_another_gpu(standin):
    calls, packs = standin
    hy, hx = np.zeros(64, np.float32), np.ones(64, np.float32)
    y, x = _on(0, hy), _on(0, hx)
    for _ in range(4):
        dev_axpy[1, 64](y, x, 0.5)
    # full (packs from the array interface), checked, reused (packs, kept), reused
    assert len(calls) == 4 and len(packs) == 2
    y1, x1 = _on(1, hy), _on(1, hx)  # the same addresses, on GPU 1
    before = _counts()
    dev_axpy[1, 64](y1, x1, 0.5)
    dev_axpy[1, 64](y1, x1, 0.5)
    assert _since(before) == (1, 1) and len(packs) == 4 and len(calls) == 6
    ready = dev_axpy._fast.hot[fastpath.launch_key((y1, x1, 0.5), (1, 1, 1), (64, 1, 1))]
    assert ready.sig.gpu_id == 1
    with pytest.raises(dg.LaunchError, match=r"different GPUs \[0, 1\]"):
        dev_axpy[1, 64](y, x1, 0.5)


def test_device_array_reshaped_in_place_is_repacked(standin):
    calls, packs = standin
    y, x = _on(0, np.zeros(64, np.float32)), _on(0, np.ones(64, np.float32))
    for _ in range(3):
        dev_axpy[1, 64](y, x, 0.5)
    assert len(packs) == 2
    y.shape = (32,)  # CuPy arrays take `a.shape = ...` in place too
    y.nbytes = 128
    dev_axpy[1, 64](y, x, 0.5)
    dev_axpy[1, 64](y, x, 0.5)
    assert len(packs) == 4
    ready = dev_axpy._fast.hot[fastpath.launch_key((y, x, 0.5), (1, 1, 1), (64, 1, 1))]
    assert ready.packed[1][1] == 32  # the lean ABI's size of y


def test_checked_level_facts_equal_launch_facts():
    """What the checked level reads (check_values) gives the facts
    `launch_facts` reads from the arrays: random views of one buffer,
    numpy and stand-in device arrays, positive, negative and zero-size."""
    from diffgpu.runtime import specialize
    from diffgpu.runtime.args import infer_signature

    rng = np.random.default_rng(7)
    buf = np.zeros(256, np.float32)

    def view():
        start = int(rng.integers(0, 64))
        step = int(rng.choice([1, 1, 2, 3, -1, -2]))
        n = int(rng.integers(0, 24))
        v = buf[start:][::step][:n] if step > 0 else buf[start + 64:start:step][:n]
        return v.reshape(2, -1) if v.size % 2 == 0 and v.size and rng.random() < 0.3 else v

    for trial in range(300):
        y, x = view(), view()
        if y.ndim != x.ndim:
            x = x.reshape(-1) if y.ndim == 1 else np.zeros((2, 3), np.float32)
        args = (y, x, 1.0)
        if trial % 2:
            args = (LO.StandinArray(y), LO.StandinArray(x), 1.0)
        sig = infer_signature(args)
        grid = ((1, 3)[trial % 2], 1, 1)
        entry = fastpath.Entry(sig, args)
        _gpu, arrays = fastpath.check_values(entry, args,
                                             fastpath.launch_key(args, grid, (16, 1, 1)))
        assert specialize.facts_of(arrays, grid, (16, 1, 1)) == specialize.launch_facts(
            args, sig.types, grid, (16, 1, 1)), (y.strides, y.shape, x.strides, x.shape)


@pytest.mark.parametrize("offset", ["found", "unknown"])
def test_host_pointer_is_the_data_pointer(monkeypatch, offset):
    """The data pointer read from the array object (or, where its place is
    not confirmed, from `__array_interface__`) of views of every kind."""
    if offset == "unknown":
        monkeypatch.setattr(fastpath, "_OFFSET", None)
    else:
        assert fastpath._OFFSET is not None  # CPython: the offset is confirmed at import
    base = np.arange(60, dtype=np.float64).reshape(6, 10)
    views = [base, base[2:], base[:, 3:], base[::-1, ::-2], base.T, base[1:1],
             np.zeros(0, np.float32), base.reshape(-1)[7:], np.frombuffer(bytearray(64), np.int32)]
    for v in views:
        assert fastpath.host_pointer(v) == v.__array_interface__["data"][0]
        assert fastpath.launch_key([v], (1, 1, 1), (1, 1, 1))[5] == v.__array_interface__["data"][0]


def test_kept_launches_hold_no_array():
    """What the fast path keeps (keys, programs, packed arguments) refers
    to no argument array: a dropped array is freed, and `resize` (which
    refuses an array referenced elsewhere) still works."""
    import gc
    import weakref

    y = np.zeros(8, np.float32)
    for _ in range(3):
        iota[1, 8](y)
    gone = weakref.ref(y)
    del y
    gc.collect()
    assert gone() is None
    y = np.zeros(8, np.float32)
    for _ in range(3):
        iota[1, 8](y)
    y.resize(16)
    iota[1, 16](y)
    assert np.array_equal(y, np.arange(16))


def test_kept_device_launches_hold_no_array(standin):
    import gc
    import weakref

    y = _on(0, np.zeros(8, np.float32))
    for _ in range(3):
        dev_iota[1, 8](y)
    gone = weakref.ref(y)
    del y
    gc.collect()
    assert gone() is None


@dg.kernel
def dev_iota(y):
    i = dg.global_id(0)
    if i < len(y):
        y[i] = float(i)


def test_threads_launching_one_kernel():
    import threading

    ys = [np.zeros(64, np.float32) for _ in range(4)]
    errors = []

    def work(y):
        try:
            for _ in range(100):
                y[:] = -1
                iota[1, 64](y)
                assert np.array_equal(y, np.arange(64))
        except Exception as exc:  # reported below, with the thread's failure
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(y,)) for y in ys]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_layers_each_with_their_arrays_are_all_reused():
    """One kernel launched on 100 layers' own arrays: the second pass
    reuses every layer's launch."""
    layers = [np.zeros(8, np.float32) for _ in range(100)]
    for y in layers:
        iota[1, 8](y)
        iota[1, 8](y)
    before = _counts()
    for y in layers:
        iota[1, 8](y)
    assert _since(before) == (100, 0)


def test_device_negative_zero_is_packed_with_its_sign(standin):
    y, x = _on(0, np.zeros(64, np.float32)), _on(0, np.ones(64, np.float32))
    for a in (0.0, 0.0, 0.0, -0.0, -0.0):
        dev_axpy[1, 64](y, x, a)
    ready = dev_axpy._fast.hot[fastpath.launch_key((y, x, -0.0), (1, 1, 1), (64, 1, 1))]
    assert np.signbit(ready.packed[1][-1])  # the scalar, last in the packed arguments

"""dg.Tape's errors: each a TapeError (a dg.LaunchError) saying what is wrong,
raised before anything it refuses runs."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import diffgpu as dg
from diffgpu.runtime import fastpath

sys.path.insert(0, os.path.dirname(__file__))
import tape_programs as P  # noqa: E402
from test_tape_warp_cases import cube_inplace, square  # noqa: E402


def _recorded():
    x, y, loss = np.linspace(0.5, 1.5, 8), np.zeros(8), np.zeros(1)
    with dg.Tape() as tape:
        square[1, 32](y, x)
        P.sq_loss[1, 32](y, loss)
    return tape, x, y, loss


def test_tape_error_is_a_launch_error():
    assert issubclass(dg.TapeError, dg.LaunchError) and issubclass(dg.TapeError, dg.DiffgpuError)


@pytest.mark.parametrize("seed, match", [
    (np.ones(2), "shape"), (np.ones(1, np.float32), "dtype"), ([1.0], "must be an array")])
def test_seed_of_the_wrong_shape_or_dtype(seed, match):
    tape, x, y, loss = _recorded()
    with pytest.raises(dg.TapeError, match=match):
        tape.gradient([loss], wrt=[x], cotangents=[seed])


def test_loss_of_many_elements_needs_cotangents():
    tape, x, y, loss = _recorded()
    with pytest.raises(dg.TapeError, match=r"shape \(8,\); a loss has one element"):
        tape.gradient(y, wrt=[x])
    with pytest.raises(dg.TapeError, match="2 outputs but 1 cotangents"):
        tape.gradient([y, loss], wrt=[x], cotangents=[np.ones(8)])
    g, = tape.gradient(y, wrt=[x], cotangents=np.ones(8))
    np.testing.assert_allclose(g, 2 * x)


def test_wrt_must_be_float_arrays():
    tape, x, y, loss = _recorded()
    with pytest.raises(dg.TapeError, match=r"wrt\[1\] must be a float array.*int64"):
        tape.gradient(loss, wrt=[x, np.zeros(3, np.int64)])
    with pytest.raises(dg.TapeError, match=r"wrt\[0\] must be a float array, got float"):
        tape.gradient(loss, wrt=[2.0])


def test_tapes_do_not_nest():
    with dg.Tape():
        with pytest.raises(dg.TapeError, match="tapes do not nest"):
            with dg.Tape():
                pass
    assert fastpath.RECORD is None


def test_gradient_inside_its_block_or_before_recording():
    t = dg.Tape()
    with pytest.raises(dg.TapeError, match="before recording"):
        t.gradient(np.zeros(1), wrt=[np.zeros(1)])
    x, y, loss = np.linspace(0.5, 1.5, 8), np.zeros(8), np.zeros(1)
    with dg.Tape() as tape:
        square[1, 32](y, x)
        with pytest.raises(dg.TapeError, match="inside the tape's own `with` block"):
            tape.gradient(y, wrt=[x], cotangents=[np.ones(8)])
    with pytest.raises(dg.TapeError, match="records once"):
        with tape:
            pass


def test_host_level_derivatives_inside_a_tape_are_refused():
    x, y = np.linspace(0.5, 1.5, 8), np.zeros(8)
    with dg.Tape() as tape:
        with pytest.raises(dg.TapeError, match="dg.vjp/dg.autodiff inside a recording"):
            dg.vjp(square[1, 32], y, x, cotangents={"y": np.ones(8)})
        with pytest.raises(dg.TapeError, match="inside a recording"):
            dg.autodiff(square[1, 32], dg.Duplicated(y, np.ones(8)), dg.Duplicated(x, np.zeros(8)))
        with pytest.raises(dg.TapeError, match="dg.jvp/dg.fwddiff"):
            dg.jvp(square[1, 32], y, x, tangents={"x": np.ones(8)})
    assert tape.operations == []  # nothing ran, nothing recorded
    assert np.array_equal(y, np.zeros(8))
    g = dg.vjp(square[1, 32], y, x, cotangents={"y": np.ones(8)})  # fine outside
    np.testing.assert_allclose(g["x"], 2 * x)


def test_memory_limit_below_one_state_is_an_error_at_recording():
    x = np.linspace(0.5, 1.5, 8)
    with pytest.raises(dg.TapeError, match=r"memory_limit=40\) is below one state.*64 bytes"):
        with dg.Tape(memory_limit=40):
            cube_inplace[1, 32](x)
    np.testing.assert_array_equal(x, np.linspace(0.5, 1.5, 8))  # refused before it ran


@pytest.mark.parametrize("kw, match", [
    ({"checkpoints": 0}, "positive int"), ({"checkpoints": 2.5}, "positive int"),
    ({"memory_limit": -1}, "positive int of bytes"),
    ({"checkpoints": 2, "memory_limit": 100}, "not both"), ({"check": "never"}, "check=")])
def test_bad_options(kw, match):
    with pytest.raises(dg.TapeError, match=match):
        dg.Tape(**kw)


def test_copy_and_fill_check_their_arguments():
    a, b = np.zeros(4), np.zeros(5)
    with pytest.raises(dg.TapeError, match=r"shape \(4,\).*src \(5,\) and float64; they must be equal"):
        dg.copy(a, b)
    with pytest.raises(dg.TapeError, match="dtype float64, src.*float32"):
        dg.copy(a, np.zeros(4, np.float32))
    with pytest.raises(dg.TapeError, match="must be a numpy or CUDA array"):
        dg.copy(a, [1, 2, 3, 4])
    with pytest.raises(dg.TapeError, match="real number"):
        dg.fill(a, "1")
    ro = np.zeros(4)
    ro.flags.writeable = False
    with pytest.raises(dg.TapeError, match="read-only"):
        dg.fill(ro, 1.0)
    dg.copy(a, np.arange(4.0))
    dg.fill(b, 3.0)
    assert a.tolist() == [0, 1, 2, 3] and b.tolist() == [3.0] * 5


def test_bad_launch_inside_a_tape_keeps_the_tape_usable():
    x, y, loss = np.linspace(0.5, 1.5, 8), np.zeros(8), np.zeros(1)
    with dg.Tape() as tape:
        with pytest.raises(dg.LaunchError, match="takes 2 arguments"):
            square[1, 32](y)
        square[1, 32](y, x)
        P.sq_loss[1, 32](y, loss)
    assert len(tape.operations) == 2
    g, = tape.gradient(loss, wrt=[x])
    np.testing.assert_allclose(g, 4 * x ** 3)


def test_overlapping_views_in_one_launch_cannot_be_recorded():
    buf = np.linspace(0.5, 1.5, 10)
    with pytest.raises(dg.TapeError, match="cannot record #0 square.*overlap"):
        with dg.Tape() as tape:
            square[1, 32](buf[1:9], buf[:8])
    with pytest.raises(dg.TapeError, match="cannot be used"):
        tape.gradient(buf[:1], wrt=[buf])


def test_error_in_the_block_leaves_no_recorder():
    with pytest.raises(ZeroDivisionError):
        with dg.Tape() as tape:
            1 / 0
    assert fastpath.RECORD is None
    with pytest.raises(dg.TapeError, match="raised ZeroDivisionError"):
        tape.gradient(np.zeros(1), wrt=[np.zeros(1)])


def test_gradient_inside_another_recording_tape():
    tape, x, y, loss = _recorded()
    with dg.Tape():
        with pytest.raises(dg.TapeError, match="tapes do not nest"):
            tape.gradient(loss, wrt=[x])


def test_strided_memory_without_an_owner_is_refused_before_the_launch():
    raw = bytearray(16 * 8)
    x = np.ndarray((8,), np.float64, buffer=raw, strides=(16,))  # its base: a bytearray
    y = np.zeros(8)
    with dg.Tape() as tape:
        with pytest.raises(dg.TapeError, match="owns no memory of its own"):
            square[1, 32](y, x)
    assert np.array_equal(y, np.zeros(8)) and tape.operations == []


def test_host_level_fwddiff_inside_a_tape_is_refused():
    """dg.fwddiff (forward mode on a launch, the tangents updated in place)
    is refused like dg.jvp: nothing runs, no tangent changes, nothing is
    recorded; outside the block it works."""
    x, y = np.linspace(0.5, 1.5, 8), np.zeros(8)
    dx, dy = np.ones(8), np.zeros(8)
    with dg.Tape() as tape:
        with pytest.raises(dg.TapeError, match=r"dg.jvp/dg.fwddiff inside a recording"):
            dg.fwddiff(square[1, 32], dg.Duplicated(y, dy), dg.Duplicated(x, dx))
        square[1, 32](y, x)  # the tape records on
    assert [repr(op) for op in tape.operations] == ["#0 square"]
    assert np.array_equal(dy, np.zeros(8)) and np.array_equal(dx, np.ones(8))
    dg.fwddiff(square[1, 32], dg.Duplicated(y, dy), dg.Duplicated(x, dx))  # fine outside
    np.testing.assert_allclose(dy, 2 * x)


# -- one device per tape: the CuPy stand-in of test_reverse_costs.py ------------------
@pytest.fixture
def devices(monkeypatch):
    import standin_devices

    dev = standin_devices.install(monkeypatch)
    yield dev
    sys.modules.pop("cupy", None)


def test_launch_on_a_gpu_inside_a_host_tape_is_refused_before_it_runs(devices):
    x, y, loss = np.linspace(0.5, 1.5, 8), np.zeros(8), np.zeros(1)
    gx, gy = devices.array(x), devices.array(np.zeros(8))
    with dg.Tape() as tape:
        square[1, 32](y, x)
        kernels = devices.counts["kernel"]
        with pytest.raises(dg.TapeError, match=r"#1 square runs on GPU 0, but this tape records "
                                               r"on the host \(numpy\); a tape records one device"):
            square[1, 32](gy, gx)
        assert devices.counts["kernel"] == kernels  # refused before the launch
        with pytest.raises(dg.TapeError, match=r"dg.copy runs on GPU 0, but this tape records "
                                               r"on the host"):
            dg.copy(gy, gx)
        P.sq_loss[1, 32](y, loss)  # the tape stays usable
    assert [repr(op) for op in tape.operations] == ["#0 square", "#1 sq_loss"]
    g, = tape.gradient(loss, wrt=[x])
    np.testing.assert_allclose(g, 4 * x ** 3)


def test_host_launch_inside_a_gpu_tape_is_refused(devices):
    gx, gy = devices.array(np.linspace(0.5, 1.5, 8)), devices.array(np.zeros(8))
    x, y = np.linspace(0.5, 1.5, 8), np.zeros(8)
    with dg.Tape() as tape:
        square[1, 32](gy, gx)
        with pytest.raises(dg.TapeError, match=r"#1 square runs on the host \(numpy\), but this "
                                               r"tape records on GPU 0"):
            square[1, 32](y, x)
        with pytest.raises(dg.LaunchError, match="mixes host"):
            square[1, 32](y, gx)  # one argument on each: the launch's own error
        kernels = devices.counts["kernel"]
        square[1, 32](gx, gy)  # the tape records on
        assert devices.counts["kernel"] == kernels + 1
    assert np.array_equal(y, np.zeros(8))  # nothing ran on the host
    assert [repr(op) for op in tape.operations] == ["#0 square", "#1 square"]

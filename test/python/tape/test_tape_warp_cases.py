"""Where tapes of other systems give silent wrong gradients, dg.Tape is right
or refuses: arrays changed after recording (the reverse would run at their
current values), kernels reading and writing one array and arrays reused
across launches, recorded copies."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import diffgpu as dg
from diffgpu.hostdiff.tape.errors import TapeError

sys.path.insert(0, os.path.dirname(__file__))
import tape_programs as P  # noqa: E402


@dg.kernel
def square(y, x):
    i = dg.global_id(0)
    if i < len(x):
        y[i] = x[i] * x[i]


@dg.kernel
def cube_inplace(x):
    i = dg.global_id(0)
    if i < len(x):
        x[i] = x[i] * x[i] * x[i]


def _fd(fn, x0, eps=1e-6):
    out = np.zeros_like(x0)
    for k in range(x0.size):
        e = np.zeros_like(x0)
        e[k] = eps
        out[k] = (fn(x0 + e) - fn(x0 - e)) / (2 * eps)
    return out


# -- arrays changed after recording ------------------------------------------------
def test_numpy_write_after_recording_is_an_error_naming_array_and_launch():
    x = np.linspace(0.5, 1.5, 8)
    y, loss = np.zeros(8), np.zeros(1)
    with dg.Tape() as tape:
        square[1, 32](y, x)
        P.sq_loss[1, 32](y, loss)
    x[3] = 7.0  # the reverse of square would read this x
    with pytest.raises(TapeError, match=r"'x' of square was changed after the tape recorded #0 square"):
        tape.gradient(loss, wrt=[x])
    x[3] = np.linspace(0.5, 1.5, 8)[3]  # put back: the recorded values again
    gx, = tape.gradient(loss, wrt=[x])
    np.testing.assert_allclose(gx, 4 * x ** 3)


def test_launch_outside_the_tape_after_recording_is_an_error():
    x = np.linspace(0.5, 1.5, 8)
    y, loss = np.zeros(8), np.zeros(1)
    with dg.Tape() as tape:
        square[1, 32](y, x)
        P.sq_loss[1, 32](y, loss)
    cube_inplace[1, 32](x)  # not recorded: the simulation went on
    with pytest.raises(TapeError, match="'x' of square"):
        tape.gradient(loss, wrt=[x])


def test_checkpointed_tape_is_right_after_written_arrays_change():
    """With checkpointing the reverse recomputes from the initial state it
    copied, so arrays the program writes may change afterwards; those it only
    reads are still checked."""
    inputs = P.make("heat_inplace")
    ref_tape, ref = P.taped("heat_inplace", inputs)
    want = ref_tape.gradient(ref["loss"], wrt=[ref["u"], ref["kappa"]])
    tape, a = P.taped("heat_inplace", inputs, checkpoints=2)
    a["u"][:] = -1.0
    a["f"][:] = 3.0
    got = tape.gradient(a["loss"], wrt=[a["u"], a["kappa"]])
    assert all(np.array_equal(g, w) for g, w in zip(got, want))
    a["kappa"][0] += 1.0
    with pytest.raises(TapeError, match="'kappa' of flux"):
        tape.gradient(a["loss"], wrt=[a["u"]])


def test_numpy_write_inside_the_tape_is_found_at_the_next_launch():
    x = np.linspace(0.5, 1.5, 8)
    y, loss = np.zeros(8), np.zeros(1)
    with pytest.raises(TapeError, match=r"'y' of square was changed after #0 square.*found at #1 sq_loss"):
        with dg.Tape() as tape:
            square[1, 32](y, x)
            y[2] = 5.0  # behind the tape's back
            P.sq_loss[1, 32](y, loss)
    with pytest.raises(TapeError, match="cannot be used"):
        tape.gradient(loss, wrt=[x])


def test_numpy_write_after_the_last_launch_is_found_at_the_end_of_recording():
    x = np.linspace(0.5, 1.5, 8)
    y = np.zeros(8)
    with pytest.raises(TapeError, match="'x' of square.*end of recording"):
        with dg.Tape():
            square[1, 32](y, x)
            x *= 2.0


# -- one array read and written, arrays reused -------------------------------------
def test_inplace_kernel_repeated_then_reused_as_input():
    x0 = np.linspace(0.6, 1.1, 8)

    def run(x0, tape=None):
        x, y, loss = x0.copy(), np.zeros(8), np.zeros(1)
        cube_inplace[1, 32](x)
        cube_inplace[1, 32](x)
        square[1, 32](y, x)         # x reused as an input
        cube_inplace[1, 32](x)      # and overwritten again after that read
        P.dot_loss[1, 32](y, x, loss)
        return x, loss
    x = x0.copy()
    y, loss = np.zeros(8), np.zeros(1)
    with dg.Tape() as tape:
        cube_inplace[1, 32](x)
        cube_inplace[1, 32](x)
        square[1, 32](y, x)
        cube_inplace[1, 32](x)
        P.dot_loss[1, 32](y, x, loss)
    g, = tape.gradient(loss, wrt=[x])
    np.testing.assert_allclose(g, 45 * x0 ** 44, rtol=1e-12)   # loss = sum(x^18 x^27)
    np.testing.assert_allclose(g, _fd(lambda v: run(v)[1][0], x0), rtol=1e-5, atol=1e-8)
    # x's versions 0, 1, 2 were read and then overwritten: copied; its last one is live
    assert tape.stats["snapshots"] == 3 + 1  # + the loss accumulated into


def test_same_array_for_two_parameters():
    a0 = np.linspace(0.5, 1.0, 8)
    a, loss = a0.copy(), np.zeros(1)
    with dg.Tape() as tape:
        square[1, 32](a, a)   # an in-place square through two names
        square[1, 32](a, a)
        P.sq_loss[1, 32](a, loss)
    g, = tape.gradient(loss, wrt=[a])
    np.testing.assert_allclose(g, 8 * a0 ** 7, rtol=1e-12)


# -- recorded copies ---------------------------------------------------------------
def test_recorded_copies_route_gradients():
    x0 = np.linspace(0.2, 0.9, 8)

    def prog(x):
        y, z, loss = np.zeros(8), np.zeros(8), np.zeros(1)
        dg.copy(y, x)
        cube_inplace[1, 32](y)
        dg.copy(z, y)
        dg.copy(y, x)          # overwrites y, read by the copy before
        square[1, 32](x, y)    # overwrites x, read by the copies
        P.dot_loss[1, 32](x, z, loss)
        return loss
    x = x0.copy()
    with dg.Tape() as tape:
        loss = prog(x)
    g, = tape.gradient(loss, wrt=[x])
    # loss = sum(x^2 * x^3) = sum(x^5)
    np.testing.assert_allclose(g, 5 * x0 ** 4, rtol=1e-12)
    np.testing.assert_allclose(g, _fd(lambda v: prog(v.copy())[0], x0), rtol=1e-6)


def test_numpy_copy_inside_the_tape_is_refused():
    x, y = np.linspace(0.2, 0.9, 8), np.zeros(8)
    with pytest.raises(TapeError, match="'y' of square"):
        with dg.Tape():
            square[1, 32](y, x)
            y[:] = x          # not dg.copy: the tape cannot see it
            cube_inplace[1, 32](y)


def test_fill_cuts_the_gradient():
    x, y, loss = np.linspace(0.2, 0.9, 8), np.zeros(8), np.zeros(1)
    with dg.Tape() as tape:
        square[1, 32](y, x)
        dg.fill(y, 2.0)
        P.sq_loss[1, 32](y, loss)
    g, = tape.gradient(loss, wrt=[x])
    assert np.array_equal(g, np.zeros(8)) and loss[0] == 32.0


def test_check_end_sees_changes_after_recording_only():
    """check="end" (the GPU's default) fingerprints when recording ends: a
    write between two launches goes unseen, a change afterwards does not."""
    x = np.linspace(0.5, 1.5, 8)
    y, loss = np.zeros(8), np.zeros(1)
    with dg.Tape(check="end") as tape:
        square[1, 32](y, x)
        P.sq_loss[1, 32](y, loss)
    g, = tape.gradient(loss, wrt=[x])
    np.testing.assert_allclose(g, 4 * x ** 3)
    y[0] = 3.0  # y's last version is read by sq_loss: checked at gradient time
    with pytest.raises(TapeError, match="'y' of square was changed after"):
        tape.gradient(loss, wrt=[x])


def test_gradient_with_respect_to_a_view():
    buf = np.linspace(0.5, 1.5, 16)
    y, loss = np.zeros(16), np.zeros(1)
    with dg.Tape() as tape:
        square[1, 32](y, buf)
        P.sq_loss[1, 32](y, loss)
    part, whole = tape.gradient(loss, wrt=[buf[4:8], buf])
    np.testing.assert_allclose(whole, 4 * buf ** 3)
    assert np.array_equal(part, whole[4:8]) and part.shape == (4,)


def test_launches_of_other_threads_are_not_recorded():
    import threading

    x, y = np.linspace(0.5, 1.5, 8), np.zeros(8)
    other = np.zeros(8)
    with dg.Tape() as tape:
        square[1, 32](y, x)
        t = threading.Thread(target=lambda: square[1, 32](other, x))
        t.start()
        t.join()
    assert [repr(op) for op in tape.operations] == ["#0 square"]
    np.testing.assert_allclose(other, x * x)

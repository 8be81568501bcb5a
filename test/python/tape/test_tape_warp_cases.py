"""Where tapes of other systems give silent wrong gradients, dg.Tape is right
or refuses. Each group reproduces the failures of one Warp issue (Warp's
`wp.Tape`, reported with a minimal program; the docstrings name the issue):

- NVIDIA/warp#1350: `tape.backward()` runs at the arrays' current values,
  not the recorded ones (an input changed after recording, a field a
  "solve" sets after recording: a phantom coupling); dg.Tape refuses, naming
  the array and the launch that read it, and is right once it is put back;
- NVIDIA/warp#1294: a kernel reading and writing one array (`arr[i] =
  arr[i] + 1` after a copy), arrays reused across launches (an array
  overwritten after a launch read it, a scratch array reused, one array for
  two parameters); dg.Tape is right (it copies the versions the reverse
  reads);
- NVIDIA/warp#1728: tape-recorded copies (the source's adjoint assigned
  instead of accumulated: zero gradients in the iterative `y = f(x); copy(x,
  y)` loop; the destination's adjoint not consumed: phantom gradients
  through a dead write); dg.Tape is right.

Every expected gradient is the analytic one, checked by float64 central
differences where the program is not a one-liner."""
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


@dg.kernel
def add_one(arr):
    i = dg.global_id(0)
    if i < len(arr):
        arr[i] = arr[i] + 1.0


@dg.kernel
def mul2(x, y):
    i = dg.global_id(0)
    if i < len(x):
        y[i] = x[i] * 2.0


@dg.kernel
def total(x, loss):
    i = dg.global_id(0)
    if i < len(x):
        dg.atomic_add(loss, 0, x[i])


@dg.kernel
def couple(y, c, x):
    i = dg.global_id(0)
    if i < len(x):
        y[i] = c[i] * x[i]


def _taped(prog, x0):
    """`prog(x)` recorded on a copy of `x0`: (d loss / d x, the loss it returned)."""
    x = x0.copy()
    with dg.Tape() as tape:
        loss = prog(x)
    g, = tape.gradient(loss, wrt=[x])
    return g, loss


def _fd(fn, x0, eps=1e-6):
    out = np.zeros_like(x0)
    for k in range(x0.size):
        e = np.zeros_like(x0)
        e[k] = eps
        out[k] = (fn(x0 + e) - fn(x0 - e)) / (2 * eps)
    return out


# -- arrays changed after recording ------------------------------------------------
def test_numpy_write_after_recording_is_an_error_naming_array_and_launch():
    """NVIDIA/warp#1350 (its experiment 2: x changed from 3 to 5 between
    recording and backward): an error, right again once x is put back."""
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
    """NVIDIA/warp#1350: the simulation goes on after recording (a launch
    outside the tape overwrites an array the reverse reads)."""
    x = np.linspace(0.5, 1.5, 8)
    y, loss = np.zeros(8), np.zeros(1)
    with dg.Tape() as tape:
        square[1, 32](y, x)
        P.sq_loss[1, 32](y, loss)
    cube_inplace[1, 32](x)  # not recorded: the simulation went on
    with pytest.raises(TapeError, match="'x' of square"):
        tape.gradient(loss, wrt=[x])


def test_field_set_after_recording_is_an_error_not_a_phantom_coupling():
    """NVIDIA/warp#1350 (its experiment 3, "phantom coupling"): y = c * x is
    recorded while the field c is zero; a solve then sets c = 5 outside the
    tape. dy/dx at the recorded c is 0; a reverse at the current c would give
    5. dg.Tape refuses, naming c; with c put back, dy/dx = 0 and dy/dc = x."""
    x, c = np.full(4, 3.0), np.zeros(4)
    y, loss = np.zeros(4), np.zeros(1)
    with dg.Tape() as tape:
        couple[1, 32](y, c, x)
        total[1, 32](y, loss)
    dg.fill(c, 5.0)  # the "solve", outside the tape
    with pytest.raises(TapeError, match=r"'c' of couple was changed after the tape recorded "
                                        r"#0 couple reading it"):
        tape.gradient(loss, wrt=[x, c])
    c[:] = 0.0
    gx, gc = tape.gradient(loss, wrt=[x, c])
    assert np.array_equal(gx, np.zeros(4)) and np.array_equal(gc, x)


def test_a_launch_between_two_recordings_cannot_join_the_tape():
    """NVIDIA/warp#1350 (the maintainers' exception: launches between two
    `with tape:` blocks of one Warp tape, which no check covers): a dg.Tape
    records once; entering it again is refused, and an array the launch in
    between changed is found at gradient time."""
    x, y, loss = np.linspace(0.5, 1.5, 8), np.zeros(8), np.zeros(1)
    tape = dg.Tape()
    with tape:
        square[1, 32](y, x)
    cube_inplace[1, 32](x)  # between the blocks: not recorded
    with pytest.raises(TapeError, match="a dg.Tape records once"):
        with tape:
            P.sq_loss[1, 32](y, loss)
    assert loss[0] == 0.0  # the second block did not run
    assert [repr(op) for op in tape.operations] == ["#0 square"]
    with pytest.raises(TapeError, match="'x' of square was changed after the tape recorded"):
        tape.gradient(y, wrt=[x], cotangents=[np.ones(8)])


def test_checkpointed_tape_is_right_after_written_arrays_change():
    """With checkpointing the reverse recomputes from the initial state it
    copied, so arrays the program writes may change afterwards; those it only
    reads are still checked (NVIDIA/warp#1350's "option 2", values saved at
    recording and restored for the reverse, with the check of its option 1
    for what is not saved)."""
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
    """NVIDIA/warp#1350: a change behind the tape's back while recording."""
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
    """NVIDIA/warp#1350: a change after the last recorded launch."""
    x = np.linspace(0.5, 1.5, 8)
    y = np.zeros(8)
    with pytest.raises(TapeError, match="'x' of square.*end of recording"):
        with dg.Tape():
            square[1, 32](y, x)
            x *= 2.0


# -- one array read and written, arrays reused -------------------------------------
def test_inplace_kernel_repeated_then_reused_as_input():
    """NVIDIA/warp#1294 (bugs A and B): a kernel reading and writing x, run
    twice, then x reused as an input and overwritten again after that read."""
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
    """NVIDIA/warp#1294 (bug A): one array read and written through two
    parameters of one launch."""
    a0 = np.linspace(0.5, 1.0, 8)
    a, loss = a0.copy(), np.zeros(1)
    with dg.Tape() as tape:
        square[1, 32](a, a)   # an in-place square through two names
        square[1, 32](a, a)
        P.sq_loss[1, 32](a, loss)
    g, = tape.gradient(loss, wrt=[a])
    np.testing.assert_allclose(g, 8 * a0 ** 7, rtol=1e-12)


def test_copy_then_kernel_reading_and_writing_the_copy():
    """NVIDIA/warp#1294, bug A's program: copy(arr, src); arr[i] = arr[i] + 1;
    loss = sum(arr). d loss / d src is 1 (Warp's backward treated arr as
    both input and output and got it wrong)."""
    src = np.array([1.0, 2.0, 3.0])
    arr, loss = np.zeros(3), np.zeros(1)
    with dg.Tape() as tape:
        dg.copy(arr, src)
        add_one[1, 32](arr)
        total[1, 32](arr, loss)
    g, = tape.gradient(loss, wrt=[src])
    assert loss[0] == 9.0
    assert np.array_equal(g, np.ones(3))


def test_scratch_array_reused_across_launches():
    """NVIDIA/warp#1294 (bug B: arrays reused across tape operations): one
    scratch array t holds x*x, is read, then holds y*y: y = 2 x^2, then
    t = y^2 = 4 x^4, loss = sum(t) + sum(y) = sum(4 x^4 + 2 x^2), so
    d loss / dx = 16 x^3 + 4 x (a reverse reading t's last value for the
    first square's step would be wrong)."""
    x0 = np.linspace(0.3, 1.2, 8)

    def prog(x):
        t, y, loss = np.zeros(8), np.zeros(8), np.zeros(1)
        square[1, 32](t, x)
        mul2[1, 32](t, y)      # t read ...
        square[1, 32](t, y)    # ... then overwritten: its first version is copied
        total[1, 32](t, loss)
        total[1, 32](y, loss)
        return loss
    g, loss = _taped(prog, x0)
    np.testing.assert_allclose(g, 16 * x0 ** 3 + 4 * x0, rtol=1e-12)
    np.testing.assert_allclose(g, _fd(lambda v: prog(v.copy())[0], x0), rtol=1e-6)


# -- recorded copies ---------------------------------------------------------------
def test_recorded_copies_route_gradients():
    """NVIDIA/warp#1728: copies whose destinations are overwritten and whose
    sources a later launch overwrites."""
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
    g, loss = _taped(prog, x0)
    # loss = sum(x^2 * x^3) = sum(x^5)
    np.testing.assert_allclose(g, 5 * x0 ** 4, rtol=1e-12)
    np.testing.assert_allclose(g, _fd(lambda v: prog(v.copy())[0], x0), rtol=1e-6)


def test_copy_source_read_again_later_accumulates():
    """NVIDIA/warp#1728, point 1: the copy's source is also read by a later
    launch; the copy's adjoint must be added to that launch's, not assigned
    over it. loss = sum(copy of x) + sum(2 x): d loss / dx = 3."""
    x = np.arange(1.0, 5.0)
    y, z, loss = np.zeros(4), np.zeros(4), np.zeros(1)
    with dg.Tape() as tape:
        dg.copy(y, x)
        mul2[1, 32](x, z)  # x read after the copy read it
        total[1, 32](y, loss)
        total[1, 32](z, loss)
    g, = tape.gradient(loss, wrt=[x])
    assert np.array_equal(g, np.full(4, 3.0))


def test_iterative_kernel_then_copy_back():
    """NVIDIA/warp#1728, "the common iterative pattern" (y = 2 x; copy(x, y),
    repeated), whose gradients came out exactly zero in Warp: after 3 steps
    x = 8 x0, d loss / d x0 = 8."""
    x0 = np.arange(1.0, 5.0)

    def prog(x):
        y, loss = np.zeros(4), np.zeros(1)
        for _ in range(3):
            mul2[1, 32](x, y)
            dg.copy(x, y)
        total[1, 32](x, loss)
        return loss
    g, loss = _taped(prog, x0)
    assert loss[0] == 8 * x0.sum()
    assert np.array_equal(g, np.full(4, 8.0))
    np.testing.assert_allclose(g, _fd(lambda v: prog(v.copy())[0], x0), rtol=1e-6)


def test_copy_over_a_dead_write_consumes_its_adjoint():
    """NVIDIA/warp#1728, point 2: copy(y, w) overwrites what y = 2 x wrote,
    so that write is dead: d loss / dx = 0 (Warp leaked a phantom gradient of
    2 there) and d loss / dw = 1."""
    x, w = np.arange(1.0, 5.0), np.full(4, 0.5)
    y, loss = np.zeros(4), np.zeros(1)
    with dg.Tape() as tape:
        mul2[1, 32](x, y)
        dg.copy(y, w)
        total[1, 32](y, loss)
    gx, gw = tape.gradient(loss, wrt=[x, w])
    assert np.array_equal(gx, np.zeros(4)) and np.array_equal(gw, np.ones(4))


def test_clone_into_a_new_array():
    """NVIDIA/warp#1728 (`wp.clone`: a copy into a new array): a dg.copy into
    np.empty_like routes the gradient like any copy, and the source read by
    a later launch too: loss = sum(2 * clone) + sum(x * x), d/dx = 2 + 2 x."""
    x = np.linspace(0.5, 1.0, 4)
    loss = np.zeros(1)
    with dg.Tape() as tape:
        c = np.empty_like(x)
        dg.copy(c, x)
        y, q = np.zeros(4), np.zeros(4)
        mul2[1, 32](c, y)
        square[1, 32](q, x)
        total[1, 32](y, loss)
        total[1, 32](q, loss)
    g, = tape.gradient(loss, wrt=[x])
    np.testing.assert_allclose(g, 2 + 2 * x, rtol=1e-15)


def test_numpy_copy_inside_the_tape_is_refused():
    """NVIDIA/warp#1728 (an unrecorded copy): a numpy assignment is not a
    recorded copy; it is found, not differentiated wrongly."""
    x, y = np.linspace(0.2, 0.9, 8), np.zeros(8)
    with pytest.raises(TapeError, match="'y' of square"):
        with dg.Tape():
            square[1, 32](y, x)
            y[:] = x          # not dg.copy: the tape cannot see it
            cube_inplace[1, 32](y)


def test_fill_cuts_the_gradient():
    """NVIDIA/warp#1728 (the destination's adjoint consumed): a fill
    overwrites y, so what wrote y before gets no gradient."""
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

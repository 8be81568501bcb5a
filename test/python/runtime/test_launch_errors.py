"""Bad launches raise a clear LaunchError before anything compiles or runs,
and leave the user's arrays untouched."""
import os

import numpy as np
import pytest

import diffgpu as dg
from diffgpu.driver.launch import STATS


@dg.kernel
def add(A, B, a):
    i = dg.global_id(0)
    if i < len(A):
        A[i] = B[i] + a


@dg.func
def square(x):
    return x * x


class FakeDeviceArray:
    """Any object with __cuda_array_interface__ counts as a device array."""

    def __init__(self, shape=(4,), typestr="<f4", strides=None):
        self.__cuda_array_interface__ = {
            "shape": shape, "typestr": typestr, "data": (0x1000, False),
            "strides": strides, "version": 3}


def arrays():
    return np.arange(4, dtype=np.float32), np.ones(4, np.float32)


def expect_error(fn, *match):
    """fn() raises LaunchError mentioning every string in `match`; nothing
    was compiled."""
    before = STATS["compile"]
    with pytest.raises(dg.LaunchError) as info:
        fn()
    for m in match:
        assert m in str(info.value), (m, str(info.value))
    assert STATS["compile"] == before
    return info.value


def bad_stride_array():
    buf = np.zeros(32, np.uint8)
    return np.ndarray((3,), np.float32, buffer=buf, strides=(5,))


@pytest.mark.parametrize("args, match", [
    ((np.ones(4, np.float32), np.ones(4, np.float32)), ["takes 3 arguments", "got 2"]),
    ((np.ones(4, np.uint16), np.ones(4, np.float32), 1.0), ["argument 0 ('A')", "uint16"]),
    ((np.ones(4, bool), np.ones(4, np.float32), 1.0), ["dtype bool"]),
    ((np.ones(4, np.complex64), np.ones(4, np.float32), 1.0), ["complex64"]),
    ((np.ones((2,) * 5, np.float32), np.ones(4, np.float32), 1.0), ["5-d array"]),
    ((np.array(1.0, np.float32), np.ones(4, np.float32), 1.0), ["0-d arrays"]),
    ((np.ones(4, np.float32), np.ones(4, np.float32), True), ["argument 2 ('a')", "bool"]),
    ((np.ones(4, np.float32), np.ones(4, np.float32), "1"), ["unsupported argument", "str"]),
    ((np.ones(4, np.float32), np.ones(4, np.float32), None), ["NoneType"]),
    ((np.ones(4, np.float32), [1.0, 2.0], 1.0), ["argument 1 ('B')", "list"]),
    ((np.ones(4, np.float32), np.ones(4, np.float32), np.uint8(1)), ["uint8"]),
    ((np.ones(4, np.float32), np.ones(4, np.float32), 2**70), ["does not fit in int64"]),
    ((bad_stride_array(), np.ones(3, np.float32), 1.0), ["byte stride 5", "item size 4"]),
    ((np.ones(4, np.float32), FakeDeviceArray(), 1.0), ["mixes host", "argument 0 ('A')",
                                                          "argument 1 ('B')"]),
    ((FakeDeviceArray(typestr="<u2"), FakeDeviceArray(), 1.0), ["uint16"]),
    ((FakeDeviceArray(strides=(6,)), FakeDeviceArray(), 1.0), ["byte stride 6"]),
])
def test_bad_arguments(args, match):
    # each bad argument list names the argument and the problem
    snapshot = [a.copy() if isinstance(a, np.ndarray) else None for a in args]
    expect_error(lambda: add[1, 4](*args), *match)
    for a, s in zip(args, snapshot):
        if s is not None:
            assert np.array_equal(a, s) and a.dtype == s.dtype


def test_keyword_arguments():
    # keywords bind by parameter name; unknown, repeated or missing ones are errors
    A, B = arrays()
    expect_error(lambda: add[1, 4](A, B, b=1.0), "no parameter 'b'")
    expect_error(lambda: add[1, 4](A, B, 1.0, A=A), "got argument 'A' twice")
    expect_error(lambda: add[1, 4](A, a=1.0), "missing B")


class RefusingArray:
    """Like a torch tensor that requires grad: the interface raises."""

    @property
    def __cuda_array_interface__(self):
        raise RuntimeError("Can't get __cuda_array_interface__ on Variable that requires grad")


def test_refusing_device_array():
    A, B = arrays()
    expect_error(lambda: add[1, 4](RefusingArray(), RefusingArray(), 1.0),
                 "argument 0 ('A')", "requires grad")


def test_read_only_array_rejected():
    A, B = arrays()
    B.flags.writeable = False
    expect_error(lambda: add[1, 4](A, B, 1.0), "read-only", "argument 1 ('B')")


@pytest.mark.parametrize("grid, block, match", [
    (0, 4, "grid[0] must be positive"),
    (-1, 4, "grid[0] must be positive"),
    (1, 0, "block[0] must be positive"),
    (1, 1025, "block[0] = 1025 exceeds the limit 1024"),
    (1, (1, 1, 65), "block[2] = 65 exceeds the limit 64"),
    (1, (32, 64), "2048 threads"),
    ((1, 2**31), 1, "grid[1] = 2147483648 exceeds"),
    ((1, 65536, 65536), 1, "y * z = 4294967296 exceeds the limit 4294836225"),
    (2**31, 1, "grid[0] = 2147483648 exceeds"),
    ((1, 1, 1, 1), 1, "tuple of 1 to 3 ints"),
    ((), 1, "tuple of 1 to 3 ints"),
    (1.0, 1, "must be an int"),
    ((1, 2.5), 1, "grid[1] must be an int"),
    (True, 1, "got a bool"),
])
def test_bad_geometry(grid, block, match):
    # grid/block out of range is caught when the launcher is built
    expect_error(lambda: add[grid, block], match)


def test_launch_config_must_be_pair():
    expect_error(lambda: add[4], "add[grid, block]")
    expect_error(lambda: add[1, 2, 3], "add[grid, block]")


def test_kernel_called_directly():
    A, B = arrays()
    expect_error(lambda: add(A, B, 1.0), "cannot be called from Python", "add[grid, block]")


def test_func_not_launchable():
    expect_error(lambda: square[1, 1], "device function", "cannot be launched")
    expect_error(lambda: square(2.0), "cannot be called from Python")


def test_decorator_rejects_varargs():
    with pytest.raises(TypeError, match=r"\*args"):
        @dg.kernel
        def k(*xs):
            pass


# --- host-level autodiff / fwddiff: activities checked before anything runs ---

@dg.kernel
def scale(A, a):
    i = dg.global_id(0)
    if i < len(A):
        A[i] = A[i] * a


@pytest.mark.parametrize("mode, acts, match", [
    ("rev", lambda A: (dg.Duplicated(A, np.ones(3, np.float32)), dg.Active(2.0)),
     ["shape (3,)", "(4,)"]),
    ("rev", lambda A: (dg.Duplicated(A, np.ones(4, np.float64)), dg.Active(2.0)),
     ["float64[:]", "float32[:]"]),
    ("rev", lambda A: (dg.Duplicated(A, A[::-1]), dg.Active(2.0)), ["shares memory"]),
    ("rev", lambda A: (dg.Active(A), 2.0), ["Active is for scalars"]),
    ("rev", lambda A: (dg.Duplicated(A.astype(np.int32), np.zeros(4, np.int32)), 2.0),
     ["integer arguments are always Const"]),
    ("rev", lambda A: (A, dg.Active(2)), ["Active needs a float scalar"]),
    ("rev", lambda A: (A, dg.Duplicated(2.0, 1.0)), ["use Active(x)"]),
    ("rev", lambda A: (dg.Duplicated(A, FakeDeviceArray()), dg.Active(2.0)),
     ["different devices"]),
    ("rev", lambda A: (dg.Duplicated(A, np.ones(4, np.float32)),), ["takes 2 arguments"]),
    ("fwd", lambda A: (dg.Duplicated(A, np.ones(4, np.float32)), dg.Active(2.0)),
     ["reverse mode only"]),
    ("fwd", lambda A: (A, dg.Duplicated(2.0, np.float32(1))), ["tangent of type float32"]),
])
def test_bad_activities(mode, acts, match):
    # every activity mismatch is a LaunchError naming the argument
    A = np.arange(4, dtype=np.float32)
    before = A.copy()
    fn = dg.autodiff if mode == "rev" else dg.fwddiff
    args = acts(A)
    shadows = [a.shadow.copy() for a in args
               if isinstance(a, dg.Duplicated) and isinstance(a.shadow, np.ndarray)]
    expect_error(lambda: fn(scale[1, 4], *args), *match)
    assert np.array_equal(A, before)
    after = [a.shadow for a in args
             if isinstance(a, dg.Duplicated) and isinstance(a.shadow, np.ndarray)]
    assert all(np.array_equal(s, t) for s, t in zip(shadows, after))


def test_autodiff_needs_launch_config():
    A = np.ones(4, np.float32)
    expect_error(lambda: dg.autodiff(scale, A, 2.0), "scale[grid, block]")
    expect_error(lambda: dg.fwddiff(lambda: 0, A, 2.0), "kernel[grid, block]")


def test_traceback_hides_internals(monkeypatch):
    # the user sees their call and the error, not diffgpu's internal frames
    import traceback
    monkeypatch.delenv("DIFFGPU_DEBUG", raising=False)
    with pytest.raises(dg.LaunchError) as info:
        add[1, 4](np.ones(4, np.uint16), np.ones(4, np.float32), 1.0)
    files = [os.path.basename(f.filename) for f in traceback.extract_tb(info.value.__traceback__)]
    assert "launch.py" not in files and "args.py" not in files, files
    assert info.value.__cause__ is None and info.value.__suppress_context__

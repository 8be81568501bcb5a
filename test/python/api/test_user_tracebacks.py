"""Errors diffgpu raises on purpose (LaunchError, CompileError,
GradcheckError) reach the user with a traceback of the user's own frames,
ending in the one re-raise at the public API boundary: no frame of diffgpu's
internals (args.py, launch.py, gradcheck.py, the frontend, ...), no chained
cause. DIFFGPU_DEBUG=1 keeps the internal frames."""
import os
import traceback

import numpy as np
import pytest

import diffgpu as dg

PACKAGE = os.path.dirname(dg.__file__)
BOUNDARY = os.path.join(PACKAGE, "errors.py")  # errors.user_facing


@dg.kernel
def copy(y, x):
    i = dg.global_id(0)
    if i < len(x):
        y[i] = x[i]


@dg.kernel
def broken(y, x):
    y[0] = undefined_name  # noqa: F821


@dg.kernel
def wrong_grad(y, x):
    i = dg.global_id(0)
    if i < len(x):
        y[i] = dg.floor(x[i] * 4.0)  # derivative 0; at a step finite differences are not


@dg.func
def helper(x):
    return x


def _bundle(tmp_path):
    path = str(tmp_path / "k.dgb")
    dg.save_bundle(path, [dg.compile(copy, "float64[:], float64[:]")])
    return dg.load_bundle(path)


X = np.linspace(0.1, 0.9, 4)
CASES = {
    "grid 0": lambda tmp: copy[0, 4](np.zeros(4), np.ones(4)),
    "bad config": lambda tmp: copy[1](np.zeros(4), np.ones(4)),
    "arity": lambda tmp: copy[1, 4](np.zeros(4)),
    "call a kernel": lambda tmp: copy(np.zeros(4), np.ones(4)),
    "launch a func": lambda tmp: helper[1, 1],
    "compile error": lambda tmp: broken[1, 1](np.zeros(4), np.ones(4)),
    "compiled grid": lambda tmp: dg.compile(copy, "float64[:], float64[:]")[0, 4],
    "compiled launch": lambda tmp: dg.compile(copy, "float64[:], float64[:]").launch(
        (np.zeros(4),), 1, 4),
    "bundle entry": lambda tmp: _bundle(tmp)["copy"][1, 4](np.zeros(4, np.float32), X),
    "gradcheck compile error": lambda tmp: dg.gradcheck(
        broken[1, 4], dg.Duplicated(np.zeros(4), np.ones(4)), dg.Duplicated(X, np.zeros(4))),
    "gradcheck mismatch": lambda tmp: dg.gradcheck(
        wrong_grad[1, 4], dg.Duplicated(np.zeros(4), np.ones(4)),
        dg.Duplicated(np.array([0.25, 0.5, 0.75, 1.0]), np.zeros(4))),
    "autodiff arity": lambda tmp: dg.autodiff(copy[1, 4], dg.Duplicated(X, np.zeros(4))),
}
ERRORS = (dg.DiffgpuError, dg.GradcheckError)


def _raise(name, tmp_path):
    with pytest.raises(ERRORS) as info:
        CASES[name](tmp_path)
    return info.value


@pytest.mark.parametrize("name", sorted(CASES))
def test_traceback_ends_at_the_user_line(name, tmp_path, monkeypatch):
    monkeypatch.delenv("DIFFGPU_DEBUG", raising=False)
    err = _raise(name, tmp_path)
    frames = traceback.extract_tb(err.__traceback__)
    ours = [f for f in frames if f.filename.startswith(PACKAGE)]
    assert [(f.filename, f.name) for f in ours] in ([], [(BOUNDARY, "wrapper")]), \
        "".join(traceback.format_exception(err))
    assert frames[-len(ours) - 1].filename == __file__  # the user's line raised it
    text = "".join(traceback.format_exception(err))
    for internal in ("args.py", "launch.py", "gradcheck.py", "aot.py", "bundle.py",
                     "frontend", "diff.py"):
        assert internal not in text, text
    assert err.__cause__ is None and err.__suppress_context__


@pytest.mark.parametrize("name", ["grid 0", "gradcheck compile error"])
def test_debug_keeps_internal_frames(name, tmp_path, monkeypatch):
    monkeypatch.setenv("DIFFGPU_DEBUG", "1")
    err = _raise(name, tmp_path)
    files = [f.filename for f in traceback.extract_tb(err.__traceback__)]
    assert sum(f.startswith(PACKAGE) and f != BOUNDARY for f in files) >= 1, files

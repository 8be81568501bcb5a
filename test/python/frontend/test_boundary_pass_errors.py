"""Errors a pass raises on a kernel show the kernel's source line and a caret.

A kernel can pass the frontend and still fail in a pass (autodiff refuses an
op, the shadows of shared arrays overflow 48 KiB). The CompileError then reads
like a frontend error: `file:line:col: error: message`, the source line, and a
caret under the column; each further error the same way. The error's
`filename`, `line`, `col` (0-based) and `source_line` are the first error's.
"""
import inspect
import sys

import numpy as np
import pytest

import diffgpu as dg
from diffgpu.driver.compiler import pass_error
from diffgpu.errors import CompileError
from diffgpu.lowering.common.diagnostics import Diagnostic, PipelineRunError

SIG4 = "float32[:], float32[:], float32[:], float32[:]"


@dg.kernel
def k_uses_old(A, B):
    i = dg.thread_id(0)
    old = dg.atomic_add(A, 0, B[i])  # MARK: first use
    B[i] = old * 2.0
    o2 = dg.atomic_add(A, 1, B[i])  # MARK: second use
    B[i] = o2 * 2.0


@dg.kernel
def k_uses_old_grad(A, dA, B, dB):
    dg.autodiff(k_uses_old, dg.Duplicated(A, dA), dg.Duplicated(B, dB))


@dg.kernel
def k_shared_30k(A):
    s = dg.shared_array(7500, np.float32)  # 30000 bytes: with its shadow, 60000
    i = dg.thread_id(0)
    s[i] = A[i] * A[i]
    dg.syncthreads()
    A[i] = s[(i + 1) % 4]


@dg.kernel
def k_shared_30k_grad(A, dA):
    dg.autodiff(k_shared_30k, dg.Duplicated(A, dA))  # MARK: autodiff


def _where(marker, caret):
    """(line, source line, 0-based column of `caret`) of the line holding `marker`."""
    lines = inspect.getsource(sys.modules[__name__]).splitlines(keepends=True)
    n, text = next((n, t) for n, t in enumerate(lines, 1)
                   if marker in t and "_where" not in t)
    return n, text, text.index(caret)


def _caret_block(line, text, col):
    src = text.rstrip("\n")
    indent = len(src) - len(src.lstrip())
    return f"\n    {src.lstrip()}\n    {' ' * (col - indent)}^"


def test_autodiff_refusal_shows_each_source_line_and_caret():
    with pytest.raises(CompileError) as info:
        dg.compile(k_uses_old_grad, SIG4, target="host")
    err, msg = info.value, str(info.value)
    line1, src1, col1 = _where("# MARK: first use", "dg.atomic_add")
    line2, src2, col2 = _where("# MARK: second use", "dg.atomic_add")
    first = (f"{__file__}:{line1}:{col1 + 1}: error: the old value returned by "
             "dg.atomic_add (diffgpu.atomic_add) is used")
    assert msg.startswith(first), msg
    assert _caret_block(line1, src1, col1) in msg, msg
    assert f"{__file__}:{line2}:{col2 + 1}: error: " in msg, msg
    assert _caret_block(line2, src2, col2) in msg, msg
    assert (err.filename, err.line, err.col) == (__file__, line1, col1)
    assert err.source_line == src1
    assert "diffgpu/lowering" not in msg and err.__cause__ is None


def test_shared_memory_overflow_after_shadows_points_at_the_autodiff_call():
    with pytest.raises(CompileError) as info:
        dg.compile(k_shared_30k_grad, "float32[:], float32[:]", target="sm_90")
    msg = str(info.value)
    line, src, col = _where("# MARK: autodiff", "dg.autodiff")
    head, caret = msg.split("\n", 1)
    assert head.startswith(f"{__file__}:{line}:{col + 1}: error: kernel @k_shared_30k_grad "
                           "needs 60000 bytes of static shared memory"), msg
    assert "\n" + caret == _caret_block(line, src, col), msg
    assert info.value.line == line and info.value.col == col


def test_a_location_without_source_stays_one_line(tmp_path):
    # an unknown location, a position in a file that is gone, a note: as the
    # pass printed them, without a source line or caret
    note = Diagnostic(f"{tmp_path}/gone.py:3:1", "see here", f"{tmp_path}/gone.py", 3, 1)
    diags = [Diagnostic("loc(unknown)", "no position"),
             Diagnostic(f"{tmp_path}/gone.py:2:5", "gone", f"{tmp_path}/gone.py", 2, 5,
                        [note])]
    err = pass_error(PipelineRunError("x", diags))
    assert str(err) == (f"loc(unknown): error: no position\n{tmp_path}/gone.py:2:5: error: "
                        f"gone\n  {tmp_path}/gone.py:3:1: note: see here")
    assert err.filename is None and err.line is None


def test_notes_follow_their_error_and_source(tmp_path):
    py = tmp_path / "kern.py"
    py.write_text("def k(A):\n    A[0] = 1.0\n")
    note = Diagnostic("elsewhere:1:1", "first defined here")
    d = Diagnostic(f"{py}:2:5", "bad store", str(py), 2, 5, [note])
    err = pass_error(PipelineRunError("x", [d]))
    assert str(err) == (f"{py}:2:5: error: bad store\n    A[0] = 1.0\n    ^\n"
                        "  elsewhere:1:1: note: first defined here")
    assert (err.filename, err.line, err.col, err.msg) == (str(py), 2, 4, "bad store")


def test_a_launch_and_kernel_ir_raise_the_same_error():
    z = np.zeros(4, np.float32)
    line, src, col = _where("# MARK: first use", "dg.atomic_add")
    for run in (lambda: k_uses_old_grad[1, 4](z, z.copy(), z.copy(), z.copy()),
                lambda: k_uses_old_grad.ir(z, z, z, z, stage="gpu", target="host")):
        with pytest.raises(CompileError) as info:
            run()
        assert str(info.value).startswith(f"{__file__}:{line}:{col + 1}: error: "), info.value
        assert _caret_block(line, src, col) in str(info.value)

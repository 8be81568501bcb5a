"""Size limits of kernels: long flat expressions compile, and static shared
memory is checked against the per-block limit at the user's line."""
from __future__ import annotations

import importlib.util
import sys

import numpy as np
import pytest

import diffgpu as dg
from diffgpu.errors import CompileError
from diffgpu.frontend import build_module
from diffgpu.frontend.builtins_lower import SHARED_LIMIT
from diffgpu.lowering.common.targets import HOST_TARGET, nvvm_target
from diffgpu.types import ArrayType


def _sum_kernel(tmp_path, n_terms, name):
    """A module whose kernel stores one flat sum of n_terms products."""
    terms = " + ".join(f"X[{j % 7}] * {j % 5 + 1}.0" for j in range(n_terms))
    path = tmp_path / f"{name}.py"
    path.write_text("import diffgpu as dg\n\n\n@dg.kernel\ndef k(X, Y):\n"
                    f"    Y[0] = {terms}\n")
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.k


def test_flat_sum_of_250_terms_runs_and_differentiates(tmp_path):
    k = _sum_kernel(tmp_path, 250, "sum250")
    X, Y = np.arange(7.0), np.zeros(1)
    k[1, 1](X, Y)
    coef = np.zeros(7)
    for j in range(250):
        coef[j % 7] += j % 5 + 1
    assert Y[0] == pytest.approx(coef @ X, rel=1e-12)
    dX = np.zeros(7)
    dg.autodiff(k[1, 1], dg.Duplicated(X, dX), dg.Duplicated(Y, np.ones(1)))
    np.testing.assert_allclose(dX, coef, rtol=1e-12)


def test_flat_sum_of_10000_terms_compiles(tmp_path):
    """The frontend lowers left-associated chains in a loop: no depth limit of
    its own. (CPython itself needs a higher recursion limit to compile such a
    line at all; that is Python's limit, raised here for the import only.)"""
    from diffgpu._mlir import ir
    from diffgpu.dialects import make_context
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 25000))
    try:
        k = _sum_kernel(tmp_path, 10000, "sum10000")
    finally:
        sys.setrecursionlimit(limit)
    ms = build_module(k, (ArrayType("float64", 1),) * 2, HOST_TARGET)
    assert ms.text.count("arith.addf") >= 9999
    module = ir.Module.parse(ms.text, make_context())
    assert module.operation.verify()


def test_deepest_parenthesized_nesting_python_allows(tmp_path):
    """Explicit nesting recurses in the frontend; the deepest that Python's
    parser accepts (under 200 parentheses) compiles and runs."""
    depth = 190
    expr = "(X[0] + " * depth + "1.0" + ")" * depth
    path = tmp_path / "deep.py"
    path.write_text(f"import diffgpu as dg\n\n\n@dg.kernel\ndef k(X):\n    X[0] = {expr}\n")
    spec = importlib.util.spec_from_file_location("deep", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    X = np.array([0.5])
    mod.k[1, 1](X)
    assert X[0] == depth * 0.5 + 1.0


@dg.kernel
def k_shared_huge(A):
    s = dg.shared_array(20 * 1024 * 1024, np.float32)  # 80 MB
    s[0] = A[0]
    A[0] = s[0]


@dg.kernel
def k_shared_two(A):
    s = dg.shared_array((64, 64), np.float64)  # 32 KiB
    t = dg.shared_array(4097, np.float32)      # 16 KiB + 4 bytes
    i = dg.thread_id(0)
    s[i, 0] = A[i]
    t[i] = A[i]


@dg.kernel
def k_shared_at_limit(A):
    s = dg.shared_array(SHARED_LIMIT // 4, np.float32)
    i = dg.thread_id(0)
    for j in range(3):  # the loop body is lowered several times: still one array
        s[i] = A[i] + j
    dg.syncthreads()
    A[i] = s[(i + 1) % 4]


@pytest.mark.parametrize("target", [HOST_TARGET, nvvm_target("sm_90")], ids=["host", "sm_90"])
def test_shared_memory_over_the_limit(target):
    A = (ArrayType("float32", 1),)
    with pytest.raises(CompileError) as info:
        build_module(k_shared_huge, A, target)
    msg = str(info.value)
    assert "shared_array() of 83886080 bytes exceeds the 49152 bytes" in msg
    assert "dg.shared_array(20 * 1024" in msg and "test_frontend_limits.py" in msg
    with pytest.raises(CompileError) as info:
        build_module(k_shared_two, A, target)
    msg = str(info.value)
    assert "49156 bytes with the kernel's other shared arrays" in msg
    assert "shared_array(4097" in msg


def test_shared_memory_launch_error():
    with pytest.raises(CompileError, match="exceeds the 49152 bytes"):
        k_shared_huge[1, 1](np.zeros(1, np.float32))


def test_shared_memory_at_the_limit_builds_for_sm_90_and_runs():
    A = np.arange(4.0, dtype=np.float32)
    assert k_shared_at_limit.ir(A, stage="dialect").count("diffgpu.shared_alloc") == 1
    ptx = k_shared_at_limit.ir(A, stage="ptx", target="sm_90")
    assert f"[{SHARED_LIMIT}]" in ptx
    k_shared_at_limit[1, 4](A)
    np.testing.assert_array_equal(A, [3.0, 4.0, 5.0, 2.0])


def test_compiled_kernels_are_freed(tmp_path):
    """Dropping a kernel (and its module) frees it with its compiled programs:
    the frontend's source cache must not keep the function alive (it did: its
    weak keys were held by the values, and every JIT stayed in memory)."""
    import gc
    import weakref
    path = tmp_path / "short_lived.py"
    path.write_text("import diffgpu as dg\n\n\n@dg.func\ndef g(v):\n    return v * 2.0\n\n\n"
                    "@dg.kernel\ndef k(X):\n    X[0] = g(X[0])\n")
    spec = importlib.util.spec_from_file_location("short_lived", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    X = np.ones(1)
    mod.k[1, 1](X)
    dg.autodiff(mod.k[1, 1], dg.Duplicated(X, np.ones(1)))
    assert X[0] == 4.0
    refs = [weakref.ref(mod.k), weakref.ref(mod.k.py_func), weakref.ref(mod.g.py_func)]
    del mod, spec
    gc.collect()
    assert [r() for r in refs] == [None, None, None]


@dg.kernel
def k_shared_32k(A):
    s = dg.shared_array(8000, np.float32)  # 32000 bytes: under the limit
    i = dg.thread_id(0)
    s[i] = A[i] * A[i]
    dg.syncthreads()
    A[i] = s[(i + 1) % 4]


def test_reverse_kernel_shared_memory_is_checked(tmp_path, capsys):
    # the reverse kernel adds a shadow shared array: 2 x 32000 bytes > 48 KiB
    from diffgpu.frontend import build_diff_module
    from diffgpu.tools import diffgpu_opt
    ms = build_diff_module(k_shared_32k, "reverse", ("dup",), (ArrayType("float32", 1),),
                           nvvm_target("sm_90"))
    path = tmp_path / "reverse.mlir"
    path.write_text(ms.text)
    rc = diffgpu_opt.main([str(path), "-p", "diffgpu-to-ptx{chip=sm_90}", "--emit=ptx"])
    out, err = capsys.readouterr()
    assert ".b8 __wg_" in out or rc == 1  # the pipeline ran
    assert rc == 1 and "shared" in err, f"exit {rc}; PTX shared arrays: " + ", ".join(
        ln.strip() for ln in out.splitlines() if ".shared .align" in ln)


@dg.kernel
def k_shared_32k_grad(A, dA):
    dg.autodiff(k_shared_32k, dg.Duplicated(A, dA))  # MARK: autodiff line


@dg.kernel
def k_shared_16k(A):
    s = dg.shared_array(4000, np.float32)  # 16000 bytes: its shadow fits too
    i = dg.thread_id(0)
    s[i] = A[i] * A[i]
    dg.syncthreads()
    A[i] = s[(i + 1) % 4]


@dg.kernel
def k_shared_16k_grad(A, dA):
    dg.autodiff(k_shared_16k, dg.Duplicated(A, dA))


def _line_of(marker):
    import inspect
    lines = inspect.getsource(sys.modules[__name__]).splitlines()
    return next(n for n, text in enumerate(lines, 1) if marker in text and "_line_of" not in text)


def test_gradient_kernel_over_shared_limit_is_a_compile_error_at_autodiff():
    # a kernel under the limit compiles; the kernel that differentiates it
    # holds the array and its shadow (64000 bytes): a CompileError at the
    # dg.autodiff line, before ptxas, naming both arrays
    sig = "float32[:], float32[:]"
    dg.compile(k_shared_32k, "float32[:]", target="sm_90")
    with pytest.raises(CompileError) as info:
        dg.compile(k_shared_32k_grad, sig, target="sm_90")
    msg = str(info.value)
    line = _line_of("# MARK: autodiff line")
    assert msg.startswith(f"{__file__}:{line}:5: error: kernel @k_shared_32k_grad needs 64000 "
                          "bytes of static shared memory, more than the 49152 bytes"), msg
    assert msg.count(f"32000 bytes at {__file__}:{line}:5") == 2, msg
    # half the size: array and shadow fit, and the PTX holds both
    ptx = dg.compile(k_shared_16k_grad, sig, target="sm_90").ptx
    assert ptx.count(".shared .align") == 2 and ptx.count("[16000]") == 2, ptx


def test_shared_memory_check_in_the_driver(tmp_path, capsys):
    # diffgpu-opt: a diagnostic at the dg.autodiff line, exit 1, no PTX
    from diffgpu.frontend import build_diff_module
    from diffgpu.tools import diffgpu_opt
    ms = build_diff_module(k_shared_32k, "reverse", ("dup",), (ArrayType("float32", 1),),
                           nvvm_target("sm_90"))
    path = tmp_path / "reverse.mlir"
    path.write_text(ms.text)
    rc = diffgpu_opt.main([str(path), "-p", "diffgpu-to-ptx{chip=sm_90}", "--emit=ptx"])
    out, err = capsys.readouterr()
    assert rc == 1 and out == "", out
    assert "error: kernel @" in err and "needs 64000 bytes of static shared memory" in err, err

"""The Python API on the CPU: decorators, launches against numpy, one compile
per signature, kernel.ir stages, host-level autodiff/fwddiff/gradcheck,
dg.compile and bundles."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import diffgpu as dg
from diffgpu.driver.launch import STATS
from kernels_seed import axpy, df, f, sq  # noqa: F401  (the seed kernels, defined once)


@dg.kernel
def add2d(C, A, B):
    i = dg.global_id(0)
    j = dg.global_id(1)
    if i < C.shape[0] and j < C.shape[1]:
        C[i, j] = A[i, j] + B[i, j]


@dg.kernel
def step(y, x):
    i = dg.global_id(0)
    if i < len(x):
        if x[i] > 0.5:
            y[i] = 1.0
        else:
            y[i] = 0.0


@dg.kernel
def rowdot(out, A, x, s):
    i = dg.global_id(0)
    if i < A.shape[0]:
        acc = 0.0
        for j in range(A.shape[1]):
            acc += A[i, j] * dg.sin(x[j])
        out[i] = s * acc + out[i] * out[i]


# --- decorators --------------------------------------------------------------

def test_decorator_attributes():
    # the frontend recognizes decorated objects by these attributes
    @dg.func()
    def g(x):
        """doc"""
        return x
    assert (axpy.kind, axpy.name, axpy.py_func.__name__) == ("kernel", "axpy", "axpy")
    assert axpy.__diffgpu_definition__ is True and g.__diffgpu_definition__ is True
    assert (g.kind, g.__doc__, g.arg_names) == ("func", "doc", ["x"])
    assert isinstance(axpy, dg.Kernel) and isinstance(g, dg.Func)
    assert "axpy(A, B, a)" in repr(axpy)
    assert dg.autodiff.__diffgpu_builtin__ == "autodiff"
    assert dg.fwddiff.__diffgpu_builtin__ == "fwddiff"


# --- launches on the CPU -----------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_axpy_matches_numpy(dtype):
    A = np.arange(10, dtype=dtype)
    B = np.linspace(0, 1, 10).astype(dtype)
    want = A + dtype(2.5) * B
    axpy[3, 4](A, B, 2.5)
    np.testing.assert_allclose(A, want, rtol=1e-6)


def test_int_arrays_and_scalars():
    A = np.arange(6, dtype=np.int64)
    axpy[2, 4](A, np.ones(6, np.int64), 3)
    assert A.tolist() == [3, 4, 5, 6, 7, 8]
    A32 = np.arange(6, dtype=np.int32)
    axpy[6, 1](A32, np.full(6, 2, np.int32), np.int32(2))
    assert A32.tolist() == [4, 5, 6, 7, 8, 9]


def test_strided_and_transposed_views():
    # any strides: views are passed as they are, results land in the view
    base = np.zeros((6, 8), np.float32)
    C = base[::2, 1::3]                      # 3x3 view, non-unit strides
    A = np.arange(9, dtype=np.float32).reshape(3, 3).T   # transposed
    B = np.ones((3, 3), np.float32)
    add2d[(1, 1), (4, 4)](C, A, B)
    np.testing.assert_array_equal(C, A + 1)
    assert base.sum() == (A + 1).sum()       # nothing written outside the view
    x = np.arange(12, dtype=np.float64)[::-2]   # negative stride
    axpy[1, 8](x, np.ones(6), 1.0)
    np.testing.assert_array_equal(x, np.arange(12.0)[::-2] + 1)


def test_seed_example():
    # the seed case (docs/seed.md): f squares A[0]; df differentiates f inside a kernel
    A = np.ones(1, np.float32)
    f[1, 1](A)
    assert A.tolist() == [1.0]
    A = np.full(1, 3.0, np.float32)
    dA = np.ones(1, np.float32)
    df[1, 1](A, dA)
    assert A.tolist() == [9.0] and dA.tolist() == [6.0]


def test_compiled_once_per_signature():
    # new shapes and strides reuse the compiled signature; a new dtype compiles
    @dg.kernel
    def inc(A):
        i = dg.global_id(0)
        if i < len(A):
            A[i] += 1.0
    c0 = STATS["compile"] + STATS["disk_hit"]
    for n in (3, 7, 16):
        A = np.zeros(2 * n, np.float32)[::2]
        inc[1, 16](A)
        assert A.tolist() == [1.0] * n
    assert STATS["compile"] + STATS["disk_hit"] == c0 + 1
    inc[1, 4](np.zeros(4, np.float64))
    assert STATS["compile"] + STATS["disk_hit"] == c0 + 2
    assert inc.signatures == ["(float32[:]) on host", "(float64[:]) on host"]
    inc[1, 4](A=np.zeros(4, np.float64))     # keywords bind by name


# --- kernel.ir ---------------------------------------------------------------

def test_ir_stages_host():
    A, B = np.ones(4, np.float32), np.ones(4, np.float32)
    dialect = axpy.ir(A, B, 1.0)
    assert "func.func @axpy" in dialect and "diffgpu.kernel" in dialect
    assert "diffgpu.global_id" in dialect or "diffgpu.thread_id" in dialect
    assert "func.func @axpy" in axpy.ir(A, B, 1.0, stage="autodiff")
    gpu = axpy.ir(A, B, 1.0, stage="gpu")
    assert "axpy__thread" in gpu and "diffgpu.thread_id" not in gpu
    assert "llvm.func @axpy" in axpy.ir(A, B, 1.0, stage="llvm")


def test_ir_stages_sm90_on_numpy_args():
    # target="sm_90" works with numpy arguments on a machine without a GPU
    A, B = np.ones(4, np.float32), np.ones(4, np.float32)
    gpu = axpy.ir(A, B, 1.0, stage="gpu", target="sm_90")
    assert "gpu.module" in gpu and "gpu.func @axpy" in gpu and 'chip = "sm_90"' in gpu
    nvvm = axpy.ir(A, B, 1.0, stage="nvvm", target="sm_90")
    assert "nvvm." in nvvm and "gpu.thread_id" not in nvvm
    llvm = axpy.ir(A, B, 1.0, stage="llvm", target="sm_90")
    assert "llvm.func @axpy" in llvm and "gpu.binary" not in llvm
    ptx = axpy.ir(A, B, 1.0, stage="ptx", target="sm_90")
    assert ".target sm_90" in ptx and ".entry axpy" in ptx


def test_ir_autodiff_stage_has_generated_functions():
    # the autodiff stage replaces diffgpu.autodiff by a call to a generated
    # reverse function that carries the kernel's target
    A = np.ones(1, np.float32)
    dialect = df.ir(A, A.copy())
    assert '"diffgpu.autodiff"' in dialect
    text = df.ir(A, A.copy(), stage="autodiff", target="sm_90")
    assert "func.func @__dg_rev_f" in text and '"diffgpu.autodiff"' not in text
    assert 'chip = "sm_90"' in text


def test_ir_bad_stage_and_target():
    A, B = np.ones(4, np.float32), np.ones(4, np.float32)
    with pytest.raises(ValueError, match="valid stages: 'dialect', 'autodiff'.*'ptx'"):
        axpy.ir(A, B, 1.0, stage="asm")
    with pytest.raises(ValueError, match="valid targets: 'host', .*'sm_90'"):
        axpy.ir(A, B, 1.0, target="sm_91")
    with pytest.raises(ValueError, match="GPU targets only"):
        axpy.ir(A, B, 1.0, stage="ptx", target="host")
    with pytest.raises(dg.LaunchError, match="takes 3 arguments"):
        axpy.ir(A, stage="dialect")


# --- host-level differentiation ------------------------------------------------

def sq_inputs(n=5, dtype=np.float32):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(n).astype(dtype)
    return x, np.zeros(n, dtype), rng.standard_normal(n).astype(dtype)


def test_host_autodiff_reverse():
    # y = a x^2: dx += 2 a x dy, da = sum(x^2 dy), dy consumed (y overwritten)
    x, y, dy = sq_inputs()
    dx = np.zeros_like(x)
    a = 1.5
    dy0 = dy.copy()
    (da,) = dg.autodiff(sq[1, 8], dg.Duplicated(y, dy), dg.Duplicated(x, dx), dg.Active(a))
    np.testing.assert_allclose(y, a * x * x, rtol=1e-6)
    np.testing.assert_allclose(dx, 2 * a * x * dy0, rtol=1e-5)
    np.testing.assert_allclose(dy, 0.0)
    np.testing.assert_allclose(da, np.sum(x.astype(np.float64) ** 2 * dy0), rtol=1e-5)
    assert dg.autodiff(sq[1, 8], dg.Duplicated(y, dy), x, 2.0) == ()


@dg.kernel
def gather_scale(y, x, idx, a):
    i = dg.global_id(0)
    if i < len(y):
        y[i] = a * x[idx[i]]


def test_host_autodiff_int_const_and_dupnoneed():
    # int index arrays stay Const (plain); y is DuplicatedNoNeed; gradients
    # scatter into dx through the index array
    x = np.array([1.0, 2.0, 3.0])
    idx = np.array([2, 0, 2, 1], np.int64)
    y, dy = np.zeros(4), np.array([1.0, 10.0, 100.0, 1000.0])
    dx = np.zeros(3)
    (da,) = dg.autodiff(gather_scale[1, 4], dg.DuplicatedNoNeed(y, dy),
                        dg.Duplicated(x, dx), idx, dg.Active(0.5))
    np.testing.assert_allclose(dx, [5.0, 500.0, 50.5])
    np.testing.assert_allclose(da, 1 * 3 + 10 * 1 + 100 * 3 + 1000 * 2)
    assert idx.tolist() == [2, 0, 2, 1]


def test_host_fwddiff():
    x, y, vx = sq_inputs()
    vy = np.zeros_like(y)
    dg.fwddiff(sq[1, 8], dg.Duplicated(y, vy), dg.Duplicated(x, vx), dg.Const(2.0))
    np.testing.assert_allclose(y, 2.0 * x * x, rtol=1e-6)
    np.testing.assert_allclose(vy, 4.0 * x * vx, rtol=1e-5)


def test_gradcheck_passes_and_leaves_inputs():
    x, y, _ = sq_inputs(6)
    x0, y0 = x.copy(), y.copy()
    assert dg.gradcheck(sq[1, 8], dg.Duplicated(y, np.zeros_like(y)),
                        dg.Duplicated(x, np.zeros_like(x)), dg.Active(0.7))
    assert np.array_equal(x, x0) and np.array_equal(y, y0)


@pytest.mark.parametrize("max_elements", [64, 0])
def test_gradcheck_loops_2d_and_scalars(max_elements):
    # full Jacobian (64) and dot-product/forward only (0), float32 inputs
    # checked in float64, an Active scalar in both modes
    rng = np.random.default_rng(3)
    out, A, x = (rng.standard_normal(s).astype(np.float32) for s in (4, (4, 5), 5))
    assert dg.gradcheck(rowdot[1, 8], dg.Duplicated(out, np.zeros(4, np.float32)),
                        dg.Duplicated(A, np.zeros((4, 5), np.float32)),
                        dg.DuplicatedNoNeed(x, np.zeros(5, np.float32)), dg.Active(0.3),
                        max_elements=max_elements)


def test_gradcheck_needs_an_output():
    with pytest.raises(dg.GradcheckError, match="at least one Duplicated"):
        dg.gradcheck(sq[1, 8], np.zeros(3), np.ones(3), dg.Active(1.0))


def test_gradcheck_reports_worst_element():
    # a step function at its jump: finite differences see the jump, the
    # derivative is 0; the error names an element
    x = np.array([0.1, 0.5, 0.9], np.float64)
    with pytest.raises(dg.GradcheckError, match=r"dy\[1\]"):
        dg.gradcheck(step[1, 4], dg.Duplicated(np.zeros(3), np.zeros(3)),
                     dg.Duplicated(x, np.zeros(3)))


# --- ahead of time ---------------------------------------------------------------

def test_compile_and_host_bundle(tmp_path):
    c = dg.compile(axpy, ("float32[:]", "float32[:]", "float64"))
    assert c.signature == "float32[:], float32[:], float64" and c.target == "host"
    assert dg.compile(axpy, "float32[:], float32[:], float64").signature == c.signature
    path = str(tmp_path / "k.dgb")
    dg.save_bundle(path, [c])
    b = dg.load_bundle(path)
    A = np.zeros(4, np.float32)
    b["axpy"][1, 4](A, np.ones(4, np.float32), 2.0)
    assert A.tolist() == [2.0] * 4
    with pytest.raises(dg.LaunchError, match="no bundled entry"):
        b["axpy"][1, 4](A, np.ones(4, np.float32), np.float32(2.0))


def test_bundle_integrity(tmp_path):
    # a bundle whose entry was altered, or a file that is no bundle, is refused
    import zipfile
    from diffgpu.driver.bundle import BundleError
    path = str(tmp_path / "k.dgb")
    dg.save_bundle(path, [dg.compile(axpy, ("float32[:]", "float32[:]", "float64"))])
    with zipfile.ZipFile(path) as z:
        files = {n: z.read(n) for n in z.namelist()}
    files["entries/0.json"] = files["entries/0.json"].replace(b"axpy", b"axpz")
    bad = str(tmp_path / "bad.dgb")
    with zipfile.ZipFile(bad, "w") as z:
        for n, data in files.items():
            z.writestr(n, data)
    with pytest.raises(BundleError, match="corrupt"):
        dg.load_bundle(bad)
    (tmp_path / "junk.dgb").write_bytes(b"not a zip")
    with pytest.raises(BundleError, match="cannot read bundle"):
        dg.load_bundle(str(tmp_path / "junk.dgb"))


@pytest.mark.parametrize("sig, match", [
    (("float32[:]", "float32[:]"), "signature has 2"),
    (("uint16[:]", "float32[:]", "float64"), "dtype must be one of"),
    (("float32[:,:,:,:,:]", "float32[:]", "float64"), "1 to 4"),
    (("float32[1]", "float32[:]", "float64"), "written ':'"),
    ((np.float32, "float32[:]", "float64"), "type spec must be a string"),
])
def test_compile_bad_signature(sig, match):
    with pytest.raises(ValueError, match=match):
        dg.compile(axpy, sig)


def test_compile_bad_target():
    with pytest.raises(ValueError, match="bad target 'sm_1'"):
        dg.compile(axpy, ("float32[:]", "float32[:]", "float64"), target="sm_1")


def test_gpu_bundle_loads_without_mlir(tmp_path):
    # a PTX bundle made here loads where MLIR is missing; launching it needs a
    # GPU, and without CuPy that is a clear LaunchError
    c = dg.compile(axpy, ("float32[:]", "float32[:]", "float32"), target="sm_90")
    assert ".entry axpy" in c.ptx
    path = str(tmp_path / "gpu.dgb")
    dg.save_bundle(path, [c])
    code = textwrap.dedent(f"""
        import sys
        sys.modules['mlir'] = None
        import diffgpu as dg
        b = dg.load_bundle({path!r})
        (e,) = b.entries
        assert e.target == 'sm_90' and '.entry axpy' in e.ptx
        try:
            import cupy
        except ImportError:
            class Dev:
                __cuda_array_interface__ = {{'shape': (4,), 'typestr': '<f4',
                                             'data': (1, False), 'version': 3}}
            try:
                b['axpy'][1, 4](Dev(), Dev(), __import__('numpy').float32(1))
            except dg.LaunchError as exc:
                assert 'CuPy' in str(exc), exc
        print('ok')
        """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


@pytest.mark.parametrize("grid, block", [(1, 8), ((1,), (8,)), ((1, 1), (8, 1)),
                                         ((1, 1, 1), (8, 1, 1)), (np.int64(1), [8])])
def test_compiled_launch_geometry_like_brackets(grid, block):
    # compiled.launch(args, grid, block) takes what compiled[grid, block] takes
    c = dg.compile(axpy, "float64[:], float64[:], float64")
    A = np.zeros(8)
    c.launch((A, np.ones(8), 2.0), grid, block)
    assert A.tolist() == [2.0] * 8
    B = np.zeros(8)
    c[grid, block](B, np.ones(8), 2.0)
    assert B.tolist() == A.tolist()


@pytest.mark.parametrize("grid, block, match", [
    (0, 8, "grid\\[0\\] must be positive"), (1, (1, 1, 1, 1), "tuple of 1 to 3 ints"),
    (1, (8, 8, 32), "at most 1024 per block"), ("1", 8, "tuple of 1 to 3 ints"),
    (1, True, "got a bool")])
def test_compiled_launch_bad_geometry(grid, block, match):
    c = dg.compile(axpy, "float64[:], float64[:], float64")
    A = np.zeros(8)
    for launch in (lambda: c.launch((A, np.ones(8), 2.0), grid, block),
                   lambda: c[grid, block](A, np.ones(8), 2.0)):
        with pytest.raises(dg.LaunchError, match=match):
            launch()
    assert not A.any()

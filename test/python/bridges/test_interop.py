"""diffgpu.interop: what dg.torch and dg.jax share (no torch or JAX needed).

- KernelOp checks its description of a kernel as an operator;
- `prepare` compiles, without a GPU, every program a GPU run of an operator
  looks up: a second pass over the same calls with the compiler unavailable
  finds all of them in the cache (what a GPU machine without MLIR does).
"""
import numpy as np
import pytest

import diffgpu as dg
import diffgpu.driver.launch as launch_module
from diffgpu.hostdiff import plan
from diffgpu.interop import KernelOp, compile_only, prepare, vjp
from interop_kernels import OPS, gpu_inputs, square_scale


def _spec(name):
    kernel, outputs, scalars, grid, block = OPS[name]
    return KernelOp(kernel, outputs, grid, block, scalars)


def test_kernel_op_describes_inputs_and_outputs():
    s = _spec("mul_add")
    assert s.outputs == ["u", "v"] and s.inputs == ["x", "y"] and s.arrays == ["x", "y"]
    s = _spec("square_scale")
    assert s.inputs == ["x", "a"] and s.arrays == ["x"]
    assert s.out_shape("y", {"x": np.zeros(7, np.float32), "a": 1.0}) == ((7,), np.float32)


@pytest.mark.parametrize("kwargs, message", [
    (dict(outputs={}), "non-empty dict"),
    (dict(outputs={"q": "x"}), "has no parameter 'q'"),
    (dict(outputs={"y": "a"}, scalars={"a": float}), "not an array input"),
    (dict(outputs={"y": "x"}, scalars={"a": complex}), "float or int"),
    (dict(outputs={"y": "x"}, scalars={"y": float}), "both an output and a scalar"),
    (dict(outputs={"y": 3}), "input name or a callable"),
])
def test_kernel_op_errors(kwargs, message):
    with pytest.raises(TypeError, match=message):
        KernelOp(square_scale, grid=1, block=32, **kwargs)
    with pytest.raises(TypeError, match="expected a @dg.kernel"):
        KernelOp(square_scale.py_func, {"y": "x"}, 1, 32)


def test_bad_block_rejected_early():
    with pytest.raises(dg.LaunchError, match="1024"):
        KernelOp(square_scale, {"y": "x"}, 1, 2048)


def test_vjp_gives_gradients_of_inputs():
    s = _spec("mul_add")
    x, y = np.linspace(0, 1, 70), np.linspace(1, 2, 70)
    args = {"x": x, "y": y, "u": np.zeros(70), "v": np.zeros(70)}
    cu, cv = np.full(70, 2.0), np.full(70, 3.0)
    g = vjp(s.launcher(args), s.kernel.arg_names, args, {"u": cu, "v": cv}, ["x", "y"],
            zeros_like=np.zeros_like)
    np.testing.assert_allclose(g["x"], 2.0 * y + 3.0 * np.cos(x))
    np.testing.assert_allclose(g["y"], 2.0 * x + 3.0)
    assert cu.tolist() == [2.0] * 70  # cotangents untouched


def _prepare_all(calls):
    try:  # dg.jax's GPU programs too, where JAX is installed
        from diffgpu.bridges.jax_gpu import prepare as prepare_jax
    except ImportError:
        prepare_jax = None
    for name, inputs in calls:
        prepare(_spec(name), "sm_90", inputs)
        if prepare_jax is not None:
            prepare_jax(_spec(name), "sm_90", inputs)


def test_prepare_then_run_without_compiler(monkeypatch):
    _prepare_all(gpu_inputs()[:4])
    # a machine without MLIR: every program and analysis comes from the cache
    for k in (OPS[n][0] for n in OPS):
        k._programs.clear()
        plan._ACCESS.pop(k, None)

    def no_compiler():
        raise AssertionError("a program was not prepared")
    monkeypatch.setattr(launch_module, "_import_compiler", no_compiler)
    monkeypatch.setattr(plan, "_analyze", lambda *a: no_compiler())
    before = launch_module.STATS["compile"]
    _prepare_all(gpu_inputs()[:4])
    assert launch_module.STATS["compile"] == before


def test_compile_only_runs_nothing_and_leaves_no_trace():
    x = np.ones(8)
    y = np.zeros(8)
    square_scale[1, 32](y, x, 2.0)          # a signature the fast path knows
    y[:] = 0
    with compile_only("sm_90"):
        square_scale[1, 32](y, x, 2.0)
        square_scale[1, 32](y, x.astype(np.float32).astype(np.float64), 3.0)
    assert y.tolist() == [0.0] * 8
    square_scale[1, 32](y, x, 2.0)          # still the CPU program afterwards
    assert y.tolist() == [2.0] * 8
    y32 = np.zeros(8, np.float32)
    with compile_only("sm_90"):
        square_scale[1, 32](y32, np.ones(8, np.float32), 2.0)
    square_scale[1, 32](y32, np.ones(8, np.float32), 2.0)
    assert y32.tolist() == [2.0] * 8


def test_frameworks_imported_only_when_used():
    import subprocess
    import sys

    code = ("import sys, numpy as np, diffgpu as dg\n"
            "from interop_kernels import square_scale\n"
            "square_scale[1, 32](np.zeros(4), np.ones(4), 2.0)\n"
            "print(sorted(m for m in ('torch', 'jax') if m in sys.modules))\n")
    here = __import__("os").path.dirname(__import__("os").path.dirname(__file__))  # test/python
    out = subprocess.run([sys.executable, "-c", code], cwd=here, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]"


def test_dg_attributes_name_the_bridges():
    import importlib.util

    for name in ("torch", "jax"):
        if importlib.util.find_spec(name) is None:
            with pytest.raises(ImportError, match=f"pip install 'diffgpu\\[{name}\\]'"):
                getattr(dg, name)
        else:
            assert getattr(dg, name).__name__ == f"diffgpu.{name}"
            assert callable(getattr(dg, name).op)

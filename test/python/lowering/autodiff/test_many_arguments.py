"""Differentiation of kernels with many arguments: 70 arrays through the
host dg.autodiff, an in-kernel dg.autodiff, dg.vjp, dg.jvp and dg.gradcheck
(the op layout of dialects/names.py has no argument limit, only one on runs
of equal types, MAX_TYPE_RUNS), 70 arguments alternating between two types,
and the error past that limit, which names the kernel and the line."""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import diffgpu as dg
from diffgpu.dialects import names as N

K = 70
M = 4


def _module(tmp_path, name, text):
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod, path


@pytest.fixture(scope="module")
def kernels():
    import kernels_many_args
    return kernels_many_args


def _inputs(seed=0):
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1, 1, M) for _ in range(K)]


def _want(xs, dout):
    return [2.0 * ((k % 7) + 1) * x * dout for k, x in enumerate(xs)]


def test_host_autodiff_of_70_arrays(kernels):
    xs, dout = _inputs(), np.linspace(0.5, 2.0, M)
    shadows = [np.zeros(M) for _ in xs]
    dg.autodiff(kernels.many[1, M], *[dg.Duplicated(x, s) for x, s in zip(xs, shadows)],
                dg.Duplicated(np.zeros(M), dout.copy()))
    for got, want in zip(shadows, _want(xs, dout)):
        np.testing.assert_allclose(got, want, rtol=1e-14)


def test_in_kernel_autodiff_of_70_arrays(kernels):
    xs, dout = _inputs(1), np.linspace(0.5, 2.0, M)
    shadows = [np.zeros(M) for _ in xs]
    args = [v for x, s in zip(xs, shadows) for v in (x, s)]
    kernels.d_many[1, M](*args, np.zeros(M), dout.copy())
    for got, want in zip(shadows, _want(xs, dout)):
        np.testing.assert_allclose(got, want, rtol=1e-14)


def test_vjp_and_jvp_of_70_arrays(kernels):
    xs, dout = _inputs(2), np.linspace(0.5, 2.0, M)
    g = dg.vjp(kernels.many[1, M], *xs, np.zeros(M), cotangents={"out": dout})
    for k, want in enumerate(_want(xs, dout)):
        np.testing.assert_allclose(g[f"A{k}"], want, rtol=1e-14)
    ts = _inputs(3)
    t = dg.jvp(kernels.many[1, M], *xs, np.zeros(M),
               tangents={f"A{k}": v for k, v in enumerate(ts)})
    want = sum(2.0 * ((k % 7) + 1) * x * v for k, (x, v) in enumerate(zip(xs, ts)))
    np.testing.assert_allclose(t["out"], want, rtol=1e-13)


def test_gradcheck_of_70_arrays(kernels):
    xs = _inputs(4)
    assert dg.gradcheck(kernels.many[1, M], *[dg.Duplicated(x, np.zeros(M)) for x in xs],
                        dg.Duplicated(np.zeros(M), np.zeros(M)))


def test_70_arguments_alternating_types(kernels):
    """Arrays and Active scalars alternate: every argument starts a new run of
    types (71 runs with the out array), within MAX_TYPE_RUNS."""
    rng = np.random.default_rng(5)
    arrays = [rng.uniform(-1, 1, M) for _ in range(K // 2)]
    scalars = [float(v) for v in rng.uniform(-1, 1, K // 2)]
    acts = []
    shadows = [np.zeros(M) for _ in arrays]
    for a, s, d in zip(arrays, scalars, shadows):
        acts += [dg.Duplicated(a, d), dg.Active(s)]
    dout = np.linspace(0.5, 2.0, M)
    grads = dg.autodiff(kernels.mixed[1, M], *acts, dg.Duplicated(np.zeros(M), dout.copy()))
    assert len(grads) == K // 2
    for a, s, d, g in zip(arrays, scalars, shadows, grads):
        np.testing.assert_allclose(d, s * dout, rtol=1e-14)
        np.testing.assert_allclose(g, (a * dout).sum(), rtol=1e-13)


def test_past_the_type_runs_limit_names_kernel_and_line(tmp_path):
    n = N.MAX_TYPE_RUNS // 2 + 1
    params = ", ".join(f"A{k}, s{k}" for k in range(n))
    acts = ", ".join(f"dg.Duplicated(A{k}, A{k}), dg.Active(s{k})" for k in range(n))
    text = "\n".join([
        "import diffgpu as dg", "",
        "@dg.kernel", f"def wide({params}):",
        "    i = dg.global_id()", "    A0[i] = s0 * A0[i]", "",
        "@dg.kernel", f"def d_wide({params}):",
        "    # the call below",
        f"    g = dg.autodiff(wide, {acts})", ""])
    mod, path = _module(tmp_path, "wide_kernels", text)
    args = [v for k in range(n) for v in (np.zeros(2), 1.0)]
    with pytest.raises(dg.CompileError) as exc:
        mod.d_wide[1, 2](*args)
    msg = str(exc.value)
    assert f"{path}:11:" in msg and "'wide'" in msg and "'d_wide'" in msg
    assert f"at most {N.MAX_TYPE_RUNS} runs of equal types" in msg
    # the host API: the kernel and the line of its definition
    with pytest.raises(dg.DiffgpuError) as exc:
        dg.autodiff(mod.wide[1, 2], *[dg.Duplicated(np.zeros(2), np.zeros(2)) if k % 2 == 0
                                      else dg.Active(1.0) for k in range(2 * n)])
    msg = str(exc.value)
    assert "kernel 'wide'" in msg and f"{path}:3" in msg and "runs of equal types" in msg

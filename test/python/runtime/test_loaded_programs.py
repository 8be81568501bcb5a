"""At most DIFFGPU_MAX_LOADED CPU programs hold their ExecutionEngine at once
(runtime/loaded.py): each holds about 1 MB, and kernels keep their programs
for the life of the process (1,000 kernels kept 1.1 GB). The least recently
launched are unloaded; an unloaded program JIT-compiles its text again on its
next launch, on every path a launch takes (the fast path's kept arguments
too), without compiling the kernel again."""
import gc
import importlib.util
import weakref

import numpy as np
import pytest

import diffgpu as dg
from diffgpu.driver import launch as L
from diffgpu.runtime import loaded


def kernels(tmp_path, name, n):
    """n kernels, k_i: y = x * (i + 1) (distinct programs)."""
    src = "import diffgpu as dg\n" + "".join(
        f"\n\n@dg.kernel\ndef k{i}(y, x):\n    j = dg.global_id(0)\n    if j < len(x):\n"
        f"        y[j] = x[j] * {i + 1}.0\n" for i in range(n))
    path = tmp_path / f"{name}.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return [getattr(mod, f"k{i}") for i in range(n)]


def host_of(kernel):
    (program,) = kernel._programs.values()
    return program.host


X = np.arange(8.0)


def test_at_most_the_cap_count_of_programs_hold_an_engine(tmp_path, monkeypatch):
    monkeypatch.setenv("DIFFGPU_MAX_LOADED", "3")
    ks = kernels(tmp_path, "capped", 6)
    engines = []
    for i, k in enumerate(ks):
        y = np.zeros(8)
        k[1, 8](y, X)
        np.testing.assert_array_equal(y, X * (i + 1))
        engines.append(weakref.ref(host_of(k)._engine))
        assert loaded.count() <= 3
    assert [host_of(k).is_loaded for k in ks] == [False] * 3 + [True] * 3
    gc.collect()
    assert [e() is None for e in engines] == [True] * 3 + [False] * 3  # engines released


def test_an_unloaded_program_loads_again_and_runs(tmp_path, monkeypatch):
    monkeypatch.setenv("DIFFGPU_MAX_LOADED", "2")
    a, b, c = kernels(tmp_path, "reload", 3)
    y = np.zeros(8)
    a[1, 8](y, X)
    a[1, 8](y, X)  # the key's second launch: the fast path keeps its packed arguments
    b[1, 8](np.zeros(8), X)
    c[1, 8](np.zeros(8), X)
    host = host_of(a)
    assert not host.is_loaded and host.loads == 1
    compiles, reuses = L.STATS["compile"], L.STATS["fast_reuse"]
    y[:] = 0
    a[1, 8](y, X)  # the kept arguments, the entry of the new engine
    np.testing.assert_array_equal(y, X)
    assert host.is_loaded and host.loads == 2
    assert L.STATS["fast_reuse"] == reuses + 1 and L.STATS["compile"] == compiles
    z = np.zeros(8)
    b[1, 8](z, X)  # b was the least recently launched: unloaded to make room
    np.testing.assert_array_equal(z, X * 2)
    assert host_of(b).loads == 2 and not host_of(c).is_loaded and host.is_loaded


@pytest.mark.parametrize("bad", ["0", "-1", "many", "2.5"])
def test_bad_cap_is_a_clear_error(tmp_path, monkeypatch, bad):
    monkeypatch.setenv("DIFFGPU_MAX_LOADED", bad)
    (k,) = kernels(tmp_path, f"bad{bad.replace('-', 'm').replace('.', '_')}", 1)
    y = np.full(8, 7.0)
    with pytest.raises(dg.CompileError, match=r"DIFFGPU_MAX_LOADED must be a positive "
                                              r"integer, got"):
        k[1, 8](y, X)
    assert np.all(y == 7.0) and not k._programs

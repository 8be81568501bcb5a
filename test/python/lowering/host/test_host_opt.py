"""`DIFFGPU_OPT`: LLVM's optimisation level for CPU programs (diffgpu/switches.py).
It is read when a program is JIT-compiled, a bad value is a CompileError
that names it (and runs nothing), and every level gives the same bits."""
import numpy as np
import pytest

import diffgpu as dg
from diffgpu.runtime import jit


def _fresh_kernel():
    @dg.kernel
    def k(y, x):
        i = dg.global_id(0)
        if i < len(x):
            y[i] = dg.sin(x[i]) * x[i] + 0.1 / (1.0 + x[i] * x[i])
    return k


@pytest.fixture
def levels(monkeypatch):
    seen = []
    real = jit.load_module

    def recording(module, opt_level=2, keep=()):
        seen.append(opt_level)
        return real(module, opt_level, keep)
    monkeypatch.setattr(jit, "load_module", recording)
    return seen


@pytest.mark.parametrize("value,level", [(None, 2), ("0", 0), ("1", 1), ("3", 3)])
def test_level_is_read_at_jit_time(monkeypatch, levels, value, level):
    if value is None:
        monkeypatch.delenv("DIFFGPU_OPT", raising=False)
    else:
        monkeypatch.setenv("DIFFGPU_OPT", value)
    x = np.linspace(-2, 2, 64)
    y = np.zeros_like(x)
    _fresh_kernel()[2, 32](y, x)
    assert levels and set(levels) == {level}  # (a launch may build two programs)
    np.testing.assert_array_equal(y, np.sin(x) * x + 0.1 / (1.0 + x * x))


@pytest.mark.parametrize("bad", ["4", "-1", "fast", "2.0"])
def test_bad_level_is_a_clear_error(monkeypatch, bad):
    monkeypatch.setenv("DIFFGPU_OPT", bad)
    y = np.full(8, 7.0)
    with pytest.raises(dg.CompileError, match=r"DIFFGPU_OPT must be 0, 1, 2 or 3, got"):
        _fresh_kernel()[1, 8](y, np.ones(8))
    assert np.all(y == 7.0)


def test_every_level_gives_the_same_bits(monkeypatch):
    rng = np.random.default_rng(3)
    x = rng.standard_normal(256) * 10
    out = []
    for level in "0123":
        monkeypatch.setenv("DIFFGPU_OPT", level)
        y, dx = np.zeros_like(x), np.zeros_like(x)
        k = _fresh_kernel()
        dg.autodiff(k[4, 64], dg.Duplicated(y, np.ones_like(x)), dg.Duplicated(x, dx))
        k[4, 64](y, x)
        out.append(y.tobytes() + dx.tobytes())
    assert len(set(out)) == 1

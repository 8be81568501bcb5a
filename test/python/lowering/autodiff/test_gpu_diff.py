"""Reverse and forward mode through shared memory, barriers and atomics, on the CPU.

The kernels are diff_corpus_gpu.CASES (scripts/gpu_check.py runs the same
ones on a GPU). Per case:
- the primal against its numpy reference;
- dg.gradcheck in float64: forward mode J V and the reverse-mode dot-product
  test against central finite differences (the whole Jacobian, element by
  element, when it is small);
- where the case has an analytic gradient (`vjp`): reverse mode against it,
  and forward mode by <D, J V> = <vjp(D), V>;
- float32 against the float64 compilation of the same kernel, both modes.
Cases with a known compiler bug are strict xfails naming it (see `xfail`).

Also: the GPU runtime raises CUDA's device malloc heap before launching PTX
that calls malloc (a stand-in CuPy records the calls).
"""
from __future__ import annotations

import sys
import types
import warnings

import numpy as np
import pytest

import diffgpu as dg
from diffgpu.runtime import gpu

import diff_corpus_gpu as corpus

CASES = {c.name: c for c in corpus.CASES}


def _params(only=None):
    out = []
    for c in corpus.CASES:
        if only is not None and not only(c):
            continue
        marks = [pytest.mark.xfail(strict=True, reason=c.xfail)] if c.xfail else []
        out.append(pytest.param(c.name, marks=marks, id=c.name))
    return out


def _copy(args):
    return [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]


def _args(c, dtype=np.float64, seed=0):
    return c.make(dtype, np.random.default_rng(seed))


def test_corpus_size():
    # the brief's kernels: at least 15, each with a distinct name
    assert len(CASES) == len(corpus.CASES) >= 15


@pytest.mark.parametrize("name", [c.name for c in corpus.CASES if c.ref])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_primal_matches_numpy(name, dtype):
    c = CASES[name]
    args = _args(c, dtype)
    got, want = _copy(args), _copy(args)
    c.kernel[c.grid, c.block](*got)
    c.ref(*want)
    tol = dict(rtol=1e-12, atol=1e-12)
    if dtype == np.float32 or c.tol:  # float32 data or float32 shared memory
        tol = dict(rtol=1e-4, atol=1e-5)
    for k, (g, w) in enumerate(zip(got, want)):
        if isinstance(g, np.ndarray):
            np.testing.assert_allclose(g, w, **tol, err_msg=f"argument {k}")


@pytest.mark.parametrize("name", _params())
def test_gradcheck_float64(name):
    c = CASES[name]
    args = _args(c)
    acts = []
    for a, k in zip(args, c.kinds):
        if k in ("dup", "out"):
            acts.append(dg.Duplicated(a, np.zeros_like(a)))
        elif k == "active":
            acts.append(dg.Active(a))
        else:
            acts.append(a)
    assert dg.gradcheck(c.kernel[c.grid, c.block], *acts, **(c.tol or {})) is True


def _reverse(c, args, seeds, mode="reverse"):
    """Run dg.autodiff (mode "reverse") or dg.fwddiff with shadows `seeds`
    ({index: array or scalar}); returns (arrays after, shadows after, grads)."""
    vals = _copy(args)
    shadows = {k: np.array(v, copy=True) if isinstance(v, np.ndarray) else v
               for k, v in seeds.items()}
    acts = []
    for k, (a, kind) in enumerate(zip(vals, c.kinds)):
        if kind in ("dup", "out"):
            acts.append(dg.Duplicated(a, shadows[k]))
        elif kind == "active":
            acts.append(dg.Active(a) if mode == "reverse" else dg.Duplicated(a, shadows[k]))
        else:
            acts.append(a)
    if mode == "reverse":
        grads = dg.autodiff(c.kernel[c.grid, c.block], *acts)
    else:
        dg.fwddiff(c.kernel[c.grid, c.block], *acts)
        grads = ()
    return vals, shadows, list(grads)


def _seeds(c, args, rng, which):
    """Random shadows for the arguments of kinds `which`, zeros for the
    other float arrays; scalars for Active ones if "active" in which."""
    out = {}
    for k, (a, kind) in enumerate(zip(args, c.kinds)):
        if kind in ("dup", "out"):
            out[k] = (rng.standard_normal(a.shape) if kind in which
                      else np.zeros(a.shape)).astype(a.dtype)
        elif kind == "active" and "active" in which:
            out[k] = type(a)(rng.standard_normal())
    return out


@pytest.mark.parametrize("name", _params(lambda c: c.vjp is not None))
def test_reverse_matches_analytic(name):
    # D on the outputs, zero on the inputs: the input shadows become
    # vjp(D); outputs the kernel overwrites lose their adjoint (zero),
    # outputs it accumulates into keep it (vjp lists those)
    c = CASES[name]
    args = _args(c)
    D = _seeds(c, args, np.random.default_rng(3), ("out",))
    _, shadows, grads = _reverse(c, args, D)
    want = c.vjp(_copy(args), D)
    g = iter(grads)
    for k, kind in enumerate(c.kinds):
        if kind in ("dup", "out"):
            w = want.get(k, np.zeros_like(args[k]))
            np.testing.assert_allclose(shadows[k], w, rtol=1e-10, atol=1e-12,
                                       err_msg=f"adjoint of argument {k}")
        elif kind == "active":
            np.testing.assert_allclose(next(g), want[k], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", _params(lambda c: c.vjp is not None))
def test_forward_matches_analytic(name):
    # <D, J V> (forward mode tangents of the outputs) = <vjp(D), V> (the
    # analytic gradient), for random V on the inputs and D on the outputs
    c = CASES[name]
    args = _args(c)
    rng = np.random.default_rng(4)
    V = _seeds(c, args, rng, ("dup", "active"))
    D = _seeds(c, args, rng, ("out",))
    _, tangents, _ = _reverse(c, args, V, mode="forward")
    lhs = sum(float(np.sum(D[k] * tangents[k])) for k, kind in enumerate(c.kinds)
              if kind == "out")
    want = c.vjp(_copy(args), D)
    rhs = sum(float(np.sum(np.asarray(want[k]) * V[k])) for k in want if k in V)
    assert abs(lhs - rhs) <= 1e-10 * (1 + abs(rhs)), (lhs, rhs)


@pytest.mark.parametrize("name", _params())
@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_float32_matches_float64(name, mode):
    # the float32 compilation (float32 tapes, shadows and atomics) agrees
    # with the float64 one, itself checked against finite differences
    c = CASES[name]
    a64 = _args(c)
    a32 = [a.astype(np.float32) if isinstance(a, np.ndarray) and a.dtype == np.float64
           else (np.float32(a) if isinstance(a, float) else a) for a in a64]
    which = ("out",) if mode == "reverse" else ("dup", "active")
    s64 = _seeds(c, a64, np.random.default_rng(5), which)
    s32 = {k: (v.astype(np.float32) if isinstance(v, np.ndarray) else np.float32(v))
           for k, v in s64.items()}
    v64, sh64, g64 = _reverse(c, a64, s64, mode)
    v32, sh32, g32 = _reverse(c, a32, s32, mode)
    for k in sh64:
        if isinstance(sh64[k], np.ndarray):
            assert sh32[k].dtype == np.float32
            scale = 1.0 + float(np.max(np.abs(sh64[k]), initial=0.0))
            np.testing.assert_allclose(sh32[k], sh64[k], rtol=1e-3, atol=1e-4 * scale,
                                       err_msg=f"{mode} shadow of argument {k}")
    for k, kind in enumerate(c.kinds):
        if kind == "out":
            np.testing.assert_allclose(v32[k], v64[k], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(g32, g64, rtol=1e-3, atol=1e-4)


WIDE = corpus.load_variant(64, 16)  # blocks of 2 warps, 16 x 16 tiles: as on a GPU


@pytest.mark.parametrize("name", [pytest.param(
    c.name, marks=[pytest.mark.xfail(strict=True, reason=c.xfail)] if c.xfail else [])
    for c in WIDE.CASES])
def test_wide_blocks(name):
    # the same kernels with 64-thread blocks (the variant scripts/gpu_check.py
    # also runs on the GPU, where barriers then order several warps): the
    # primal against numpy, then dg.gradcheck (dot-product test, forward J V)
    c = {k.name: k for k in WIDE.CASES}[name]
    assert (WIDE.B, WIDE.T) == (64, 16) and c.kernel is not CASES[name].kernel
    args = _args(c)
    got, want = _copy(args), _copy(args)
    c.kernel[c.grid, c.block](*got)
    c.ref(*want)
    for k, (g, w) in enumerate(zip(got, want)):
        if isinstance(g, np.ndarray):
            np.testing.assert_allclose(g, w, rtol=1e-4 if c.tol else 1e-12,
                                       atol=1e-5 if c.tol else 1e-12, err_msg=f"argument {k}")
    acts = [dg.Duplicated(a, np.zeros_like(a)) if k in ("dup", "out")
            else (dg.Active(a) if k == "active" else a) for a, k in zip(args, c.kinds)]
    assert dg.gradcheck(c.kernel[c.grid, c.block], *acts, **(c.tol or {})) is True


def test_gpu_cases_cover_the_corpus():
    # scripts/gpu_check.py gets every case: launch (when a numpy reference
    # exists), reverse and forward (unless the case is a known failure), in
    # float32 and float64
    names = [c[0] for c in corpus.gpu_cases()]
    assert len(names) == len(set(names))
    for c in corpus.CASES:
        for dt in ("float32", "float64"):
            modes = ["launch"] if c.xfail else ["reverse", "forward"] + (["launch"] if c.ref
                                                                         else [])
            for mode in modes:
                assert f"diff {c.name} {mode} {dt}" in names


# ---------------------------------------------------------------------------
# the device malloc heap (derivative kernels whose tape spills to the heap)
# ---------------------------------------------------------------------------

MALLOC_PTX = """
.version 8.0
.target sm_90
.address_size 64
.extern .func  (.param .b64 func_retval0) malloc
(
\t.param .b64 malloc_param_0
)
;
.visible .entry k()
{
\tret;
}
"""
PLAIN_PTX = MALLOC_PTX.replace(".extern .func  (.param .b64 func_retval0) malloc\n(\n"
                               "\t.param .b64 malloc_param_0\n)\n;\n", "")


class _FakeRuntime:
    cudaLimitMallocHeapSize = 2

    def __init__(self, free, heap=8 << 20, refuse=False):
        self.free, self.refuse, self.log = free, refuse, []
        self.heaps, self.default, self.current = {}, heap, 0  # per device

    @property
    def heap(self):
        return self.heaps.get(self.current, self.default)

    def deviceGetLimit(self, limit):
        assert limit == 2
        return self.heap

    def deviceSetLimit(self, limit, value):
        self.log.append(("set", limit, value))
        if self.refuse:
            raise RuntimeError("cudaErrorInvalidValue: invalid argument")
        self.heaps[self.current] = value

    def memGetInfo(self):
        return self.free, 2 * self.free


@pytest.fixture
def fake_cupy(monkeypatch):
    """A stand-in `cupy` recording heap limits and launches, in order."""
    def install(**kw):
        rt = _FakeRuntime(**kw)

        class Device:
            def __init__(self, i=0):
                self.id = i

            def __enter__(self):
                rt.log.append(("device", self.id))
                rt.current = self.id
                return self

            def __exit__(self, *exc):
                return False

        class RawModule:
            def __init__(self, path):
                self.ptx = open(path).read()

            def get_function(self, name):
                return lambda grid, block, args: rt.log.append(("launch", name))

        mod = types.ModuleType("cupy")
        mod.cuda = types.SimpleNamespace(Device=Device, runtime=rt)
        mod.RawModule = RawModule
        monkeypatch.setitem(sys.modules, "cupy", mod)
        monkeypatch.setattr(gpu, "_heap_ready", set())
        monkeypatch.setattr(gpu, "_modules", {})
        return rt
    return install


def test_uses_malloc_reads_the_ptx_declaration():
    assert gpu.uses_malloc(MALLOC_PTX)
    assert not gpu.uses_malloc(PLAIN_PTX)
    assert not gpu.uses_malloc(PLAIN_PTX.replace(".entry k", ".entry malloc_free_kernel"))


def test_heap_raised_once_per_device_before_launch(fake_cupy):
    rt = fake_cupy(free=64 << 30)
    prog = gpu.GpuProgram(MALLOC_PTX, "k")
    prog.launch([], [], (1, 1, 1), (1, 1, 1), device_id=1)
    prog.launch([], [], (1, 1, 1), (1, 1, 1), device_id=1)
    sets = [e for e in rt.log if e[0] == "set"]
    assert sets == [("set", 2, gpu.HEAP_BYTES)]
    assert rt.log.index(sets[0]) < rt.log.index(("launch", "k"))
    assert rt.log[rt.log.index(sets[0]) - 1] == ("device", 1)  # set on that device
    gpu.GpuProgram(MALLOC_PTX, "k").launch([], [], (1, 1, 1), (1, 1, 1), device_id=0)
    assert [e for e in rt.log if e[0] == "set"] == [("set", 2, gpu.HEAP_BYTES)] * 2


def test_heap_is_a_fraction_of_free_memory_and_never_lowered(fake_cupy):
    rt = fake_cupy(free=400 << 20)
    gpu.ensure_malloc_heap(0)
    assert rt.heap == 100 << 20
    rt2 = fake_cupy(free=64 << 30, heap=4 << 30)  # already larger: left alone
    gpu.ensure_malloc_heap(0)
    assert rt2.heap == 4 << 30 and not [e for e in rt2.log if e[0] == "set"]


def test_no_heap_change_without_malloc(fake_cupy):
    rt = fake_cupy(free=64 << 30)
    gpu.GpuProgram(PLAIN_PTX, "k").launch([], [], (1, 1, 1), (1, 1, 1))
    assert ("launch", "k") in rt.log and not [e for e in rt.log if e[0] == "set"]


def test_heap_refused_warns_and_launches(fake_cupy):
    rt = fake_cupy(free=64 << 30, refuse=True)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        gpu.GpuProgram(MALLOC_PTX, "k").launch([], [], (1, 1, 1), (1, 1, 1))
    assert any("malloc heap" in str(x.message) for x in w)
    assert ("launch", "k") in rt.log

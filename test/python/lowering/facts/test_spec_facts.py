"""The launch facts `extents` and `index32` (runtime/specialize.py,
lowering/facts/specialize_shapes.py): when they hold (boundaries checked on shapes
and strides only: no large allocation), what the compiler makes of them, and
that specialised and generic programs agree on the CPU."""
from __future__ import annotations

import re

import numpy as np
import pytest
from numpy.lib.stride_tricks import as_strided

import diffgpu as dg
from diffgpu.driver import launch as L
from diffgpu.runtime import specialize as S
from diffgpu.types import ArrayType
from kernels_specialize import two_guards
from kernels_elementwise import saxpy, square  # noqa: E402  (defined once)

M = S.INT32_MAX
F1 = ArrayType("float32", 1)
RNG = np.random.default_rng(5)


@dg.kernel
def looped(y, x, n):
    i = dg.global_id(0)
    if i < len(x):
        s = 0.0
        for j in range(n):
            s = s + x[(i + j) % len(x)]
        y[i] = s


# ---------------------------------------------------------------------------
# when the facts hold
# ---------------------------------------------------------------------------

def test_extents_groups_per_dimension():
    assert S.extents_of([(8,), None, (8,), (4,)]) == ((0,), (), (0,), (3,))
    assert S.extents_of([(4, 6), (6, 4), (4, 4)]) == ((0, 0), (1, 1), (0, 1))
    f = S.launch_facts([np.zeros(8, np.float32), 2.0, np.zeros(8, np.float32)],
                       (F1, dg.types.ScalarType("float64"), F1), (1, 1, 1), (8, 1, 1))
    assert f.extents == ((0,), (), (0,)) and f.shared_extents()
    assert "extents=0;;0" in f.key()
    host = f.for_target("host")
    assert host.extents == f.extents and not host.index32 and f.index32


@pytest.mark.parametrize("layout,fits", [
    (((M,), (1,)), True),
    (((M + 1,), (1,)), False),            # a size
    (((2,), (M,)), True),                 # the last element at offset 2^31 - 1
    (((2,), (M + 1,)), False),            # ... at 2^31
    (((2**30 + 1,), (-2,)), False),       # negative strides count by magnitude
    (((3, 2**29), (2**29, 1)), True),
    (((5, 2**29), (2**29, 1)), False),    # 5 * 2^29 elements
    (((2, 2), (M, 1)), False),            # (1 * (2^31 - 1)) + 1
])
def test_index32_boundary_of_layouts(layout, fits):
    assert S.fits_int32([layout], (1, 1, 1), (1, 1, 1)) is fits


@pytest.mark.parametrize("grid,block,fits", [
    ((2**23 - 1, 1, 1), (256, 1, 1), True),
    ((2**23, 1, 1), (256, 1, 1), False),     # 2^31 threads in x
    ((2**16, 2**14, 1), (1, 1, 1), True),
    ((2**16, 2**15, 1), (1, 1, 1), False),   # 2^31 threads in all
])
def test_index32_boundary_of_geometry(grid, block, fits):
    assert S.fits_int32([((16,), (1,))], grid, block) is fits


def test_index32_of_views_read_from_strides():
    """Views reaching past 2^31 elements, simulated with strides over a small
    buffer (nothing is read: the facts use shapes and strides only)."""
    x = np.zeros(8, np.float32)
    near = as_strided(x, shape=(2,), strides=(4 * M,))
    far = as_strided(x, shape=(2,), strides=(4 * (M + 1),))
    back = as_strided(x[7:], shape=(2,), strides=(-4 * (M + 1),))
    geo = ((1, 1, 1), (32, 1, 1))
    assert S.launch_facts([near, x], (F1, F1), *geo).index32
    assert not S.launch_facts([far, x], (F1, F1), *geo).index32
    assert not S.launch_facts([back, x], (F1, F1), *geo).index32
    assert not S.launch_facts([x, x], (F1, F1)).index32  # geometry unknown


# ---------------------------------------------------------------------------
# what the compiler makes of them
# ---------------------------------------------------------------------------

def _facts_attr(kernel, *args, grid=(1, 1, 1), block=(32, 1, 1)):
    text = kernel.ir(*args, stage="dialect", target="sm_90", grid=grid, block=block)
    return re.search(r"diffgpu\.launch_facts = \{[^}]*\}", text).group(0)


@dg.kernel
def gather_sum(out, x, idx):
    i = dg.global_id(0)
    if i < len(idx):
        dg.atomic_add(out, 0, x[idx[i]])


def test_index32_only_where_integers_index_memory():
    x = np.zeros(64, np.float32)
    assert "index32 = true" in _facts_attr(square, x, x.copy())
    # loaded and literal integers as subscripts (of a load, of an atomic add)
    assert "index32 = true" in _facts_attr(gather_sum, np.zeros(1, np.float32), x,
                                           np.zeros(64, np.int32))
    # range(n) of an int64 n: a loop bound could exceed int32
    assert "index32 = false" in _facts_attr(looped, x, x.copy(), 3)
    assert "index32 = false" in _facts_attr(square, x, x.copy(), grid=(2**23, 1, 1),
                                            block=(256, 1, 1))


_WIDE = re.compile(r"^\s*(?:add|sub|mul|mad|shl|shr|or|and|setp\.\w+|cvt\.\w+)\.[sub]64\b",
                   re.M)


def _entry(ptx: str, name: str) -> str:
    return ptx[ptx.index(f".entry {name}("):]


def test_index32_ptx_has_fewer_64_bit_ops_and_the_same_parameters():
    x = np.zeros(1024, np.float32)
    narrow = square.ir(x, x.copy(), stage="ptx", target="sm_90", grid=(4, 1, 1),
                       block=(256, 1, 1))
    wide = square.ir(x, x.copy(), stage="ptx", target="sm_90", grid=(2**23, 1, 1),
                     block=(256, 1, 1))  # 2^31 threads: no index32 (still coarsened)
    n32, n64 = (len(_WIDE.findall(_entry(p, "square"))) for p in (narrow, wide))
    assert n32 < n64, (n32, n64)
    assert "mad.lo.s32" in _entry(narrow, "square")
    for p in (narrow, wide):
        assert "ld.global.nc.v4" in p and "st.global.v4" in p
    params = [re.findall(r"\.param \.(\w+)", _entry(p, "square").split(")")[0])
              for p in (narrow, wide)]
    assert params[0] == params[1] == ["u64"] * 4  # the lean ABI the runtime packs


def test_index32_programs_pass_the_abi_check(tmp_path, monkeypatch):
    """A launch's compile checks the entry's parameters against the lean or
    full layout (launch._lean_layout); the index32 program passes it."""
    from diffgpu.interop import compile_only

    monkeypatch.setenv("DIFFGPU_CACHE_DIR", str(tmp_path))
    x = np.zeros(1024, np.float32)

    @dg.kernel
    def sq(y, x):
        i = dg.global_id(0)
        if i < len(x):
            y[i] = x[i] * x[i]
    with compile_only("sm_90"):
        sq[4, 256](x.copy(), x)
        dg.vjp(saxpy[4, 256], x.copy(), 2.0, x, x.copy(), cotangents={"o": x.copy()})
    keys = [k[-1] for k in sq._programs if "index32=1" in k[-1]]
    assert keys, list(sq._programs)
    (prog,) = [p for k, p in sq._programs.items() if "index32=1" in k[-1]]
    assert prog.payload["lean"] == [True, True]
    assert any("index32=1" in k[-1] for k in saxpy._programs)


def _captured_modules(monkeypatch):
    seen = []
    build = L.build_module

    def capture(defn, types, target, diff=None, facts=None):
        src = build(defn, types, target, diff, facts)
        seen.append(src)
        return src
    monkeypatch.setattr(L, "build_module", capture)
    return seen


def _rev(text: str) -> str:
    m = re.search(r"^( *)func\.func (?:private )?@__dg_rev_\w+\(.*?^\1\}", text, re.S | re.M)
    assert m, text
    return m.group(0)


def _top_ifs(rev: str) -> int:
    """The `scf.if`s directly in the function's body (not the host's bounds
    checks nested in them)."""
    indent = len(rev) - len(rev.lstrip(" ")) + 2
    return len(re.findall(rf"^ {{{indent}}}scf\.if", rev, re.M))


def test_saxpy_vjp_writes_back_under_the_kernel_guard(monkeypatch):
    """The y gradient's write-back guard `i < len(y)` reads len(x) under the
    extents fact: the reverse function has one guard."""
    from diffgpu.driver import compiler

    seen = _captured_modules(monkeypatch)
    x = RNG.standard_normal(256).astype(np.float32)
    dg.vjp(saxpy[2, 128], np.zeros_like(x), 2.0, x, x + 1, cotangents={"o": x * 3})
    gpu = compiler.compile(seen[-1].text, "host", "gpu").text
    rev = _rev(gpu)
    assert _top_ifs(rev) == 1, rev
    # a longer y: its own guard remains
    seen.clear()
    dg.vjp(saxpy[2, 128], np.zeros_like(x), 2.0, x, np.ones(300, np.float32), cotangents={"o": x * 3})
    assert _top_ifs(_rev(compiler.compile(seen[-1].text, "host", "gpu").text)) == 2


# ---------------------------------------------------------------------------
# specialised and generic programs agree (CPU)
# ---------------------------------------------------------------------------

def _both(monkeypatch, fn):
    out = fn()
    monkeypatch.setattr(S, "ENABLED", False)
    try:
        generic = fn()
    finally:
        monkeypatch.setattr(S, "ENABLED", True)
    return out, generic


def _equal(a, b):
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            np.testing.assert_array_equal(np.asarray(a[k]), np.asarray(b[k]), err_msg=k)
    else:
        for u, v in zip(a, b):
            np.testing.assert_array_equal(u, v)


@pytest.mark.parametrize("n_w", [256, 200, 300])
def test_two_guards_specialised_equals_generic(monkeypatch, n_w):
    x = RNG.standard_normal(256)
    w0 = RNG.standard_normal(n_w)

    def run():
        o, w = np.zeros(256), w0.copy()
        two_guards[3, 128](o, x, w)
        return o, w
    _equal(*_both(monkeypatch, run))


@pytest.mark.parametrize("n_y", [256, 300])
def test_saxpy_vjp_jvp_specialised_equals_generic(monkeypatch, n_y):
    x = RNG.standard_normal(256).astype(np.float32)
    y = RNG.standard_normal(n_y).astype(np.float32)
    g = RNG.standard_normal(256).astype(np.float32)
    launch = saxpy[2, 128]

    def run():
        return {**dg.vjp(launch, np.zeros_like(x), 1.5, x, y, cotangents={"o": g}),
                **{"t_" + k: v for k, v in dg.jvp(launch, np.zeros_like(x), 1.5, x, y,
                                                  tangents={"a": 0.5, "x": g, "y": y}).items()}}
    got, generic = _both(monkeypatch, run)
    _equal(got, generic)
    np.testing.assert_allclose(got["x"], 1.5 * g, rtol=1e-6)


def test_square_specialised_equals_generic(monkeypatch):
    x = RNG.standard_normal(1000).astype(np.float32)

    def run():
        y = np.zeros_like(x)
        square[4, 256](y, x)
        return (y, dg.vjp(square[4, 256], y, x, cotangents={"y": x})["x"])
    _equal(*_both(monkeypatch, run))

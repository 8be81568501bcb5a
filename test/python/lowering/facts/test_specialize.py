"""Launch-time specialisation (runtime/specialize.py, lowering/facts/specialize.py).

The facts a launch proves (disjoint arrays, C-contiguous arrays, unit
geometry dimensions) select a specialised program; overlapping arrays fall
back to a program without `noalias`. Every specialised result is compared
bit for bit with the generic program's (specialisation switched off), and
the fallbacks (in-place kernels, the same array twice, overlapping views)
with the generic program and numpy.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

import diffgpu as dg
from diffgpu.driver import launch as L
from diffgpu.runtime import specialize as S
from diffgpu.types import ArrayType, ScalarType

F1 = ArrayType("float32", 1)


# ---------------------------------------------------------------------------
# Kernels
# ---------------------------------------------------------------------------

from kernels_specialize import (add2d, add2d_grad, loop16, loop16_grad,  # noqa: E402,F401
                                mul, mul_grad, scale_shift, scale_shift_grad)


@dg.kernel
def shift_left(y, x):  # y[i] = x[i + 1]: in place (y is x) it depends on the order
    i = dg.global_id(0)
    if i + 1 < len(x):
        y[i] = x[i + 1] * 2.0


def _rng(seed=0):
    return np.random.default_rng(seed)


def _f32(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def _run(kernel, grid, block, args, specialise: bool):
    args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    old = S.ENABLED
    S.ENABLED = specialise
    try:
        kernel[grid, block](*args)
    finally:
        S.ENABLED = old
    return args


def _facts_keys(kernel):
    return [k[3] for k in kernel._programs if len(k) == 4]


# ---------------------------------------------------------------------------
# Facts from the arrays
# ---------------------------------------------------------------------------

def test_disjoint_arrays_are_noalias():
    x, y = np.zeros(8, np.float32), np.zeros(8, np.float32)
    f = S.launch_facts([y, x], (F1, F1), (4, 1, 1), (64, 1, 1))
    assert f.noalias and f.contiguous == (True, True) and f.unit_dims == (1, 2)


@pytest.mark.parametrize("make", [
    lambda x: [x, x],                      # the same array twice
    lambda x: [x[2:], x[:4]],              # overlapping views
    lambda x: [x[::2], x[1::2]],           # interleaved: the ranges overlap
    lambda x: [x[::-1], x[3:5]],           # a reversed view over the same bytes
])
def test_overlapping_arrays_are_not_noalias(make):
    x = np.zeros(8, np.float32)
    f = S.launch_facts(make(x), (F1, F1), (1, 1, 1), (8, 1, 1))
    assert f is not None and not f.noalias


def test_adjacent_views_of_one_buffer_are_disjoint():
    x = np.zeros(8, np.float32)
    assert S.launch_facts([x[:4], x[4:]], (F1, F1)).noalias
    # empty arrays overlap nothing
    assert S.launch_facts([x, x[3:3]], (F1, F1)).noalias


def test_contiguity_and_geometry_facts():
    a = np.zeros((4, 6), np.float32)
    f = S.launch_facts([a, a.T.copy().T, 2.0], (ArrayType("float32", 2),) * 2
                       + (ScalarType("float64"),), (2, 2, 1), (8, 1, 1))
    assert f.contiguous == (True, False, False)
    assert f.unit_dims == (2,)  # grid y is 2
    assert "unit_dims=2" in f.key()
    # nothing proven (no size shared, 2^31 threads in y) but the fold of a grid
    # beyond the GPU's 65535 in y, which the host does not need
    f = S.launch_facts([a[:, 1::2], a[1:, 1:5:2]], (ArrayType("float32", 2),) * 2,
                       (1, 2**30, 1), (1, 2, 2))
    assert f.key() == "noalias=0 contiguous=00 unit_dims=- grid_fold=1073741824,1"
    assert f.for_target("host") is None
    assert S.launch_facts([a[:, 1::2], a[1:, 1:5:2]], (ArrayType("float32", 2),) * 2,
                          (1, 2**15, 2**15), (1, 2, 2)) is None  # 2^32 threads, no fold
    # alignment and a grid divisible by the coarsening factor
    f = S.launch_facts([a, a[:, 1:]], (ArrayType("float32", 2),) * 2, (8, 1, 1), (32, 1, 1))
    assert f.aligned == (a.ctypes.data % 16 == 0, False) and f.grid_div
    assert not S.launch_facts([a], (ArrayType("float32", 2),), (6, 1, 1), (32, 1, 1)).grid_div


def test_switch_off_gives_generic():
    x = np.zeros(8, np.float32)
    old, S.ENABLED = S.ENABLED, False
    try:
        assert S.launch_facts([x], (F1,), (1, 1, 1), (8, 1, 1)) is None
    finally:
        S.ENABLED = old


def test_host_facts_drop_contiguity():
    f = S.Facts(False, (True, True), ())
    assert f.for_target("host") is None and f.for_target("sm_90") is f


# ---------------------------------------------------------------------------
# Program selection and the IR
# ---------------------------------------------------------------------------

def test_specialised_program_selected_and_cached():
    rng = _rng(1)
    args = [np.zeros(64, np.float32), _f32(rng, 64)]
    c0 = L.STATS["compile"] + L.STATS["disk_hit"]
    _run(scale_shift, 2, 32, args, True)
    _run(scale_shift, 2, 32, args, True)  # memory hit: same facts
    assert L.STATS["compile"] + L.STATS["disk_hit"] == c0 + 1
    assert "noalias=1 contiguous= unit_dims=12 extents=0;0" in _facts_keys(scale_shift)
    # the same array twice: a different program, without noalias
    a = _f32(rng, 64)
    scale_shift[2, 32](a, a)
    assert any(k.startswith("noalias=0") for k in _facts_keys(scale_shift))
    assert scale_shift.signatures == ["(float32[:], float32[:]) on host"]


def _rev_function(text):
    m = re.search(r"func\.func @__dg_rev_\w+\((.*?)^  \}", text, re.S | re.M)
    assert m, text
    return m.group(0)


def test_ir_loads_first_only_when_proven():
    rng = _rng(2)
    y, dy, x, dx = (_f32(rng, 32) for _ in range(4))
    text = scale_shift_grad.ir(y, dy, x, dx, stage="gpu", target="host", grid=1, block=32)
    rev = _rev_function(text)
    assert "diffgpu.noalias" in rev
    ops = re.findall(r"memref\.(load|store) [^\[]*?(%arg\d)\[", rev)
    loads = [i for i, (kind, _) in enumerate(ops) if kind == "load"]
    stores = [i for i, (kind, _) in enumerate(ops) if kind == "store"]
    assert max(loads) < min(stores), ops  # every load before the first store
    assert "diffgpu.atomic_add" not in rev and "grid_dim" not in rev  # no guard
    # dy and dx the same array: program order (the consuming store first)
    text = scale_shift_grad.ir(y, dy, x, dy, stage="gpu", target="host", grid=1, block=32)
    rev = _rev_function(text)
    assert "diffgpu.noalias" not in rev
    ops = re.findall(r"memref\.(load|store) [^\[]*?(%arg\d)\[", rev)
    assert ops.index(("store", "%arg2")) < ops.index(("load", "%arg3")), ops  # dy = 0; dx
    # 2-D geometry: the guard of dimension 1 stays
    text = scale_shift_grad.ir(y, dy, x, dy, stage="autodiff", target="host", grid=(1, 2),
                               block=32)
    assert '"diffgpu.grid_dim"() {dim = 1' in _rev_function(text)


def test_two_accumulating_shadows_elided_only_when_disjoint():
    rng = _rng(3)
    a = [_f32(rng, 32) for _ in range(6)]
    rev = _rev_function(mul_grad.ir(*a, stage="autodiff", target="host", grid=1, block=32))
    assert "diffgpu.atomic_add" not in rev
    # dw is a view overlapping dx: both keep their atomics
    buf = _f32(rng, 40)
    rev = _rev_function(mul_grad.ir(a[0], a[1], a[2], buf[:32], a[4], buf[1:33],
                                    stage="autodiff", target="host", grid=1, block=32))
    assert rev.count("diffgpu.atomic_add") == 2


# ---------------------------------------------------------------------------
# Results: specialised == generic, bit for bit
# ---------------------------------------------------------------------------

CASES = [
    ("scale_shift", scale_shift, 4, 32, lambda r: [np.zeros(100, np.float32), _f32(r, 100)]),
    ("scale_shift_grad", scale_shift_grad, 4, 32, lambda r: [_f32(r, 100) for _ in range(4)]),
    ("mul_grad", mul_grad, 4, 32, lambda r: [_f32(r, 100) for _ in range(6)]),
    ("loop16_grad", loop16_grad, 4, 32, lambda r: [_f32(r, 100) for _ in range(6)]),
    ("mul_grad strided", mul_grad, 4, 32,
     lambda r: [_f32(r, 200)[::2] for _ in range(6)]),
    ("add2d_grad", add2d_grad, (3, 2), (4, 8),
     lambda r: [_f32(r, 10, 12) for _ in range(6)]),
    ("add2d_grad transposed", add2d_grad, (3, 2), (4, 8),
     lambda r: [_f32(r, 12, 10).T for _ in range(6)]),
]


@pytest.mark.parametrize("name,kernel,grid,block,make", CASES, ids=[c[0] for c in CASES])
def test_specialised_equals_generic(name, kernel, grid, block, make):
    args = make(_rng(4))
    got = _run(kernel, grid, block, args, True)
    want = _run(kernel, grid, block, args, False)
    for g, w in zip(got, want):
        assert np.array_equal(g, w)
    assert _facts_keys(kernel)  # a specialised program ran


def test_gradient_values_with_two_shadows():
    rng = _rng(5)
    y, x, w = _f32(rng, 50), _f32(rng, 50), _f32(rng, 50)
    dy = _f32(rng, 50)
    dx, dw = np.ones(50, np.float32), np.zeros(50, np.float32)
    expect_dx, expect_dw = 1.0 + dy * w, dy * x
    d = dy.copy()
    mul_grad[2, 32](y, d, x, dx, w, dw)
    np.testing.assert_allclose(dx, expect_dx, rtol=1e-6)
    np.testing.assert_allclose(dw, expect_dw, rtol=1e-6)
    assert np.array_equal(d, np.zeros(50, np.float32))  # the cotangent consumed


# ---------------------------------------------------------------------------
# Fallbacks: overlapping arrays
# ---------------------------------------------------------------------------

def test_in_place_kernel_same_array_twice():
    rng = _rng(6)
    a = _f32(rng, 64)
    spec, gen = a.copy(), a.copy()
    scale_shift[2, 32](spec, spec)
    _run(scale_shift, 2, 32, [gen, gen], False)
    assert np.array_equal(spec, 2.0 * a + 1.0)
    S.ENABLED = False
    try:
        scale_shift[2, 32](gen, gen)
    finally:
        S.ENABLED = True
    assert np.array_equal(spec, gen)


def test_overlapping_views_fall_back():
    rng = _rng(7)
    a = _f32(rng, 65)
    got = a.copy()
    shift_left[3, 32](got[:64], got)  # y overlaps x: no noalias
    want = a.copy()
    S.ENABLED = False
    try:
        shift_left[3, 32](want[:64], want)
    finally:
        S.ENABLED = True
    assert np.array_equal(got, want)
    assert all(k.startswith("noalias=0") for k in _facts_keys(shift_left))


def test_gradient_with_aliasing_shadows_matches_generic():
    # dy and dx one array (an in-place gradient): the generic order
    rng = _rng(8)
    y, x, d = _f32(rng, 64), _f32(rng, 64), _f32(rng, 64)
    shared_s, shared_g = d.copy(), d.copy()
    scale_shift_grad[2, 32](y.copy(), shared_s, x, shared_s)
    S.ENABLED = False
    try:
        scale_shift_grad[2, 32](y.copy(), shared_g, x, shared_g)
    finally:
        S.ENABLED = True
    assert np.array_equal(shared_s, shared_g)
    # each element: d = 0 (consumed) then d += 2 * d_old; loads-first would give d + 2 d
    assert np.array_equal(shared_s, 2.0 * d)


def test_no_compiler_falls_back_to_generic(monkeypatch):
    @dg.kernel
    def inc(a, b):
        i = dg.global_id(0)
        if i < len(a):
            a[i] = b[i] + 1.0

    a, b = np.zeros(16, np.float32), np.arange(16, dtype=np.float32)
    S.ENABLED = False
    try:
        inc[1, 16](a, b)  # the generic program, compiled
    finally:
        S.ENABLED = True
    monkeypatch.setattr(L, "compiler_available", lambda: False)
    monkeypatch.setattr(L, "build_payload", lambda *a, **k: pytest.fail("compiled"))
    f0 = L.STATS["generic_fallback"]
    a[:] = 0
    inc[1, 16](a, b)
    assert L.STATS["generic_fallback"] == f0 + 1
    assert np.array_equal(a, b + 1.0)


# ---------------------------------------------------------------------------
# PTX (compiled here, no GPU needed)
# ---------------------------------------------------------------------------

def _ptx(kernel, *args, grid=8, block=128):
    from diffgpu.driver.compiler import has_nvptx
    if not has_nvptx():
        pytest.skip("these MLIR bindings have no NVPTX backend")
    return kernel.ir(*args, stage="ptx", target="sm_90", grid=grid, block=block)


def _body(ptx):
    return "\n".join(line.split("//")[0] for line in ptx.splitlines()
                     if not line.strip().startswith("//"))


def test_ptx_gradient_loads_first_nc_no_strides():
    rng = _rng(9)
    ptx = _body(_ptx(scale_shift_grad, *(_f32(rng, 64) for _ in range(4))))
    mem = re.findall(r"\b(ld\.global(?:\.nc)?|st\.global|atom\.global)", ptx)
    assert mem == ["ld.global.nc", "ld.global", "ld.global", "st.global", "st.global",
                   "st.global"], mem
    # contiguous: the lean ABI, pointer and size per array (no offset, no strides)
    from diffgpu.lowering.gpu.nvvm import entry_param_count
    assert entry_param_count(ptx, "scale_shift_grad") == 8
    assert "mul.lo.s64" not in ptx


def test_ptx_aliasing_and_generic_keep_the_order():
    rng = _rng(10)
    d = _f32(rng, 64)
    # dy is dx: no noalias, no ld.global.nc; ld dy, st dy = 0, then ld dx
    ptx = _body(_ptx(scale_shift_grad, _f32(rng, 64), d, _f32(rng, 64), d))
    mem = re.findall(r"\b(ld\.global(?:\.nc)?|st\.global|atom\.global)", ptx)
    assert mem == ["ld.global", "st.global", "ld.global", "st.global", "ld.global",
                   "st.global"], mem
    # the generic program: the launch guard and its atomic branch
    S.ENABLED = False
    try:
        ptx = _body(_ptx(scale_shift_grad, *(_f32(rng, 64) for _ in range(4))))
    finally:
        S.ENABLED = True
    assert "ld.global.nc" not in ptx and "atom.global.add.f32" in ptx and "%nctaid.y" in ptx


def test_ptx_two_shadows_no_atomics():
    rng = _rng(11)
    ptx = _body(_ptx(mul_grad, *(_f32(rng, 64) for _ in range(6))))
    assert "atom." not in ptx and ptx.count("ld.global.nc") == 2


def test_load_hoisting_is_linear_in_the_block(monkeypatch, tmp_path):
    """The loads-first order looks at each op of a block a bounded number of
    times (it used to scan back from every load: 1.9 M `writes_of` calls and
    7 s for a 1000-term straight-line kernel)."""
    import importlib.util

    from diffgpu.lowering.facts import load_order as SP

    calls = [0]
    real = SP.writes_of

    def counting(op, args):
        calls[0] += 1
        return real(op, args)

    monkeypatch.setattr(SP, "writes_of", counting)
    counts = []
    for n in (100, 400):
        src = ("import diffgpu as dg\n@dg.kernel\ndef k(Y, X):\n    Y[0] = "
               + " + ".join(f"X[{i % 16}] * {i}.0" for i in range(n)) + "\n")
        path = tmp_path / f"hoist{n}.py"
        path.write_text(src)
        spec = importlib.util.spec_from_file_location(f"hoist{n}", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        calls[0] = 0
        y, x = np.zeros(1), np.arange(16, dtype=np.float64)
        mod.k[1, 1](y, x)
        assert y[0] == sum(x[i % 16] * i for i in range(n))
        counts.append(calls[0])
    assert counts[0] > 0, "the hoisting did not run (no launch facts?)"
    assert counts[1] < 5 * counts[0], counts  # 4x the ops: linear, not 16x

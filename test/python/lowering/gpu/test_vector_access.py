"""diffgpu-vector-access (lowering/gpu/vector_access.py): the rows that
dg.load_vec4 / dg.load_quat read and dg.store writes become one vector
instruction behind a run-time alignment test, counted in the sm_90 PTX
(compiled here without a GPU); rows of 3 and the CPU are left alone."""
import re
from collections import Counter

import numpy as np
import pytest

import diffgpu as dg
from diffgpu import switches
from diffgpu.frontend import vector_arrays
from diffgpu.lowering.gpu import vector_access


def _accesses(ptx):
    return Counter(m for m in re.findall(r"\b(?:ld|st)\.[\w.]+", ptx)
                   if ".param" not in m and ".local" not in m)


def _copy_kernel(load):
    @dg.kernel
    def copy_rows(out, x):
        i = dg.global_id(0)
        if i < x.shape[0]:
            dg.store(out, i, load(x, i) * 2.0)
    return copy_rows


def test_vec4_row_is_one_vector_load_and_store():
    k = _copy_kernel(dg.load_vec4)
    x = np.zeros((1024, 4), np.float32)
    n = _accesses(k.ir(np.zeros_like(x), x, stage="ptx", target="sm_90", grid=3, block=256))
    assert n["ld.v4.f32"] == 1 and n["st.global.v4.b32"] == 1
    # the other branch (a row not aligned): the four scalar accesses
    assert n["ld.global.nc.b32"] == 4 and n["st.global.b32"] == 4


def test_vector_load_address_keeps_64_bits_under_index32():
    """With 32-bit index arithmetic (launch fact index32) the row's address is a
    GEP from the 64-bit pointer, not an index cast back to a pointer: the
    register the ld.v4 reads is not a sign- or zero-extended 32-bit value."""
    k = _copy_kernel(dg.load_vec4)
    x = np.zeros((1024, 4), np.float32)
    ptx = k.ir(np.zeros_like(x), x, stage="ptx", target="sm_90", grid=3, block=256)
    reg = re.search(r"ld\.v4\.f32 \{[^}]*\}, \[(%rd\d+)\]", ptx).group(1)
    definition = re.search(rf"^\s*(\S+)\s+{re.escape(reg)},", ptx, re.M).group(1)
    assert definition in ("cvta.global.u64", "add.s64", "mad.wide.s32", "mad.wide.u32"), \
        definition


def test_float64_vec2_row():
    k = _copy_kernel(dg.load_vec2)
    x = np.zeros((1024, 2))
    n = _accesses(k.ir(np.zeros_like(x), x, stage="ptx", target="sm_90", grid=3, block=256))
    assert n["ld.v2.f64"] == 1 and n["st.global.v2.b64"] == 1


def test_vec3_rows_stay_scalar():
    k = _copy_kernel(dg.load_vec3)
    x = np.zeros((1024, 3), np.float32)
    n = _accesses(k.ir(np.zeros_like(x), x, stage="ptx", target="sm_90", grid=3, block=256))
    assert not any(".v" in m for m in n)
    assert n["ld.global.nc.b32"] == 3 and n["st.global.b32"] == 3


def test_switch_off(monkeypatch):
    monkeypatch.setenv(switches.VECTOR_ACCESS, "0")
    k = _copy_kernel(dg.load_vec4)
    x = np.zeros((1024, 4), np.float32)
    n = _accesses(k.ir(np.zeros_like(x), x, stage="ptx", target="sm_90", grid=3, block=256))
    assert not any(".v" in m for m in n)


def test_frontend_marks_only_vector_rows():
    k = _copy_kernel(dg.load_vec4)
    x = np.zeros((8, 4), np.float32)
    ir = k.ir(np.zeros_like(x), x)
    assert ir.count(vector_arrays.ROW_ATTR) == 8  # four loads, four stores
    assert vector_arrays.ROW_ATTR == vector_access.ROW_ATTR


@pytest.mark.parametrize("view", ["contiguous", "offset", "strided"])
def test_cpu_results_unchanged(view):
    """The mark is inert on the CPU: any layout of the rows copies right."""
    k = _copy_kernel(dg.load_vec4)
    base = np.random.default_rng(0).standard_normal((16, 9)).astype(np.float32)
    x = {"contiguous": np.ascontiguousarray(base[:, :4]), "offset": base[:, 1:5],
         "strided": base[:, ::2][:, :4]}[view]
    out = np.zeros((16, 4), np.float32)
    k[1, 16](out, x)
    np.testing.assert_array_equal(out, x * 2.0)


def test_forward_mode_tangent_rows_are_vector_loads_too():
    """dg.fwddiff keeps the mark on the tangent loads: the primal row and the
    tangent row are one ld.v4 each."""
    k = _copy_kernel(dg.load_vec4)

    @dg.kernel
    def fwd(out, dout, x, dx):
        dg.fwddiff(k, dg.Duplicated(out, dout), dg.Duplicated(x, dx))
    a = [np.zeros((1024, 4), np.float32) for _ in range(4)]
    n = _accesses(fwd.ir(*a, stage="ptx", target="sm_90", grid=3, block=256))
    assert n["ld.v4.f32"] == 2

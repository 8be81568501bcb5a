"""Arrays of 4 dimensions: launch checks, indexing with any strides, shape,
atomics with 4 indices, and their derivatives (in-kernel dg.autodiff, host
dg.autodiff, dg.vjp, dg.jvp, dg.gradcheck); 5 dimensions are refused."""
from __future__ import annotations

import numpy as np
import pytest

import diffgpu as dg

import kernels_rank4 as K

SHAPE = (3, 2, 4, 5)


def _strided(rng, dtype=np.float64):
    """A 4-d view with a negative, a 2-element and a transposed stride."""
    base = rng.uniform(-1, 1, (3, 4, 10, 4)).astype(dtype)
    v = base[::-1, ::2, ::2, :].transpose(0, 1, 3, 2)
    assert v.shape == SHAPE and not v.flags.c_contiguous
    return v


def test_indexing_shape_and_strides():
    rng = np.random.default_rng(0)
    a = _strided(rng)
    b = np.zeros(SHAPE)[:, :, :, ::-1]
    K.scale4[1, 4](a, b, 0.5)
    want = 0.5 * a * a + np.arange(5)[::-1][None, None, None, ::-1]
    np.testing.assert_allclose(b, want, rtol=1e-15)
    out = np.zeros(3, np.int64)
    K.rank_info[1, 1](np.zeros(SHAPE, np.float32), out)
    np.testing.assert_array_equal(out, [4, 5, 3])


def test_atomics_with_four_indices():
    rng = np.random.default_rng(1)
    a = _strided(rng, np.float32)
    out = np.zeros((3, 2, 4, 1), np.float32)
    K.sum_last4[1, 4](a, out)
    np.testing.assert_allclose(out[..., 0], np.sin(a).sum(axis=3), rtol=1e-5)


def test_derivatives_in_kernel_host_vjp_jvp():
    rng = np.random.default_rng(2)
    a = _strided(rng)
    db_seed = rng.uniform(-1, 1, SHAPE)
    want = 2 * 0.5 * a * db_seed  # d/dA of <dB, s A^2>
    # in-kernel dg.autodiff
    da, b, db = np.zeros(SHAPE), np.zeros(SHAPE), db_seed.copy()
    K.d_scale4[1, 4](a, da, b, db, 0.5)
    np.testing.assert_allclose(da, want, rtol=1e-13)
    # host dg.autodiff
    da, b, db = np.zeros(SHAPE), np.zeros(SHAPE), db_seed.copy()
    dg.autodiff(K.scale4[1, 4], dg.Duplicated(a, da), dg.Duplicated(b, db), 0.5)
    np.testing.assert_allclose(da, want, rtol=1e-13)
    # dg.vjp / dg.jvp
    g = dg.vjp(K.scale4[1, 4], a, np.zeros(SHAPE), 0.5, cotangents={"B": db_seed})
    np.testing.assert_allclose(g["A"], want, rtol=1e-13)
    np.testing.assert_allclose(g["s"], (a * a * db_seed).sum(), rtol=1e-12)
    ta = rng.uniform(-1, 1, SHAPE)
    t = dg.jvp(K.scale4[1, 4], a, np.zeros(SHAPE), 0.5, tangents={"A": ta, "s": 0.0})
    np.testing.assert_allclose(t["B"], 2 * 0.5 * a * ta, rtol=1e-13)


def test_gradcheck_rank4_atomics():
    rng = np.random.default_rng(3)
    a = rng.uniform(-1, 1, (2, 2, 2, 3))
    out = np.zeros((2, 2, 2, 1))
    assert dg.gradcheck(K.sum_last4[1, 2], dg.Duplicated(a, np.zeros_like(a)),
                        dg.Duplicated(out, np.zeros_like(out)))


def test_rank4_compiles_for_the_gpu():
    a = np.zeros(SHAPE, np.float32)
    ptx = K.d_scale4.ir(a, a, a, a, 0.5, stage="ptx", target="sm_90")
    assert ".entry d_scale4" in ptx
    entry = ptx[ptx.index(".entry d_scale4"):]
    params = entry[:entry.index(")")]
    assert params.count(".ptr") == 4  # A, dA, B, dB
    from diffgpu.abi import memref_words
    assert memref_words(4) == 11  # pointer pair, offset, 4 sizes, 4 strides


def test_five_dimensions_are_refused():
    a = np.zeros((1, 1, 1, 1, 2), np.float32)
    with pytest.raises(dg.LaunchError, match="5-d array; diffgpu arrays have 1 to 4 dimensions"):
        K.rank_info[1, 1](a, np.zeros(3, np.int64))


def test_shared_array_of_four_dimensions():
    a = np.arange(16, dtype=np.float32)
    out = np.zeros(1, np.float32)
    K.shared4[1, 16](a, out)
    assert out[0] == float((a * np.arange(1, 17)).sum())

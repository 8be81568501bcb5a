"""numpy masked arrays are rejected with a LaunchError before anything runs
(a kernel would read the masked values and ignore the mask)."""
import numpy as np
import pytest

import diffgpu as dg
from diffgpu.errors import LaunchError


@dg.kernel
def k_double(A, B):
    i = dg.global_id(0)
    if i < len(A):
        A[i] = 2.0 * A[i]
        B[i] = B[i] + A[i]


def _masked():
    return np.ma.masked_array([1.0, 2.0, 3.0], mask=[False, True, False])


def _arrays():
    return np.array([1.0, 2.0, 3.0]), np.zeros(3)


def test_plain_launch_rejects_masked_array():
    A, _ = _arrays()
    M = _masked()
    with pytest.raises(LaunchError, match=r"argument 1 \('B'\): numpy masked arrays are "
                                          r"not supported.*x\.filled\(value\)"):
        k_double[1, 3](A, M)
    np.testing.assert_array_equal(A, [1.0, 2.0, 3.0])  # nothing ran
    np.testing.assert_array_equal(M.data, [1.0, 2.0, 3.0])


def test_masked_array_without_a_mask_is_rejected_too():
    A, _ = _arrays()
    with pytest.raises(LaunchError, match="masked arrays"):
        k_double[1, 3](np.ma.masked_array(A), np.zeros(3))


@pytest.mark.parametrize("mode", ["autodiff", "fwddiff"])
def test_differentiation_rejects_masked_shadow_and_primal(mode):
    A, B = _arrays()
    fn = getattr(dg, mode)
    with pytest.raises(LaunchError, match="masked arrays"):
        fn(k_double[1, 3], dg.Duplicated(A, _masked()), dg.Duplicated(B, np.ones(3)))
    with pytest.raises(LaunchError, match="masked arrays"):
        fn(k_double[1, 3], dg.Duplicated(_masked(), np.ones(3)), dg.Duplicated(B, np.ones(3)))
    np.testing.assert_array_equal(A, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(B, np.zeros(3))

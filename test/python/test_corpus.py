"""The kernel corpus (kernels_corpus.py): IR verifies, and each kernel run on
the CPU through the public API matches its numpy reference, in float32 and
float64."""
import numpy as np
import pytest

from kernels_corpus import CASES
from diffgpu.frontend import build_module
from diffgpu.lowering.targets import HOST_TARGET, nvvm_target
from diffgpu.types import ArrayType, ScalarType

DTYPES = [np.float32, np.float64]
IDS = [c.name for c in CASES]


def arg_types(args):
    out = []
    for a in args:
        if isinstance(a, np.ndarray):
            out.append(ArrayType(a.dtype.name, a.ndim))
        elif isinstance(a, (bool, int)):
            out.append(ScalarType("int64"))
        else:
            out.append(ScalarType("float64"))
    return tuple(out)


def test_corpus_size():
    assert len(CASES) >= 40
    assert len(set(IDS)) == len(IDS)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CASES, ids=IDS)
@pytest.mark.parametrize("target", [HOST_TARGET, nvvm_target("sm_90")], ids=["host", "sm_90"])
def test_corpus_ir_verifies(case, dtype, target):
    from diffgpu._mlir import ir
    from diffgpu.dialects import make_context
    ms = build_module(case.kernel, arg_types(case.make(dtype, np)), target)
    module = ir.Module.parse(ms.text, make_context())
    assert module.operation.verify()
    assert ms.entry == case.kernel.name


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_corpus_cpu_matches_numpy(case, dtype):
    args = case.make(dtype, np)
    expected = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    case.ref(*expected)
    case.kernel[case.grid, case.block](*args)
    tol = dict(rtol=2e-5, atol=2e-5) if dtype == np.float32 else dict(rtol=1e-11, atol=1e-11)
    for k, (got, want) in enumerate(zip(args, expected)):
        if isinstance(got, np.ndarray):
            np.testing.assert_allclose(got, want, err_msg=f"argument {k}", **tol)

"""dg.torch on float16 and bfloat16 tensors: stored in 16 bits, computed in
float32, gradients accumulated in float32 (dg.vjp) and returned in the
tensor's dtype. CPU bfloat16 tensors reach diffgpu as numpy views of their
bits (ml_dtypes' bfloat16); CUDA ones as they are (runtime/torch16.py).

Every result is checked against torch's float32 computation on the same
16-bit values and cotangents, rounded once (half_bridge.assert_rounded).
The `gpu` tests run the same on CUDA (without MLIR: the cache
`python test/python/interop_kernels.py --prepare .gpucache` wrote).
"""
import os
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (the H200 run covers "
                                            "these tests: test_torch.py says why not CI)")

import diffgpu as dg  # noqa: E402
import diffgpu.torch as dgt  # noqa: E402
from interop_kernels import DTYPES16, OPS, TEST_ARGS, reference, wrap  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import half_bridge as H  # noqa: E402

OPS_T = {name: wrap(dgt, name) for name in [*OPS, "gather"]}
gpu = pytest.mark.gpu


def _outs(x):
    return x if isinstance(x, tuple) else (x,)


def _tensor(v, dtype, device="cpu", grad=False):
    t = torch.tensor(v).to(getattr(torch, dtype)).to(device)
    return t.requires_grad_() if grad else t


def check_op(name, dtype, device="cpu", fn=None):
    """Forward and backward of op `name` (or `fn`, the op compiled) on
    16-bit tensors against float32 torch on the same values."""
    vals = [a if isinstance(a, float) else H.values(a, dtype, seed=k)
            for k, a in enumerate(TEST_ARGS[name])]
    args = [v if isinstance(v, float) else _tensor(v, dtype, device, grad=True) for v in vals]
    outs = _outs((fn or OPS_T[name])(*args))
    cots = [_tensor(H.values(tuple(o.shape), dtype, seed=10 + k), dtype, device)
            for k, o in enumerate(outs)]
    torch.autograd.backward(outs, cots)
    ref_args = [v if isinstance(v, float) else torch.tensor(v, requires_grad=True) for v in vals]
    refs = _outs(reference(name, torch, *ref_args))
    torch.autograd.backward(refs, [c.float().cpu() for c in cots])
    for k, (o, r) in enumerate(zip(outs, refs)):
        assert o.dtype == getattr(torch, dtype) and o.device == torch.device(device)
        H.assert_rounded(o.detach().float().cpu(), r.detach(), dtype, f"{name} output {k}")
    for k, (a, r) in enumerate(zip(args, ref_args)):
        if isinstance(a, torch.Tensor):
            assert a.grad.dtype == a.dtype and a.grad.device == a.device
            H.assert_rounded(a.grad.float().cpu(), r.grad, dtype, f"{name} gradient {k}")


def check_gather(dtype, device="cpu"):
    """x's gradient sums 3584 cotangents into x[0]: in float32, rounded once."""
    x, idx, cot, grad = H.gather_case(dtype)
    xt = _tensor(x, dtype, device, grad=True)
    y = OPS_T["gather"](xt, torch.tensor(idx, device=device))
    H.assert_rounded(y.detach().float().cpu(), x[idx], dtype)
    y.backward(_tensor(cot, dtype, device))
    assert xt.grad.dtype == xt.dtype
    H.assert_rounded(xt.grad.float().cpu(), grad, dtype)


def check_sum_backward(dtype, device="cpu"):
    """y.sum().backward(): torch's cotangent of y is a stride-0 expansion of
    one element, taken as it is (on a GPU without MLIR: the generic
    programs, prepared for contiguous cotangents)."""
    x = _tensor(H.values(70, dtype, 0), dtype, device, grad=True)
    OPS_T["square_scale"](x, 1.5).sum().backward()
    assert x.grad.dtype == x.dtype and x.grad.device == x.device
    H.assert_rounded(x.grad.float().cpu(), 3.0 * x.detach().float().cpu(), dtype)


@pytest.mark.parametrize("dtype", DTYPES16)
def test_sum_backward_expanded_cotangent(dtype):
    check_sum_backward(dtype)


@pytest.mark.parametrize("dtype", DTYPES16)
@pytest.mark.parametrize("name", sorted(OPS))
def test_forward_and_backward_equal_reference_to_16bit_rounding(name, dtype):
    check_op(name, dtype)


@pytest.mark.parametrize("dtype", DTYPES16)
def test_gradient_accumulated_in_float32(dtype):
    check_gather(dtype)


def test_bfloat16_views_share_memory_any_strides():
    # a transposed (non-contiguous) bfloat16 input is read in place, and the
    # gradient comes back as a bfloat16 tensor owning diffgpu's array
    base = _tensor(H.values((3, 5), "bfloat16", 0), "bfloat16")
    x = base.t().requires_grad_()
    w = _tensor(H.values((3, 4), "bfloat16", 1), "bfloat16", grad=True)
    b = _tensor(H.values((4,), "bfloat16", 2), "bfloat16", grad=True)
    assert not x.is_contiguous()
    view = dgt._host_view(x.detach())
    assert view.dtype.name == "bfloat16" and view.ctypes.data == x.data_ptr()
    assert view.strides == tuple(2 * s for s in x.stride())
    y = OPS_T["dense_tanh"](x, w, b)
    y.sum().backward()
    want = torch.tanh(x.detach().float() @ w.detach().float() + b.detach().float())
    H.assert_rounded(y.detach().float(), want, "bfloat16")
    assert x.grad.dtype == torch.bfloat16 and x.grad.shape == (5, 3)


def test_mixed_dtypes_follow_the_float32_float64_rules():
    # as float32 with float64: each input keeps its dtype, the output takes
    # its spec's (dense_out: x's), each gradient its input's
    x = _tensor(H.values((5, 3), "float16", 0), "float16", grad=True)
    w = torch.tensor(H.values((3, 4), "float16", 1), requires_grad=True)      # float32
    b = _tensor(H.values((4,), "bfloat16", 2), "bfloat16", grad=True)
    y = OPS_T["dense_tanh"](x, w, b)
    assert y.dtype == torch.float16
    y.sum().backward()
    assert (x.grad.dtype, w.grad.dtype, b.grad.dtype) == (torch.float16, torch.float32,
                                                          torch.bfloat16)
    x32, w32, b32 = (t.detach().float().requires_grad_() for t in (x, w, b))
    torch.tanh(x32 @ w32 + b32).backward(torch.ones(5, 4))
    H.assert_rounded(x.grad.float(), x32.grad, "float16")
    np.testing.assert_allclose(w.grad, w32.grad, rtol=1e-5, atol=1e-6)
    H.assert_rounded(b.grad.float(), b32.grad, "bfloat16")


def test_compile_fullgraph_bfloat16():
    op = OPS_T["square_scale"]
    check_op("square_scale", "bfloat16",
             fn=torch.compile(lambda x, a: op(x, a), fullgraph=True, backend="aot_eager"))


@pytest.mark.parametrize("dtype", DTYPES16)
def test_opcheck(dtype):
    x = _tensor(H.values(9, dtype, 0), dtype, grad=True)
    torch.library.opcheck(OPS_T["square_scale"]._op, (x, 2.0))


def test_clear_errors():
    op = OPS_T["square_scale"]
    for dtype in (torch.int16, torch.uint8, torch.complex64, torch.bool):
        with pytest.raises(dg.LaunchError, match=f"input 'x' has dtype {dtype}; diffgpu arrays "
                                                 "are float32, float64, float16, bfloat16"):
            op(torch.ones(4, dtype=dtype), 2.0)
    spec = OPS["square_scale"]
    half_out = dgt.op(spec[0], outputs={"y": lambda x, **_: (x.shape, torch.int16)},
                      scalars={"a": float}, grid=1, block=32)
    with pytest.raises(dg.LaunchError, match="output 'y': dtype torch.int16"):
        half_out(torch.ones(4, dtype=torch.float16), 2.0)


def test_bfloat16_without_ml_dtypes_is_a_launch_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "ml_dtypes", None)  # `import ml_dtypes` fails
    x = _tensor(np.ones(4, np.float32), "bfloat16")
    with pytest.raises(dg.LaunchError, match="need the ml_dtypes package"):
        OPS_T["square_scale"](x, 2.0)


def test_prepare_bfloat16_for_the_gpu(tmp_path, monkeypatch):
    # op.prepare on bfloat16 CPU tensors (their numpy views): the forward and
    # reverse programs for sm_90, without a GPU
    monkeypatch.setenv("DIFFGPU_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(OPS["square_scale"][0], "_programs", {})  # none compiled in memory
    x = _tensor(H.values(70, "bfloat16", 0), "bfloat16", grad=True)
    OPS_T["square_scale"].prepare("sm_90", x, 1.5)
    entries = H.gpu_entries(tmp_path)
    assert {"square_scale", "__dg_reverse_square_scale"} <= set(entries)
    assert all(".target sm_90" in p["ptx"] for ps in entries.values() for p in ps)


# -- GPU: the same on CUDA (float16 through CuPy, bfloat16 through torch) -------

@gpu
@pytest.mark.parametrize("dtype", DTYPES16)
@pytest.mark.parametrize("name", sorted(OPS))
def test_gpu_forward_and_backward_equal_reference_to_16bit_rounding(cuda, name, dtype):
    check_op(name, dtype, device=cuda)


@gpu
@pytest.mark.parametrize("dtype", DTYPES16)
def test_gpu_gradient_accumulated_in_float32(cuda, dtype):
    check_gather(dtype, device=cuda)


@gpu
def test_gpu_compile_fullgraph_bfloat16(cuda):
    op = OPS_T["dense_tanh"]
    check_op("dense_tanh", "bfloat16", device=cuda,
             fn=torch.compile(lambda x, w, b: op(x, w, b), fullgraph=True))


@gpu
@pytest.mark.parametrize("dtype", DTYPES16)
def test_gpu_sum_backward_expanded_cotangent(cuda, dtype):
    check_sum_backward(dtype, cuda)

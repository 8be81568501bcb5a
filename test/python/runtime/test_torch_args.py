"""torch CUDA tensors as launch arguments are read through their own
attributes (pointer, shape, strides, dtype), not torch's
`__cuda_array_interface__`, which has no bfloat16 (older torch raises,
newer says "<V2", a void type). Checked here, without torch or a GPU, on a
stand-in `torch` module with the attributes diffgpu reads; the real tensors
run in test/python/bridges/test_torch_bf16_gpu.py on the GPU."""
from __future__ import annotations

import sys
import types

import numpy as np
import pytest

from diffgpu.errors import LaunchError
from diffgpu.runtime import args as A
from diffgpu.runtime import gpu as G
from diffgpu.runtime import torch16
from diffgpu.types import ArrayType

ml_dtypes = pytest.importorskip("ml_dtypes")


class _DType:
    def __init__(self, name, size):
        self.name, self.size = name, size

    def __str__(self):
        return f"torch.{self.name}"


def _fake_torch():
    t = types.ModuleType("torch")
    t.strided, t.sparse_coo = object(), object()
    for name, size in (("bfloat16", 2), ("float16", 2), ("float32", 4), ("int8", 1)):
        setattr(t, name, _DType(name, size))

    class Tensor:
        def __init__(self, dtype, shape, stride=None, ptr=0x7000_0000, cuda=True,
                     requires_grad=False, layout=None):
            self.dtype, self.shape = dtype, tuple(shape)
            c = []
            acc = 1
            for n in reversed(self.shape):
                c.insert(0, acc)
                acc *= n
            self._stride = tuple(stride) if stride is not None else tuple(c)
            self._contiguous = self._stride == tuple(c)
            self._ptr, self.is_cuda, self.requires_grad = ptr, cuda, requires_grad
            self.layout = t.strided if layout is None else layout
            self.device = types.SimpleNamespace(type="cuda", index=0)

        @property
        def __cuda_array_interface__(self):  # torch's, for bfloat16: it raises (older torch)
            raise KeyError(self.dtype)

        def element_size(self):
            return self.dtype.size

        def is_contiguous(self):
            return self._contiguous

        def stride(self):
            return self._stride

        def data_ptr(self):
            return self._ptr

        def numel(self):
            return int(np.prod(self.shape))

    t.Tensor = Tensor
    return t


@pytest.fixture
def torch(monkeypatch):
    t = _fake_torch()
    monkeypatch.setitem(sys.modules, "torch", t)
    return t


def test_bfloat16_tensor_types_and_packs(torch):
    x = torch.Tensor(torch.bfloat16, (6, 10))
    assert A.is_device_array(x)
    assert A.arg_type(x, "argument 0") == (ArrayType("bfloat16", 2), "gpu")
    cai = A.cuda_interface(x)
    assert np.dtype(cai["typestr"]) == np.dtype(ml_dtypes.bfloat16)
    assert cai["strides"] is None and cai["data"] == (0x7000_0000, False)
    # pointer twice, offset 0, sizes, strides in elements
    assert [int(v) for v in G.pack_args([x], [ArrayType("bfloat16", 2)])] == \
        [0x7000_0000, 0x7000_0000, 0, 6, 10, 10, 1]
    assert [int(v) for v in G.pack_args([x], [ArrayType("bfloat16", 2)], lean=[True])] == \
        [0x7000_0000, 6, 10]
    assert A.device_id(x) == 0


def test_strided_float16_view_keeps_its_strides(torch):
    v = torch.Tensor(torch.float16, (4, 5), stride=(20, 2), ptr=0x7000_0010)
    assert A.arg_type(v, "argument 0")[0] == ArrayType("float16", 2)
    assert A.cuda_interface(v)["strides"] == (40, 4)  # bytes
    assert [int(s) for s in G.pack_args([v], [ArrayType("float16", 2)])[-2:]] == [20, 2]


def test_a_signature_of_torch_and_scalars(torch):
    y, x = torch.Tensor(torch.bfloat16, (8,)), torch.Tensor(torch.bfloat16, (8,))
    sig = A.infer_signature([y, x, np.float32(2.0)], ["y", "x", "a"])
    assert sig.device == "gpu" and sig.gpu_id == 0
    assert [str(t) for t in sig.types] == ["bfloat16[:]", "bfloat16[:]", "float32"]


@pytest.mark.parametrize("make, message", [
    (lambda t: t.Tensor(t.bfloat16, (4,), requires_grad=True), "requires grad"),
    (lambda t: t.Tensor(t.int8, (4,)), "unsupported dtype torch.int8"),
    (lambda t: t.Tensor(t.float32, (4,), layout=t.sparse_coo), "pass a dense one"),
])
def test_bad_tensors_are_launch_errors(torch, make, message):
    with pytest.raises(LaunchError, match=message):
        A.arg_type(make(torch), "argument 1 ('x')")


def test_only_bfloat16_cuda_tensors_need_torch_buffers(torch):
    assert torch16.handles(torch.Tensor(torch.bfloat16, (4,)))
    assert not torch16.handles(torch.Tensor(torch.float16, (4,)))  # CuPy has float16
    assert not torch16.handles(torch.Tensor(torch.bfloat16, (4,), cuda=False))
    assert not torch16.handles(np.zeros(4, ml_dtypes.bfloat16))
    assert torch16.device_result(object(), "bfloat16")
    assert not torch16.device_result(np.zeros(4, np.float32), "bfloat16")
    assert not torch16.device_result(object(), np.float16)


def test_the_buffers_read_torch_tensors_through_their_attributes(torch):
    from diffgpu.hostdiff import buffers as M
    x = torch.Tensor(torch.bfloat16, (3, 4), stride=(8, 1), ptr=0x7000_0100)
    assert M.dtype_of(x) == "bfloat16" and M.shape_of(x) == (3, 4)
    assert M.is_half(x)
    assert M.layout(x) == (0x7000_0100, (3, 4), (16, 2), np.dtype(ml_dtypes.bfloat16).str)
    assert M.byte_range(x) == (0x7000_0100, 0x7000_0100 + 2 * 16 + 3 * 2 + 2)

"""torch float16 / bfloat16 CUDA tensors as kernel arguments on the GPU:
launches (contiguous and strided views), `dg.vjp` (gradients of 16-bit inputs,
float32 scratch shadows rounded once) and host-level `dg.autodiff` with the
caller's 16-bit shadows, against the CPU's results on numpy (ml_dtypes)
arrays that `python test/python/bridges/torch16_kernels.py --prepare .gpucache`
stored here (with the sm_90 programs: the GPU machine has no MLIR). And
bfloat16 tensors inside a `dg.Tape`: recorded, their versions copied.

The `gpu` tests skip without CuPy + a GPU (conftest), torch with CUDA, or the
prepared results. The CPU test checks what the preparation writes.
"""
from __future__ import annotations

import importlib.util
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch16_kernels as K  # noqa: E402

import diffgpu as dg  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
CHECK_DIR = os.environ.get("DIFFGPU_GPU_CHECK_DIR", os.path.join(REPO, ".gpucache"))
HAS_MLIR = importlib.util.find_spec("mlir") is not None
#: max |GPU - CPU| / max(1, max |CPU|) of a 16-bit result (a few roundings:
#: the order of atomics, the GPU's exp/log against the CPU's)
HALF_TOL = 2e-2

gpu = pytest.mark.gpu


def _torch_cuda():
    try:
        import torch
    except ImportError:
        pytest.skip("torch is not installed")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA device")
    return torch


@pytest.fixture
def expected(monkeypatch):
    """The CPU's results; without MLIR, the prepared cache's programs."""
    path = os.path.join(CHECK_DIR, "torch16.npz")
    if not os.path.exists(path):
        pytest.skip(f"no prepared results in {path} "
                    "(python test/python/bridges/torch16_kernels.py --prepare .gpucache)")
    if not HAS_MLIR:
        monkeypatch.setenv("DIFFGPU_CACHE_DIR", os.path.join(CHECK_DIR, "cache"))
    return dict(np.load(path))


class TorchArrays:
    """The calls' arrays as torch CUDA tensors of one 16-bit dtype."""

    def __init__(self, torch, dtype):
        self.torch, self.dtype = torch, getattr(torch, dtype)

    def make(self, values: dict) -> dict:
        t = self.torch
        return {k: t.tensor(v, device="cuda") if v.dtype.kind == "i"
                else t.tensor(v, device="cuda").to(self.dtype) for k, v in values.items()}

    def zeros_like(self, x):
        return self.torch.zeros_like(x)

    def zeros32(self, n):
        return self.torch.zeros(n, dtype=self.torch.float32, device="cuda")

    def ones32(self, n):
        return self.torch.ones(n, dtype=self.torch.float32, device="cuda")


def _dtype_name(x) -> str:
    return str(x.dtype).rpartition(".")[2]


@gpu
@pytest.mark.parametrize("dtype", K.DTYPES16)
@pytest.mark.parametrize("call", sorted(K.CALLS))
def test_torch16_matches_cpu(expected, call, dtype):
    torch = _torch_cuda()
    m = TorchArrays(torch, dtype)
    got = K.CALLS[call](m, m.make(K.inputs(dtype)))
    torch.cuda.synchronize()
    for k, g in enumerate(got):
        want = expected[K.expected_key(call, dtype, k)]
        if call != "autodiff" or k == 1:  # (autodiff's loss is float32)
            assert _dtype_name(g) == dtype, (call, k, type(g), g.dtype)
        if call.startswith("launch"):  # in place: the caller's tensor
            assert isinstance(g, torch.Tensor)
        g32 = K.as32(g)
        assert g32.shape == want.shape
        err = float(np.max(np.abs(g32 - want)))
        assert err <= HALF_TOL * max(1.0, float(np.max(np.abs(want)))), (call, dtype, k, err)


@gpu
def test_bfloat16_vjp_returns_torch_tensors_on_the_inputs_device(expected):
    torch = _torch_cuda()
    m = TorchArrays(torch, "bfloat16")
    a = m.make(K.inputs("bfloat16"))
    grads = dg.vjp(K.scale_add[K.GRID, K.B], a["y"], a["x"], np.float32(0.75),
                   cotangents={"y": a["g"]})
    for name in ("y", "x"):
        assert isinstance(grads[name], torch.Tensor)
        assert grads[name].dtype == torch.bfloat16 and grads[name].device == a["x"].device


@gpu
def test_bfloat16_tensors_are_recorded_by_a_tape(expected):
    """A bfloat16 tensor inside a `dg.Tape` (seen through CuPy 14's bfloat16):
    the launch runs as it does outside (the prepared program), and the
    version it overwrites is kept as a byte copy of the tensor before it.
    (The gradients: scripts/gpu_tape_check.py's bfloat16 rows, whose
    preparation compiles the tape's reverse programs.)"""
    torch = _torch_cuda()
    m = TorchArrays(torch, "bfloat16")
    a = m.make(K.inputs("bfloat16"))
    y0 = a["y"].clone()
    plain = a["y"].clone()
    K.scale_add[K.GRID, K.B](plain, a["x"], np.float32(0.75))
    with dg.Tape() as tape:
        K.scale_add[K.GRID, K.B](a["y"], a["x"], np.float32(0.75))
    torch.cuda.synchronize()
    assert torch.equal(a["y"], plain)
    (op,) = tape.operations
    assert tape.stats["snapshots"] == 1 and tape.stats["snapshot_bytes"] == 2 * y0.numel()
    kept = torch.from_dlpack(op.snaps[0].array)
    assert kept.dtype == torch.bfloat16 and torch.equal(kept, y0)


@gpu
def test_requires_grad_tensor_is_refused(expected):
    torch = _torch_cuda()
    x = torch.ones(8, dtype=torch.bfloat16, device="cuda", requires_grad=True)
    y = torch.zeros(8, dtype=torch.bfloat16, device="cuda")
    with pytest.raises(dg.LaunchError, match="requires grad"):
        K.scale_add[1, K.B](y, x, np.float32(1.0))
    assert not y.any()


@pytest.mark.skipif(not HAS_MLIR, reason="the preparation compiles with MLIR")
def test_prepare_writes_every_result_and_gpu_program(tmp_path, monkeypatch):
    monkeypatch.setenv("DIFFGPU_CACHE_DIR", str(tmp_path / "other"))
    assert K.prepare(str(tmp_path), "sm_90") == 0
    got = np.load(tmp_path / "torch16.npz")
    want = {K.expected_key(c, d, k) for d in K.DTYPES16 for c in K.CALLS
            for k in range(2 if c in ("vjp", "autodiff") else 1)}
    assert set(got.files) == want
    a = K.inputs("bfloat16")  # dx of scale_add's vjp: 2 a x g, rounded to bfloat16 once
    ref = 2 * 0.75 * a["x"].astype(np.float64) * a["g"]
    assert np.max(np.abs(got["vjp/bfloat16/1"] - ref)) <= 2.0 ** -8 * np.max(np.abs(ref))
    import json
    entries = {}
    for f in os.listdir(tmp_path / "cache" / "v1"):
        data = (tmp_path / "cache" / "v1" / f).read_bytes()
        payload = json.loads(data[data.find(b"\n") + 1:])
        if payload.get("kind") == "gpu":
            entries.setdefault(payload["entry"], []).append(payload)
    # the launch and the three reverse kernels, for sm_90, specialised and generic
    assert {"scale_add", "__dg_reverse_scale_add", "__dg_reverse_gather2",
            "__dg_reverse_softplus_loss"} <= set(entries)
    assert all(len(v) >= 2 for v in entries.values())
    ptx = entries["__dg_reverse_gather2"][0]["ptx"]
    assert ".target sm_90" in ptx

"""lowering/common/targets.py is the one reader of target attributes: its
parameters, the chip, and what the NVVM backend cannot take (to_gpu)."""
import pytest

from diffgpu.lowering.common import targets as T


def test_parameters_as_written():
    assert T.target_params('#nvvm.target<O = 3, chip = "sm_90", features = "+ptx80">') == {
        "O": "3", "chip": "sm_90", "features": "+ptx80"}
    assert T.target_params(T.HOST_TARGET) == {"triple": "x86_64-unknown-linux-gnu",
                                              "chip": "generic"}
    p = T.target_params('#nvvm.target<link = ["a.bc", "b.bc"], flags = {ftz}>')
    assert p["link"] == "[" and p["flags"] == "{"
    assert T.chip_of("#nvvm.target<O = 3>") == "sm_50"  # MLIR's default, omitted
    assert T.chip_of('#nvvm.target<chip = "sm_80">') == "sm_80"
    assert T.chip_of(T.HOST_TARGET) is None


@pytest.mark.parametrize("text, problem", [
    ('#nvvm.target<chip = "sm_90">', None),
    ('#nvvm.target<O = 7, chip = "sm_90">', "O must be 0, 1, 2 or 3, got '7'"),
    ('#nvvm.target<chip = "sm_90", triple = "x86_64">',
     "triple must be one of nvptx64-nvidia-cuda, nvptx-nvidia-cuda, got 'x86_64'"),
    ('#nvvm.target<chip = "sm_90", features = "+sse">', "features must be '+ptxNN', got '+sse'"),
    ('#nvvm.target<chip = "sm_12">', "unknown"),
    ('#nvvm.target<chip = "sm_90", features = "+ptx80">', None),
    ('#nvvm.target<chip = "sm_90", link = ["a.bc"]>', "'link' (extra bitcode libraries)"),
])
def test_backend_problems(text, problem):
    got = T.gpu_target_problem(text)
    assert (got is None) if problem is None else (problem in got), got


def test_target_kinds_of_attributes_and_text():
    from diffgpu._mlir import ir
    from diffgpu.dialects import make_context

    with make_context():
        gpu = ir.Attribute.parse(T.nvvm_target("sm_80"))
        default_chip = ir.Attribute.parse("#nvvm.target<O = 3>")
        host = ir.Attribute.parse(T.HOST_TARGET)
        other = ir.Attribute.parse('"#nvvm.target<chip = \\"sm_90\\">"')  # a string
        assert T.is_gpu(gpu) and T.is_gpu(default_chip) and not T.is_host(gpu)
        assert T.is_host(host) and not T.is_gpu(host)
        assert not T.is_gpu(other) and not T.is_host(other)
    assert T.is_gpu('#nvvm.target<chip = "sm_90">') and T.is_host(T.HOST_TARGET)
    assert not T.is_gpu(None) and not T.is_host(None)

"""lowering/targets.py is the one reader of target attributes: its
parameters, the chip, and what the NVVM backend cannot take (to_gpu)."""
import pytest

from diffgpu.lowering import targets as T


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

"""The compile driver verifies the pipeline's output once (per-pass
verification off outside the tests); invalid IR is an internal CompileError,
never a crash later."""
import pytest

from diffgpu.driver import compiler
from diffgpu._mlir import ir
from diffgpu.errors import CompileError


def test_the_test_suite_verifies_after_every_pass():
    assert compiler.VERIFY_EACH  # conftest sets DIFFGPU_VERIFY_EACH=1


def test_invalid_result_is_an_internal_compile_error():
    with compiler.context(), ir.Location.unknown():
        module = ir.Module.parse("func.func @f(%a: f32) -> f32 { return %a : f32 }")
        compiler._verify_result(module)  # valid: nothing
        body = module.body.operations[0].regions[0].blocks[0]
        body.operations[0].erase()  # the terminator: a block that does not end
        with pytest.raises(CompileError, match="internal compiler error: the pipeline "
                                               "produced invalid IR"):
            compiler._verify_result(module)


"""The host's bfloat16 rounding (runtime/jit.py `add_bf16_rounding`): LLVM
rounds float32 to bfloat16 with a call to `__truncsfbf2`, which libgcc has
only from GCC 13 on; the JIT defines it in the module. Checked bit for bit
against ml_dtypes (to nearest even; NaN stays a NaN of its sign) at O0 (the
tests' level, where bfloat16 values cross blocks in registers) and O2, also on
a host whose CPU converts float32 to bfloat16 itself (AVX512-BF16: its
instruction reads denormals as zero, so the module is compiled without it)."""
import numpy as np
import pytest

import diffgpu as dg

ml_dtypes = pytest.importorskip("ml_dtypes")
BF16 = ml_dtypes.bfloat16


@dg.kernel
def narrow(y, x):
    i = dg.global_id(0)
    if i < len(x):
        y[i] = x[i]


SPECIAL = np.array([0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001,
                    0xFF800001, 0x7F7FFFFF, 0xFF7FFFFF, 0x00008000, 0x00018000,
                    0x3F808000, 0x3F818000, 0x3F807FFF, 1, 0x807FFFFF], np.uint32)


@pytest.mark.parametrize("level", ["0", "2"])
def test_float32_to_bfloat16_matches_ml_dtypes(level, monkeypatch):
    monkeypatch.setenv("DIFFGPU_OPT", level)
    rng = np.random.default_rng(7)
    bits = np.concatenate([SPECIAL, rng.integers(0, 2**32, 1 << 16, dtype=np.uint64)
                           .astype(np.uint32)])
    x = bits.view(np.float32)
    y = np.zeros(len(x), BF16)
    narrow[(len(x) + 255) // 256, 256](y, x)
    with np.errstate(invalid="ignore"):
        want = x.astype(BF16)
    got, ref = y.view(np.uint16), want.view(np.uint16)
    nan = np.isnan(x)
    assert np.array_equal(got[~nan], ref[~nan])
    assert np.all(np.isnan(y[nan].astype(np.float32)))
    assert np.array_equal(got[nan] >> 15, (bits[nan] >> 31).astype(np.uint16))


def test_definition_added_once():
    from diffgpu._mlir import ir
    from diffgpu.runtime import jit

    module = jit.parse_text("module {}")
    assert jit.add_bf16_rounding(module)
    assert not jit.add_bf16_rounding(module)
    names = [ir.StringAttr(op.operation.attributes["sym_name"]).value
             for op in module.body.operations]
    assert names == [jit.BF16_ROUNDING]


def test_functions_compiled_without_the_hardware_bf16_conversion():
    # vcvtneps2bf16 (AVX512-BF16, AVX-NE-CONVERT) reads a denormal float32 as 0:
    # on such a host the test above failed for 245 of its inputs without this
    from diffgpu.runtime import jit

    module = jit.parse_text("module { llvm.func @f() { llvm.return } }")
    assert jit.add_bf16_rounding(module)
    feats = [str(op.operation.attributes["target_features"]) for op in module.body.operations]
    assert feats == [jit.NO_BF16_CONVERT] * 2
    assert "-avx512bf16" in feats[0] and "-avxneconvert" in feats[0]

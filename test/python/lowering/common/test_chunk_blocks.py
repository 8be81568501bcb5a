"""`diffgpu-chunk-blocks` (lowering/common/chunk_blocks.py): before
`convert-scf-to-cf`, no block of a host program is long.

`convert-scf-to-cf` splits a block after each `scf.if` it lowers, moving the
ops that follow one at a time; the CPU's bounds checks put one `scf.if` per
load and store in the thread's loop body, so a kernel of N accesses moved
N * N / 2 ops (the native pass took 20 s of a 1,000-statement gradient).
Chunks bound what one split moves; the program computes the same values.
"""
import importlib.util

import numpy as np

from diffgpu.driver import compiler
from diffgpu._mlir import ir
from diffgpu.lowering.common.chunk_blocks import CHUNK_OPS
from diffgpu.lowering.common.diagnostics import run_passes
from diffgpu.lowering.common.ir_util import visit_blocks
from diffgpu.lowering.pipelines import build_pass_manager, expand, parse_pipeline


def flat_sum(tmp_path, n):
    """Y[i] = X[i] * 1.0 + X[i + 1] * 2.0 + ... (n loads: n bounds checks)."""
    terms = " + ".join(f"X[i + {j % 8}] * {j + 1}.0" for j in range(n))
    path = tmp_path / f"flat{n}.py"
    path.write_text("import diffgpu as dg\n\n\n@dg.kernel\ndef k(Y, X):\n"
                    "    i = dg.global_id(0)\n    if i < len(Y):\n"
                    f"        Y[i] = {terms}\n")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.k


def longest_block_before_scf_to_cf(text: str) -> int:
    """The most ops (static allocas apart) of a block when `diffgpu-to-host`
    reaches `convert-scf-to-cf`."""
    steps = [e.text() for e in expand(parse_pipeline("diffgpu-to-host"))]
    ctx = compiler.new_context()
    with ctx:
        module = ir.Module.parse(text)
        run_passes(build_pass_manager(steps[:steps.index("convert-scf-to-cf")], ctx), module)
        sizes = []
        visit_blocks(module.operation, lambda b: sizes.append(sum(
            1 for o in b.operations if not (o.operation.name == "memref.alloca"
                                            and not len(o.operation.operands)))))
    return max(sizes)


def test_host_blocks_are_chunked_before_scf_to_cf(tmp_path):
    n = 600
    k = flat_sum(tmp_path, n)
    x, y = np.arange(16, dtype=np.float64), np.zeros(8)
    assert longest_block_before_scf_to_cf(k.ir(y, x)) <= 2 * CHUNK_OPS + 1
    k[1, 8](y, x)
    want = [sum(x[i + j % 8] * (j + 1) for j in range(n)) for i in range(8)]
    np.testing.assert_allclose(y, want, rtol=1e-12)


def test_chunks_go_straight_to_scf_to_cf():
    """Between the chunking and convert-scf-to-cf nothing runs: a greedy
    rewrite (math-expand-ops ran there in the GPU pipeline) asks of each
    execute_region whether it is dead, a walk of every chunk nested in it,
    which made it quadratic (1.6 s of a 600-statement gradient's PTX)."""
    for pipeline in ("diffgpu-to-host", "diffgpu-to-ptx{chip=sm_90}"):
        steps = [e.text() for e in expand(parse_pipeline(pipeline))]
        at = steps.index("diffgpu-chunk-blocks")
        assert steps[at + 1].replace("gpu.module(", "").startswith("convert-scf-to-cf"), steps

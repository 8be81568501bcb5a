"""The GPU's shuffle algorithms of the block and warp collectives
(lowering/gpu/collectives.py `_fast`: butterflies, warp slots, Kogge-Stone
scans), run on the CPU: built with the dialect's own `diffgpu.shuffle` and
`diffgpu.barrier` in place of `gpu.shuffle` / `gpu.barrier` (the CPU
emulates a shuffle exactly), they must give the CPU's expansion's results
bit for bit (float32), which is the claim that both add in one order."""
import inspect

import numpy as np
import pytest

from diffgpu._mlir import ir
from diffgpu.dialects import names as N
from diffgpu.dialects import ops as dg
from diffgpu.lowering.common import collective_ir as C
from diffgpu.lowering.common import session
from diffgpu.lowering.common.ir_util import walk
from diffgpu.lowering.gpu import collectives as GC
from diffgpu.driver.compiler import compile_host as _compile_host
from host_ir_helpers import array_types, compile_host, kernel, mem

#: (op, attributes) per output row
ROWS = [(N.WARP_REDUCE, 'kind = "sum"'), (N.WARP_REDUCE, 'kind = "max"'),
        (N.WARP_REDUCE, 'kind = "min"'), (N.BLOCK_REDUCE, 'kind = "sum"'),
        (N.BLOCK_REDUCE, 'kind = "max"'), (N.BLOCK_REDUCE, 'kind = "min"'),
        (N.BLOCK_SCAN, "reverse = false"), (N.BLOCK_SCAN, "reverse = true")]


def _text():
    body = ['  %tx = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index',
            '  %ty = "diffgpu.thread_id"() {dim = 1 : i64} : () -> index',
            '  %bx = "diffgpu.block_dim"() {dim = 0 : i64} : () -> index',
            "  %l0 = arith.muli %bx, %ty : index",
            "  %lin = arith.addi %tx, %l0 : index",
            f"  %v = memref.load %X[%lin] : {mem('f32')}"]
    for k, (name, attrs) in enumerate(ROWS):
        body += [f'  %r{k} = "{name}"(%v) {{{attrs}}} : (f32) -> f32',
                 f"  %k{k} = arith.constant {k} : index",
                 f"  memref.store %r{k}, %Y[%k{k}, %lin] : {mem('f32', 2)}"]
    body.append("  return")
    return kernel("k", [("X", mem("f32")), ("Y", mem("f32", 2))], "\n".join(body))


def _via_shuffles(text, planned=False):
    """`text` with every block/warp reduction and scan replaced by the GPU's
    shuffle algorithm, in diffgpu ops (`planned`: with the lowering's slot
    plan, if it has one, else a barrier after every read of the slots)."""
    slotted = "where" in inspect.signature(GC._fast).parameters
    with session.context(), ir.Location.unknown():
        module = ir.Module.parse(text)
        ops = walk(module, (N.WARP_REDUCE, N.BLOCK_REDUCE, N.BLOCK_SCAN))
        where = GC.plan(module, ops) if planned and hasattr(GC, "plan") else {}
        entry = ops[0].parent.regions[0].blocks[0]
        with ir.InsertionPoint.at_block_begin(entry):
            slots = dg.shared_alloc(C.shared_type(ir.F32Type.get(), 64))
        saved = GC.shuffle, GC.barrier
        GC.shuffle, GC.barrier = dg.shuffle, dg.barrier
        try:
            for op in ops:
                with ir.InsertionPoint(op), op.location:
                    lin, n = C.linear_thread()
                    extra = [where.get(op, (0, True))] if slotted else []
                    r = GC._fast(op.opview, lin, n, slots, *extra)
                op.results[0].replace_all_uses_with(r)
                op.erase()
        finally:
            GC.shuffle, GC.barrier = saved
        assert not walk(module, (N.WARP_REDUCE, N.BLOCK_REDUCE, N.BLOCK_SCAN))
        return str(module)


@pytest.mark.parametrize("block,planned", [((32, 1), False), ((64, 1), False), ((256, 1), False),
                                           ((32, 8), False), ((1024, 1), False),
                                           ((64, 1), True), ((32, 8), True)])
def test_shuffle_algorithms_match_the_cpu_expansion(block, planned):
    """`planned`: the slot arrays alternate and barriers are dropped as the
    lowering plans them; the race-checked CPU run then shows that no warp
    overwrites a slot another still reads."""
    text = _text()
    plain = compile_host(text)
    shuffled = _compile_host(_via_shuffles(text, planned), racecheck=planned)
    n = block[0] * block[1]
    rs = np.random.RandomState(n)
    x = (rs.randn(n) * 100).astype(np.float32)
    outs = []
    for prog in (plain, shuffled):
        Y = np.zeros((len(ROWS), n), np.float32)
        prog.launch("k", [x, Y], array_types(x, Y), (1, 1, 1), (block[0], block[1], 1))
        outs.append(Y)
    assert (outs[0] == outs[1]).all()
    w = x.reshape(-1, 32)
    np.testing.assert_array_equal(outs[0][1], np.repeat(w.max(1), 32))
    np.testing.assert_array_equal(outs[0][5], x.min())
    np.testing.assert_allclose(outs[0][6], np.cumsum(x.astype(np.float64)), atol=1e-2 * n)
    np.testing.assert_allclose(outs[0][7], np.cumsum(x[::-1].astype(np.float64))[::-1],
                               atol=1e-2 * n)

"""The shared IR helpers (lowering/common/ir_util.py): one walk, one symbol reader."""
from diffgpu._mlir import ir
from diffgpu.dialects import make_context
from diffgpu.dialects.ops import BarrierOp
from diffgpu.lowering.common.ir_util import callee, sym_name, walk, walk_block

TEXT = """
func.func private @g(f32) -> f32
func.func @k(%x: f32) -> f32 {
  "diffgpu.barrier"() : () -> ()
  %y = func.call @g(%x) : (f32) -> f32
  return %y : f32
}
"""


def test_walk_symbols_and_callees():
    with make_context(), ir.Location.unknown():
        module = ir.Module.parse(TEXT)
        k = module.body.operations[1]
        names = [o.name for o in walk(k)]
        assert names == ["func.func", "diffgpu.barrier", "func.call", "func.return"]
        assert [o.name for o in walk(k, include_self=False)] == names[1:]
        (call,) = walk(k, ("func.call",))
        assert callee(call) == "g" and callee(k) is None
        assert sym_name(k) == "k" and sym_name(call) is None
        ops = walk_block(k.regions[0].blocks[0])
        assert isinstance(ops[0], BarrierOp) and len(ops) == 3
        for op in walk(module.operation, ("diffgpu.barrier",)):  # safe to erase while iterating
            op.erase()
        assert "diffgpu.barrier" not in str(module)


def test_each_walk_gives_its_own_handles():
    """Why a pass must not read a handle of an erased op (ir_util's rule):
    two walks give distinct Python objects for one op, so erasing through
    one cannot mark the other invalid; it is left pointing at freed memory."""
    with make_context(), ir.Location.unknown():
        module = ir.Module.parse(TEXT)
        (first,) = walk(module.operation, ("func.call",))
        (second,) = walk(module.operation, ("func.call",))
        assert first == second and first is not second

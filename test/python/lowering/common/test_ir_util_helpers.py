"""The small readers of lowering/common/ir_util.py: types by class, symbols, integer
attributes, defining ops, a module's top-level ops, post-order walks."""
import pytest

from diffgpu._mlir import ir
from diffgpu.dialects import make_context
from diffgpu.lowering.common.ir_util import (defined_by, int_attr, lookup, scalar_name, top_ops,
                                      walk)

TEXT = """
memref.global "private" @g : memref<4xf32> = uninitialized
func.func private @ext(f32) -> f32
func.func @k(%A: memref<?xf32>, %n: index) attributes {diffgpu.coarsen = 4 : i64, s = "x"} {
  %c1 = arith.constant 1 : index
  %m = arith.addi %n, %c1 : index
  scf.for %i = %c1 to %m step %c1 {
    %x = memref.load %A[%i] : memref<?xf32>
  }
  return
}
"""


@pytest.mark.parametrize("text, name", [
    ("f32", "f32"), ("f64", "f64"), ("f16", "f16"), ("bf16", "bf16"), ("i1", "i1"),
    ("i32", "i32"), ("i64", "i64"), ("index", "index"), ("si32", None), ("ui8", None),
    ("memref<4xf32>", None), ("vector<4xf32>", None), ("complex<f32>", None),
])
def test_scalar_name_reads_the_type_class(text, name):
    with make_context():
        assert scalar_name(ir.Type.parse(text)) == name


def test_symbols_attributes_and_top_level_ops():
    with make_context(), ir.Location.unknown():
        module = ir.Module.parse(TEXT)
        k = lookup(module, "k")
        assert k.name == "func.func" and lookup(module, "g").name == "memref.global"
        assert lookup(module, "nope") is None
        assert int_attr(k, "diffgpu.coarsen", 1) == 4
        assert int_attr(k, "s", 1) == 1 and int_attr(k, "missing") is None
        assert [o.name for o in top_ops(module, ("func.func",))] == ["func.func"] * 2
        assert [o.name for o in top_ops(module, ("memref.global", "func.func"))] == \
            ["memref.global", "func.func", "func.func"]


def test_defined_by_and_post_order():
    with make_context(), ir.Location.unknown():
        module = ir.Module.parse(TEXT)
        k = lookup(module, "k")
        (add,) = walk(k, ("arith.addi",))
        lhs, rhs = add.operands
        assert defined_by(lhs, ("arith.constant",)) is None  # a block argument
        assert defined_by(rhs, ("arith.constant",)).name == "arith.constant"
        assert defined_by(rhs, ("arith.addi",)) is None
        pre = [o.name for o in walk(k)]
        post = [o.name for o in walk(k, post_order=True)]
        assert pre[0] == "func.func" and post[-1] == "func.func"
        assert post.index("memref.load") < post.index("scf.for") < post.index("func.return")
        assert pre.index("scf.for") < pre.index("memref.load")
        assert [o.name for o in walk(k, post_order=True, include_self=False)] == post[:-1]

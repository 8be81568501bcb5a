"""ir_util.apply_patterns: one-to-one rewrites as a RewritePatternSet of Python
callbacks, run by MLIR's walk-based driver (no folding, no dead-code removal)."""
import pytest

from diffgpu._mlir import ir
from diffgpu.dialects import make_context
from diffgpu.dialects.ops import BarrierOp, ThreadIdOp
from diffgpu.lowering.common.ir_util import apply_patterns, walk

TEXT = """
func.func @k(%A: memref<?xindex>) {
  %t = "diffgpu.thread_id"() {dim = 1 : i64} : () -> index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %unused = arith.addi %c2, %c3 : index
  "diffgpu.barrier"() : () -> ()
  scf.if %true {
    %u = "diffgpu.thread_id"() {dim = 2 : i64} : () -> index
    memref.store %u, %A[%t] : memref<?xindex>
  }
  return
}
"""


def _module():
    text = TEXT.replace("scf.if %true", "%true = arith.constant true\n  scf.if %true")
    return ir.Module.parse(text)


def _tid_to_gpu(seen):
    def rewrite(op, rw):
        seen.append((type(op), op.dim))
        with rw.ip:
            new = ir.Operation.create(
                "gpu.thread_id", results=[ir.IndexType.get()], loc=op.location,
                attributes={"dimension": ir.Attribute.parse(f"#gpu<dim {'xyz'[op.dim]}>")})
        rw.replace_op(op, new)
    return rewrite


def test_callbacks_get_typed_ops_and_rewrite_nested_ones():
    with make_context(), ir.Location.unknown():
        module = _module()
        k = module.body.operations[0]
        seen = []
        apply_patterns(k, {ThreadIdOp: _tid_to_gpu(seen)})
        assert seen == [(ThreadIdOp, 1), (ThreadIdOp, 2)]
        text = str(module)
        assert "diffgpu.thread_id" not in text
        assert "gpu.thread_id  y" in text and "gpu.thread_id  z" in text
        # nothing else changed: no folding, no dead-code removal
        assert "arith.addi" in text and text.count("arith.constant") == 3
        module.operation.verify()


def test_a_callback_returning_true_leaves_the_op_and_names_work():
    with make_context(), ir.Location.unknown():
        module = _module()
        k = module.body.operations[0]
        left, erased = [], []

        def keep(op, rw):
            left.append(op.operation.name)
            return True

        def drop(op, rw):
            erased.append(type(op))
            rw.erase_op(op.operation)

        apply_patterns(k, {"diffgpu.thread_id": keep, BarrierOp: drop})
        assert left == ["diffgpu.thread_id"] * 2 and erased == [BarrierOp]
        assert [o.name for o in walk(k, ("diffgpu.thread_id", "diffgpu.barrier"))] == \
            ["diffgpu.thread_id"] * 2


def test_the_root_is_not_visited():
    with make_context(), ir.Location.unknown():
        module = _module()
        k = module.body.operations[0]
        visited = []
        apply_patterns(k, {"func.func": lambda op, rw: visited.append(op) or True})
        assert visited == []


def test_an_exception_in_a_callback_propagates():
    with make_context(), ir.Location.unknown():
        module = _module()

        def broken(op, rw):
            raise RuntimeError("callback bug")

        with pytest.raises(RuntimeError, match="callback bug"):
            apply_patterns(module.body.operations[0], {BarrierOp: broken})
        assert "diffgpu.barrier" in str(module)

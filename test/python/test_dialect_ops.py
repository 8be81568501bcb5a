"""The Python builders of dialects/ops.py make ops that verify and round-trip."""
import pytest

from diffgpu._mlir import func, ir
from diffgpu.dialects import make_context, ops
from diffgpu.lowering.targets import HOST_TARGET

MEMREF = "memref<?xf32, strided<[?], offset: ?>>"


def _build(body):
    ctx = make_context()
    with ctx, ir.Location.file("k.py", 3, 5):
        module = ir.Module.create()
        t = ir.Type.parse(MEMREF)
        with ir.InsertionPoint(module.body):
            fn = func.FuncOp("k", ([t, t, ir.F32Type.get()], []))
            fn.attributes["diffgpu.target"] = ir.Attribute.parse(HOST_TARGET)
            block = fn.add_entry_block()
            with ir.InsertionPoint(block):
                body(*block.arguments)
                func.ReturnOp([])
        assert module.operation.verify()
        text = str(module)
        reparsed = ir.Module.parse(text)
        assert str(reparsed) == text
        return text


def test_geometry_barrier_atomic_shared():
    def body(A, dA, x):
        ids = [ops.geometry(n, d) for n in ("thread_id", "block_id", "block_dim", "grid_dim")
               for d in range(3)]
        old = ops.atomic_add(A, x, [ids[0]])
        assert str(old.type) == "f32"
        ops.barrier()
        s = ops.shared_alloc(ir.Type.parse("memref<4x4xf32, #gpu.address_space<workgroup>>"))
        assert "workgroup" in str(s.type)
    text = _build(body)
    for name in ("thread_id", "block_id", "block_dim", "grid_dim", "barrier",
                 "atomic_add", "shared_alloc"):
        assert f'"diffgpu.{name}"' in text


def test_builders_use_the_current_location():
    with make_context(), ir.Location.file("user.py", 7, 9):
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            ops.barrier()
        assert 'loc("user.py":7:9)' in module.operation.get_asm(enable_debug_info=True)


def test_autodiff_and_fwddiff_segments():
    target = ir.Attribute.parse  # resolved inside the context below

    def body(A, dA, x):
        tgt = target(HOST_TARGET)
        g = ops.differentiate("autodiff", "f", ["dup", "active"], [[A, dA], [x]], tgt,
                              result_types=[None, x.type])
        assert len(g.results) == 1
        t = ops.differentiate("fwddiff", "f", ["dup", "dup"], [[A, dA], [x, x]], tgt,
                              result_types=x.type)
        assert len(t.results) == 1
    text = _build(body)
    assert "operandSegmentSizes = array<i32: 0, 2, 1, 0" in text
    assert "resultSegmentSizes = array<i32: 0, 1, 0" in text


@pytest.mark.parametrize("bad", [
    lambda: ops.geometry("lane_id", 0),
    lambda: ops.thread_id(3),
])
def test_bad_builder_arguments_raise(bad):
    with make_context(), ir.Location.unknown():
        with pytest.raises(ValueError):
            bad()

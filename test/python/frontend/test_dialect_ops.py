"""The Python builders of dialects/ops.py make ops that verify and round-trip."""
import pytest

from diffgpu._mlir import func, ir
from diffgpu.dialects import make_context, ops
from diffgpu.lowering.common.targets import HOST_TARGET

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
    # groups per argument; the segments are runs of equal types (A and dA, then x)
    assert "groups = array<i32: 2, 1>" in text and "groups = array<i32: 2, 2>" in text
    assert "operandSegmentSizes = array<i32: 2, 1, 0" in text
    assert "resultSegmentSizes = array<i32: 1, 0" in text
    assert "operandSegmentSizes = array<i32: 2, 2, 0" in text  # fwddiff: A dA | x x


@pytest.mark.parametrize("bad", [
    lambda: ops.geometry("lane_id", 0),
    lambda: ops.thread_id(3),
])
def test_bad_builder_arguments_raise(bad):
    with make_context(), ir.Location.unknown():
        with pytest.raises(ValueError):
            bad()


def test_ops_come_back_as_their_typed_classes():
    """Every diffgpu op a pass meets is an instance of its OpView class, with
    named accessors decoding its attributes and operand segments."""
    def body(A, dA, x):
        tid = ops.block_dim(2)
        ops.atomic_add(A, x, [tid])
        ops.barrier()
        ops.shared_alloc(ir.Type.parse("memref<4x8xf32, #gpu.address_space<workgroup>>"))
        tgt = ir.Attribute.parse(HOST_TARGET)
        ops.differentiate("autodiff", "f", ["dup", "active"], [[A, dA], [x]], tgt,
                          seed=x, result_types=[None, x.type])
        ops.differentiate("fwddiff", "f", ["dup", "dup"], [[A, dA], [x, x]], tgt,
                          result_types=x.type)
        seen = {type(op): op for op in tid.owner.operation.block.operations}
        geo = seen[ops.BlockDimOp]
        assert isinstance(geo, ops.GeometryOp) and geo.dim == 2
        add = seen[ops.AtomicAddOp]
        assert add.memref == A and add.value == x and list(add.indices) == [tid]
        assert str(add.old.type) == "f32"
        assert ops.BarrierOp in seen
        assert seen[ops.SharedAllocOp].shape == [4, 8]
        ad = seen[ops.AutodiffOp]
        assert isinstance(ad, ops.DiffOp) and not isinstance(ad, ops.FwddiffOp)
        assert ad.callee == "f" and ad.activities == ["dup", "active"]
        assert ad.arg_groups == [[A, dA], [x]] and ad.seed == [x]
        assert [len(g) for g in ad.grads] == [0, 1]  # one group per argument
        fd = seen[ops.FwddiffOp]
        assert fd.arg_groups == [[A, dA], [x, x]] and not hasattr(fd, "seed")
        assert fd.tangent is not None and str(fd.tangent.type) == "f32"
    _build(body)


def test_names_module_imports_no_mlir():
    """The frontend reads op names and layouts from dialects/names.py, which
    must work without the MLIR bindings."""
    import subprocess
    import sys
    code = ("import sys; sys.modules['mlir'] = None\n"
            "from diffgpu.dialects import names\n"
            "lay = names.diff_layout(names.AUTODIFF, [2, 1], ['f32', 'm', 'm', 'f32'], ['f32'])\n"
            "assert lay['groups'] == [2, 1] and lay['operandSegmentSizes'][:4] == [1, 2, 1, 0]\n"
            "assert 'mlir' not in [m.split('.')[0] for m in sys.modules if sys.modules[m]]\n")
    subprocess.run([sys.executable, "-c", code], check=True)

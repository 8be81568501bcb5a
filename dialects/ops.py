"""Python builders for the diffgpu ops (dialects/diffgpu.irdl.mlir).

IRDL ops have no generated Python classes, so these build them generically at
the current insertion point and location (`with ir.InsertionPoint(...),
loc:`), the way the upstream dialect builders do:

    with ir.InsertionPoint(block), loc:
        tid = ops.thread_id(0)                     # index
        ops.atomic_add(A, v, [tid])                # returns the old value
        ops.barrier()
"""
from __future__ import annotations

from diffgpu._mlir import ir
from diffgpu.dialects import GEOMETRY_OPS, MAX_DIFF_ARGS


def _dim_attr(dim: int):
    if dim not in (0, 1, 2):
        raise ValueError(f"dimension must be 0, 1 or 2, got {dim!r}")
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), dim)


def geometry(name: str, dim: int):
    """`diffgpu.<name> {dim}` -> index; name in thread_id, block_id, block_dim, grid_dim."""
    if name not in GEOMETRY_OPS:
        raise ValueError(f"unknown geometry op {name!r}; expected one of {GEOMETRY_OPS}")
    op = ir.Operation.create(f"diffgpu.{name}", results=[ir.IndexType.get()],
                             attributes={"dim": _dim_attr(dim)})
    return op.results[0]


def thread_id(dim: int):
    return geometry("thread_id", dim)


def block_id(dim: int):
    return geometry("block_id", dim)


def block_dim(dim: int):
    return geometry("block_dim", dim)


def grid_dim(dim: int):
    return geometry("grid_dim", dim)


def barrier():
    """`diffgpu.barrier`: every thread of the block reaches it before any passes."""
    return ir.Operation.create("diffgpu.barrier")


def atomic_add(memref, value, indices):
    """`memref[indices] += value` atomically; returns the old value."""
    op = ir.Operation.create("diffgpu.atomic_add", results=[value.type],
                             operands=[memref, value] + list(indices))
    return op.results[0]


def shared_alloc(memref_type):
    """A block-shared array of static shape (`memref<... , workgroup>`)."""
    return ir.Operation.create("diffgpu.shared_alloc", results=[memref_type]).results[0]


def _segments(groups, n: int):
    sizes = [len(g) for g in groups] + [0] * (n - len(groups))
    return ir.DenseI32ArrayAttr.get(sizes)


def differentiate(name: str, callee: str, activity, args, target, *,
                  seed=None, result_types=()):
    """`diffgpu.autodiff` (name "autodiff") or `diffgpu.fwddiff` ("fwddiff").

    `args`: one list of operands per callee argument (primal, then shadow for
    "dup"/"dupnoneed"); `result_types`: per argument for autodiff (a type for
    "active" arguments, None otherwise), or the single tangent type (or None)
    for fwddiff. `target` is copied from the enclosing op by the caller.
    """
    if len(args) > MAX_DIFF_ARGS or len(args) != len(activity):
        raise ValueError(f"need one operand group per argument (at most {MAX_DIFF_ARGS})")
    attrs = {
        "callee": ir.FlatSymbolRefAttr.get(callee),
        "activity": ir.ArrayAttr.get([ir.StringAttr.get(a) for a in activity]),
        "diffgpu.target": target,
    }
    operands = [v for g in args for v in g]
    if name == "autodiff":
        groups = [[seed] if seed is not None else []] + list(args)
        attrs["operandSegmentSizes"] = _segments(groups, MAX_DIFF_ARGS + 1)
        results = [t for t in result_types if t is not None]
        attrs["resultSegmentSizes"] = _segments(
            [[t] if t is not None else [] for t in result_types], MAX_DIFF_ARGS)
        operands = ([seed] if seed is not None else []) + operands
    elif name == "fwddiff":
        attrs["operandSegmentSizes"] = _segments(list(args), MAX_DIFF_ARGS)
        results = [result_types] if result_types not in ((), None) else []
        attrs["resultSegmentSizes"] = ir.DenseI32ArrayAttr.get([len(results)])
    else:
        raise ValueError(f"expected 'autodiff' or 'fwddiff', got {name!r}")
    return ir.Operation.create(f"diffgpu.{name}", results=results, operands=operands,
                               attributes=attrs)

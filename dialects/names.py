"""Names and operand layouts of the diffgpu ops, in plain Python (no MLIR).

This module is the one place that spells a diffgpu op name or decodes an op's
operand/result segments. The typed op classes (`dialects/ops.py`, which need
the MLIR bindings) and the frontend (which emits generic IR text and must not
import MLIR) both read it:

    %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index      THREAD_ID
    %g = "diffgpu.autodiff"(%seed, %x) {callee = @f, activity = ["active"],
           operandSegmentSizes = array<i32: 1, 1, 0, ...>,        autodiff_segments(...)
           resultSegmentSizes = array<i32: 1, 0, ...>} : (f32, f32) -> f32
"""
from __future__ import annotations

DIALECT = "diffgpu"

THREAD_ID = "diffgpu.thread_id"
BLOCK_ID = "diffgpu.block_id"
BLOCK_DIM = "diffgpu.block_dim"
GRID_DIM = "diffgpu.grid_dim"
BARRIER = "diffgpu.barrier"
ATOMIC_ADD = "diffgpu.atomic_add"
ATOMIC_RMW = "diffgpu.atomic_rmw"
WARP_REDUCE = "diffgpu.warp_reduce"
BLOCK_REDUCE = "diffgpu.block_reduce"
BLOCK_SCAN = "diffgpu.block_scan"
SHUFFLE = "diffgpu.shuffle"
SHARED_ALLOC = "diffgpu.shared_alloc"
ERFINV = "diffgpu.erfinv"
ERFCINV = "diffgpu.erfcinv"
AUTODIFF = "diffgpu.autodiff"
FWDDIFF = "diffgpu.fwddiff"

#: marks the add of an Active scalar's gradient into its slot buffer (the
#: host-API derivative kernel, frontend/diff_kernel.py): the runtime sums every
#: slot, so which slot an add lands in never changes the result
ACTIVE_SLOTS_ATTR = "diffgpu.active_slots"

#: thread-geometry ops, each `() -> index` with an integer attribute `dim`
GEOMETRY = (THREAD_ID, BLOCK_ID, BLOCK_DIM, GRID_DIM)
#: the differentiation requests (reverse, forward)
DIFF = (AUTODIFF, FWDDIFF)
#: elementwise special functions without an upstream math op, `(f) -> f`
#: (expanded into math ops after autodiff: lowering/common/special_math.py)
SPECIAL_MATH = (ERFINV, ERFCINV)
#: the collectives (docs/collectives.md): threads of a warp / block exchange values
COLLECTIVES = (WARP_REDUCE, BLOCK_REDUCE, BLOCK_SCAN, SHUFFLE)
#: `kind` of warp_reduce / block_reduce, `mode` of shuffle, `kind` of atomic_rmw
REDUCE_KINDS = ("sum", "max", "min")
SHUFFLE_MODES = ("xor", "up", "down", "idx")
RMW_KINDS = ("max", "min", "exch")
#: lanes of a warp (NVIDIA); a warp is 32 consecutive linear thread indices
WARP_SIZE = 32
#: every op of the dialect, in the order of dialects/diffgpu.irdl.mlir
ALL = (GEOMETRY + (BARRIER, ATOMIC_ADD) + (ATOMIC_RMW,) + COLLECTIVES + (SHARED_ALLOC,)
       + SPECIAL_MATH + DIFF)

#: argument groups of diffgpu.autodiff / diffgpu.fwddiff (the IRDL definition
#: has one variadic operand group per callee argument, arg0 .. arg15)
MAX_DIFF_ARGS = 16
#: activities whose argument group holds the primal then its shadow/tangent
SHADOWED = ("dup", "dupnoneed", "cot", "grad")

#: operand layout of diffgpu.atomic_add: memref, value, then the indices
ATOMIC_MEMREF, ATOMIC_VALUE, ATOMIC_FIRST_INDEX = 0, 1, 2


def short(name: str) -> str:
    """`diffgpu.thread_id` -> `thread_id`."""
    return name[len(DIALECT) + 1:]


def full(short_name: str) -> str:
    """`thread_id` -> `diffgpu.thread_id`; ValueError for a name the dialect lacks."""
    name = f"{DIALECT}.{short_name}"
    if name not in ALL:
        raise ValueError(f"diffgpu has no op {short_name!r}")
    return name


def _pad(sizes, n):
    if len(sizes) > n:
        raise ValueError(f"at most {MAX_DIFF_ARGS} arguments can be differentiated")
    return list(sizes) + [0] * (n - len(sizes))


def autodiff_segments(group_sizes, has_seed: bool, activities):
    """(operandSegmentSizes, resultSegmentSizes) of a diffgpu.autodiff.

    Operands: the seed group (0 or 1 value), then one group per argument.
    Results: one group per argument, one gradient for an "active" one."""
    ops = [1 if has_seed else 0] + _pad(group_sizes, MAX_DIFF_ARGS)
    res = _pad([1 if a == "active" else 0 for a in activities], MAX_DIFF_ARGS)
    return ops, res


def fwddiff_segments(group_sizes, n_results: int):
    """(operandSegmentSizes, resultSegmentSizes) of a diffgpu.fwddiff:
    one operand group per argument; the optional tangent result."""
    return _pad(group_sizes, MAX_DIFF_ARGS), [n_results]


def split_groups(values, segments, first: int = 0):
    """Cut `values` into the groups given by `segments[first:]` (sizes)."""
    pos = sum(segments[:first])
    out = []
    for n in segments[first:]:
        out.append(list(values[pos:pos + n]))
        pos += n
    return out

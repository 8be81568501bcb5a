"""Names and operand layouts of the diffgpu ops, in plain Python (no MLIR).

This module is the one place that spells a diffgpu op name or decodes an op's
operand/result segments. The typed op classes (`dialects/ops.py`, which need
the MLIR bindings) and the frontend (which emits generic IR text and must not
import MLIR) both read it:

    %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index      THREAD_ID
    %g = "diffgpu.autodiff"(%seed, %x) {callee = @f, activity = ["active"],
           groups = array<i32: 1>,                                diff_layout(...)
           operandSegmentSizes = array<i32: 2, 0, ...>,
           resultSegmentSizes = array<i32: 1, 0, ...>} : (f32, f32) -> f32

The layout of diffgpu.autodiff / diffgpu.fwddiff (docs/IR.md): the operands
are one list, the seed (autodiff, 0 or 1 value) then the operands of each
callee argument in order; `groups` gives how many operands each argument has
(1, or 2 with a shadow). `operandSegmentSizes` / `resultSegmentSizes` exist
only for IRDL, which binds one type variable per variadic group: they cut the
list into runs of equal types (MAX_TYPE_RUNS groups). Nothing reads them back;
`split_diff_operands` decodes an op from `groups` alone.
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
STOP_GRADIENT = "diffgpu.stop_gradient"
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
#: unit attribute on the loads and stores of a vector's components (the frontend's
#: dg.load_vec4 etc.): diffgpu-vector-access merges such a row into one vector access
VECTOR_ROW = "diffgpu.vector_row"
#: every op of the dialect, in the order of dialects/diffgpu.irdl.mlir
ALL = (GEOMETRY + (BARRIER, ATOMIC_ADD) + (ATOMIC_RMW,) + COLLECTIVES + (SHARED_ALLOC,)
       + SPECIAL_MATH + (STOP_GRADIENT,) + DIFF)

#: variadic groups of the IRDL definition of diffgpu.autodiff / fwddiff
#: (operands; results of autodiff): runs of equal types, so that any number
#: of arguments fits as long as their types change at most this many times
#: (at least MAX_TYPE_RUNS - 1 arguments of any types)
MAX_TYPE_RUNS = 128
#: the attribute holding the operand count of each callee argument
GROUPS_ATTR = "groups"
#: reverse mode's `dup` of a 16-bit float array whose shadow is a float32
#: array of its shape (the host API's scratch shadows: docs/language.md,
#: 16-bit floats): the gradients accumulate in float32, the host rounds once
DUP32 = "dup32"
#: the host API's `dup` of an array that only dg.atomic_max (or only
#: dg.atomic_min) updates, in a launch after the forward: its primal holds
#: the forward's final values, NaN where the original value won
#: (docs/collectives.md, atomic max and min)
RMW_FINAL = "rmw"
#: activities whose argument group holds the primal then its shadow/tangent
SHADOWED = ("dup", "dupnoneed", "cot", "grad", DUP32, RMW_FINAL)

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


class LayoutError(ValueError):
    """A diffgpu.autodiff / fwddiff whose operands the layout cannot hold."""


def type_runs(types) -> list[int]:
    """Lengths of the runs of equal consecutive `types` (strings or MLIR types)."""
    runs = []
    prev = object()
    for t in types:
        if runs and t == prev:
            runs[-1] += 1
        else:
            runs.append(1)
        prev = t
    return runs


def _segments(types, what: str) -> list[int]:
    runs = type_runs(types)
    if len(runs) > MAX_TYPE_RUNS:
        raise LayoutError(
            f"the {what} types change {len(runs) - 1} times along the argument list; "
            f"a differentiation op holds at most {MAX_TYPE_RUNS} runs of equal types "
            "(reorder the parameters so that arguments of one type are adjacent)")
    return runs + [0] * (MAX_TYPE_RUNS - len(runs))


def diff_layout(op: str, group_sizes, operand_types, result_types) -> dict:
    """The layout attributes of a diffgpu.autodiff / fwddiff (`op`: AUTODIFF or
    FWDDIFF) as lists: `groups`, `operandSegmentSizes` and, for autodiff,
    `resultSegmentSizes`. `operand_types`: of the whole operand list (seed
    first); raises LayoutError past MAX_TYPE_RUNS."""
    out = {GROUPS_ATTR: list(group_sizes),
           "operandSegmentSizes": _segments(operand_types, "operand")}
    if op == AUTODIFF:
        out["resultSegmentSizes"] = _segments(result_types, "gradient")
    return out


def split_diff_operands(values, group_sizes):
    """(seed, groups) of a diffgpu.autodiff / fwddiff's operand list: the seed
    is what precedes the argument groups ([] or [value]), each group the
    operands of one callee argument. Raises LayoutError when `group_sizes`
    does not fit `values`."""
    values = list(values)
    n_seed = len(values) - sum(group_sizes)
    if n_seed not in (0, 1) or any(n < 0 for n in group_sizes):
        raise LayoutError(f"'{GROUPS_ATTR}' {list(group_sizes)} does not fit "
                          f"{len(values)} operands")
    return values[:n_seed], split_groups(values[n_seed:], group_sizes)


def split_groups(values, sizes):
    """Cut `values` into consecutive groups of the given sizes."""
    pos, out = 0, []
    for n in sizes:
        out.append(list(values[pos:pos + n]))
        pos += n
    return out

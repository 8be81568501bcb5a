"""Typed op classes and Python builders for the diffgpu ops (diffgpu.irdl.mlir).

IRDL gives no generated Python classes, so this module defines them the way
upstream's generated `_<dialect>_ops_gen.py` files do: one `OpView` subclass per
op, registered with the bindings, so that every diffgpu op a pass meets is
already an instance of its class and passes test `isinstance(op, AutodiffOp)`
and read `op.callee`, never a name string or a segment layout. Names and layouts
come from `dialects/names.py` (no MLIR there, so the frontend shares them).

The builders create ops at the current insertion point and location:

    with ir.InsertionPoint(block), loc:
        tid = ops.thread_id(0)                     # index
        ops.atomic_add(A, v, [tid])                # returns the old value
        ops.barrier()
"""
from __future__ import annotations

from diffgpu._mlir import ir
from diffgpu.dialects import names
from mlir._mlir_libs import _mlir as _cext


@_cext.register_dialect
class _Dialect(ir.Dialect):
    DIALECT_NAMESPACE = names.DIALECT


def _op(name):
    """Register an OpView subclass for the op `name`."""
    def wrap(cls):
        cls.OPERATION_NAME = name
        cls._ODS_REGIONS = (0, True)
        return _cext.register_operation(_Dialect)(cls)
    return wrap


def opview(op):
    """The typed view of `op` (an `ir.Operation` or an `OpView`)."""
    return op.operation.opview


class GeometryOp(ir.OpView):
    """Base of the thread-geometry ops: `%i = "diffgpu.thread_id"() {dim = 0 : i64}`."""

    @property
    def dim(self) -> int | None:
        """The dimension (0, 1, 2 = x, y, z), or None when `dim` is missing
        or not an integer."""
        attrs = self.operation.attributes
        a = attrs["dim"] if "dim" in attrs else None
        return a.value if isinstance(a, ir.IntegerAttr) else None


@_op(names.THREAD_ID)
class ThreadIdOp(GeometryOp):
    """Index of the thread in its block along `dim`."""


@_op(names.BLOCK_ID)
class BlockIdOp(GeometryOp):
    """Index of the block in the grid along `dim`."""


@_op(names.BLOCK_DIM)
class BlockDimOp(GeometryOp):
    """Threads per block along `dim`."""


@_op(names.GRID_DIM)
class GridDimOp(GeometryOp):
    """Blocks per grid along `dim`."""


GEOMETRY_CLASSES = (ThreadIdOp, BlockIdOp, BlockDimOp, GridDimOp)


@_op(names.BARRIER)
class BarrierOp(ir.OpView):
    """`"diffgpu.barrier"()`: no thread of the block passes before all reach it."""


@_op(names.ATOMIC_ADD)
class AtomicAddOp(ir.OpView):
    """`%old = "diffgpu.atomic_add"(%A, %v, %i...)`: A[i...] += v atomically."""

    @property
    def memref(self):
        return self.operation.operands[names.ATOMIC_MEMREF]

    @property
    def value(self):
        return self.operation.operands[names.ATOMIC_VALUE]

    @property
    def indices(self):
        return list(self.operation.operands)[names.ATOMIC_FIRST_INDEX:]

    @property
    def old(self):
        return self.operation.results[0]


@_op(names.ATOMIC_RMW)
class AtomicRmwOp(ir.OpView):
    """`%old = "diffgpu.atomic_rmw"(%A, %v, %i...) {kind = "max"}`: A[i...] = max(A[i...], v)
    ("min": min, "exch": v) atomically; operands as atomic_add (not a subclass
    of AtomicAddOp: no pass may take it for an addition)."""

    memref = AtomicAddOp.memref
    value = AtomicAddOp.value
    indices = AtomicAddOp.indices
    old = AtomicAddOp.old

    @property
    def kind(self) -> str | None:
        return _str_attr(self, "kind")


def _str_attr(op, name):
    attrs = op.operation.attributes
    a = attrs[name] if name in attrs else None
    return a.value if isinstance(a, ir.StringAttr) else None


class CollectiveOp(ir.OpView):
    """Base of the collectives: operand 0 is the value each thread contributes."""

    @property
    def value(self):
        return self.operation.operands[0]

    @property
    def result(self):
        return self.operation.results[0]


@_op(names.WARP_REDUCE)
class WarpReduceOp(CollectiveOp):
    """`%r = "diffgpu.warp_reduce"(%v) {kind = "sum"}`: over the warp's lanes."""

    @property
    def kind(self) -> str | None:
        return _str_attr(self, "kind")


@_op(names.BLOCK_REDUCE)
class BlockReduceOp(CollectiveOp):
    """`%r = "diffgpu.block_reduce"(%v) {kind = "sum"}`: over the block's threads."""

    @property
    def kind(self) -> str | None:
        return _str_attr(self, "kind")


@_op(names.BLOCK_SCAN)
class BlockScanOp(CollectiveOp):
    """`%r = "diffgpu.block_scan"(%v) {reverse = false}`: inclusive prefix (suffix) sum."""

    @property
    def reverse(self) -> bool:
        attrs = self.operation.attributes
        return "reverse" in attrs and bool(ir.IntegerAttr(attrs["reverse"]).value)


@_op(names.SHUFFLE)
class ShuffleOp(CollectiveOp):
    """`%r = "diffgpu.shuffle"(%v, %k) {mode = "xor"}`: %v of lane `lane ^ k`, ..."""

    @property
    def mode(self) -> str | None:
        return _str_attr(self, "mode")

    @property
    def lane(self):
        return self.operation.operands[1]


COLLECTIVE_CLASSES = (WarpReduceOp, BlockReduceOp, BlockScanOp, ShuffleOp)


@_op(names.SHARED_ALLOC)
class SharedAllocOp(ir.OpView):
    """`%s = "diffgpu.shared_alloc"() : () -> memref<16x16xf32, #gpu.address_space<workgroup>>`."""

    @property
    def memref_type(self):
        return ir.MemRefType(self.operation.results[0].type)

    @property
    def shape(self):
        return list(self.memref_type.shape)


class SpecialMathOp(ir.OpView):
    """Base of the elementwise special functions: `%y = "diffgpu.erfinv"(%x) : (f32) -> f32`."""

    @property
    def x(self):
        return self.operation.operands[0]


@_op(names.ERFINV)
class ErfinvOp(SpecialMathOp):
    """Inverse error function."""


@_op(names.ERFCINV)
class ErfcinvOp(SpecialMathOp):
    """Inverse complementary error function."""


@_op(names.STOP_GRADIENT)
class StopGradientOp(ir.OpView):
    """`%y = "diffgpu.stop_gradient"(%x) : (f32) -> f32`: x, constant for derivatives."""

    @property
    def x(self):
        return self.operation.operands[0]


class DiffOp(ir.OpView):
    """Base of `diffgpu.autodiff` / `diffgpu.fwddiff` (docs/IR.md): one operand
    list (the seed, then each argument's operands), cut by the `groups`
    attribute (names.split_diff_operands, the only decoder)."""

    @property
    def callee(self) -> str:
        return ir.FlatSymbolRefAttr(self.operation.attributes["callee"]).value

    @property
    def activities(self) -> list:
        return [ir.StringAttr(a).value
                for a in ir.ArrayAttr(self.operation.attributes["activity"])]

    @property
    def arg_segments(self) -> list:
        """Operand count of each callee argument (the `groups` attribute)."""
        attrs = self.operation.attributes
        if names.GROUPS_ATTR not in attrs:
            raise names.LayoutError(f"'{self.operation.name}' has no "
                                    f"'{names.GROUPS_ATTR}' attribute")
        return list(ir.DenseI32ArrayAttr(attrs[names.GROUPS_ATTR]))

    def split(self):
        """(operands before the argument groups, per-argument groups): the seed
        of an autodiff ([] or [value]); a valid fwddiff has none."""
        return names.split_diff_operands(self.operation.operands, self.arg_segments)

    @property
    def operand_segments(self) -> list:
        """[number of seed operands] + arg_segments (autodiff); arg_segments (fwddiff)."""
        seed, _ = self.split()
        return ([len(seed)] if isinstance(self, AutodiffOp) else []) + self.arg_segments

    @property
    def arg_groups(self) -> list:
        """Per callee argument, its operands: the primal, then its shadow if any."""
        return self.split()[1]


@_op(names.AUTODIFF)
class AutodiffOp(DiffOp):
    """Reverse-mode derivative request: operands seed?, then each argument's;
    results: the gradient of each "active" argument, in order."""

    @property
    def seed(self) -> list:
        """[] or [the adjoint seed of the callee's scalar result]."""
        return self.split()[0]

    @property
    def grads(self) -> list:
        """Per argument, its gradient results ([g] for an "active" one, else [])."""
        res = iter(self.operation.results)
        return [[next(res)] if a == "active" else [] for a in self.activities]


@_op(names.FWDDIFF)
class FwddiffOp(DiffOp):
    """Forward-mode derivative request: each argument's operands; optional result tangent."""

    @property
    def tangent(self):
        res = self.operation.results
        return res[0] if len(res) else None


DIFF_CLASSES = (AutodiffOp, FwddiffOp)


def _dim_attr(dim: int):
    if dim not in (0, 1, 2):
        raise ValueError(f"dimension must be 0, 1 or 2, got {dim!r}")
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), dim)


def geometry(name: str, dim: int):
    """`diffgpu.<name> {dim}` -> index; name in thread_id, block_id, block_dim, grid_dim."""
    full = f"{names.DIALECT}.{name}"
    if full not in names.GEOMETRY:
        short = tuple(names.short(n) for n in names.GEOMETRY)
        raise ValueError(f"unknown geometry op {name!r}; expected one of {short}")
    op = ir.Operation.create(full, results=[ir.IndexType.get()],
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
    return ir.Operation.create(names.BARRIER)


def atomic_add(memref, value, indices):
    """`memref[indices] += value` atomically; returns the old value."""
    op = ir.Operation.create(names.ATOMIC_ADD, results=[value.type],
                             operands=[memref, value] + list(indices))
    return op.results[0]


def atomic_rmw(kind: str, memref, value, indices):
    """`memref[indices] = kind(memref[indices], value)` atomically (kind in
    names.RMW_KINDS); returns the old value."""
    if kind not in names.RMW_KINDS:
        raise ValueError(f"atomic_rmw kind must be one of {names.RMW_KINDS}, got {kind!r}")
    op = ir.Operation.create(names.ATOMIC_RMW, results=[value.type],
                             operands=[memref, value] + list(indices),
                             attributes={"kind": ir.StringAttr.get(kind)})
    return op.results[0]


def reduce(scope: str, kind: str, value):
    """`diffgpu.warp_reduce` (scope "warp") / `diffgpu.block_reduce` ("block")."""
    name = {"warp": names.WARP_REDUCE, "block": names.BLOCK_REDUCE}[scope]
    if kind not in names.REDUCE_KINDS:
        raise ValueError(f"reduce kind must be one of {names.REDUCE_KINDS}, got {kind!r}")
    return ir.Operation.create(name, results=[value.type], operands=[value],
                               attributes={"kind": ir.StringAttr.get(kind)}).results[0]


def block_scan(value, reverse: bool = False):
    """Inclusive prefix sum over the block (`reverse`: the suffix sum)."""
    return ir.Operation.create(names.BLOCK_SCAN, results=[value.type], operands=[value],
                               attributes={"reverse": ir.BoolAttr.get(bool(reverse))}).results[0]


def shuffle(mode: str, value, lane):
    """`diffgpu.shuffle {mode}` of `value`; `lane`: an i32 value."""
    if mode not in names.SHUFFLE_MODES:
        raise ValueError(f"shuffle mode must be one of {names.SHUFFLE_MODES}, got {mode!r}")
    return ir.Operation.create(names.SHUFFLE, results=[value.type], operands=[value, lane],
                               attributes={"mode": ir.StringAttr.get(mode)}).results[0]


def shared_alloc(memref_type):
    """A block-shared array of static shape (`memref<... , workgroup>`)."""
    return ir.Operation.create(names.SHARED_ALLOC, results=[memref_type]).results[0]


def stop_gradient(x):
    """`diffgpu.stop_gradient` of the float `x`."""
    return ir.Operation.create(names.STOP_GRADIENT, results=[x.type], operands=[x]).results[0]


def special_math(name: str, x):
    """`diffgpu.erfinv` / `diffgpu.erfcinv` of the float `x` (names.SPECIAL_MATH)."""
    assert name in names.SPECIAL_MATH, name
    return ir.Operation.create(name, results=[x.type], operands=[x]).results[0]


def differentiate(name: str, callee: str, activity, args, target, *,
                  seed=None, result_types=()):
    """`diffgpu.autodiff` (name "autodiff") or `diffgpu.fwddiff` ("fwddiff").

    `args`: one list of operands per callee argument (primal, then shadow for
    "dup"/"dupnoneed"); `result_types`: per argument for autodiff (a type for
    "active" arguments, None otherwise), or the single tangent type (or None)
    for fwddiff. `target` is copied from the enclosing op by the caller.
    """
    if len(args) != len(activity):
        raise ValueError("need one operand group per argument")
    attrs = {
        "callee": ir.FlatSymbolRefAttr.get(callee),
        "activity": ir.ArrayAttr.get([ir.StringAttr.get(a) for a in activity]),
        "diffgpu.target": target,
    }
    operands = [v for g in args for v in g]
    sizes = [len(g) for g in args]
    full = f"{names.DIALECT}.{name}"
    if full == names.AUTODIFF:
        results = [t for t in result_types if t is not None]
        operands = ([seed] if seed is not None else []) + operands
    elif full == names.FWDDIFF:
        results = [result_types] if result_types not in ((), None) else []
    else:
        raise ValueError(f"expected 'autodiff' or 'fwddiff', got {name!r}")
    layout = names.diff_layout(full, sizes, [v.type for v in operands], results)
    for key, values in layout.items():
        attrs[key] = ir.DenseI32ArrayAttr.get(values)
    return ir.Operation.create(full, results=results, operands=operands, attributes=attrs)

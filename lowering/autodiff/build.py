"""Small IR-building helpers for the autodiff pass.

`V` wraps an MLIR float value so that derivative rules read as mathematics:
`d * cos(x)` emits `arith.mulf %d, (math.cos %x)` at the current insertion
point. Every helper builds at the ambient `ir.InsertionPoint` and location.
"""
from __future__ import annotations

from diffgpu._mlir import arith, ir, math, memref
from diffgpu.lowering.common.ir_util import is_index, is_int, isa  # noqa: F401 (B.is_index)

#: the float types autodiff differentiates, narrowest first
FLOAT_TYPES = (ir.F16Type, ir.BF16Type, ir.F32Type, ir.F64Type)


# Types --------------------------------------------------------------------
def is_float(t) -> bool:
    return any(isa(t, c) for c in FLOAT_TYPES)


def is_memref(t) -> bool:
    return isa(t, ir.MemRefType) or isa(t, ir.UnrankedMemRefType)


def _float_rank(t) -> int:
    return next(k for k, c in enumerate(FLOAT_TYPES) if isa(t, c))


def memref_elem(t):
    return ir.MemRefType(t).element_type


def is_half(t) -> bool:
    """A 16-bit float type (float16, bfloat16): stored in 16 bits, computed
    and accumulated in float32."""
    return isa(t, ir.F16Type) or isa(t, ir.BF16Type)


def adjoint_type(t):
    """The type adjoints of values of type `t` accumulate in: float32 for
    the 16-bit floats (one rounding, when stored), `t` itself otherwise."""
    return ir.F32Type.get() if is_half(t) else t


def wide_memref(t):
    """The float32 scratch shadow type of a 16-bit float memref type `t`:
    the same shape, layout and memory space with float32 elements."""
    m = ir.MemRefType(t)
    return ir.MemRefType.get(m.shape, ir.F32Type.get(), m.layout, m.memory_space)


def index_type():
    return ir.IndexType.get()


def i64():
    return ir.IntegerType.get_signless(64)


# Constants ----------------------------------------------------------------
def const(t, value):
    """arith.constant of float, integer or index type `t`."""
    if is_float(t):
        return arith.constant(t, float(value))
    return arith.constant(t, int(value))


def idx(n: int):
    return arith.constant(index_type(), int(n))


def zero(t):
    return const(t, 0.0 if is_float(t) else 0)


# Values -------------------------------------------------------------------
def defining_block(v):
    """The block that defines value `v` (block argument or op result)."""
    owner = v.owner
    if isinstance(owner, ir.Block):
        return owner
    return owner.operation.block


def is_block_arg(v) -> bool:
    return isinstance(v.owner, ir.Block)


def cast_float(v, t):
    """Convert float value `v` to float type `t` (extf/truncf or nothing)."""
    if v.type == t:
        return v
    if _float_rank(v.type) < _float_rank(t):
        return arith.extf(t, v)
    return arith.truncf(t, v)


def cmpf(pred: str, a, b):
    return arith.cmpf(getattr(arith.CmpFPredicate, pred.upper()), _v(a), _v(b))


def select(c, a, b):
    return V(arith.select(_v(c), _v(a), _v(b)))


def _v(x):
    return x.v if isinstance(x, V) else x


class V:
    """A float SSA value with arithmetic operators that emit arith/math ops."""

    __slots__ = ("v",)

    def __init__(self, v):
        self.v = _v(v)

    @property
    def type(self):
        return self.v.type

    def _o(self, other):
        if isinstance(other, (int, float)):
            return const(self.type, other)
        return _v(other)

    def __add__(self, o):
        return V(arith.addf(self.v, self._o(o)))

    __radd__ = __add__

    def __sub__(self, o):
        return V(arith.subf(self.v, self._o(o)))

    def __rsub__(self, o):
        return V(arith.subf(self._o(o), self.v))

    def __mul__(self, o):
        return V(arith.mulf(self.v, self._o(o)))

    __rmul__ = __mul__

    def __truediv__(self, o):
        return V(arith.divf(self.v, self._o(o)))

    def __rtruediv__(self, o):
        return V(arith.divf(self._o(o), self.v))

    def __neg__(self):
        return V(arith.negf(self.v))

    # comparisons give i1 values (for select)
    def lt(self, o):
        return cmpf("olt", self.v, self._o(o))

    def gt(self, o):
        return cmpf("ogt", self.v, self._o(o))

    def ge(self, o):
        return cmpf("oge", self.v, self._o(o))

    def le(self, o):
        return cmpf("ole", self.v, self._o(o))

    def eq(self, o):
        return cmpf("oeq", self.v, self._o(o))

    def c(self, value):
        """A constant of this value's type."""
        return V(const(self.type, value))


# math functions on V (used by the rule tables)
def _unary(fn):
    return lambda x: V(fn(_v(x)))


exp = _unary(math.exp)
log = _unary(math.log)
sin = _unary(math.sin)
cos = _unary(math.cos)
sinh = _unary(math.sinh)
cosh = _unary(math.cosh)
sqrt = _unary(math.sqrt)
trunc = _unary(math.trunc)


def powf(x, y):
    return V(math.powf(_v(x), _v(y)))


def fpowi(x, n):
    return V(math.fpowi(_v(x), _v(n)))


def sitofp(t, n):
    return V(arith.sitofp(t, _v(n)))


# Loops --------------------------------------------------------------------
def trip_count(lb, ub, step):
    """max(0, ceildiv(ub - lb, step)) in the bounds' own type."""
    t = lb.type
    span = arith.subi(ub, lb)
    n = arith.ceildivsi(span, step)
    return arith.maxsi(n, zero(t))


def alloca_scalar(t):
    """memref.alloca() : memref<T> (a one-value slot)."""
    return memref.alloca(ir.MemRefType.get([], t), [], [])

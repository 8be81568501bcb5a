"""Host (CPU) rewrites of diffgpu's GPU ops, used by `diffgpu-lower-to-host`.

- Thread geometry lives in one module global, `@__dg_host_geometry :
  memref<12xindex>`, written by the host entry's loops and read wherever a
  geometry op stood (kernels, device functions, derivative functions alike):

      index 0..2   thread_id  x, y, z        index 6..8   block_dim x, y, z
      index 3..5   block_id   x, y, z        index 9..11  grid_dim  x, y, z

      %t = "diffgpu.thread_id"() {dim = 1 : i64} : () -> index
    becomes
      %g = memref.get_global @__dg_host_geometry : memref<12xindex>
      %c1 = arith.constant 1 : index
      %t = memref.load %g[%c1] : memref<12xindex>

  One CPU thread runs the whole grid, one emulated thread after another, so
  one global suffices (the runtime serialises launches of a program).
- `diffgpu.atomic_add` becomes load, add, store (nothing runs concurrently);
  its result is the value loaded before the addition.
- Integer divisions get a divisor that cannot trap (`guard_division`).
- `math.copysign`, which convert-math-to-libm rejects, is a select on the
  sign bit (`rewrite_copysign`).
"""
from __future__ import annotations

from diffgpu.dialects import names as N
from diffgpu.lowering.common import ir_util
from diffgpu.lowering.common.ir_util import isa

GEOMETRY_GLOBAL = "__dg_host_geometry"
GEOMETRY_TYPE = "memref<12xindex>"
#: op name -> first slot in the geometry global (the slot is base + dim)
GEOMETRY_BASE = {N.THREAD_ID: 0, N.BLOCK_ID: 3, N.BLOCK_DIM: 6, N.GRID_DIM: 9}


def ensure_geometry_global(module_op):
    """Insert `memref.global "private" @__dg_host_geometry` once."""
    from diffgpu._mlir import ir

    body = module_op.regions[0].blocks[0]
    if ir_util.lookup(module_op, GEOMETRY_GLOBAL) is not None:
        return
    text = f'memref.global "private" @{GEOMETRY_GLOBAL} : {GEOMETRY_TYPE} = uninitialized'
    glob = ir.Operation.parse(text, context=module_op.context)
    first = body.operations[0] if len(body.operations) else None
    ip = ir.InsertionPoint(first) if first is not None else ir.InsertionPoint(body)
    ip.insert(glob)


def geometry_ref(ip, loc):
    """`memref.get_global @__dg_host_geometry` at `ip`."""
    from diffgpu._mlir import ir, memref

    return memref.GetGlobalOp(ir.Type.parse(GEOMETRY_TYPE), GEOMETRY_GLOBAL,
                              loc=loc, ip=ip).result


def const_index(value: int, ip, loc):
    from diffgpu._mlir import arith, ir

    return arith.ConstantOp(ir.IndexType.get(), value, loc=loc, ip=ip).result


def store_geometry(geom, slot: int, value, ip, loc):
    from diffgpu._mlir import memref

    memref.StoreOp(value, geom, [const_index(slot, ip, loc)], loc=loc, ip=ip)


def geometry_dim(op) -> int:
    """The `dim` of a geometry op; -1 when it has no integer `dim`."""
    from diffgpu.dialects.ops import opview

    dim = opview(op).dim
    return -1 if dim is None else dim


def geometry_patterns() -> dict:
    """The pattern of every geometry op: a load from the geometry global
    (ir_util.apply_patterns; the global must exist)."""
    from diffgpu.dialects import ops
    return {cls: rewrite_geometry for cls in ops.GEOMETRY_CLASSES}


def op_patterns(mark: bool = False) -> dict:
    """Patterns of the other one-to-one host rewrites: `diffgpu.atomic_add`
    (`mark`: see rewrite_atomic_add), the integer-division guard and
    math.copysign (ir_util.apply_patterns)."""
    from diffgpu.dialects import ops

    out = {ops.AtomicAddOp: lambda op, rw: rewrite_atomic_add(op, rw, mark),
           "math.copysign": rewrite_copysign}
    out.update((name, guard_division) for name in INT_DIVISIONS)
    return out


def rewrite_geometry(op, rw) -> None:
    """Pattern: one geometry op -> a load from the geometry global."""
    from diffgpu._mlir import memref

    loc, ip = op.location, rw.ip
    slot = GEOMETRY_BASE[op.operation.name] + geometry_dim(op)
    geom = geometry_ref(ip, loc)
    val = memref.LoadOp(geom, [const_index(slot, ip, loc)], loc=loc, ip=ip).result
    rw.replace_op(op, [val])


def rewrite_atomic_add(op, rw, mark: bool = False) -> None:
    """Pattern: `%old = diffgpu.atomic_add(%A, %v, %i...)` -> load, add, store
    (with `mark`, both carry `diffgpu.atomic`: the race detector skips them)."""
    from diffgpu._mlir import arith, ir, memref

    loc, ip = op.location, rw.ip
    ref, value, indices = op.operands[0], op.operands[1], list(op.operands)[2:]
    load = memref.LoadOp(ref, indices, loc=loc, ip=ip)
    old = load.result
    if isa(value.type, ir.FloatType):
        new = arith.AddFOp(old, value, loc=loc, ip=ip).result
    else:
        new = arith.AddIOp(old, value, loc=loc, ip=ip).result
    store = memref.StoreOp(new, ref, indices, loc=loc, ip=ip)
    if mark:
        for o in (load, store):
            o.operation.attributes["diffgpu.atomic"] = ir.UnitAttr.get()
    rw.replace_op(op, [old])


def check_atomic_add(op) -> str | None:
    """Why `op` cannot be lowered, or None."""
    from diffgpu._mlir import ir

    if len(op.operands) < 2 or len(op.results) != 1:
        return f"{N.ATOMIC_ADD} takes a memref, a value and indices and returns one value"
    ref_t = op.operands[0].type
    if not isa(ref_t, ir.MemRefType):
        return f"{N.ATOMIC_ADD} expects a memref operand"
    ref_t = ir.MemRefType(ref_t)
    val_t = op.operands[1].type
    if ref_t.element_type != val_t or op.results[0].type != val_t:
        return (f"{N.ATOMIC_ADD}: value type {val_t} does not match the element "
                f"type {ref_t.element_type} of the array")
    if len(op.operands) - 2 != ref_t.rank:
        return f"{N.ATOMIC_ADD}: {len(op.operands) - 2} indices for a rank-{ref_t.rank} array"
    if not (isa(val_t, ir.FloatType) or isa(val_t, ir.IntegerType)):
        return f"{N.ATOMIC_ADD}: unsupported element type {val_t}"
    return None


def strip_address_space(memref_type):
    """The same memref type in the default memory space."""
    from diffgpu._mlir import ir

    t = ir.MemRefType(memref_type)
    return ir.MemRefType.get(t.shape, t.element_type, t.layout)


#: integer divisions that trap on x86 for a zero divisor (signed ones also for MIN / -1)
INT_DIVISIONS = ("arith.divsi", "arith.divui", "arith.remsi", "arith.remui",
                 "arith.floordivsi", "arith.ceildivsi", "arith.ceildivui")


def guard_division(op, rw):
    """Pattern: make an integer division safe on the CPU: a zero divisor, and for
    signed ones the MIN / -1 overflow, would trap (SIGFPE) and kill the
    process, where a GPU returns an unspecified value. The divisor becomes 1
    in those cases: x / 0 gives x, MIN / -1 gives MIN (two's complement wrap),
    MIN % -1 gives 0.

        %q = arith.divsi %a, %b : i32
      becomes
        %z = arith.cmpi eq, %b, %c0 : i32
        %m = arith.cmpi eq, %a, %cMIN : i32
        %n = arith.cmpi eq, %b, %cm1 : i32
        %o = arith.andi %m, %n : i1
        %bad = arith.ori %z, %o : i1
        %b1 = arith.select %bad, %c1, %b : i32
        %q = arith.divsi %a, %b1 : i32
    """
    from diffgpu._mlir import arith, ir

    loc, ip = op.location, rw.ip
    a, b = op.operands[0], op.operands[1]
    t = b.type
    if isa(t, ir.IndexType):
        width = 64
    elif isa(t, ir.IntegerType):
        width = ir.IntegerType(t).width
    else:
        return True  # vectors etc.: not emitted by diffgpu; left as they are

    def const(v):
        return arith.ConstantOp(t, v, loc=loc, ip=ip).result

    eq = arith.CmpIPredicate.eq
    bad = arith.CmpIOp(eq, b, const(0), loc=loc, ip=ip).result
    if op.operation.name.endswith("si") and width > 1:
        is_min = arith.CmpIOp(eq, a, const(-(1 << (width - 1))), loc=loc, ip=ip).result
        is_m1 = arith.CmpIOp(eq, b, const(-1), loc=loc, ip=ip).result
        both = arith.AndIOp(is_min, is_m1, loc=loc, ip=ip).result
        bad = arith.OrIOp(bad, both, loc=loc, ip=ip).result
    safe = arith.SelectOp(bad, const(1), b, loc=loc, ip=ip).result
    # the division again, on the safe divisor (the bindings' PatternRewriter
    # has no modify_op_in_place: only ip, replace_op and erase_op)
    attrs = op.operation.attributes
    new = ir.Operation.create(op.operation.name, results=[op.results[0].type],
                              operands=[a, safe], attributes={k: attrs[k] for k in attrs},
                              loc=loc, ip=ip)
    rw.replace_op(op, new)


def rewrite_copysign(op, rw):
    """Pattern: `math.copysign %a, %b` -> `|a|` or `-|a|` by the sign bit of `b`
    (convert-math-to-libm marks copysign illegal without lowering it).

        %r = math.copysign %a, %b : f32
      becomes
        %m = math.absf %a : f32
        %n = arith.negf %m : f32
        %bits = arith.bitcast %b : f32 to i32
        %neg = arith.cmpi slt, %bits, %c0_i32 : i32
        %r = arith.select %neg, %n, %m : f32
    """
    from diffgpu._mlir import arith, ir, math

    loc, ip = op.location, rw.ip
    a, b = op.operands[0], op.operands[1]
    t = a.type
    if not isa(t, ir.FloatType):
        return True  # vectors: not emitted by diffgpu; left as they are
    it = ir.IntegerType.get_signless(ir.FloatType(t).width)
    mag = math.AbsFOp(a, loc=loc, ip=ip).result
    neg_mag = arith.NegFOp(mag, loc=loc, ip=ip).result
    bits = arith.BitcastOp(it, b, loc=loc, ip=ip).result
    zero = arith.ConstantOp(it, 0, loc=loc, ip=ip).result
    neg = arith.CmpIOp(arith.CmpIPredicate.slt, bits, zero, loc=loc, ip=ip).result
    res = arith.SelectOp(neg, neg_mag, mag, loc=loc, ip=ip).result
    rw.replace_op(op, [res])


def append_runtime(module_op, text: str, target, functions: int) -> None:
    """Parse `text` (MLIR ops) in `module_op`'s context and move its ops to the
    end of the module's body; the last `functions` of them (the runtime's
    functions) get `target`. Used by the host lowering for the runtime pieces it
    writes as text (host_bounds' status, host_cancel's flag)."""
    from diffgpu._mlir import ir
    from diffgpu.lowering.common.targets import set_target

    body = module_op.regions[0].blocks[0]
    parsed = ir.Module.parse(text, context=module_op.context)  # alive until the targets are set
    moved = []
    for op in list(parsed.body.operations):
        op = op.operation
        op.detach_from_parent()
        body.append(op)
        moved.append(op)
    for op in moved[len(moved) - functions:]:
        set_target(op, target)

"""Bounds checks on the host: an out-of-range index must not crash Python.

On a GPU an out-of-bounds access is an illegal-address error of the launch;
on the CPU it would be a segmentation fault of the whole process. So every
`memref.load`/`memref.store` of scalars in a host function (user arrays,
shared memory, tapes; atomics are loads and stores by then) runs only when each index is
within its dimension; otherwise the access is skipped (a load gives 0) and
`@__dg_host_oob(N)` records the access's number N, first one wins, in the
global `@__dg_host_status_flag : memref<1xi64>`. The runtime reads and clears it through
`@__dg_host_status()` (C interface) after each launch and raises an error
naming the access's source location, listed in the module attribute
`diffgpu.host_accesses` (access number N is entry N-1).

    %v = memref.load %A[%i] : memref<?xf32, strided<[?], offset: ?>>
  becomes
    %n = memref.dim %A, %c0 : memref<?xf32, strided<[?], offset: ?>>
    %ok = arith.cmpi ult, %i, %n : index         // negative indices too
    %v = scf.if %ok -> (f32) {
      %x = memref.load %A[%i] : memref<?xf32, strided<[?], offset: ?>>
      scf.yield %x : f32
    } else {
      %n = arith.constant 1 : i64                // the access's number
      func.call @__dg_host_oob(%n) : (i64) -> ()
      scf.yield %zero : f32
    }
"""
from __future__ import annotations

from diffgpu.abi import ACCESSES_ATTR, STATUS_FUNC, TAPE_OVERFLOW_GLOBAL, TAPE_STATUS_FUNC
from diffgpu.lowering.common.diagnostics import location_text
from diffgpu.lowering.common.ir_util import isa, sym_name, walk
from diffgpu.lowering.host.ops import append_runtime

STATUS_GLOBAL = "__dg_host_status_flag"
RECORD_FUNC = "__dg_host_oob"


def add_status(module_op, target) -> None:
    """The status global and `@__dg_host_status() -> i64` (reads and clears);
    in a module with a derivative's heap tape, `@__dg_host_tape_status()`
    too, which reads and clears its overflow flag (lowering/autodiff/tape.py)."""
    text = f"""
    memref.global "private" @{STATUS_GLOBAL} : memref<1xi64> = dense<0>
    func.func private @{RECORD_FUNC}(%n: i64) {{
      %g = memref.get_global @{STATUS_GLOBAL} : memref<1xi64>
      %c0 = arith.constant 0 : index
      %cur = memref.load %g[%c0] : memref<1xi64>
      %z = arith.constant 0 : i64
      %first = arith.cmpi eq, %cur, %z : i64
      %new = arith.select %first, %n, %cur : i64
      memref.store %new, %g[%c0] : memref<1xi64>
      return
    }}
    {_reader(STATUS_FUNC, STATUS_GLOBAL)}"""
    append_runtime(module_op, text, target, functions=2)
    flag = [o.operation for o in module_op.regions[0].blocks[0].operations
            if o.operation.name == "memref.global" and sym_name(o) == TAPE_OVERFLOW_GLOBAL]
    if flag:  # the global comes again with its reader (the text must parse alone)
        text = str(flag[0])
        flag[0].erase()
        append_runtime(module_op, text + _reader(TAPE_STATUS_FUNC, TAPE_OVERFLOW_GLOBAL, "index"),
                       target, functions=1)


def _reader(func: str, global_: str, t: str = "i64") -> str:
    """`@func() -> i64` (C interface): the word (of type `t`, i64 or index)
    of `@global_`, which it clears."""
    cast = "" if t == "i64" else "%w = arith.index_cast %v : index to i64"
    return f"""
    func.func @{func}() -> i64 attributes {{llvm.emit_c_interface}} {{
      %g = memref.get_global @{global_} : memref<1x{t}>
      %c0 = arith.constant 0 : index
      %v = memref.load %g[%c0] : memref<1x{t}>
      %z = arith.constant 0 : {t}
      memref.store %z, %g[%c0] : memref<1x{t}>
      {cast}
      return {"%v" if t == "i64" else "%w"} : i64
    }}"""


def _record(number: int, ip, loc) -> None:
    from diffgpu._mlir import arith, func, ir

    num = arith.ConstantOp(ir.IntegerType.get_signless(64), number, loc=loc, ip=ip).result
    func.CallOp([], ir.FlatSymbolRefAttr.get(RECORD_FUNC), [num], loc=loc, ip=ip)


def _in_bounds(op, ref, indices, ip, loc):
    """i1: every index within its dimension (None for rank 0)."""
    from diffgpu._mlir import arith, ir, memref

    ok = None
    t = ir.MemRefType(ref.type)
    for d, i in enumerate(indices):
        if t.is_dynamic_dim(d):
            cd = arith.ConstantOp(ir.IndexType.get(), d, loc=loc, ip=ip).result
            n = memref.DimOp(ref, cd, loc=loc, ip=ip).result
        else:
            n = arith.ConstantOp(ir.IndexType.get(), t.shape[d], loc=loc, ip=ip).result
        c = arith.CmpIOp(arith.CmpIPredicate.ult, i, n, loc=loc, ip=ip).result
        ok = c if ok is None else arith.AndIOp(ok, c, loc=loc, ip=ip).result
    return ok


def _zero(t, ip, loc):
    from diffgpu._mlir import arith, ir

    if isa(t, ir.FloatType):
        with loc:  # FloatAttr.get wants a location
            return arith.ConstantOp(t, 0.0, loc=loc, ip=ip).result
    return arith.ConstantOp(t, 0, loc=loc, ip=ip).result


def guard_access(op, number: int) -> bool:
    """Wrap one load/store in its bounds check; False if not checkable."""
    from diffgpu._mlir import ir, scf

    loc, ip = op.location, ir.InsertionPoint(op)
    if op.name == "memref.load":
        ref, indices = op.operands[0], list(op.operands)[1:]
    else:
        ref, indices = op.operands[1], list(op.operands)[2:]
    if not indices or not isa(ref.type, ir.MemRefType):
        return False
    elem = ir.MemRefType(ref.type).element_type
    if not (isa(elem, ir.FloatType) or isa(elem, ir.IntegerType) or isa(elem, ir.IndexType)):
        return False  # e.g. autodiff's tape of memrefs: ours, and no zero to give
    ok = _in_bounds(op, ref, indices, ip, loc)
    results = [r.type for r in op.results]
    guard = scf.IfOp(ok, results, has_else=True, loc=loc, ip=ip)
    then_ip = ir.InsertionPoint(guard.then_block)
    scf.YieldOp(list(op.results), loc=loc, ip=then_ip)
    op.move_before(guard.then_block.operations[0])
    else_ip = ir.InsertionPoint(guard.else_block)
    _record(number, else_ip, loc)
    scf.YieldOp([_zero(t, else_ip, loc) for t in results], loc=loc, ip=else_ip)
    for old, new in zip(op.results, guard.results):
        old.replace_all_uses_except(new, guard.then_block.operations[1].operation)
    return True


def check_accesses(module_op, host_funcs, target) -> None:
    """Guard every load/store of the host functions; record their locations."""
    from diffgpu._mlir import ir

    if ACCESSES_ATTR in module_op.attributes:
        return  # already lowered once
    locations = []
    for f in host_funcs:
        for op in walk(f, ("memref.load", "memref.store")):
            if guard_access(op, len(locations) + 1):
                locations.append(location_text(op.location))
    module_op.attributes[ACCESSES_ATTR] = ir.ArrayAttr.get(
        [ir.StringAttr.get(s) for s in locations])
    add_status(module_op, target)

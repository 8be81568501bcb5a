"""The data-race detector of the CPU emulation (`diffgpu-lower-to-host{racecheck=1}`).

A GPU runs a block's threads at once; the CPU emulation runs them one after
another, so a kernel that races on a GPU (`loss[0] += x[i] * x[i]` without
an atomic) gives the exact answer here. The checked variant reports such
races: two accesses to the same element of a global or shared array, by
different threads, in the same barrier interval (for threads of different
blocks: anywhere in the launch), at least one a write or exactly one an
atomic; and barriers that only some threads of a block reach.

Each user load and store (inside its bounds check) calls the hook of
host/race_runtime.py with the element's address, its kind (0 read, 1 write,
2 atomic: an atomic add is a load and a store by then, both marked
`diffgpu.atomic`, and its load is instrumented as the atomic access) and its
*site*, the access's number in the module attribute `diffgpu.race_sites`
(site N is entry N-1, `file:line:col`; barriers get site numbers too):

    %v = memref.load %A[%i] : memref<?xf32, strided<[?], offset: ?>>
  becomes
    %p = memref.extract_aligned_pointer_as_index %A : ... -> index
    %base, %off, %size, %stride = memref.extract_strided_metadata %A : ...
    %e = arith.muli %i, %stride : index
    %l = arith.addi %off, %e : index
    %b = arith.muli %l, %c4 : index                  // element size
    %a = arith.addi %p, %b : index
    %ai = arith.index_cast %a : index to i64
    func.call @__dg_race_access(%ai, %c0_i64, %c7_i64) : (i64, i64, i64) -> ()
    %v = memref.load %A[%i] : memref<?xf32, strided<[?], offset: ?>>

Accesses outside every registered region (autodiff's tapes, local arrays)
are not checked. The entry registers each block's shared arrays, with a
zeroed shadow, for the block's duration (`register_shared`), and the
barrier lowering advances the epoch at each barrier (`barrier_call`), with
the count of the block's threads that reach it. The unchecked lowering
contains none of this.
"""
from __future__ import annotations

from diffgpu.abi import RACE_SHARED_ATTR, RACE_SITES_ATTR
from diffgpu.dialects import names as N
from diffgpu.lowering.host import race_runtime as rt
from diffgpu.lowering.common.diagnostics import location_text
from diffgpu.lowering.host.ops import GEOMETRY_GLOBAL, GEOMETRY_TYPE
from diffgpu.lowering.common.ir_util import isa, walk
from diffgpu.lowering.common.targets import set_target

SITES_ATTR = RACE_SITES_ATTR
SHARED_ATTR = RACE_SHARED_ATTR
ATOMIC_ATTR = "diffgpu.atomic"
BARRIER_SITE_ATTR = "diffgpu.race_site"


def add_runtime(module_op, target) -> None:
    """The hook, its helpers and globals (host_race_runtime.TEXT), once."""
    from diffgpu._mlir import ir

    body = module_op.regions[0].blocks[0]
    geometry = f'memref.global "private" @{GEOMETRY_GLOBAL} : {GEOMETRY_TYPE} = uninitialized'
    parsed = ir.Module.parse("module {" + geometry + rt.TEXT + "}", context=module_op.context)
    for op in list(parsed.body.operations)[1:]:  # the geometry global: the pass adds it
        op = op.operation
        op.detach_from_parent()
        body.append(op)
        if op.name == "func.func":
            set_target(op, target)


def element_size(t) -> int | None:
    from diffgpu._mlir import ir

    if isa(t, ir.IndexType):
        return 8
    if isa(t, ir.FloatType):
        return ir.FloatType(t).width // 8
    if isa(t, ir.IntegerType):
        return max(1, ir.IntegerType(t).width // 8)
    return None


def _i64(v, ip, loc):
    from diffgpu._mlir import arith, ir

    return arith.IndexCastOp(ir.IntegerType.get_signless(64), v, loc=loc, ip=ip).result


def _const_i64(n, ip, loc):
    from diffgpu._mlir import arith, ir

    return arith.ConstantOp(ir.IntegerType.get_signless(64), n, loc=loc, ip=ip).result


def address_of(ref, indices, ip, loc):
    """i64 address of `ref[indices]` (any strided layout)."""
    from diffgpu._mlir import arith, ir, memref

    t = ir.MemRefType(ref.type)
    idx = ir.IndexType.get()
    ptr = memref.ExtractAlignedPointerAsIndexOp(ref, loc=loc, ip=ip).result
    rank = t.rank
    static, offset = t.get_strides_and_offset()
    if not any(t.is_dynamic_stride_or_offset(v) for v in static + [offset]):
        # e.g. shared arrays (no metadata op: the memory space of their type
        # changes when they become the entry's buffers)
        strides = [arith.ConstantOp(idx, v, loc=loc, ip=ip).result for v in static]
        lin = arith.ConstantOp(idx, offset, loc=loc, ip=ip).result
    else:
        meta = memref.ExtractStridedMetadataOp(ref, loc=loc, ip=ip)
        strides = list(meta.results)[2 + rank:2 + 2 * rank]
        lin = meta.results[1]
    for i, s in zip(indices, strides):
        lin = arith.AddIOp(lin, arith.MulIOp(i, s, loc=loc, ip=ip).result,
                           loc=loc, ip=ip).result
    size = arith.ConstantOp(idx, element_size(t.element_type), loc=loc, ip=ip).result
    byte = arith.MulIOp(lin, size, loc=loc, ip=ip).result
    return _i64(arith.AddIOp(ptr, byte, loc=loc, ip=ip).result, ip, loc)


def instrument_access(op, site: int) -> bool:
    """Call the hook before `op` (a memref.load/store); False if skipped
    (the store of an atomic: its load is the atomic access)."""
    from diffgpu._mlir import func, ir

    is_store = op.name == "memref.store"
    atomic = ATOMIC_ATTR in op.attributes
    if atomic and is_store:
        return False
    ref = op.operands[1] if is_store else op.operands[0]
    indices = list(op.operands)[2:] if is_store else list(op.operands)[1:]
    if not isa(ref.type, ir.MemRefType) or element_size(
            ir.MemRefType(ref.type).element_type) is None:
        return False
    loc, ip = op.location, ir.InsertionPoint(op)
    addr = address_of(ref, indices, ip, loc)
    kind = rt.ATOMIC if atomic else rt.WRITE if is_store else rt.READ
    func.CallOp([], ir.FlatSymbolRefAttr.get(rt.ACCESS),
                [addr, _const_i64(kind, ip, loc), _const_i64(site, ip, loc)],
                loc=loc, ip=ip)
    return True


def instrument(module_op, host_funcs, target) -> None:
    """Instrument every user access of `host_funcs`; number their barriers
    (`diffgpu.race_site`, read by `barrier_call`); add the runtime and the
    module's site table."""
    from diffgpu._mlir import ir

    sites = []
    i64 = ir.IntegerType.get_signless(64)
    for f in host_funcs:
        for op in walk(f, ("memref.load", "memref.store", N.BARRIER)):
            if op.name == N.BARRIER:
                op.attributes[BARRIER_SITE_ATTR] = ir.IntegerAttr.get(i64, len(sites) + 1)
            elif not instrument_access(op, len(sites) + 1):
                continue
            sites.append(location_text(op.location))
    module_op.attributes[SITES_ATTR] = ir.ArrayAttr.get([ir.StringAttr.get(s) for s in sites])
    add_runtime(module_op, target)


def record_shared(module_op, kernel_name: str, allocs) -> None:
    """`diffgpu.race_shared`: "kernel|number|file:line:col|shape" per shared array."""
    from diffgpu._mlir import ir

    old = []
    if SHARED_ATTR in module_op.attributes:
        old = [ir.StringAttr(a).value for a in ir.ArrayAttr(module_op.attributes[SHARED_ATTR])]
    for j, op in enumerate(allocs):
        shape = "x".join(str(d) for d in ir.MemRefType(op.results[0].type).shape)
        old.append(f"{kernel_name}|{j}|{location_text(op.location)}|{shape}")
    module_op.attributes[SHARED_ATTR] = ir.ArrayAttr.get([ir.StringAttr.get(s) for s in old])


def register_shared(buffers, ip, loc) -> list:
    """At the start of a block: a zeroed shadow per shared buffer, pushed as
    a region; returns the cleanup to emit at the block's end."""
    from diffgpu._mlir import arith, func, ir, memref, scf

    i64 = ir.IntegerType.get_signless(64)
    idx = ir.IndexType.get()
    pushed = []
    for j, buf in enumerate(buffers):
        t = ir.MemRefType(buf.type)
        n = 1
        for d in t.shape:
            n *= d
        es = element_size(t.element_type)
        shadow = memref.AllocOp(ir.MemRefType.get([n * rt.SHADOW_WORDS], i64), [], [],
                                loc=loc, ip=ip).result
        zero = _const_i64(0, ip, loc)
        c0 = arith.ConstantOp(idx, 0, loc=loc, ip=ip).result
        c1 = arith.ConstantOp(idx, 1, loc=loc, ip=ip).result
        cn = arith.ConstantOp(idx, n * rt.SHADOW_WORDS, loc=loc, ip=ip).result
        fill = scf.ForOp(c0, cn, c1, loc=loc, ip=ip)
        fip = ir.InsertionPoint(fill.body)
        memref.StoreOp(zero, shadow, [fill.induction_variable], loc=loc, ip=fip)
        scf.YieldOp([], loc=loc, ip=fip)
        base = _i64(memref.ExtractAlignedPointerAsIndexOp(buf, loc=loc, ip=ip).result, ip, loc)
        end = arith.AddIOp(base, _const_i64(n * es, ip, loc), loc=loc, ip=ip).result
        sh = _i64(memref.ExtractAlignedPointerAsIndexOp(shadow, loc=loc, ip=ip).result, ip, loc)
        func.CallOp([], ir.FlatSymbolRefAttr.get(rt.PUSH),
                    [base, end, _const_i64(es, ip, loc), sh, _const_i64(-1 - j, ip, loc)],
                    loc=loc, ip=ip)
        pushed.append((base, end, shadow))
    return pushed


def unregister_shared(pushed, ip, loc) -> None:
    from diffgpu._mlir import func, ir, memref

    for base, end, shadow in reversed(pushed):
        func.CallOp([], ir.FlatSymbolRefAttr.get(rt.POP), [base, end], loc=loc, ip=ip)
        memref.DeallocOp(shadow, loc=loc, ip=ip)


def barrier_call(ip, loc, barrier, arrivals=None) -> None:
    """Block-level code at `barrier` (the op, for its site): the block's next
    barrier interval; `arrivals`: (threads that reach it, the first that
    does not, the block's threads) as index values, None when all do."""
    from diffgpu._mlir import func, ir

    attrs = barrier.attributes
    site = ir.IntegerAttr(attrs[BARRIER_SITE_ATTR]).value if BARRIER_SITE_ATTR in attrs else 0
    if arrivals is None:
        n = _const_i64(0, ip, loc)
        values = [n, n, n]
    else:
        values = [_i64(v, ip, loc) for v in arrivals]
    func.CallOp([], ir.FlatSymbolRefAttr.get(rt.BARRIER), values + [_const_i64(site, ip, loc)],
                loc=loc, ip=ip)

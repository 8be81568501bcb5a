"""Op rewrites of `diffgpu-lower-to-gpu` (lowering/gpu/to_gpu.py), inside gpu.modules,
one pattern per op (ir_util.apply_patterns):

    %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index      %t = gpu.thread_id x
    "diffgpu.barrier"() : () -> ()                                 gpu.barrier
    %o = "diffgpu.atomic_add"(%A, %v, %i) : (...) -> f32      =>   %o = memref.atomic_rmw addf %v, %A[%i]
    %s = "diffgpu.shared_alloc"() : () -> memref<16xf32, #gpu.address_space<workgroup>>
                                                                   (a workgroup attribution of the kernel)
    %p = math.ipowi %n, %e : i64                                   %p = func.call @__dg_ipowi_i64(%n, %e)
    func.return (in a kernel)                                      gpu.return

A module whose kernel carries `diffgpu.grid_fold = array<i64: y, z, hy, hz>`
(`mark_grid_fold`: a launch whose grid y or z exceeds the GPU's 65535 runs
on the hardware grid (x, hy, hz), runtime/args.py `hardware_grid`) reads its
y and z geometry from that fold, in every function of the module (`fold_geometry`):

    grid_dim(1), grid_dim(2)        arith.constant y, z
    block_id(1), block_id(2)        %row = by + bz * hy;  %row % y, %row / y
                                    (%row itself / 0 when z == 1, 0 / %row when y == 1)

and, when hy * hz > y * z, the kernel's blocks past the last row return at
entry (`guard_rows`).
"""
from __future__ import annotations

from diffgpu.dialects import names as N
from diffgpu.lowering.common import ir_util

GEOMETRY = {N.THREAD_ID: "gpu.thread_id", N.BLOCK_ID: "gpu.block_id",
            N.BLOCK_DIM: "gpu.block_dim", N.GRID_DIM: "gpu.grid_dim"}
#: memref.atomic_rmw kinds (arith::AtomicRMWKind)
RMW_ADDF, RMW_ADDI = 0, 1
#: (y, z, hy, hz) of a kernel launched on a folded grid (mark_grid_fold)
GRID_FOLD = "diffgpu.grid_fold"
HW_GRID_YZ = 65535
#: kept on memref.atomic_rmw for diffgpu-warp-atomics (lowering/gpu/atomics.py)
AGGREGATED = "diffgpu.aggregated"


def rewrite_ops(f, kernel, error, fold=None) -> None:
    """Rewrite the diffgpu ops of function `f` (now in a gpu.module) to gpu
    ops, one pattern per op (ir_util.apply_patterns); `kernel` is `f` when it
    is a gpu.func kernel, else None (shared memory was rejected there);
    `fold`: the module's (y, z, hy, hz) grid fold (module docstring) or None.
    Problems go to `error(op, message)` and leave the op as it was."""
    from diffgpu._mlir import ir
    from diffgpu.dialects import ops

    index = ir.IndexType.get()
    shared = []

    def geometry(op, rw):
        dim = op.dim
        if dim not in (0, 1, 2):
            error(op, f"'{op.operation.name}' needs a 'dim' attribute of 0, 1 or 2")
            return True
        if fold and dim and op.operation.name in (N.BLOCK_ID, N.GRID_DIM):
            with rw.ip, op.location:
                rw.replace_op(op, [fold_geometry(op.operation.name, dim, fold)])
            return None
        with rw.ip:
            new = ir.Operation.create(
                GEOMETRY[op.operation.name], results=[index], loc=op.location,
                attributes={"dimension": ir.Attribute.parse(f"#gpu<dim {'xyz'[dim]}>")})
        rw.replace_op(op, new)

    def barrier(op, rw):
        with rw.ip:
            rw.replace_op(op, ir.Operation.create("gpu.barrier", loc=op.location))

    def atomic(op, rw):
        new = _atomic(op, rw.ip, error)
        if new is None:
            return True
        rw.replace_op(op, new)

    def shared_alloc(op, rw):
        mtype = op.results[0].type
        problem = _shared_problem(mtype)
        if problem:
            error(op, f"{N.SHARED_ALLOC}: {problem}")
            return True
        shared.append(kernel.regions[0].blocks[0].add_argument(mtype, op.location))
        rw.replace_op(op, [shared[-1]])

    def kernel_return(op, rw):
        with rw.ip:
            rw.replace_op(op, ir.Operation.create("gpu.return", operands=list(op.operands),
                                                  loc=op.location))

    patterns = {cls: geometry for cls in ops.GEOMETRY_CLASSES}
    patterns.update({ops.BarrierOp: barrier, ops.AtomicAddOp: atomic,
                     ops.SharedAllocOp: shared_alloc})
    if kernel is not None:
        patterns["func.return"] = kernel_return
    ir_util.apply_patterns(f, patterns)
    if shared:
        kernel.attributes["workgroup_attributions"] = ir.IntegerAttr.get(
            ir.IntegerType.get_signless(64), len(shared))


def read_fold(f, error):
    """The (y, z, hy, hz) of `f`'s GRID_FOLD, None without one; a fold that is
    not a hardware grid for its y * z rows (every row once, hy and hz within
    the GPU's limit, fewer than hz rows to spare) is an error."""
    from diffgpu._mlir import ir

    if GRID_FOLD not in f.attributes:
        return None
    attr = f.attributes[GRID_FOLD]
    vals = list(ir.DenseI64ArrayAttr(attr)) if isinstance(attr, ir.DenseI64ArrayAttr) else []
    if len(vals) == 4:
        y, z, hy, hz = vals
        rows = y * z
        if min(vals) >= 1 and hy <= HW_GRID_YZ and hz <= HW_GRID_YZ and \
                rows <= hy * hz < rows + hz:
            return tuple(vals)
    error(f, f"{GRID_FOLD} = {attr} is not (y, z, hy, hz) of a hardware grid hy x hz "
             "(each at most 65535) covering the y * z rows with fewer than hz spare")
    return None


def fold_geometry(name: str, dim: int, fold):
    """The index value of `block_id(dim)` / `grid_dim(dim)` (dim 1 or 2) on
    the folded grid `fold` (module docstring), built at the current
    insertion point and location."""
    from diffgpu._mlir import arith, ir

    index = ir.IndexType.get()
    y, z, hy, _hz = fold

    def const(v):
        return arith.ConstantOp(index, v).result

    if name == N.GRID_DIM:
        return const(fold[dim - 1])
    if (dim == 1 and y == 1) or (dim == 2 and z == 1):
        return const(0)
    row = hardware_row(hy)
    if (dim == 1 and z == 1) or (dim == 2 and y == 1):
        return row
    return arith.RemUIOp(row, const(y)).result if dim == 1 else \
        arith.DivUIOp(row, const(y)).result


def hardware_row(hy: int):
    """`by + bz * hy`: the logical row (y + z * Y) of the hardware block."""
    from diffgpu._mlir import arith, ir

    index = ir.IndexType.get()
    by, bz = (ir.Operation.create(
        "gpu.block_id", results=[index],
        attributes={"dimension": ir.Attribute.parse(f"#gpu<dim {d}>")}).result for d in "yz")
    scaled = arith.MulIOp(bz, arith.ConstantOp(index, hy).result).result
    return arith.AddIOp(by, scaled).result


def guard_rows(kernel, fold) -> None:
    """Blocks of the hardware grid past the fold's y * z rows return at the
    kernel's entry: a new entry block tests the row and branches to the old
    one (its arguments, workgroup attributions included, taken over) or to
    a `gpu.return`. Nothing when the hardware grid has no spare row."""
    from diffgpu._mlir import arith, ir

    y, z, hy, hz = fold
    if hy * hz == y * z:
        return
    region = kernel.regions[0]
    old = region.blocks[0]
    args = list(old.arguments)
    entry = old.create_before(*[a.type for a in args], arg_locs=[a.location for a in args])
    for a, b in zip(args, entry.arguments):
        a.replace_all_uses_with(b)
    for i in reversed(range(len(args))):
        old.erase_argument(i)
    done = old.create_after()
    loc = kernel.location
    with ir.InsertionPoint(done), loc:
        ir.Operation.create("gpu.return")
    with ir.InsertionPoint(entry), loc:
        index = ir.IndexType.get()
        row = hardware_row(hy)
        inside = arith.CmpIOp(arith.CmpIPredicate.ult, row,
                              arith.ConstantOp(index, y * z).result).result
        ir.Operation.create("cf.cond_br", operands=[inside], successors=[old, done],
                            attributes={"operandSegmentSizes":
                                        ir.DenseI32ArrayAttr.get([1, 0, 0])})


def mark_grid_fold(text: str, entry: str, fold) -> str:
    """`text` (diffgpu IR) with the kernel `entry` marked GRID_FOLD = `fold`
    (y, z, hy, hz: runtime/args.py `hardware_grid` of the launch's grid)."""
    from diffgpu._mlir import ir
    from diffgpu.lowering.common import session

    with session.context(), ir.Location.unknown():
        module = ir.Module.parse(text)
        for op in module.body.operations:
            op = op.operation
            if op.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value == entry:
                op.attributes[GRID_FOLD] = ir.DenseI64ArrayAttr.get([int(v) for v in fold])
                break
        else:
            raise ValueError(f"no function @{entry} to fold the grid of")
        return session.hand_over(module)


def _atomic(op, ip, error):
    from diffgpu._mlir import ir

    operands = list(op.operands)
    if len(operands) < 2:
        error(op, f"{N.ATOMIC_ADD} takes a memref, a value and indices")
        return None
    mem, val, idx = operands[0], operands[1], operands[2:]
    mtype = ir.MemRefType(mem.type)
    elem = mtype.element_type
    if val.type != elem:
        error(op, f"{N.ATOMIC_ADD}: value of type {val.type} added to a memref "
                       f"of {elem}")
        return None
    if len(idx) != mtype.rank:
        error(op, f"{N.ATOMIC_ADD}: {len(idx)} indices for a memref of rank "
                       f"{mtype.rank}")
        return None
    if isinstance(elem, ir.FloatType):
        kind = RMW_ADDF
    elif isinstance(elem, ir.IntegerType):
        kind = RMW_ADDI
    else:
        error(op, f"{N.ATOMIC_ADD}: unsupported element type {elem}")
        return None
    attributes = {"kind": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), kind)}
    if AGGREGATED in op.attributes:  # lowering/reduce/aggregate_atomics.py's mark
        attributes[AGGREGATED] = op.attributes[AGGREGATED]
    return ir.Operation.create(
        "memref.atomic_rmw", results=[elem], operands=[val, mem] + idx,
        attributes=attributes, loc=op.location, ip=ip)


def fresh(name: str, taken) -> str:
    if name not in taken:
        return name
    i = 1
    while f"{name}_{i}" in taken:
        i += 1
    return f"{name}_{i}"


def bad_memref(t) -> str | None:
    """Memrefs the NVPTX lowering cannot handle (MLIR asserts on i1 stores)."""
    from diffgpu._mlir import ir
    if not isinstance(t, ir.MemRefType):
        return None
    elem = ir.MemRefType(t).element_type
    if isinstance(elem, ir.IntegerType) and ir.IntegerType(elem).width % 8:
        return (f"memref of {elem} is not supported on the GPU (use i8 or wider "
                "elements)")
    return None


def _shared_problem(t) -> str | None:
    from diffgpu._mlir import ir
    if not isinstance(t, ir.MemRefType):
        return f"result {t} is not a memref"
    m = ir.MemRefType(t)
    if not m.has_static_shape:
        return f"shared memory {t} needs a static shape"
    workgroup = ir.Attribute.parse("#gpu.address_space<workgroup>")
    if m.memory_space is None or m.memory_space != workgroup:
        return f"shared memory {t} must be in #gpu.address_space<workgroup>"
    plain = ir.MemRefType.get(m.shape, m.element_type, memory_space=m.memory_space,
                              loc=ir.Location.unknown())
    if plain != m:
        return f"shared memory {t} must have the identity layout"
    return bad_memref(t)


def expand_ipowi(gm) -> None:
    """Replace `math.ipowi` (no NVVM lowering) by calls to generated helpers,
    one per integer type (a pattern: ir_util.apply_patterns)."""
    from diffgpu._mlir import ir

    block = gm.regions[0].blocks[0]
    target = ir.ArrayAttr(gm.attributes["targets"])[0]
    helpers = {}

    def to_call(op, rw):
        ty = op.results[0].type
        if ty not in helpers:  # the helper's IR text spells the type
            helpers[ty] = _ipowi_helper(block, str(ty), target)
        with rw.ip:
            call = ir.Operation.create(
                "func.call", results=[ty], operands=list(op.operands),
                attributes={"callee": ir.FlatSymbolRefAttr.get(helpers[ty])},
                loc=op.location)
        rw.replace_op(op, call)

    for f in list(block.operations):  # the helpers go after these functions
        ir_util.apply_patterns(f, {"math.ipowi": to_call})


def _ipowi_helper(block, ty: str, target) -> str:
    """`b ** e` by squaring; e < 0 gives 1 for b == 1, +-1 for b == -1, else 0."""
    from diffgpu._mlir import ir

    taken = {ir_util.sym_name(o) for o in block.operations} - {None}
    name = fresh(f"__dg_ipowi_{ty}", taken)
    text = f"""
func.func private @{name}(%b: {ty}, %e: {ty}) -> {ty} attributes {{diffgpu.target = {target}}} {{
  %c0 = arith.constant 0 : {ty}
  %c1 = arith.constant 1 : {ty}
  %cm1 = arith.constant -1 : {ty}
  %neg = arith.cmpi slt, %e, %c0 : {ty}
  %r = scf.if %neg -> {ty} {{
    %is1 = arith.cmpi eq, %b, %c1 : {ty}
    %ism1 = arith.cmpi eq, %b, %cm1 : {ty}
    %bit = arith.andi %e, %c1 : {ty}
    %odd = arith.cmpi ne, %bit, %c0 : {ty}
    %sgn = arith.select %odd, %cm1, %c1 : {ty}
    %t = arith.select %ism1, %sgn, %c0 : {ty}
    %u = arith.select %is1, %c1, %t : {ty}
    scf.yield %u : {ty}
  }} else {{
    %res:3 = scf.while (%acc = %c1, %base = %b, %ex = %e) : ({ty}, {ty}, {ty}) -> ({ty}, {ty}, {ty}) {{
      %go = arith.cmpi sgt, %ex, %c0 : {ty}
      scf.condition(%go) %acc, %base, %ex : {ty}, {ty}, {ty}
    }} do {{
    ^bb0(%a: {ty}, %x: {ty}, %n: {ty}):
      %lsb = arith.andi %n, %c1 : {ty}
      %set = arith.cmpi ne, %lsb, %c0 : {ty}
      %m = arith.muli %a, %x : {ty}
      %a2 = arith.select %set, %m, %a : {ty}
      %x2 = arith.muli %x, %x : {ty}
      %n2 = arith.shrsi %n, %c1 : {ty}
      scf.yield %a2, %x2, %n2 : {ty}, {ty}, {ty}
    }}
    scf.yield %res#0 : {ty}
  }}
  return %r : {ty}
}}"""
    parsed = ir.Module.parse(text)
    fn = parsed.body.operations[0].operation
    fn.detach_from_parent()
    ir.InsertionPoint(block).insert(fn)
    return name

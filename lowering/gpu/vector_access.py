"""`diffgpu-vector-access`: a row of 2 or 4 adjacent loads (or stores) becomes
one vector load (store) where it is aligned.

`dg.load_vec4(x, i)` is four `memref.load`s of `x[i, 0..3]`; on the GPU
each is an `ld.global.b32`. A vector instruction (`ld.global.v4.b32`) moves
the 16 bytes at once, but needs them aligned to 16 bytes and the row
contiguous, which nothing proves for a kernel argument (a view may start
anywhere, an `(N, 5)` array's rows are 20 bytes apart). So the test is made
at run time, once per row:

    %ok = innermost stride == 1 and (address of x[i, 0]) % 16 == 0
    %r:4 = scf.if %ok -> (f32, f32, f32, f32) {
      %s = llvm.inline_asm has_side_effects "ld.v4.f32 {$0, $1, $2, $3}, [$4];"
      scf.yield (the four fields of %s)
    } else {
      scf.yield (the four scalar loads)
    }

(inline assembly: LLVM splits a `load <4 x float>` whose elements are all
extracted back into scalar loads). Stores become `memref.reinterpret_cast`
of the row and a `vector.store {alignment = 16}` (`st.global.v4.b32`).

In a program specialised for contiguous arrays the stride test folds away.
A group qualifies when, in one block of a function inside a `gpu.module`,
loads of one global float memref agree on every subscript but the
innermost, which takes exactly the constants `c .. c+n-1` (plus one shared
value), n = 2 or 4 for f32 (a 4-group of f64 is two 2-groups: 16 bytes is
the widest access); a 3-wide row (vec3) is left alone (its 12-byte rows
are never all aligned). The loads move up to the first one: nothing
between them may write their array (in a function whose arrays are not
proven disjoint, no other argument either), and their subscripts must be
defined before it. Stores likewise move down to the last one, with nothing
between them reading or writing their array. Runs after `diffgpu-vector-red`.
`DIFFGPU_VECTOR_ACCESS=0` in the environment turns it off (for measuring
both forms; part of the compile cache's key, as every switch of
diffgpu/switches.py).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from diffgpu import switches
from diffgpu.dialects import names as N
from diffgpu.lowering.common.ir_util import const_int, scalar_name, top_ops, visit_blocks
from diffgpu.lowering.facts.attrs import NOALIAS_ATTR
from diffgpu.lowering.facts.load_order import reads_of, root_of, writes_of
from diffgpu.lowering.registry import ModulePass, register_pass

ENV = switches.VECTOR_ACCESS
#: the frontend's mark on the loads/stores of vector components (frontend/vector_arrays.py;
#: autodiff's tangent loads and stores keep it)
ROW_ATTR = N.VECTOR_ROW
#: widest vector (elements) per element type: 16 bytes
MAX_WIDTH = {"f32": 4, "f64": 2}
BYTES = {"f32": 4, "f64": 8}


def enabled() -> bool:
    """Is the rewrite on (`DIFFGPU_VECTOR_ACCESS` is not 0/false/no/off)?"""
    return switches.on(ENV)


def _base_offset(v):
    """An index value as (base, constant): `X + 3` -> (X, 3), `7` -> (None, 7)."""
    from diffgpu._mlir import ir

    c = 0
    while True:
        owner = v.owner
        if isinstance(owner, ir.Block):
            return v, c
        o = owner.operation
        if o.name == "arith.constant":
            return None, c + ir.IntegerAttr(o.attributes["value"]).value
        if o.name == "arith.addi":
            lhs, rhs = o.operands
            k = const_int(rhs)
            if k is not None:
                v, c = lhs, c + k
                continue
        return v, c


def _memref_of(op):
    return op.operands[0] if op.name == "memref.load" else op.operands[1]


def _subs(op):
    return list(op.operands)[1:] if op.name == "memref.load" else list(op.operands)[2:]


def _eligible(op) -> str | None:
    """The element type of a global f32/f64 memref load or store, else None."""
    from diffgpu._mlir import ir

    if op.name not in ("memref.load", "memref.store") or ROW_ATTR not in op.attributes:
        return None
    t = ir.MemRefType(_memref_of(op).type)
    if t.memory_space is not None or t.rank == 0:
        return None
    ty = scalar_name(t.element_type)
    return ty if ty in MAX_WIDTH else None


def _same(a, b) -> bool:
    return len(a) == len(b) and all(x == y for x, y in zip(a, b))


def _groups(ops, kind):
    """[(key, {constant: position})] of the eligible `kind` ops of a block."""
    groups = []
    for i, o in enumerate(ops):
        if o.name != kind or _eligible(o) is None:
            continue
        subs = _subs(o)
        base, c = _base_offset(subs[-1])
        key = (_memref_of(o), tuple(subs[:-1]), base)
        for k, members in groups:
            if k[0] == key[0] and k[2] == key[2] and _same(k[1], key[1]):
                if c in members:
                    members["dup"] = True
                members[c] = i
                break
        else:
            groups.append((key, {c: i}))
    return groups


def _runs(ops, kind):
    """Runs [[position, ...]] (innermost constants ascending) worth a vector access."""
    out = []
    for _, members in _groups(ops, kind):
        if members.pop("dup", False):
            continue
        cs = sorted(members)
        n = len(cs)
        width = min(n, MAX_WIDTH[_eligible(ops[members[cs[0]]])])
        if n not in (2, 4) or cs != list(range(cs[0], cs[0] + n)) or n % width:
            continue
        for s in range(0, n, width):
            out.append([members[c] for c in cs[s:s + width]])
    return out


def _defined_before(value, pos, position) -> bool:
    from diffgpu._mlir import ir

    owner = value.owner
    if isinstance(owner, ir.Block):
        return True
    p = position.get(owner.operation)
    # None: outside this block (dominates it); a constant moves up (_hoist_constants)
    return p is None or p < pos or owner.operation.name == "arith.constant"


def _movable(ops, run, kind, position, args, noalias) -> bool:
    """May the run's accesses move together (loads up to the first, stores down
    to the last)? Nothing between may write their array (nor read it, for
    stores); in a function whose arrays are disjoint (noalias), other arrays
    may be written and read between (a derivative's primal and tangent rows
    interleave), otherwise no other argument either (it may view the same
    memory)."""
    lo, hi = min(run), max(run)
    between = [ops[m] for m in range(lo + 1, hi) if m not in run]
    root = root_of(_memref_of(ops[run[0]]))
    is_arg = any(root == a for a in args)
    for o in between:
        w = writes_of(o, args)
        if w is None:
            return False  # unknown effects: a call, a barrier, a shuffle
        touched = w + (reads_of(o) if kind == "memref.store" else [])
        if any(root == t for t in touched):
            return False
        if is_arg and not noalias and any(any(t == a for a in args) for t in touched):
            return False  # another argument may view the same memory
    if kind == "memref.load":  # all move up to the first: their operands defined before
        return all(_defined_before(v, lo, position) for m in run for v in ops[m].operands)
    return True


def _address_ok(mem, lead, first, ty, n):
    """i1: the innermost stride is 1 and the element at [lead..., first] is
    aligned to n elements; the offset of that element (index) and its
    address (index)."""
    from diffgpu._mlir import ir
    from diffgpu._mlir import arith

    index = ir.IndexType.get()
    mt = ir.MemRefType(mem.type)
    rank = mt.rank
    base_t = ir.MemRefType.get([], mt.element_type)
    md = ir.Operation.create("memref.extract_strided_metadata", operands=[mem],
                             results=[base_t, index] + [index] * (2 * rank))
    offset = md.results[1]
    strides = list(md.results)[2 + rank:]
    acc = offset
    for s, i in zip(strides, lead + [first]):
        acc = arith.addi(acc, arith.muli(i, s))
    ptr = ir.Operation.create("memref.extract_aligned_pointer_as_index", operands=[mem],
                              results=[index]).results[0]
    size = BYTES[ty]
    addr = arith.addi(ptr, arith.muli(acc, arith.constant(index, size)))
    low = arith.andi(addr, arith.constant(index, size * n - 1))
    eq = arith.CmpIPredicate.eq
    aligned = arith.cmpi(eq, low, arith.constant(index, 0))
    unit = arith.cmpi(eq, strides[-1], arith.constant(index, 1))
    return arith.andi(aligned, unit), acc, addr


def _row_view(mem, offset, ty, n):
    from diffgpu._mlir import ir

    elem = ir.MemRefType(mem.type).element_type
    layout = ir.StridedLayoutAttr.get(ir.ShapedType.get_dynamic_stride_or_offset(), [1])
    view_t = ir.MemRefType.get([n], elem, layout)
    dyn = ir.ShapedType.get_dynamic_stride_or_offset()
    return ir.Operation.create(
        "memref.reinterpret_cast", operands=[mem, offset], results=[view_t],
        attributes={"static_offsets": ir.DenseI64ArrayAttr.get([dyn]),
                    "static_sizes": ir.DenseI64ArrayAttr.get([n]),
                    "static_strides": ir.DenseI64ArrayAttr.get([1]),
                    "operandSegmentSizes": ir.DenseI32ArrayAttr.get([1, 1, 0, 0])}).results[0]


def _hoist_constants(run_ops, first):
    """Constant subscripts defined after the first load (canonicalization puts
    them next to their uses) move before it."""
    from diffgpu._mlir import ir

    at = _index_in_block(first)
    for o in run_ops:
        for v in o.operands:
            owner = v.owner
            if not isinstance(owner, ir.Block) and owner.operation.name == "arith.constant" \
                    and owner.operation.block == first.block \
                    and _index_in_block(owner.operation) > at:
                owner.operation.move_before(first)


def _asm_load(mem, offset, elem, ty, n, index_bits):
    """The n elements at element `offset` of `mem`'s buffer by one `ld.vN`, as
    inline assembly: a vector `llvm.load` whose elements are all extracted is
    split back into scalar loads by LLVM's optimizer (and the two branches
    merged). Side effects declared: it is not moved across the kernel's
    stores. The address is a GEP from the descriptor's aligned pointer
    (`index` may be 32 bits wide in the gpu.module: no pointer goes through it)."""
    from diffgpu._mlir import ir
    from diffgpu._mlir import arith, llvm

    rank = ir.MemRefType(mem.type).rank
    it = f"i{index_bits}"
    desc_t = ir.Type.parse(f"!llvm.struct<(ptr, ptr, {it}, array<{rank} x {it}>, "
                           f"array<{rank} x {it}>)>")
    desc = ir.Operation.create("builtin.unrealized_conversion_cast", operands=[mem],
                               results=[desc_t]).results[0]
    p_t = ir.Type.parse("!llvm.ptr")
    aligned = llvm.extractvalue(p_t, desc, ir.DenseI64ArrayAttr.get([1]))
    off = arith.index_cast(ir.IntegerType.get_signless(index_bits), offset)
    ptr = llvm.getelementptr(p_t, aligned, [off], ir.DenseI32ArrayAttr.get([-2147483648]),
                             elem, llvm.GEPNoWrapFlags.none)
    reg = "f" if ty == "f32" else "d"
    outs = ", ".join(f"${k}" for k in range(n))
    struct = ir.Type.parse(f"!llvm.struct<({', '.join([ty] * n)})>")
    res = llvm.inline_asm(struct, [ptr], f"ld.v{n}.{ty} {{{outs}}}, [${n}];",
                          ",".join(["=" + reg] * n + ["l"]), has_side_effects=True)
    return [llvm.extractvalue(elem, res, ir.DenseI64ArrayAttr.get([k])) for k in range(n)]


def _rewrite_loads(run_ops, index_bits):
    from diffgpu._mlir import ir
    from diffgpu._mlir import memref, scf

    first = min(run_ops, key=lambda o: _index_in_block(o))
    _hoist_constants(run_ops, first)
    lowest = run_ops[0]  # innermost constants ascending
    ty = _eligible(lowest)
    n = len(run_ops)
    mem, subs = _memref_of(lowest), _subs(lowest)
    elem = ir.MemRefType(mem.type).element_type
    with first.location, ir.InsertionPoint(first):
        ok, offset, _ = _address_ok(mem, subs[:-1], subs[-1], ty, n)
        if_op = scf.IfOp(ok, [elem] * n, has_else=True)
        with ir.InsertionPoint(if_op.then_block):
            scf.YieldOp(_asm_load(mem, offset, elem, ty, n, index_bits))
        with ir.InsertionPoint(if_op.else_block):
            scalars = [memref.load(_memref_of(o), _subs(o)) for o in run_ops]
            scf.YieldOp(scalars)
    for k, o in enumerate(run_ops):
        o.results[0].replace_all_uses_with(if_op.results[k])
        o.erase()


def _index_in_block(op) -> int:
    for k, o in enumerate(op.block.operations):
        if o.operation == op:
            return k
    raise ValueError("op not in its block")


def _rewrite_stores(run_ops, position):
    from diffgpu._mlir import ir
    from diffgpu._mlir import arith, memref, scf

    lowest = run_ops[0]  # innermost constants ascending
    last = max(run_ops, key=lambda o: position[o])
    ty = _eligible(lowest)
    n = len(run_ops)
    mem, subs = _memref_of(lowest), _subs(lowest)
    elem = ir.MemRefType(mem.type).element_type
    index = ir.IndexType.get()
    values = [o.operands[0] for o in run_ops]
    others = [(o.operands[0], _memref_of(o), _subs(o)) for o in run_ops]
    with last.location, ir.InsertionPoint(last):
        ok, offset, _ = _address_ok(mem, subs[:-1], subs[-1], ty, n)
        if_op = scf.IfOp(ok, [], has_else=True)
        with ir.InsertionPoint(if_op.then_block):
            row = _row_view(mem, offset, ty, n)
            vec_t = ir.VectorType.get([n], elem)
            v = arith.constant(vec_t, ir.DenseElementsAttr.get_splat(
                vec_t, ir.FloatAttr.get(elem, 0.0)))
            for k, x in enumerate(values):
                v = ir.Operation.create(
                    "vector.insert", operands=[x, v], results=[vec_t],
                    attributes={"static_position": ir.DenseI64ArrayAttr.get([k])}).results[0]
            zero = arith.constant(index, 0)
            ir.Operation.create(
                "vector.store", operands=[v, row, zero],
                attributes={"alignment": ir.IntegerAttr.get(
                    ir.IntegerType.get_signless(64), BYTES[ty] * n)})
            scf.YieldOp([])
        with ir.InsertionPoint(if_op.else_block):
            for x, m, s in others:
                memref.store(x, m, s)
            scf.YieldOp([])
    for o in run_ops:
        o.erase()


def _block_runs(block, args, noalias):
    ops = [o.operation for o in block.operations]
    position = {o: i for i, o in enumerate(ops)}  # (ops hash and compare as the op)
    out = []
    for kind in ("memref.load", "memref.store"):
        for run in _runs(ops, kind):
            if _movable(ops, run, kind, position, args, noalias):
                out.append((kind, [ops[m] for m in run], {ops[m]: m for m in run}))
    return out


def index_bits(gpu_module) -> int:
    """The width of `index` in `gpu_module` (32 under diffgpu-index32's data
    layout entry, else 64)."""
    import re

    if "dlti.dl_spec" in gpu_module.attributes and re.search(
            r"index\W+32", str(gpu_module.attributes["dlti.dl_spec"])):
        return 32
    return 64


@register_pass
@dataclass
class VectorAccess(ModulePass):
    """Rows of 2 or 4 adjacent loads/stores become vector accesses where aligned
    (module docstring)."""
    name: ClassVar[str] = "diffgpu-vector-access"
    summary: ClassVar[str] = ("gpu.module functions: 2 or 4 adjacent float loads (stores) of "
                              "a row become one vector load (store) when the row is aligned "
                              "(tested at run time)")

    def run(self, module) -> None:
        if not enabled():
            return
        for gm in top_ops(module, ("gpu.module",)):
            for fn in top_ops(gm, ("func.func", "gpu.func")):
                if not fn.regions[0].blocks:
                    continue
                args = list(fn.regions[0].blocks[0].arguments)
                noalias = NOALIAS_ATTR in fn.attributes
                runs = []
                visit_blocks(fn, lambda b: runs.extend(_block_runs(b, args, noalias)))
                for kind, run_ops, pos in runs:
                    if kind == "memref.load":
                        _rewrite_loads(run_ops, index_bits(gm))
                    else:
                        _rewrite_stores(run_ops, pos)

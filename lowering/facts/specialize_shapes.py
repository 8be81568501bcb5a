"""Launch facts about shapes: equal extents and 32-bit indices.

The runtime (python/diffgpu/runtime/specialize.py) records per array and
dimension the first array argument with the same size there (`extents`),
and whether every index value of the launch fits in int32 (`index32`).

Equal extents (`canonical_dims`, run by `diffgpu-specialize`): in the kernel
and in the functions it alone calls (derivative functions), `memref.dim` of
an argument reads the representative's size instead. The derivative's
write-back guard `i < len(y)` then computes what the kernel's `i < len(x)`
does, `cse_pure` makes them one value and `diffgpu-specialize` merges the
two `scf.if`s:

    func.func @k(%o, %x, %y) {diffgpu.launch_facts = {extents = [[0], [0], [0]], ...}}
      %n = memref.dim %y, %c0            =>      %n = memref.dim %o, %c0

32-bit indices (`diffgpu-index32`, after `diffgpu-lower-to-gpu`): a
gpu.module whose kernels all have `index32` and are `index32_safe` gets the
data layout entry `index = 32`, so that `convert-gpu-to-nvvm` lowers `index`
to i32 (GEPs sign-extend it to the 64-bit address); `diffgpu-nvvm-cleanup`
widens the kernel's i32 descriptor parameters back to i64 (a trunc at entry),
so the kernel takes exactly the parameters the runtime packs. Subscripts
`index_cast(X + C)` computed in i64 become `index_cast(X) + C` with `nsw`
(`nsw_subscripts`), so that `A[4i]` ... `A[4i + 3]` share one base and
LLVM merges them into vector accesses.

    gpu.module @m attributes {dlti.dl_spec = #dlti.dl_spec<#dlti.dl_entry<index, 32 : i32>>, ...}

`index32_safe`: the kernel's functions turn integers into indices only for
memory subscripts (an out-of-range subscript is out of bounds either way;
a loop bound `range(n)` of an i64 `n` could exceed int32) and have no index
constant beyond int32; modules that allocate on the device heap (`malloc`
takes a 64-bit size) or use shared memory (measured slower: see
`_uses_workgroup_memory`) keep 64-bit indices.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from diffgpu.dialects import names as N
from diffgpu.lowering.common.ir_util import const_int, int_attr, top_ops
from diffgpu.lowering.registry import ModulePass, register_pass

INT32_MAX = 2**31 - 1
DL_SPEC = "#dlti.dl_spec<#dlti.dl_entry<index, 32 : i32>>"
_PURE_PREFIXES = ("arith.", "index.")
_PURE = frozenset(("memref.dim",) + tuple(N.GEOMETRY))
#: op -> first operand that is a subscript
_SUBSCRIPT = {"memref.load": 1, "memref.store": 2, N.ATOMIC_ADD: N.ATOMIC_FIRST_INDEX}


def _ops(op) -> list:
    out = []
    for region in op.regions:
        for block in region.blocks:
            for o in block.operations:
                o = o.operation
                out.append(o)
                out += _ops(o)
    return out


# ---------------------------------------------------------------------------
# equal extents
# ---------------------------------------------------------------------------

def canonical_dims(funcs: dict, facts_of) -> None:
    """Rewrite `memref.dim` of arguments to their extents representative in
    every kernel with an `extents` fact (`facts_of(fn)`: read_facts) and in
    the functions only it calls (each called once in the module)."""
    from diffgpu._mlir import ir

    labels = {}  # function name -> per argument: per dimension a label, or None
    work = []
    for name, f in funcs.items():
        facts = facts_of(f)
        if facts and facts.get("extents") and f.regions[0].blocks:
            labels[name] = [[(d, r) for d, r in enumerate(e)] if e else None
                            for e in facts["extents"]]
            work.append(name)
    if not work:  # no launch facts (a compile without a launch): nothing to do
        return
    calls: dict = {}
    for f in funcs.values():
        for o in _ops(f):
            if o.name == "func.call":
                name = ir.FlatSymbolRefAttr(o.attributes["callee"]).value
                calls[name] = calls.get(name, 0) + 1
    while work:
        name = work.pop()
        f = funcs[name]
        args = list(f.regions[0].blocks[0].arguments)
        mine = labels[name]
        for o in _ops(f):
            if o.name != "func.call":
                continue
            callee = ir.FlatSymbolRefAttr(o.attributes["callee"]).value
            g = funcs.get(callee)
            if (g is None or callee in labels or calls.get(callee) != 1
                    or not g.regions[0].blocks):
                continue
            out = []
            for v in o.operands:
                k = [i for i, a in enumerate(args) if a == v]
                out.append(mine[k[0]] if k and k[0] < len(mine) else None)
            labels[callee] = out
            work.append(callee)
    for name, lab in labels.items():
        _rewrite_dims(funcs[name], lab)


def _rewrite_dims(f, lab) -> None:
    args = list(f.regions[0].blocks[0].arguments)
    first = {}
    for k, ls in enumerate(lab[:len(args)]):
        for label in ls or ():
            first.setdefault(label, k)
    for o in _ops(f):
        if o.name != "memref.dim":
            continue
        k = [i for i, a in enumerate(args) if a == o.operands[0]]
        d = const_int(o.operands[1])
        if not k or d is None or k[0] >= len(lab) or not lab[k[0]] or d >= len(lab[k[0]]):
            continue
        rep = first[lab[k[0]][d]]
        if rep != k[0]:
            o.operands[0] = args[rep]


def cse_pure(fn) -> None:
    """Common subexpressions of pure ops (arith, index, geometry,
    `memref.dim`): a later op computing what an earlier one in the same or
    an enclosing block did is replaced by it."""
    def visit(block, scope):
        table = dict(scope)
        for o in [x.operation for x in block.operations]:
            if not len(o.regions) and len(o.results) == 1 and (
                    o.name in _PURE or o.name.startswith(_PURE_PREFIXES)):
                key = (o.name, tuple((a, str(o.attributes[a])) for a in o.attributes),
                       str(o.results[0].type), tuple(o.operands))
                same = table.get(key)
                if same is not None:
                    o.results[0].replace_all_uses_with(same)
                    o.erase()
                    continue
                table[key] = o.results[0]
            for region in o.regions:
                for b in region.blocks:
                    visit(b, table)

    for region in fn.regions:
        for b in region.blocks:
            visit(b, {})


# ---------------------------------------------------------------------------
# 32-bit indices
# ---------------------------------------------------------------------------

def index32_safe(funcs) -> bool:
    """May the functions `funcs` (a frontend module's) compute their indices
    in 32 bits under the `index32` launch fact? See the module docstring
    (`mark_facts` drops the fact otherwise)."""
    from diffgpu._mlir import ir

    for f in funcs:
        for o in _ops(f):
            if o.name in ("arith.index_cast", "arith.index_castui") and isinstance(
                    o.results[0].type, ir.IndexType):
                for use in o.results[0].uses:
                    user = use.owner.operation if hasattr(use.owner, "operation") else use.owner
                    at = _SUBSCRIPT.get(user.name)
                    if at is None or use.operand_number < at:
                        return False
            elif o.name == "arith.constant" and isinstance(o.results[0].type, ir.IndexType):
                if abs(const_int(o.results[0])) > INT32_MAX:
                    return False
    return True


def _uses_heap(funcs) -> bool:
    return any(o.name in ("memref.alloc", "memref.dealloc", "memref.realloc")
               for f in funcs for o in _ops(f))


def _uses_workgroup_memory(funcs) -> bool:
    """A kernel with shared arrays (its own, or the per-block buffers of
    `diffgpu-stencil-adjoint` / the atomics passes). Measured on the H200:
    the Enzyme-convention gradient of the 3-point stencil (per-block gather
    through shared memory, edge atomics) took 699 us with 32-bit indices and
    529 us with 64-bit ones (2^26 float32, bench/reduce_variants.py): with
    32-bit indices `x[i+1]` and the edge atomics' addresses are rebuilt from
    a sign-extended `i+1` instead of an immediate offset. Such modules keep
    64-bit indices."""
    return any(int_attr(f, "workgroup_attributions", 0) > 0 for f in funcs)


@register_pass
@dataclass
class Index32(ModulePass):
    """gpu.modules whose kernels all have the `index32` launch fact (which
    `mark_facts` keeps only for `index32_safe` modules) and that do not use
    the device heap lower `index` to i32 (see the module docstring)."""
    name: ClassVar[str] = "diffgpu-index32"
    summary: ClassVar[str] = ("lower index to i32 in gpu.modules whose launches proved "
                              "every index fits (launch fact index32)")

    def run(self, module) -> None:
        from diffgpu._mlir import ir
        from diffgpu.lowering.facts.attrs import read_facts

        for gm in top_ops(module, ("gpu.module",)):
            funcs = top_ops(gm, ("gpu.func", "func.func"))
            kernels = [f for f in funcs if "gpu.kernel" in f.attributes]
            if not kernels or not all((read_facts(k) or {}).get("index32") for k in kernels):
                continue
            if (_uses_heap(funcs) or _uses_workgroup_memory(funcs)
                    or "dlti.dl_spec" in gm.attributes):
                continue
            gm.attributes["dlti.dl_spec"] = ir.Attribute.parse(DL_SPEC)
            for f in funcs:
                nsw_subscripts(f)


#: after diffgpu-lower-to-gpu: op -> first operand that is a subscript
_GPU_SUBSCRIPT = {"memref.load": 1, "memref.store": 2, "memref.atomic_rmw": 2}


def nsw_subscripts(fn) -> None:
    """In a 32-bit-index function: a subscript `index_cast(X + C)` (i64
    arithmetic, `C` a constant) becomes `index_cast(X) + C` with `nsw`, so
    that LLVM sees `sext(x + C) = sext(x) + C` and merges `A[x]`, `A[x + 1]`,
    ... into vector accesses (the frontend computes `A[4 * i + d]` in i64;
    truncated to i32 at the end, each `d` had its own base before).

    Sound wherever the access is in bounds (out of bounds is undefined on
    the GPU either way): a subscript in [0, 2^31) with `C >= 0` has `X` in
    [-C, 2^31), so `X` truncates exactly and `X + C` does not overflow; for
    `C < 0` only when `X` is an index value itself (then it fits in int32 by
    its type). Only the subscript uses change; other uses (a tape slot that
    keeps the value) keep the exact cast."""
    from diffgpu._mlir import arith, ir

    index = ir.IndexType.get()
    for o in _ops(fn):
        if o.name != "arith.index_cast" or not isinstance(o.results[0].type, ir.IndexType):
            continue
        add = o.operands[0].owner
        if isinstance(add, ir.Block) or add.operation.name != "arith.addi":
            continue
        add = add.operation
        x, c = add.operands[0], const_int(add.operands[1])
        if c is None:
            x, c = add.operands[1], const_int(add.operands[0])
        subs = _subscript_uses(o.results[0])
        if c is None or not subs or (c < 0 and not _cast_of_index(x)):
            continue
        with o.location, ir.InsertionPoint(o):
            base = arith.index_cast(index, x)
            new = arith.addi(base, arith.constant(index, c),
                             overflow_flags=arith.IntegerOverflowFlags.nsw)
        for user, k in subs:
            user.operands[k] = new
        if not list(o.results[0].uses):
            o.erase()


def _subscript_uses(v) -> list:
    """[(op, operand number)] of the uses of `v` as a subscript (other uses,
    such as a tape slot keeping the value, keep the exact cast)."""
    out = []
    for use in v.uses:
        user = use.owner.operation if hasattr(use.owner, "operation") else use.owner
        at = _GPU_SUBSCRIPT.get(user.name)
        if at is not None and use.operand_number >= at:
            out.append((user, use.operand_number))
    return out


def _cast_of_index(v) -> bool:
    from diffgpu._mlir import ir

    owner = v.owner
    return (not isinstance(owner, ir.Block) and owner.operation.name == "arith.index_cast"
            and isinstance(owner.operation.operands[0].type, ir.IndexType))

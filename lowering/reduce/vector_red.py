"""sm_90 vector reductions: `diffgpu-vector-red` and `diffgpu-vector-red-expand`.

A thread that adds into 2 or 4 adjacent float32 elements (the gradient of a
row gather, `dT[r*4 + d] += g[d]`, or a primal `dg.atomic_add` per
component) issues one atomic per element. sm_90 has vector forms of the
reduction instruction: `red.global.add.v4.f32 [a], {b0, b1, b2, b3}` adds
16 aligned bytes in one instruction.

`diffgpu-vector-red` (memref level, inside `gpu.module`s whose chip is sm_90
or newer, after `diffgpu-warp-atomics`): in each block, `memref.atomic_rmw
addf` f32 ops with unused results on one memref whose subscripts agree
except for the innermost, which is one value plus distinct constants `X +
c`, `X + c+1`, ... form runs of 4 (else 2). A run becomes one call of a
helper declared in the gpu.module, placed where its last atomic was:

    memref.atomic_rmw addf %g0, %dT[%b]              %b1 = arith.addi %b, %c1 ...
    memref.store %z, %dy[%i]                  =>     memref.store %z, %dy[%i]
    memref.atomic_rmw addf %g1, %dT[%b1]              ...
    ...                                               func.call @__dg_red_add_v4_0(%dT, %b, %g0, %g1, %g2, %g3)
    memref.atomic_rmw addf %g3, %dT[%b3]

The earlier atomics move down to the last one: legal only when every op in
between is pure or, in a function whose arrays are proven disjoint
(`diffgpu.noalias`, or local buffers), reads and writes other arrays than
the atomics' own. An op with unknown effects (a call, a barrier, a warp
shuffle) or a nested region between them ends the run.

`diffgpu-vector-red-expand` (LLVM dialect, after `convert-gpu-to-nvvm`)
gives each helper its body. The element address is computed from the
memref descriptor; when the innermost stride is 1 and the address is
aligned to the vector's size (checked at run time: a row of a view may
start anywhere), one inline-asm vector `red` does the adds, otherwise the
scalar atomics do, element by element:

    %ok = (stride == 1) && (ptrtoint(%a) & 15) == 0
    llvm.cond_br %ok, ^vec, ^scalar
  ^vec:    llvm.inline_asm has_side_effects "red.global.add.v4.f32 [$0], {$1, $2, $3, $4};"
  ^scalar: llvm.atomicrmw fadd %a, %g0 acq_rel   (and a + stride, a + 2 stride, ...)

The helper is internal and small, so LLVM inlines it; in a specialised
kernel (launch fact `contiguous`) the stride test folds away. Vector `red`
needs PTX ISA 8.1: a gpu.module that gets a helper has its target's
`features` raised to `+ptx81` (unless it names a newer PTX already), on the
module and on every op inside it that carries the target, so the target
stays one attribute throughout. Both forms are relaxed, GPU-scope
reductions, as the scalar atomics print (`atom.global.add.f32`).

`DIFFGPU_VECTOR_RED=0` in the environment turns the rewrite off (part of
the compile cache's key), for measuring both forms.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from diffgpu import switches
from diffgpu.lowering.common import targets as T
from diffgpu.lowering.gpu.ops import RMW_ADDF
from diffgpu.lowering.common.ir_util import (const_int, scalar_name, sym_name, top_ops,
                                      visit_blocks, walk)
from diffgpu.lowering.facts.load_order import reads_of, root_of, writes_of
from diffgpu.lowering.registry import ModulePass, register_pass
from diffgpu.lowering.facts.attrs import NOALIAS_ATTR
from diffgpu.lowering.facts.specialize_shapes import cse_pure

ENV = switches.VECTOR_RED
HELPER_PREFIX = "__dg_red_add_v"
#: convert-gpu-to-nvvm gives every function, declarations too, a C-interface
#: twin: the helper becomes a wrapper calling an external `_mlir_ciface_` one
CIFACE_PREFIX = "_mlir_ciface_"
#: vector widths of `red.global.add.vN.f32`, widest first
WIDTHS = (4, 2)
#: the first PTX ISA version with vector `red`, and the first chip
MIN_PTX, MIN_SM = 81, 90


def enabled() -> bool:
    """Is the rewrite on (`DIFFGPU_VECTOR_RED` is not 0/false/no/off)?"""
    return switches.on(ENV)


# ---------------------------------------------------------------------------
# diffgpu-vector-red: find runs of adjacent atomic adds
# ---------------------------------------------------------------------------

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
        if o.name == "arith.index_cast":  # i64 arithmetic cast to index
            v = o.operands[0]
            continue
        if o.name in ("arith.addi", "arith.subi"):
            lhs, rhs = o.operands
            k = const_int(rhs)
            if k is not None:
                v, c = lhs, c + (k if o.name == "arith.addi" else -k)
                continue
            k = const_int(lhs)
            if k is not None and o.name == "arith.addi":
                v, c = rhs, c + k
                continue
        return v, c


def _candidate(op) -> bool:
    """An f32 `memref.atomic_rmw addf` whose result is unused."""
    from diffgpu._mlir import ir

    return (op.name == "memref.atomic_rmw" and not len(list(op.results[0].uses))
            and ir.IntegerAttr(op.attributes["kind"]).value == RMW_ADDF
            and scalar_name(op.operands[0].type) == "f32")


def _key(op):
    """(memref, leading subscripts, innermost base) and the innermost constant."""
    subs = list(op.operands)[2:]
    base, c = _base_offset(subs[-1])
    return (op.operands[1], tuple(subs[:-1]), base), c


def _same(a, b) -> bool:
    return len(a) == len(b) and all(x == y for x, y in zip(a, b))


def _runs(members) -> list:
    """[(constant, op)] of one key -> runs [[op, ...]] of WIDTHS adjacent constants."""
    by_c = {}
    for c, op in members:
        by_c.setdefault(c, op)  # a repeated element stays a scalar atomic
    out, used = [], set()
    for c in sorted(by_c):
        if c in used:
            continue
        for n in WIDTHS:
            if all(c + k in by_c and c + k not in used for k in range(n)):
                out.append([by_c[c + k] for k in range(n)])
                used.update(c + k for k in range(n))
                break
    return out


def _may_sink(op, between, args, noalias) -> bool:
    """May the atomic `op` move down past the ops `between`?"""
    root = root_of(op.operands[1])
    is_arg = any(root == a for a in args)
    for o in between:
        w = writes_of(o, args)
        if w is None:
            return False  # unknown effects: a call, a barrier, a shuffle
        touched = w + reads_of(o)
        if any(root == t for t in touched):
            return False
        if is_arg and not noalias and any(any(t == a for a in args) for t in touched):
            return False  # another argument may view the same memory
    return True


def _block_runs(block, args, noalias) -> list:
    """The runs of `block` whose atomics may all move to the run's last one."""
    ops = [o.operation for o in block.operations]
    groups = []  # [(key, [(constant, position)])]
    for i, o in enumerate(ops):
        if not _candidate(o):
            continue
        key, c = _key(o)
        for k, members in groups:
            if _same(k, key):
                members.append((c, i))
                break
        else:
            groups.append((key, [(c, i)]))
    runs = []
    for _, members in groups:
        for run in _runs(members):
            last = max(run)
            if all(_may_sink(ops[j], [ops[m] for m in range(j + 1, last) if m not in run],
                             args, noalias) for j in run if j != last):
                runs.append([ops[j] for j in sorted(run)])
    return runs


def _helper(gpu_module, memref_type, n, target, helpers):
    """The helper declaration for (memref type, width), created on first use."""
    from diffgpu._mlir import ir

    key = (str(memref_type), n)
    if key not in helpers:
        name = f"{HELPER_PREFIX}{n}_{len(helpers)}"
        rank = ir.MemRefType(memref_type).rank
        index = ir.IndexType.get()
        f32 = ir.F32Type.get()
        fty = ir.FunctionType.get([memref_type] + [index] * rank + [f32] * n, [])
        body = gpu_module.regions[0].blocks[0]
        with ir.Location.unknown(), ir.InsertionPoint.at_block_begin(body):
            ir.Operation.create(
                "func.func", attributes={
                    "sym_name": ir.StringAttr.get(name),
                    "function_type": ir.TypeAttr.get(fty),
                    "sym_visibility": ir.StringAttr.get("private"),
                    T.TARGET_ATTR: target}, regions=1)
        helpers[key] = name
    return helpers[key]


def _rewrite(run, gpu_module, target, helpers) -> None:
    from diffgpu._mlir import ir

    first_c = {id(op): _key(op)[1] for op in run}
    lowest = min(run, key=lambda o: first_c[id(o)])
    last = run[-1]
    mem = last.operands[1]
    subs = list(lowest.operands)[2:]
    values = [op.operands[0] for op in sorted(run, key=lambda o: first_c[id(o)])]
    name = _helper(gpu_module, mem.type, len(run), target, helpers)
    with last.location, ir.InsertionPoint(last):
        ir.Operation.create("func.call", operands=[mem] + subs + values,
                            attributes={"callee": ir.FlatSymbolRefAttr.get(name)})
    for op in run:
        op.erase()


@register_pass
@dataclass
class VectorRed(ModulePass):
    """Adjacent f32 atomic adds become one vector `red` on sm_90 (module docstring)."""
    name: ClassVar[str] = "diffgpu-vector-red"
    summary: ClassVar[str] = ("sm_90+: 2 or 4 adjacent f32 atomic adds with unused results "
                              "become one vector reduction (gpu.module functions)")

    def run(self, module) -> None:
        if not enabled():
            return
        for gm in top_ops(module, ("gpu.module",)):
            targets = list(gm.attributes["targets"]) if "targets" in gm.attributes else []
            if len(targets) != 1 or not _vector_chip(targets[0]):
                continue
            target, helpers = targets[0], {}
            for fn in top_ops(gm, ("func.func", "gpu.func")):
                if not fn.regions[0].blocks:
                    continue
                if not _may_pair([o for o in walk(fn, ("memref.atomic_rmw",))
                                  if _candidate(o)]):
                    continue
                args = list(fn.regions[0].blocks[0].arguments)
                noalias = NOALIAS_ATTR in fn.attributes
                cse_pure(fn)  # one SSA value for each repeated index computation
                runs = []
                visit_blocks(fn, lambda b: runs.extend(_block_runs(b, args, noalias)))
                for run in runs:
                    _rewrite(run, gm, target, helpers)
            if helpers:
                raise_ptx(gm, MIN_PTX)


def _may_pair(candidates) -> bool:
    """Do two of the candidate atomics share a block and an array (the
    cheap test before the function's CSE and the scan of its blocks)?"""
    seen = []
    for o in candidates:
        key = (o.block, o.operands[1])
        if any(b == key[0] and m == key[1] for b, m in seen):
            return True
        seen.append(key)
    return False


def _vector_chip(target) -> bool:
    chip = T.chip_of(target)
    if not chip:
        return False
    params = T.target_params(target)
    if any(v in ("[", "{") for v in params.values()):
        return False  # flags or link lists: not a target this pass rewrites
    return T.sm_number(chip) >= MIN_SM


def raise_ptx(gpu_module, minimum: int) -> None:
    """Raise the PTX ISA version of `gpu_module`'s target to `minimum` (on
    the module and on every op in it that carries the target)."""
    from diffgpu._mlir import ir

    old = list(gpu_module.attributes["targets"])[0]
    new = T.with_min_ptx(old, minimum)
    if new == old:
        return
    gpu_module.attributes["targets"] = ir.ArrayAttr.get([new])

    def visit(o):
        o = o.operation
        if T.TARGET_ATTR in o.attributes and o.attributes[T.TARGET_ATTR] == old:
            o.attributes[T.TARGET_ATTR] = new
        return ir.WalkResult.ADVANCE

    gpu_module.walk(visit, ir.WalkOrder.PRE_ORDER)


# ---------------------------------------------------------------------------
# diffgpu-vector-red-expand: the helpers' bodies, in the LLVM dialect
# ---------------------------------------------------------------------------

def _body_text(name: str, n: int, rank: int, ity: str, attrs: str) -> str:
    """An `llvm.func` defining helper `name` (see the module docstring)."""
    params = ["%alloc: !llvm.ptr", "%p: !llvm.ptr", f"%off: {ity}"]
    params += [f"%size{d}: {ity}" for d in range(rank)]
    params += [f"%stride{d}: {ity}" for d in range(rank)]
    params += [f"%i{d}: {ity}" for d in range(rank)]
    params += [f"%v{k}: f32" for k in range(n)]
    lines = [f"llvm.func internal @{name}({', '.join(params)}) attributes {{{attrs}}} {{"]
    acc = "%off"
    for d in range(rank):
        lines += [f"  %t{d} = llvm.mul %i{d}, %stride{d} : {ity}",
                  f"  %l{d} = llvm.add {acc}, %t{d} : {ity}"]
        acc = f"%l{d}"
    s = f"%stride{rank - 1}"
    lines += [
        f"  %a0 = llvm.getelementptr %p[{acc}] : (!llvm.ptr, {ity}) -> !llvm.ptr, f32",
        "  %addr = llvm.ptrtoint %a0 : !llvm.ptr to i64",
        f"  %mask = llvm.mlir.constant({4 * n - 1} : i64) : i64",
        "  %low = llvm.and %addr, %mask : i64",
        "  %zero = llvm.mlir.constant(0 : i64) : i64",
        "  %aligned = llvm.icmp \"eq\" %low, %zero : i64",
        f"  %one = llvm.mlir.constant(1 : {ity}) : {ity}",
        f"  %unit = llvm.icmp \"eq\" {s}, %one : {ity}",
        "  %ok = llvm.and %aligned, %unit : i1",
        "  llvm.cond_br %ok, ^vec, ^scalar",
        "^vec:",
    ]
    regs = ", ".join(f"${k + 1}" for k in range(n))
    vals = ", ".join(f"%v{k}" for k in range(n))
    lines += [
        f"  llvm.inline_asm has_side_effects \"red.global.add.v{n}.f32 [$0], {{{regs}}};\", "
        f"\"l{',f' * n},~{{memory}}\" %a0, {vals} : (!llvm.ptr{', f32' * n}) -> ()",
        "  llvm.return",
        "^scalar:",
    ]
    for k in range(n):
        if k:
            lines.append(f"  %a{k} = llvm.getelementptr %a{k - 1}[{s}] : "
                         f"(!llvm.ptr, {ity}) -> !llvm.ptr, f32")
        lines.append(f"  %r{k} = llvm.atomicrmw fadd %a{k}, %v{k} acq_rel : !llvm.ptr, f32")
    lines += ["  llvm.return", "}"]
    return "\n".join(lines)


def _helper_shape(fn):
    """(width, rank, index type) of a helper from its LLVM signature: the
    memref descriptor (ptr, ptr, offset, sizes, strides), the subscripts and
    the values, e.g. `!llvm.func<void (ptr, ptr, i32, i32, i32, i32, f32, f32)>`."""
    from diffgpu._mlir import ir

    n = int(sym_name(fn)[len(HELPER_PREFIX):].split("_")[0])
    text = str(ir.TypeAttr(fn.attributes["function_type"]).value)
    params = [t.strip() for t in text[text.index("(") + 1:text.rindex(")")].split(",")]
    rank = (len(params) - 3 - n) // 3
    return n, rank, params[2]


@register_pass
@dataclass
class VectorRedExpand(ModulePass):
    """Define the vector-red helpers in LLVM-dialect gpu.modules (module docstring)."""
    name: ClassVar[str] = "diffgpu-vector-red-expand"
    summary: ClassVar[str] = ("in gpu.modules lowered to LLVM: define diffgpu-vector-red's "
                              "helpers (vector red when aligned, else scalar atomics)")

    def run(self, module) -> None:
        from diffgpu._mlir import ir

        for gm in top_ops(module, ("gpu.module",)):
            for decl in top_ops(gm, ("llvm.func",)):
                name = sym_name(decl)
                if name.startswith(CIFACE_PREFIX + HELPER_PREFIX):
                    decl.erase()  # the C-interface twin convert-gpu-to-nvvm declares
                    continue
                if not name.startswith(HELPER_PREFIX):
                    continue
                n, rank, ity = _helper_shape(decl)
                attrs = "always_inline"
                if T.TARGET_ATTR in decl.attributes:
                    attrs += f", {T.TARGET_ATTR} = {decl.attributes[T.TARGET_ATTR]}"
                parsed = ir.Module.parse(_body_text(name, n, rank, ity, attrs))
                list(parsed.body.operations)[0].operation.move_before(decl)
                decl.erase()

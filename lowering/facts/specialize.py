"""Launch-time specialisation: the facts a launch proved, and what they allow.

The runtime (python/diffgpu/runtime/specialize.py) proves facts about one
launch (no two arrays overlap, which arrays are C-contiguous, which
geometry dimensions are 1) and `mark_facts` records them on the entry
kernel as a dictionary attribute, part of the compiled program's key:

    func.func @k(%y: memref<?xf32, strided<[?], offset: ?>>, ...) attributes {
        diffgpu.kernel, diffgpu.launch_facts = {contiguous = [true, true],
        noalias = true, unit_dims = [1 : i64, 2 : i64]}, diffgpu.target = ...}

Readers of the attribute:
- `diffgpu-autodiff` (autodiff/elision.py): a whole-launch derivative whose
  arrays are distinct arguments of a `noalias` kernel lets several shadows
  skip their atomics, drops the geometry guard of `unit_dims`, and marks the
  derivative function `diffgpu.noalias`;
- `diffgpu-specialize` (below), after autodiff, in functions whose memref
  arguments are proven pairwise disjoint (the `noalias` kernel itself, and
  derivative functions marked `diffgpu.noalias`): a block's loads are issued
  before the stores to other arrays that precede them, so that a thread's
  DRAM round trips overlap instead of waiting on each other (the reverse
  sweep's consuming store `dy = 0` no longer delays the load of `dx`); the
  kernel's arrays that nothing writes (through calls too) are listed in
  `diffgpu.readonly`;
- `diffgpu-nvvm-cleanup` (lowering/gpu/nvvm.py): `noalias` kernel pointers,
  `readonly` ones for arrays the kernel never writes (`ld.global.nc`),
  `align 16` ones for `aligned` arrays, the offset and the strides of
  `contiguous` arrays folded to constants;
- `diffgpu-specialize` also applies `extents` (lowering/facts/specialize_shapes.py):
  `memref.dim` of an array reads its representative's size, in the kernel
  and the functions only it calls, so equal guards become one;
- `diffgpu-index32` (lowering/facts/specialize_shapes.py), after lowering to GPU:
  `index32` kernels' gpu.modules lower `index` to i32; `mark_facts` records
  `index32 = false` unless `index32_safe` holds for the module (integers
  become indices only as subscripts) and no kernel parameter is an index;
- `mark_facts` itself: an eligible elementwise kernel of a 1-D launch whose
  grid x extent divides (`grid_div`) gets `diffgpu.coarsen = 4` (16 for a
  reduction kernel when `grid_div16` holds)
  (lowering/coarsen/coarsen.py; `diffgpu-coarsen` rewrites it, the runtime launches
  a quarter of the blocks).

Functions without these attributes are left exactly as they are: the
generic program (overlapping arrays, in-place kernels) is unchanged.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from diffgpu.dialects import names as N
from diffgpu.lowering.registry import ModulePass, register_pass
from diffgpu.lowering.facts.load_order import _WRITES, order_function
from diffgpu.lowering.facts.specialize_shapes import canonical_dims, index32_safe

FACTS_ATTR = "diffgpu.launch_facts"
NOALIAS_ATTR = "diffgpu.noalias"
READONLY_ATTR = "diffgpu.readonly"


def mark_facts(text: str, entry: str, facts) -> str:
    """`text` (diffgpu IR) with the launch facts (runtime Facts) recorded on
    the kernel `entry`."""
    from diffgpu.driver import compiler
    from diffgpu._mlir import ir

    with compiler.context(), ir.Location.unknown():  # the driver's: no new context
        module = ir.Module.parse(text)
        for op in module.body.operations:
            op = op.operation
            if op.name == "func.func" and op.attributes["sym_name"].value == entry:
                ftype = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
                ranks = [ir.MemRefType(t).rank if isinstance(t, ir.MemRefType) else -1
                         for t in ftype.inputs]
                text = facts.attribute_text()[:-1] + ", ranks = [" + ", ".join(
                    f"{r} : i64" for r in ranks) + "]}"
                if getattr(facts, "index32", False) and (any(  # an index parameter: i64 packed
                        isinstance(t, ir.IndexType) for t in ftype.inputs) or not index32_safe(
                        [o.operation for o in module.body.operations
                         if o.operation.name == "func.func"])):
                    text = text.replace("index32 = true", "index32 = false")
                op.attributes[FACTS_ATTR] = ir.Attribute.parse(text)
                if facts.noalias:
                    op.attributes[NOALIAS_ATTR] = ir.UnitAttr.get()
                if getattr(facts, "grid_div", False) and facts.unit_dims == (1, 2):
                    from diffgpu.lowering.coarsen import coarsen
                    factor = coarsen.factor_for(op, module, facts.noalias, True,
                                                getattr(facts, "grid_div16", False))
                    if factor > 1:
                        op.attributes[coarsen.COARSEN_ATTR] = ir.IntegerAttr.get(
                            ir.IntegerType.get_signless(64), factor)
                break
        else:
            raise ValueError(f"no function @{entry} to specialise")
        return compiler.hand_over(module)  # the driver compiles it without a re-parse


def coarsen_factor(text: str) -> int:
    """The coarsening `mark_facts` chose for a module's kernel (1: none),
    read from the functions' attribute; the runtime divides the grid's x
    extent by it (reading it from the PTX's tail function)."""
    from diffgpu.driver import compiler
    from diffgpu._mlir import ir
    from diffgpu.lowering.coarsen import coarsen
    from diffgpu.lowering.common.ir_util import int_attr, top_ops

    with compiler.context(), ir.Location.unknown():
        module = ir.Module.parse(text)
    return max((int_attr(f, coarsen.COARSEN_ATTR, 1) for f in top_ops(module, ("func.func",))),
               default=1)


def read_facts(fn) -> dict | None:
    """{"noalias": bool, "contiguous": [bool], "unit_dims": (int,), "ranks":
    [int]} (rank -1: a scalar) of a function marked by `mark_facts`, else None.
    A malformed attribute (check_facts) is an error diagnostic at `fn` and
    stops the pass reading it (PassFailure)."""
    from diffgpu._mlir import ir
    from diffgpu.lowering.passes import PassFailure

    if FACTS_ATTR not in fn.attributes:
        return None
    problem = check_facts(fn)
    if problem:
        name = ir.StringAttr(fn.attributes["sym_name"]).value
        message = f"malformed {FACTS_ATTR} of @{name}: {problem}"
        fn.location.emit_error(message)
        raise PassFailure(message)
    d = ir.DictAttr(fn.attributes[FACTS_ATTR])
    return {"noalias": bool(ir.BoolAttr(d["noalias"]).value),
            "contiguous": [bool(ir.BoolAttr(a).value) for a in ir.ArrayAttr(d["contiguous"])],
            "aligned": ([bool(ir.BoolAttr(a).value) for a in ir.ArrayAttr(d["aligned"])]
                        if "aligned" in d else []),
            "unit_dims": tuple(ir.IntegerAttr(a).value for a in ir.ArrayAttr(d["unit_dims"])),
            "ranks": [ir.IntegerAttr(a).value for a in ir.ArrayAttr(d["ranks"])],
            "extents": ([[ir.IntegerAttr(r).value for r in ir.ArrayAttr(e)]
                         for e in ir.ArrayAttr(d["extents"])] if "extents" in d else []),
            "index32": "index32" in d and bool(ir.BoolAttr(d["index32"]).value)}


#: the attribute's entries: name -> (kind, required); "bools"/"ints": an array
_FACT_KINDS = {"noalias": ("bool", True), "contiguous": ("bools", True),
               "unit_dims": ("ints", True), "ranks": ("ints", True),
               "aligned": ("bools", False), "grid_div": ("bool", False),
               "grid_div16": ("bool", False), "index32": ("bool", False),
               "extents": ("extents", False)}


def check_facts(fn) -> str | None:
    """What is wrong with `fn`'s `diffgpu.launch_facts` (None: nothing): the
    entries and their types, one entry per argument of the launch in `ranks`
    (each the argument's memref rank, -1 for a scalar; lowering appends more
    arguments, e.g. grid_sum.py's scratch arrays) and, unless empty, in
    `contiguous`, `aligned` and `extents`, `unit_dims` among 0, 1, 2, and
    `extents`' references: per array and dimension an earlier (or the same)
    array argument of that dimension that is its own reference there."""
    from diffgpu._mlir import ir

    attr = fn.attributes[FACTS_ATTR]
    if not isinstance(attr, ir.DictAttr):
        return f"expected a dictionary, got {attr}"
    d = ir.DictAttr(attr)
    entries = {d[i].name: d[i].attr for i in range(len(d))}
    for key in entries:
        if key not in _FACT_KINDS:
            return f"unknown entry '{key}' (entries: {', '.join(_FACT_KINDS)})"
    values = {}
    for key, (kind, required) in _FACT_KINDS.items():
        if key not in entries:
            if required:
                return f"missing entry '{key}'"
            continue
        values[key] = _fact_value(entries[key], kind)
        if values[key] is None:
            return f"'{key}' must be {_KIND_TEXT[kind]}, got {entries[key]}"
    ranks = values["ranks"]
    have = _arg_ranks(fn, ranks)
    if isinstance(have, str):
        return have
    if len(ranks) > len(have) or ranks != have[:len(ranks)]:
        return (f"'ranks' = {ranks} does not match the function's arguments (ranks "
                f"{have}; -1: a scalar)")
    for key in ("contiguous", "aligned", "extents"):
        if values.get(key) and len(values[key]) != len(ranks):
            return f"'{key}' has {len(values[key])} entries for {len(ranks)} arguments"
    bad = [u for u in values["unit_dims"] if u not in (0, 1, 2)]
    if bad or len(set(values["unit_dims"])) != len(values["unit_dims"]):
        return f"'unit_dims' must be distinct dimensions 0, 1 or 2, got {values['unit_dims']}"
    extents = values.get("extents") or []
    for k, e in enumerate(extents):
        if len(e) != max(ranks[k], 0):
            return (f"extents[{k}] has {len(e)} entries for argument {k} of rank "
                    f"{ranks[k]}" + (" (a scalar: none)" if ranks[k] < 0 else ""))
        for dim, r in enumerate(e):
            if not 0 <= r < len(ranks):
                return (f"extents[{k}][{dim}] names argument {r}, but the launch has "
                        f"{len(ranks)} argument(s)")
            if r > k:
                return (f"extents[{k}][{dim}] names argument {r}, a later one (the first "
                        f"argument of that size: {k} itself or an earlier one)")
            if ranks[r] <= dim or extents[r][dim] != r:
                return (f"extents[{k}][{dim}] names argument {r}, which is not its own "
                        f"reference in dimension {dim}")
    return None


_KIND_TEXT = {"bool": "a bool", "bools": "an array of bools", "ints": "an array of integers",
              "extents": "an array of arrays of integers"}


def _fact_value(attr, kind):
    """The Python value of one entry, or None when it is not of `kind`."""
    from diffgpu._mlir import ir

    if kind == "bool":
        return bool(ir.BoolAttr(attr).value) if isinstance(attr, ir.BoolAttr) else None
    if not isinstance(attr, ir.ArrayAttr):
        return None
    items = list(ir.ArrayAttr(attr))
    if kind == "bools" and all(isinstance(a, ir.BoolAttr) for a in items):
        return [bool(ir.BoolAttr(a).value) for a in items]
    if kind == "ints" and all(isinstance(a, ir.IntegerAttr) for a in items):
        return [ir.IntegerAttr(a).value for a in items]
    if kind == "extents":
        inner = [_fact_value(a, "ints") for a in items]
        return None if any(i is None for i in inner) else inner
    return None


def _arg_ranks(fn, ranks):
    """The ranks `fn`'s arguments have (a func.func or gpu.func), `ranks`
    itself for an llvm.func whose parameters start with the descriptors of
    `ranks` (a scalar one word, a memref of rank r 3 + 2r: the runtime's
    packing), else a message."""
    from diffgpu._mlir import ir

    ftype = ir.TypeAttr(fn.attributes["function_type"]).value
    if isinstance(ftype, ir.FunctionType):
        return [ir.MemRefType(t).rank if isinstance(t, ir.MemRefType) else -1
                for t in ir.FunctionType(ftype).inputs]
    if not fn.regions[0].blocks:
        return ranks
    params = len(fn.regions[0].blocks[0].arguments)
    words = sum(1 if r < 0 else 3 + 2 * r for r in ranks)
    if words > params:
        return (f"'ranks' = {ranks} needs {words} parameters, the function has {params}")
    return ranks


# ---------------------------------------------------------------------------
# diffgpu-specialize
# ---------------------------------------------------------------------------

#: ops that neither write memory nor synchronise
@register_pass
@dataclass
class Specialize(ModulePass):
    """Apply launch facts after autodiff: load order, read-only arrays.

    In a function marked `diffgpu.noalias` (its memref arguments are pairwise
    disjoint: a launch proved it), adjacent `scf.if`s on the same condition
    (the forward and reverse sweeps of an `if i < n`) become one, and in each
    block every `memref.load` moves up past the ops that cannot affect it:
    pure ops, and stores/atomics into a *different* argument or local
    allocation. It stops at its operands' definitions, at a write to its own
    array, at calls, barriers and anything else.

        scf.if %in { %x = load %X[%i]; store %f, %Y[%i] }
        scf.if %in { %d = load %dY[%i]; store %zero, %dY[%i]
                     %a = load %dX[%i]; store %s, %dX[%i] }
      becomes
        scf.if %in { %x = load %X[%i]; %d = load %dY[%i]; %a = load %dX[%i]
                     store %f, %Y[%i]; store %zero, %dY[%i]; store %s, %dX[%i] }

    A kernel with launch facts gets `diffgpu.readonly = [..]`: per argument,
    true for an array that no store or atomic of the kernel or of the
    functions it calls (followed through calls) writes.
    """
    name: ClassVar[str] = "diffgpu-specialize"
    summary: ClassVar[str] = ("apply launch facts: issue loads before the stores to other "
                              "arrays where a launch proved them disjoint; mark read-only arrays")

    def run(self, module) -> None:
        from diffgpu._mlir import ir

        funcs = {}
        for op in module.regions[0].blocks[0].operations:
            op = op.operation
            if op.name == "func.func":
                funcs[op.attributes["sym_name"].value] = op
        written = Written(funcs)
        canonical_dims(funcs, read_facts)
        for f in funcs.values():
            if not f.regions[0].blocks:
                continue
            if NOALIAS_ATTR in f.attributes:
                order_function(f)
            if FACTS_ATTR in f.attributes:
                flags = written.of(f.attributes["sym_name"].value)
                args = list(f.regions[0].blocks[0].arguments)
                f.attributes[READONLY_ATTR] = ir.ArrayAttr.get([
                    ir.BoolAttr.get(isinstance(a.type, ir.MemRefType) and not w)
                    for a, w in zip(args, flags)])


class Written:
    """Which memref arguments of a function may be written (by it or by the
    functions it calls); unknown uses count as writes."""

    def __init__(self, funcs):
        self.funcs, self.memo = funcs, {}

    def of(self, name: str) -> list[bool]:
        from diffgpu._mlir import ir

        if name in self.memo:
            return self.memo[name]
        f = self.funcs[name]
        args = list(f.regions[0].blocks[0].arguments) if f.regions[0].blocks else []
        self.memo[name] = [True] * len(args)  # recursion: assume written
        out = [False] * len(args)
        for k, a in enumerate(args):
            if isinstance(a.type, ir.MemRefType):
                out[k] = self._value_written(a)
        self.memo[name] = out
        return out

    def _value_written(self, v) -> bool:
        from diffgpu._mlir import ir

        for use in v.uses:
            o = use.owner.operation if hasattr(use.owner, "operation") else use.owner
            name = o.name
            if name in ("memref.load", "memref.dim"):
                continue
            if name in _WRITES:
                if use.operand_number == _WRITES[name]:
                    return True
                continue
            if name in ("memref.cast", "memref.subview", "memref.reinterpret_cast"):
                if self._value_written(o.results[0]):
                    return True
                continue
            if name == "func.call":
                callee = ir.FlatSymbolRefAttr(o.attributes["callee"]).value
                if callee not in self.funcs or not self.funcs[callee].regions[0].blocks:
                    return True
                flags = self.of(callee)
                if use.operand_number >= len(flags) or flags[use.operand_number]:
                    return True
                continue
            return True
        return False


from diffgpu.lowering.facts import specialize_shapes  # noqa: E402,F401  (diffgpu-index32)

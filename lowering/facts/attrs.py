"""The launch facts as attributes: their names (`FACTS_ATTR`, `NOALIAS_ATTR`,
`READONLY_ATTR`, `COARSEN_ATTR`), their reader (`read_facts`, checked by
`check_facts`) and the coarsening a marked module asks for
(`coarsen_factor`). What each fact means and which pass reads it:
lowering/facts/specialize.py. The passes of this package and the ones above
it read the facts through here.
"""
from __future__ import annotations


FACTS_ATTR = "diffgpu.launch_facts"
NOALIAS_ATTR = "diffgpu.noalias"
READONLY_ATTR = "diffgpu.readonly"
#: the coarsening a launch asks for (lowering/coarsen/coarsen.py reads it)
COARSEN_ATTR = "diffgpu.coarsen"


def coarsen_factor(text: str) -> int:
    """The coarsening `mark_facts` chose for a module's kernel (1: none),
    read from the functions' attribute; the runtime divides the grid's x
    extent by it (reading it from the PTX's tail function)."""
    from diffgpu._mlir import ir
    from diffgpu.lowering.common import session
    from diffgpu.lowering.common.ir_util import int_attr, top_ops

    with session.context(), ir.Location.unknown():
        module = ir.Module.parse(text)
    return max((int_attr(f, COARSEN_ATTR, 1) for f in top_ops(module, ("func.func",))),
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

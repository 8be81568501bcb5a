"""Reading and checking a `diffgpu.autodiff` / `diffgpu.fwddiff` op (docs/IR.md).

Besides Enzyme's activities, reverse mode takes two functional kinds (the
host's `dg.vjp`, docs/functional.md): `cot` and `grad` are shadowed like
`dup`, the sweep treats them as `dup`, and functional.py then rewrites the
generated function (`DiffSpec.functional`: argument index -> kind).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from diffgpu._mlir import ir

from diffgpu.dialects import names as N
from diffgpu.lowering.common import targets

from diffgpu.lowering.autodiff import build as B

KINDS = ("const", "dup", "dupnoneed", "active", "cot", "grad", N.DUP32, N.RMW_FINAL)
#: functional kinds (reverse mode only): shadowed, differentiated as "dup"
FUNCTIONAL = ("cot", "grad")


@dataclass
class DiffSpec:
    """One differentiation request: callee, activities and operands."""
    mode: str  # "rev" or "fwd"
    callee: str
    acts: list
    arg_types: list
    result_types: list
    target: object
    primals: list = field(default_factory=list)
    shadows: list = field(default_factory=list)  # in argument order, dup args only
    seed: list = field(default_factory=list)
    functional: dict = field(default_factory=dict)  # arg index -> "cot" / "grad"

    def key(self):
        fk = tuple(sorted(self.functional.items()))
        return (self.mode, self.callee, tuple(self.acts), str(self.target)) + (
            (fk,) if fk else ())

    def digest(self) -> str:
        fk = ",".join(f"{k}={v}" for k, v in sorted(self.functional.items()))
        text = "|".join([self.mode, self.callee, ",".join(self.acts),
                         ",".join(str(t) for t in self.arg_types), str(self.target)]
                        + ([fk] if fk else []))
        return hashlib.sha1(text.encode()).hexdigest()[:8]

    def call_operands(self):
        return list(self.primals) + list(self.shadows) + list(self.seed)


def is_shadowed(act: str) -> bool:
    """Whether the operand group of an argument of activity `act` holds a shadow."""
    return act in N.SHADOWED


def func_types(fn):
    ftype = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)
    return list(ftype.inputs), list(ftype.results)


def parse(pas, op, gen, mode):
    """A DiffSpec for `op` (an AutodiffOp or FwddiffOp), or None after
    reporting what is wrong."""
    opname = op.operation.name
    attrs = op.attributes
    if "callee" not in attrs or "activity" not in attrs:
        pas.error(op, f"'{opname}' needs 'callee' and 'activity' attributes")
        return None
    callee = op.callee
    acts = op.activities
    target = targets.get_target(op)
    if target is None:
        pas.error(op, f"'{opname}' has no {targets.TARGET_ATTR}")
        return None
    fn = gen.lookup(callee)
    if fn is None:
        pas.error(op, f"'{opname}' refers to unknown function @{callee}")
        return None
    if len(fn.regions[0].blocks) == 0:
        pas.error(op, f"cannot differentiate @{callee}: it has no body")
        return None
    ins, outs = func_types(fn)
    if len(acts) != len(ins):
        pas.error(op, f"'{opname}' gives {len(acts)} activities for @{callee}, "
                      f"which takes {len(ins)} arguments")
        return None
    if len(outs) > 1:
        pas.error(op, f"cannot differentiate @{callee}: at most one result is supported")
        return None
    try:
        seg, groups = op.arg_segments, op.arg_groups
        seed = op.split()[0]
    except N.LayoutError as e:
        pas.error(op, f"'{opname}' of @{callee}: {e}")
        return None
    if len(seg) != len(acts):
        pas.error(op, f"'{opname}' of @{callee}: '{N.GROUPS_ATTR}' has {len(seg)} entries "
                      f"for {len(acts)} activities")
        return None
    spec = DiffSpec(mode, callee, acts, ins, outs, target)
    spec.functional = {k: a for k, a in enumerate(acts) if a in FUNCTIONAL}
    if mode == "rev":
        want_seed = 1 if outs else 0
        if len(seed) != want_seed:
            pas.error(op, f"'{opname}' of @{callee} needs {want_seed} seed operand(s), "
                          f"got {len(seed)}")
            return None
        spec.seed = seed
    elif seed:
        pas.error(op, f"'{opname}' of @{callee}: '{N.GROUPS_ATTR}' covers "
                      f"{sum(seg)} of its {sum(seg) + 1} operands")
        return None
    for k, (act, t) in enumerate(zip(acts, ins)):
        bad = _check_act(act, t, mode)
        if bad:
            pas.error(op, f"'{opname}' argument {k} of @{callee}: {bad}")
            return None
        n = 2 if is_shadowed(act) else 1
        if seg[k] != n:
            pas.error(op, f"'{opname}' argument {k} of @{callee} is '{act}': expected "
                          f"{n} operand(s), got {seg[k]}")
            return None
        group = groups[k]
        for j, v in enumerate(group):
            want = B.wide_memref(t) if act == N.DUP32 and j == 1 else t
            if v.type != want:
                pas.error(op, f"'{opname}' argument {k} of @{callee}: operand type "
                              f"{v.type} does not match parameter type {want}")
                return None
        spec.primals.append(group[0])
        if n == 2:
            spec.shadows.append(group[1])
    spec.acts = ["dup" if a in FUNCTIONAL else a for a in acts]
    want = [t for a, t in zip(acts, ins) if a == "active"] if mode == "rev" else \
        (list(outs) if outs and op.results and len(list(op.results)) else [])
    got = [r.type for r in op.results]
    if got != want:
        pas.error(op, f"'{opname}' of @{callee} must return "
                      f"({', '.join(str(t) for t in want)}), not ({', '.join(str(t) for t in got)})")
        return None
    return spec


def _check_act(act, t, mode):
    if act not in KINDS:
        return f"unknown activity '{act}' (expected one of {', '.join(KINDS)})"
    if act == "const":
        return None
    if act in FUNCTIONAL and (mode != "rev" or not B.is_memref(t)):
        return f"'{act}' is for arrays in reverse mode (dg.vjp)"
    if act == N.DUP32 and (mode != "rev" or not B.is_memref(t)
                           or not B.is_half(B.memref_elem(t))):
        return f"'{act}' is for 16-bit float arrays in reverse mode"
    if act == N.RMW_FINAL and (not B.is_memref(t) or not B.is_float(B.memref_elem(t))
                               or B.is_half(B.memref_elem(t))):
        return f"'{act}' is for float32 / float64 arrays (dg.vjp / dg.jvp of dg.atomic_max)"
    if B.is_memref(t):
        if act == "active":
            return "arrays cannot be 'active'; use 'dup'"
        return None
    if not B.is_float(t):
        return f"'{act}' needs a float or an array; an integer argument must be 'const'"
    if mode == "rev" and is_shadowed(act):
        return "a float scalar is 'active' in reverse mode, not 'dup'"
    if mode == "fwd" and act == "active":
        return "'active' is reverse mode only; use 'dup' with a tangent in forward mode"
    return None

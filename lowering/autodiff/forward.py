"""Forward mode: `diffgpu.fwddiff` -> `@__dg_fwd_<callee>_<hash>`.

The generated function is a clone of the callee (so it runs the primal) with
the tangent of every active value computed right after it: elementwise ops
by their partials (the same tables as reverse mode), loads of `dup` arrays
read the shadow, stores write the tangent into the shadow; every other op
by the `tangent` of its rule object (partials.Rule: rules_scf passes
loop-carried and branch-result tangents through one-value slots, memref<T>
allocas promoted to registers by LLVM, so structured ops keep their
signature).

    %y = math.sin %x        ->  %y = math.sin %x
                                %dy = arith.mulf %dx, (math.cos %x)

Arguments: primals, then the tangents of `dup` arguments in order (a memref
for arrays, a scalar for floats). Results: the callee's results, then the
tangent of its float result.
"""
from __future__ import annotations

from diffgpu._mlir import func, ir
from diffgpu.dialects import names as N

from diffgpu.lowering.autodiff import build as B
from diffgpu.lowering.autodiff import locals as L
from diffgpu.lowering.autodiff.rules import tape as rules_tape
from diffgpu.lowering.autodiff import shared as SH
from diffgpu.lowering.autodiff import spec as S
from diffgpu.lowering.autodiff import tape as T
from diffgpu.lowering.autodiff.activity import Activity
from diffgpu.lowering.autodiff.rules.partials import Args, scale
from diffgpu.lowering.autodiff.reverse import nested_needs
from diffgpu.lowering.autodiff.rules.registry import ELEMENTWISE, INACTIVE, TERMINATORS, rule_of

SKIP = TERMINATORS


class ForwardSweep:
    def __init__(self, gen, act, entry, tangents, target):
        self.gen, self.act, self.entry, self.target = gen, act, entry, target
        self.t = dict(tangents)  # value -> tangent (memref shadows included)
        self._reported = set()
        self.sides = rules_tape.SideTapes(gen, entry)  # tangents of tape words

    # interface shared with the rules ----------------------------------------
    def is_active(self, v):
        return self.act.is_active(v)

    def is_dup(self, v):
        return self.act.is_dup(v)

    def shadow(self, m):
        return self.t[m]

    def val(self, v):
        return v

    def error(self, op, msg):
        self.gen.pas.error(op, msg)

    def tangent(self, v):
        t = self.t.get(v)
        return t if t is not None else B.zero(v.type)

    def set_tangent(self, v, t):
        self.t[v] = t.v if isinstance(t, B.V) else t

    def slot(self, t):
        with T.at_begin(self.entry):
            return B.alloca_scalar(t)

    # -- the rest of the rules' context (context.TangentContext) ---------------
    def tape_tag_pushed(self, tag) -> bool:
        return tag in self.act.push_tags

    def tape_tag_active(self, tag) -> bool:
        return tag in self.act.tape_active

    def side_tape(self, tag):
        return self.sides.get(tag)

    def needs(self, op):
        rule = rule_of(op)
        if rule is not None and not self._plain_call(op):
            return rule.needs(self, op)
        if op.operation.name in INACTIVE:
            return False
        return (any(self.is_active(r) for r in op.results)
                or any(self.is_active(v) or self.is_dup(v) for v in op.operands)
                or nested_needs(self, op))

    # the sweep ----------------------------------------------------------------
    def run_block(self, block):
        for op in list(block.operations):
            name = op.operation.name
            if name in SKIP or not self.needs(op):
                continue
            with op.location:
                self.op(op, name)

    def op(self, op, name):
        if self._plain_call(op):
            return self.call(op)
        rule = rule_of(op)
        if rule is not None and rule.tangent is not None:
            with ir.InsertionPoint.after(op):
                rule.tangent(self, op)
            return
        if name in ELEMENTWISE:
            with ir.InsertionPoint.after(op):
                return tan_elementwise(self, op)
        if op.operation not in self._reported:
            self._reported.add(op.operation)
            self.error(op, f"no derivative rule for '{name}'")

    @staticmethod
    def _plain_call(op):
        """A func.call: forward mode calls the callee's forward derivative."""
        return op.operation.name == "func.call" and rules_tape.tag_of(op) is None

    def call(self, op):
        args, results = list(op.operands), list(op.results)
        callee = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
        acts = ["dup" if (self.is_dup(a) or self.is_active(a)) else "const" for a in args]
        made = forward_function(self.gen, callee, acts, self.target, op)
        if made is None:
            return
        name, types, _ = made
        extra = [self.tangent(a) if self.is_active(a) else self.shadow(a)
                 for a, k in zip(args, acts) if k == "dup"]
        with ir.InsertionPoint.after(op):
            new = func.CallOp(types, ir.FlatSymbolRefAttr.get(name), args + extra)
        nres = len(results)
        for old, nr in zip(results, list(new.results)[:nres]):
            if self.is_active(old):
                self.act.active.add(nr)
            old.replace_all_uses_with(nr)
        tangents = iter(list(new.results)[nres:])  # one per float result, in order
        for nr in list(new.results)[:nres]:
            if B.is_float(nr.type):
                self.set_tangent(nr, next(tangents))
        op.operation.erase()


def tan_elementwise(F, op):
    args = Args(op, lambda v: v)
    rt = op.results[0].type
    total = None
    for i, partial in enumerate(ELEMENTWISE[op.operation.name]):
        v = op.operands[i]
        if not F.is_active(v):
            continue
        c = scale(B.cast_float(F.tangent(v), rt), partial, args)
        if c is not None:
            total = c if total is None else total + c
    F.set_tangent(op.results[0], total.v if total is not None else B.zero(rt))


# -- generation -----------------------------------------------------------------
def forward_function(gen, callee, acts, target, at, shared=False):
    """(name, result types, extra shared-array types) of the forward
    derivative of @callee, or None. `shared`: for a kernel's own op."""
    fn = gen.lookup(callee)
    if fn is None or not len(fn.regions[0].blocks):
        gen.pas.error(at, f"cannot differentiate the call to @{callee}: it has no body")
        return None
    ins, outs = S.func_types(fn)
    spec = S.DiffSpec("fwd", callee, acts, ins, outs, target)
    key = spec.key()
    if key in gen.made:
        return gen.made[key]
    name = f"__dg_fwd_{callee}_{spec.digest()}"
    touts = [t for t in outs if B.is_float(t)]
    allocs = [op.results[0].type for op in SH.shared_allocs(gen.pas, fn)] if shared else []
    gen.made[key] = (name, list(outs) + touts, SH.kernel_types(allocs))
    if name in gen.funcs:
        return gen.made[key]
    gen.begin(key, callee, at)
    new = gen.clone(fn, name, target, shared=shared)
    if N.RMW_FINAL in acts:  # dg.atomic_max/min's final values (rules/collectives.py)
        from diffgpu.lowering.autodiff.rules.collectives import FINAL_ATTR
        new.attributes[FINAL_ATTR] = ir.DenseI64ArrayAttr.get(
            [k for k, a in enumerate(acts) if a == N.RMW_FINAL])
    entry = new.regions[0].blocks[0]
    args = list(entry.arguments)
    tangents = {}
    for k, a in enumerate(acts):
        if S.is_shadowed(a):
            tangents[args[k]] = entry.add_argument(ins[k], new.location)
    sh, sh_idx, _ = SH.hoist(gen.pas, new, entry, SH.shared_allocs(gen.pas, new)) \
        if shared else ({}, [], [])
    tangents.update(sh)
    new.attributes["function_type"] = ir.TypeAttr.get(
        ir.FunctionType.get([a.type for a in entry.arguments], list(outs) + touts))
    shadowed = {k for k, a in enumerate(acts) if S.is_shadowed(a)}
    act = Activity(entry, {k for k in shadowed if B.is_float(ins[k])},
                   {k for k in shadowed if B.is_memref(ins[k])} | set(sh_idx))
    L.tangent_buffers(gen.pas, act, tangents)
    F = ForwardSweep(gen, act, entry, tangents, target)
    F.run_block(entry)
    ret = list(entry.operations)[-1]
    with ir.InsertionPoint(ret), ret.location:
        F.sides.release()
        extra = [F.tangent(v) for v in ret.operands if B.is_float(v.type)]
        func.ReturnOp(list(ret.operands) + extra)
    ret.erase()
    gen.busy.discard(key)
    return gen.made[key]


def make_forward(gen, spec, at):
    """For a diffgpu.fwddiff op: (name, result types, index of its results)."""
    made = forward_function(gen, spec.callee, spec.acts, spec.target, at, shared=True)
    if made is None:
        return None
    name, types, extra = made
    return name, types, len(spec.result_types), extra

"""The reverse sweep.

`sweep(block)` walks the block's forward ops once, appending each op's
adjoint rule to a list, then emits the list reversed at the current
insertion point. Adjoints accumulate in a value -> adjoint map (`local`, SSA
values of the block being reversed); the adjoint of a value used in a nested
block accumulates in a zero-initialised slot instead, since nested reverse
regions cannot yield into the parent's map. Structured ops (rules_scf) call
`sweep` recursively for their regions. Forward values reach the reverse code
through `need(v)` (directly, via a slot, via the tape: see tape.py, or
recomputed: see remat.py).
"""
from __future__ import annotations

from diffgpu._mlir import arith, func, ir, memref
from diffgpu.dialects import names as N
from diffgpu.lowering.common import targets

from diffgpu.lowering.autodiff import build as B
from diffgpu.lowering.autodiff.rules import tape as rules_tape
from diffgpu.lowering.autodiff.remat import Remat, enabled as remat_enabled, read_only_arrays
from diffgpu.lowering.autodiff.activity import nested_uses, walk_ops
from diffgpu.lowering.autodiff.rules.func import CallInfo
from diffgpu.lowering.autodiff.rules.partials import Args, scale
from diffgpu.lowering.autodiff.rules.registry import (ELEMENTWISE, INACTIVE, REMAT, STRUCTURED, rule_of)  # noqa: F401


class Frame:
    """One forward block being reversed. kind: "direct" (values visible),
    "slot" (runs at most once) or "tape" (in a loop, or split functions)."""

    def __init__(self, fwd, kind, anchor):
        self.fwd, self.kind, self.anchor = fwd, kind, anchor
        self.cache = {}
        self.local = {}


class ReverseSweep:
    """Reverse-mode code for one function. `split`: the forward sweep lives in
    another function (augmented forward) and `rev_args` maps its entry
    arguments; else forward and reverse share one function."""

    def __init__(self, gen, activity, tape, shadows, split, rev_args=None):
        self.gen, self.act, self.tape = gen, activity, tape
        self.shadows = shadows  # fwd memref -> shadow memref (reverse side)
        self.split, self.rev_args = split, rev_args
        self.frames: list[Frame] = []
        self.slots = {}
        self.call_info = {}  # rewritten call op -> rules_func.CallInfo
        self.nested = set()
        self._reported = set()
        #: primal memref -> guard dims of its plain shadow updates (elision.py)
        self.elision = {}
        #: tapes of adjoints of tape words (rules_tape), in the reverse function
        self.sides = rules_tape.SideTapes(gen, tape.rev_entry)
        #: ops the sweep added to the forward code (checkpoint stores): not
        #: differentiated
        self.added = set()
        #: which tape-frame values are recomputed instead (set by `prepare`)
        self.remat = Remat(on=False)

    # -- queries ------------------------------------------------------------
    def is_active(self, v) -> bool:
        return self.act.is_active(v)

    def is_dup(self, v) -> bool:
        return self.act.is_dup(v)

    def shadow(self, m):
        return self.shadows[m]

    def error(self, op, msg):
        self.gen.pas.error(op, msg)

    # -- the rest of the rules' context (context.ReverseContext) ---------------
    def tape_tag_pushed(self, tag) -> bool:
        return tag in self.act.push_tags

    def tape_tag_active(self, tag) -> bool:
        return tag in self.act.tape_active

    def side_tape(self, tag):
        return self.sides.get(tag)

    def recompute(self, v, make) -> None:
        self.frame.cache[v] = make

    def forward_slot(self, t):
        return self.tape.fwd_slot(t)

    def elision_of(self, m):
        return self.elision.get(m)

    def call_info_of(self, op):
        return self.call_info.get(op.operation)

    def reverse_tape_holder(self):
        return self.tape.rev_holder()

    # -- before the sweep -----------------------------------------------------
    def augment_calls(self, target, entry):
        """Replace the active calls of the forward sweep by augmented calls
        (rules/func.py); the reverse rule of each finds its CallInfo."""
        for op in list(self.act.ops):
            if op.operation.name != "func.call":
                continue
            args, results = list(op.operands), list(op.results)
            if not (any(self.is_active(a) or self.is_dup(a) for a in args)
                    or any(self.is_active(r) for r in results)):
                continue
            callee = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
            acts = [self._dup_kind(a) if self.is_dup(a) else "active" if self.is_active(a)
                    else "const" for a in args]
            names = self.gen.split(callee, acts, target, op)
            if names is None:
                continue
            aug, rev, grad_types = names
            h, n = self.tape.fwd_holder()
            with ir.InsertionPoint(op), op.location:
                new = func.CallOp([r.type for r in results], ir.FlatSymbolRefAttr.get(aug),
                                  args + [h, n])
            for old, nr in zip(results, new.results):
                if self.is_active(old):
                    self.act.active.add(nr)
                old.replace_all_uses_with(nr)
            self.call_info[new.operation] = CallInfo(rev, acts, len(args),
                                                     [r.type for r in results], grad_types)
            op.operation.erase()
        self.act.ops = walk_ops(entry)

    def _dup_kind(self, a) -> str:
        """A call argument's shadowed kind: dup32 when its shadow is a float32
        scratch of a 16-bit array (names.DUP32), else dup."""
        sh = self.shadows.get(a)
        return N.DUP32 if sh is not None and sh.type != a.type else "dup"

    def needs(self, op) -> bool:
        if op.operation in self.added:
            return False  # forward code the sweep added (checkpoint.py)
        rule = rule_of(op)
        if rule is not None:
            return rule.needs(self, op)
        if op.operation.name in INACTIVE:
            return False
        return (any(self.is_active(r) for r in op.results)
                or any(self.is_active(v) or self.is_dup(v) for v in op.operands)
                or nested_needs(self, op))

    def handler(self, op):
        if not self.needs(op):
            return None
        rule = rule_of(op)
        if rule is not None:
            return rule.reverse
        if op.operation.name in ELEMENTWISE:
            return rev_elementwise
        if op.operation not in self._reported:
            self._reported.add(op.operation)
            self.error(op, f"no derivative rule for '{op.operation.name}'")
        return None

    # -- frames -------------------------------------------------------------
    @property
    def frame(self) -> Frame:
        return self.frames[-1]

    def frame_of(self, v):
        blk = B.defining_block(v)
        for f in reversed(self.frames):
            if f.fwd == blk:
                return f
        return None

    def sweep(self, fwd_block, in_loop=False, seed=None, finish=None, kind=None):
        """Emit the reverse of `fwd_block` at the current insertion point."""
        if kind is None:
            parent = self.frames[-1].kind if self.frames else "direct"
            kind = "tape" if (self.split or in_loop or parent == "tape") else "slot"
        ops = list(fwd_block.operations)[:-1]
        anchor = B.idx(0).owner
        self.frames.append(Frame(fwd_block, kind, anchor))
        try:
            todo = []
            for op in ops:
                h = self.handler(op)
                if h is not None:
                    todo.append((op, h))
            if seed is not None:
                seed()
            for op, h in reversed(todo):
                with op.location:
                    h(self, op)
            return finish() if finish is not None else None
        finally:
            self.frames.pop()
            anchor.erase()  # the marker only positions the pops

    # -- forward values -----------------------------------------------------
    def need(self, v):
        """Forward value `v`, usable at the current reverse insertion point."""
        frame = self.frame_of(v)
        if frame is None:
            raise RuntimeError(f"value {v.get_name()} not visible in the reverse sweep")
        if frame.kind == "direct":
            return v
        owner = v.owner
        if not isinstance(owner, ir.Block) and owner.operation.name in REMAT:
            op = owner.operation
            attrs = {k: op.attributes[k] for k in op.attributes}
            return ir.Operation.create(op.name, results=[v.type], attributes=attrs).results[0]
        if v in frame.cache:
            val = frame.cache[v]
            if callable(val):  # computed on first use, at the block's start
                with ir.InsertionPoint(frame.anchor):
                    val = frame.cache[v] = val()
                self.remat.made.add(val)  # no pop: later recomputations may use it
            return val
        if frame is self.frames[0] and B.is_block_arg(v):
            return self.rev_args[v.arg_number]
        if self.remat.plan(self, v, frame):
            return self.remat.emit(self, v, frame)
        if B.is_memref(v.type):
            self.gen.pas.fail(v.location, "an array created inside a differentiated function "
                              "cannot be used by its reverse sweep (not supported)")
        end = ir.InsertionPoint.at_block_terminator(frame.fwd)  # O(1), not a walk
        term = end.ref_operation
        if frame.kind == "slot":
            # i1 is kept as i8: memref<i1> does not lower to LLVM
            wide = ir.IntegerType.get_signless(8) if B.is_int(v.type) and \
                ir.IntegerType(v.type).width == 1 else v.type
            slot = self.tape.fwd_slot(wide)
            with end:
                memref.store(v if wide == v.type else arith.extui(wide, v), slot, [])
            with ir.InsertionPoint(frame.anchor):
                val = memref.load(slot, [])
                first = val.owner
                if wide != v.type:
                    val = arith.trunci(v.type, val)
        else:
            tag = self.gen.tape_tag() if B.is_float(v.type) else None
            with end, term.location:
                self.tape.push(v, tag)
            with ir.InsertionPoint(frame.anchor):
                val, first = self.tape.pop(v.type, tag)
        frame.anchor = first.operation if hasattr(first, "operation") else first
        frame.cache[v] = val
        return val

    # -- adjoints -----------------------------------------------------------
    def add_adj(self, v, d):
        """adjoint(v) += d (d: a value of v's type; of a 16-bit float's, its
        adjoint is float32: B.adjoint_type)."""
        if not self.is_active(v) or d is None:
            return
        d = d.v if isinstance(d, B.V) else d
        if B.is_half(v.type):
            d = B.cast_float(d, B.adjoint_type(v.type))
        frame = self.frame_of(v)
        if frame is self.frame and v not in self.nested:
            old = frame.local.get(v)
            frame.local[v] = d if old is None else (B.V(old) + d).v
            return
        slot = self.slots.get(v)
        if slot is None:
            slot = self.slots[v] = self.tape.adj_slot(B.adjoint_type(v.type))
        memref.store((B.V(memref.load(slot, [])) + d).v, slot, [])

    def get_adj(self, v):
        """The total adjoint of v, read at its definition (None when zero),
        of type B.adjoint_type(v.type); a slot is reset to zero for the next
        loop iteration."""
        if not self.is_active(v):
            return None
        a = self.frame.local.pop(v, None)
        slot = self.slots.get(v)
        if slot is not None:
            s = memref.load(slot, [])
            memref.store(B.zero(B.adjoint_type(v.type)), slot, [])
            a = s if a is None else (B.V(a) + s).v
        return a

    def adj_or_zero(self, v):
        a = self.get_adj(v)
        return a if a is not None else B.zero(B.adjoint_type(v.type))

    def prepare(self, entry_block, noalias=False):
        """Before the sweep, on the forward code: `noalias`, the launch proved
        the function's arrays disjoint (which loads may be recomputed)."""
        self.nested = nested_uses(self.act.ops, self.is_active)
        readonly = () if self.split else read_only_arrays(entry_block, noalias)
        fn = entry_block.owner
        self.remat = Remat(readonly, on=remat_enabled(),
                           gpu=targets.is_gpu(targets.get_target(fn)))


def nested_needs(D, op):
    """An op without a rule whose regions hold code that needs a derivative
    (scf.parallel, ...): it needs one too, so it is reported, not skipped."""
    return any(D.needs(inner) for region in op.regions for block in region.blocks
               for inner in block.operations)


def rev_elementwise(R, op):
    """Apply the op's partials (rules_arith / rules_math)."""
    d = R.get_adj(op.results[0])
    if d is None:
        return
    args = Args(op, R.need)
    for i, partial in enumerate(ELEMENTWISE[op.operation.name]):
        v = op.operands[i]
        if not R.is_active(v):
            continue
        c = scale(d, partial, args)
        if c is not None:
            R.add_adj(v, B.cast_float(c.v, B.adjoint_type(v.type)))

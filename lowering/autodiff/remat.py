"""Rematerialisation: which forward values the reverse sweep recomputes
instead of taping them.

A value defined in a loop body (or anywhere in a split augmented-forward /
reverse pair) reaches the reverse sweep through the tape's stack (tape.py):
one 8-byte word pushed by the forward code and popped by the reverse, with
a counter update and a capacity check at each end, in local memory. A value
that is cheap to compute again from values the reverse block already has
costs less recomputed: an index is one or two integer ops, and a load from
an array that nothing writes moves 4 bytes through the cache instead of 16
through local memory. The decision is made here, per value, when the
reverse sweep first needs it (reverse.py `need`):

    scf.for %k = %c0 to %m step %c1 {               // forward
      %ki = arith.index_cast %k : index to i64
      %kf = arith.sitofp %ki : i64 to f32            // recomputed
      %wk = memref.load %w[%k]                       // recomputed: %w is read-only
      %xi = memref.load %x[%i]                       // recomputed
      %a  = arith.mulf %xi, %kf : f32                // recomputed
      %s  = math.sin %a : f32                        // taped (not cheap)
  reverse, at the start of the reversed body (%k rebuilt from the reverse
  loop's counter):
      %kf' = arith.sitofp (arith.index_cast %k') ; %wk' = memref.load %w[%k']
      %a'  = arith.mulf (memref.load %x[%i]), %kf' ; %s' = <pop>

The cost model. A value is recomputed when its op is one of

- integer / index arithmetic, casts, comparisons, min/max, select
  (INT_OPS, cost 1; divisions and remainders cost 4), Python's `%` and `//`
  included (a remainder, two comparisons and a select);
- cheap float arithmetic: add, sub, mul, neg, fma, select, conversions
  (FLOAT_OPS, cost 1);
- on a GPU target, `math.sin` / `math.cos` with an active result (TWINS,
  cost 2): the reverse computes the twin function of the same operand for
  the derivative, and the two fuse into one `math.sincos`;
- `memref.dim` of an argument (cost 1);
- `memref.load` (cost 2) from a READ-ONLY array: a global-memory argument
  of the differentiated function that no op of the function writes (no
  store, atomic, call or other use but `load` and `dim`), and that no write
  of the function may alias: the launch proved the function's arrays
  pairwise disjoint (`noalias`, elision.py rule 5: the launch runs nothing
  else), or the function writes no memory but its own local buffers and has
  no barrier (a kernel calling it may write the array once every thread is
  past the function's last barrier: a race-free write that a late reload
  would see). Never in a split pair (the caller
  may write the array between the augmented forward and the reverse),
  never shared memory. Shadows are assumed not to overlap their primal
  arrays (a shadow is where the gradient goes, not an input);

and each of its operands is available in the reverse block without a pop:
a value of an enclosing block (reached as before: directly, by a slot, or
by that block's own tape), a constant or geometry op, the loop's recomputed
induction variable, an entry argument, a value already recomputed, or
(recursively) another value recomputed here. The ops that would be newly
emitted must cost at most BUDGET in total, at most DEPTH levels deep.
In the body of a loop (scf.for or scf.while, at any depth) the tape grows
with the trip count: a runtime-length loop would need local memory and then
device `malloc` in proportion to it (an all-pairs n-body's inner loop over
j, 2 GiB of tape against a 1 GiB heap). There every pure float op may be
recomputed as well (LOOP_OPS: division, sqrt, exp, sin, ...: cost 2 to 4)
within LOOP_BUDGET, so a body whose values follow from loop-invariant
values, the induction variable and read-only loads (the n-body's
`1 / sqrt(dx * dx + dy * dy + eps)` and its powers) needs no tape at all;
the reverse evaluates the body's forward ops once more instead.

Everything else keeps the tape: loop-carried values and what depends on
them, loads of written arrays, tape words of generated derivatives (their
tags pair a push with its pop: rules/tape.py), and outside loops the
transcendental results.

The recomputed ops are ordinary ops of the reverse function: differentiated
again (higher order), a recomputed load is a load like any other, and its
adjoint goes to its array's shadow.

`DIFFGPU_REMAT=0` in the environment turns recomputation off (everything a
loop needs is taped, as before, while-loop counters included); the setting
is part of the cache key.
"""
from __future__ import annotations

from diffgpu import switches
from diffgpu._mlir import ir
from diffgpu.dialects import names as N
from diffgpu.lowering.common.ir_util import walk_block as walk_ops

from diffgpu.lowering.autodiff import build as B
from diffgpu.lowering.autodiff.tape import tag_of

ENV = switches.REMAT
#: ops without operands rebuilt wherever they are needed, even with
#: recomputation off (rules.REMAT): constants and geometry
FREE = ("arith.constant",) + N.GEOMETRY
#: total cost of the ops newly emitted to recompute one value: about what a
#: push and its pop execute (counter load and store, capacity check, word
#: conversion, the word's store and load: some 18 instructions), before
#: counting their 16 bytes of local-memory traffic
BUDGET = 24
#: how deep a recomputation may reach through operands
DEPTH = 12

INT_OPS = {
    "arith.addi": 1, "arith.subi": 1, "arith.muli": 1, "arith.andi": 1, "arith.ori": 1,
    "arith.xori": 1, "arith.shli": 1, "arith.shrsi": 1, "arith.shrui": 1,
    "arith.minsi": 1, "arith.maxsi": 1, "arith.minui": 1, "arith.maxui": 1,
    "arith.index_cast": 1, "arith.index_castui": 1, "arith.extsi": 1, "arith.extui": 1,
    "arith.trunci": 1, "arith.cmpi": 1, "arith.select": 1,
    "arith.divsi": 4, "arith.divui": 4, "arith.remsi": 4, "arith.remui": 4,
    "arith.ceildivsi": 4, "arith.ceildivui": 4, "arith.floordivsi": 4,
}
FLOAT_OPS = {
    "arith.addf": 1, "arith.subf": 1, "arith.mulf": 1, "arith.negf": 1, "math.fma": 1,
    "arith.sitofp": 1, "arith.uitofp": 1, "arith.extf": 1, "arith.truncf": 1,
    "arith.cmpf": 1, N.STOP_GRADIENT: 1,
}
LOAD_COST = 2
#: GPU only: sin/cos whose own derivative the reverse takes (an active
#: result): the reverse evaluates the twin (cos/sin) of the same recomputed
#: operand in the same block, and `diffgpu-fuse-sincos` computes both with
#: one `math.sincos`, so the recomputed value costs almost nothing
TWINS = ("math.sin", "math.cos")
TWIN_COST = 2
#: in a loop body (the tape grows with the trip count): pure float ops that
#: may be recomputed too, and the budget of one value there
LOOP_OPS = {
    "arith.divf": 2, "arith.remf": 4, "arith.minimumf": 1, "arith.maximumf": 1,
    "arith.minnumf": 1, "arith.maxnumf": 1, "math.absf": 1, "math.copysign": 1,
    "math.floor": 1, "math.ceil": 1, "math.round": 1, "math.roundeven": 1,
    "math.trunc": 1, "math.sqrt": 2, "math.rsqrt": 2, "math.fpowi": 4,
    **{"math." + n: 4 for n in """exp exp2 expm1 log log2 log10 log1p sin cos tan tanh
       sinh cosh erf erfc atan asin acos asinh acosh atanh cbrt atan2 powf""".split()},
}
LOOP_BUDGET = 64
#: ops whose body runs once per iteration
_LOOPS = ("scf.for", "scf.while", "scf.parallel")
#: uses of an array that do not write it
_READS = ("memref.load", "memref.dim")
_LOCAL = ("memref.alloca", "memref.alloc", N.SHARED_ALLOC)
#: ops whose first operand is the array (an entry argument, used as it is)
_MEMREF_OPS = ("memref.load", "memref.dim")


def enabled() -> bool:
    """Whether recomputation is on (`DIFFGPU_REMAT`, default on)."""
    return switches.on(ENV)


def _op(v):
    owner = v.owner
    return None if isinstance(owner, ir.Block) else owner.operation


def _entry_arg(m) -> bool:
    """`m` is an argument of the function (not a block of a nested region)."""
    owner = m.owner
    if not isinstance(owner, ir.Block):
        return False
    parent = owner.owner
    return getattr(parent, "operation", parent).name == "func.func"


def _global(m) -> bool:
    return B.is_memref(m.type) and ir.MemRefType(m.type).memory_space is None


def _local(m) -> bool:
    op = _op(m)
    return op is not None and op.name in _LOCAL


def read_only_arrays(entry, noalias: bool) -> set:
    """The global-memory arguments of the function with entry block `entry`
    that it never writes and that none of its writes may alias (module
    docstring). Run on the forward code, before the sweep adds its own."""
    args = [a for a in entry.arguments if _global(a)]
    written = set()
    writes_global = False
    for op in walk_ops(entry):
        o = op.operation
        if o.name == N.BARRIER:
            # the calling kernel may write an array once every thread is past
            # the last barrier, while this thread's reverse still reads it
            writes_global = True
        for pos, v in enumerate(o.operands):
            if not B.is_memref(v.type):
                continue
            if o.name in _READS and pos == 0:
                continue
            written.add(v)  # a store, an atomic, a call, anything else
            if not _local(v):
                writes_global = True
    if writes_global and not noalias:
        return set()
    return {a for a in args if a not in written}


class Remat:
    """The policy of one reverse sweep: `plan(R, v, frame)` says whether
    forward value `v` of tape frame `frame` is recomputed; `emit` builds it
    at the start of the reversed block."""

    def __init__(self, readonly=(), on: bool = True, gpu: bool = False):
        self.readonly = set(readonly)
        self.on, self.gpu = on, gpu
        self.made = set()  # recomputed values (usable by later recomputations)
        self._in_loop = {}  # forward block -> whether a loop encloses it
        #: loop bodies whose every value is recomputed (checkpoint.py checked
        #: that each one can be)
        self.force = set()

    def _available(self, R, u, frame) -> bool:
        """`u` is usable at the start of `frame`'s reversed block without a pop."""
        f = R.frame_of(u)
        if f is None:
            return False
        if f is not frame:
            return True  # an enclosing block's value: its own frame provides it
        op = _op(u)
        if op is not None and op.name in FREE:
            return True
        if u in frame.cache:
            got = frame.cache[u]
            return callable(got) or got in self.made
        return frame is R.frames[0] and B.is_block_arg(u) and R.rev_args is not None

    def in_loop(self, block) -> bool:
        """`block` is (inside) the body of a loop."""
        if block not in self._in_loop:
            op, found = block.owner, False
            while op is not None and not found:
                op = getattr(op, "operation", op)
                found = op.name in _LOOPS
                op = op.block.owner if op.name != "func.func" and op.block is not None \
                    else None
            self._in_loop[block] = found
        return self._in_loop[block]

    def _cost(self, R, v, frame, depth, seen, budget=BUDGET) -> int | None:
        """The cost of the ops newly emitted to recompute `v`, or None."""
        if v in seen or self._available(R, v, frame):
            return 0
        op = _op(v)
        if op is None or depth > DEPTH or tag_of(op) is not None or len(op.results) != 1:
            return None
        name = op.name
        loop = budget == LOOP_BUDGET
        if name in INT_OPS:
            cost = INT_OPS[name]
        elif name in FLOAT_OPS or (name == "arith.select" and B.is_float(v.type)):
            cost = FLOAT_OPS.get(name, 1)
        elif name == "memref.load" and op.operands[0] in self.readonly:
            cost = LOAD_COST
        elif name == "memref.dim" and _entry_arg(op.operands[0]):
            cost = 1  # an argument's extent: read from its descriptor
        elif name in TWINS and self.gpu and R.is_active(v):
            cost = TWIN_COST
        elif loop and name in LOOP_OPS:
            cost = LOOP_OPS[name]
        else:
            return None
        seen.add(v)
        operands = list(op.operands)[1:] if name in _MEMREF_OPS else list(op.operands)
        for u in operands:
            c = self._cost(R, u, frame, depth + 1, seen, budget)
            if c is None:
                return None
            cost += c
            if cost > budget:
                return None
        return cost

    def plan(self, R, v, frame) -> bool:
        if not (self.on and frame.kind == "tape"):
            return False
        if frame.fwd in self.force:
            return True
        budget = LOOP_BUDGET if self.in_loop(frame.fwd) else BUDGET
        return self._cost(R, v, frame, 0, set(), budget) is not None

    def emit(self, R, v, frame):
        """Recompute `v` right before `frame`'s anchor (after the block's
        other recomputations, before its pops); its operands first."""
        op = _op(v)
        with ir.InsertionPoint(frame.anchor), op.location:
            operands = [R.need(u) for u in op.operands]
        copy = op.clone(ip=ir.InsertionPoint(frame.anchor))  # attributes, flags, location
        for k, u in enumerate(operands):
            copy.operands[k] = u
        new = copy.results[0]
        self.made.add(new)
        frame.cache[v] = new
        return new


# -- counters of scf.while loops ------------------------------------------------
def _const_step(y, a):
    """The integer c when `y` is `arith.addi` of `a` and a constant c."""
    op = _op(y)
    if op is None or op.name != "arith.addi":
        return None
    x, z = op.operands
    for var, other in ((x, z), (z, x)):
        if var == a:
            c = _op(other)
            if c is not None and c.name == "arith.constant" and \
                    isinstance(c.attributes["value"], ir.IntegerAttr):
                return ir.IntegerAttr(c.attributes["value"]).value
    return None


def while_counters(op) -> list:
    """The counters of an scf.while: (k, [c...], step) for each integer
    `before` argument k that the condition passes unchanged to the `after`
    arguments c and that the `after` block yields back as `arg_c + step`
    (a constant). At the t-th execution of `before` (and of `after`, from 0)
    such a counter holds init + t * step: the reverse rebuilds it from its
    own step count instead of taping it (rules/scf.py).

        %r:2 = scf.while (%s = %x, %k = %c0) {
          scf.condition(%k < %n) %s, %k } do { ^bb0(%s2, %k2):
          ... %k3 = arith.addi %k2, %c1 ; scf.yield %s3, %k3 }
    """
    if not enabled():
        return []
    before, after = op.regions[0].blocks[0], op.regions[1].blocks[0]
    cond = list(before.operations)[-1]
    yld = list(after.operations)[-1]
    passed = list(cond.operands)[1:]
    out = []
    for k, b in enumerate(before.arguments):
        t = b.type
        if not (B.is_index(t) or (B.is_int(t) and ir.IntegerType(t).width > 1)):
            continue
        cs = [c for c, v in enumerate(passed) if v == b]
        steps = {_const_step(yld.operands[k], after.arguments[c]) for c in cs}
        if cs and len(steps) == 1 and None not in steps:
            out.append((k, cs, steps.pop()))
    return out

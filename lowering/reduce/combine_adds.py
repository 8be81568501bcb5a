"""`diffgpu-combine-adds`: a thread's adds into one element, summed in registers first.

The reverse of `y[r, c] = g[c] * xhat[r, c] + b[c]` adds `dy * xhat` into
`dg[c]` once per row. When a thread handles several rows (a loop over rows,
which autodiff unrolls when its trip count is a constant, or keeps as an
`scf.for`), those adds target the same element of `dg` again and again:
one global atomic each. This pass sums them in registers and adds once:

1. **in a block**: adds whose targets are equal (the same array, indices
   that compute the same value from values defined outside their guards),
   each in the block itself or under `scf.if`s in it, become one add after
   the last of them, of the sum of their values (the guards yield the value,
   or zero where the add did not happen, and a flag; the add is guarded by
   the flags' `or`, so an element is never touched where no add was);
2. **across a loop's iterations**: an add in an `scf.for`'s body (or under
   `scf.if`s in it) whose indices do not change in the loop accumulates in
   an iteration argument; one add after the loop, guarded by whether any
   iteration added.

Rewrites repeat to a fixed point, so adds in nested loops and unrolled rows
end as one add per element and thread; `diffgpu-aggregate-atomics` then
sums it over the block where its element is uniform. The moved adds are
legal because the array is *add-only* in the launch: a `diffgpu.noalias`
function's argument (its arrays proven disjoint by the launch) used only as
the target of `diffgpu.atomic_add`s whose results are unused (and by
`memref.dim`), in the kernel or in a function that kernels call with it as
that argument only. Nothing then reads the array while the kernel runs, and
adds commute, so delaying a thread's add to later in the same thread (past
barriers too) changes only the float rounding order, which atomics never
fixed. The shadows of arrays a kernel only reads (a layer's weights) are
add-only in the derivatives that `dg.vjp` and `dg.autodiff` launch.

    scf.for %j = %c0 to %n step %c1 {
      scf.if %in { %v = ...; "diffgpu.atomic_add"(%dg, %v, %c) }     (%c: defined above the loop)
    }
  becomes
    %s:2 = scf.for %j = %c0 to %n step %c1 iter_args(%a = %zero, %f = %false) {
      %w:2 = scf.if %in -> (f32, i1) { %v = ...; scf.yield %v, %true } else { scf.yield %zero, %false }
      scf.yield (%a + %w#0), (%f or %w#1)
    }
    scf.if %s#1 { "diffgpu.atomic_add"(%dg, %s#0, %c) }

Then the adds that remain into such an array, when every one of them is at
an element only its thread can reach (a row of its block and a column of
its thread, ...), become plain read-modify-writes (lowering/reduce/owned_adds.py).

`DIFFGPU_COMBINE_ADDS=0` turns the pass off (diffgpu.switches).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from diffgpu import switches
from diffgpu._mlir import arith, ir, scf

from diffgpu.dialects import names as N
from diffgpu.dialects import ops as dg
from diffgpu.lowering.common import targets as T
from diffgpu.lowering.common.ir_util import walk
from diffgpu.lowering.facts.attrs import NOALIAS_ATTR
from diffgpu.lowering.common import half as HALF
from diffgpu.lowering.reduce import hoist as H
from diffgpu.lowering.reduce.block_sum import zero
from diffgpu.lowering.registry import ModulePass, register_pass

#: element types whose adds are combined (16-bit floats: summed in float32,
#: rounded once at the one add: lowering/common/half.py)
TYPES = ("f32", "f64", "i32", "i64") + HALF.HALF_TYPES
#: ops an index may be computed by (pure, the same value wherever it is recomputed)
_PURE_PREFIX = ("arith.", "index.")
_PURE = ("memref.dim",) + N.GEOMETRY
#: rewrites per module at most (each one removes at least one add)
MAX_REWRITES = 4096


def _parent(op):
    return H.parent_op(op)


def _is_add(op) -> bool:
    return (op.name == N.ATOMIC_ADD and not len(list(op.results[0].uses))
            and str(op.operands[1].type) in TYPES)


# ---------------------------------------------------------------------------
# which arrays are add-only
# ---------------------------------------------------------------------------

def _user(use):
    return use.owner.operation if hasattr(use.owner, "operation") else use.owner


def _only_added(value) -> bool:
    """Every use of `value` is the target of an unused-result add or a memref.dim."""
    for u in value.uses:
        o = _user(u)
        if o.name == "memref.dim":
            continue
        if not (u.operand_number == 0 and _is_add(o)):
            return False
    return True


def add_only(fn, number, refs) -> bool:
    """Is argument `number` of function `fn` add-only (module docstring)?
    `refs(fn)`: the ops referring to `fn`."""
    if NOALIAS_ATTR not in fn.attributes or not H.single_block(fn):
        return False
    if not _only_added(fn.regions[0].blocks[0].arguments[number]):
        return False
    callers = refs(fn)
    if T.KERNEL_ATTR in fn.attributes:
        return not callers
    if not callers:
        return False
    for call in callers:
        kernel = _parent(call)
        if (call.name != "func.call" or kernel is None or kernel.name != "func.func"
                or T.KERNEL_ATTR not in kernel.attributes or refs(kernel)
                or NOALIAS_ATTR not in kernel.attributes):
            return False
        v = call.operands[number]
        if not H.is_arg(v) or sum(o == v for o in call.operands) != 1:
            return False
        if any(_user(u) != call and _user(u).name != "memref.dim" for u in v.uses):
            return False  # the kernel itself touches the array too
    return True


# ---------------------------------------------------------------------------
# indices: equal values, computed outside a region
# ---------------------------------------------------------------------------

def index_key(v, block):
    """A hashable key of the value `v` computes, valid at `block`: a pure
    op's name, attributes and its operands' keys (equal keys: equal values
    in a thread); another value itself when it is defined in `block` or a
    block enclosing it; None when `v` depends on anything else (a load or
    a loop variable inside, ...)."""
    owner = v.owner
    if isinstance(owner, ir.Block):
        return ("v", v) if _encloses_block(owner, block) else None
    op = owner.operation
    if not (op.name.startswith(_PURE_PREFIX) or op.name in _PURE) or len(op.regions):
        return ("v", v) if _encloses_block(op.block, block) else None
    keys = tuple(index_key(o, block) for o in op.operands)
    if any(k is None for k in keys):
        return None
    attrs = tuple(sorted((a.name, str(a.attr)) for a in
                         (op.attributes[i] for i in range(len(op.attributes)))))
    return ("op", op.name, attrs, str(v.type), list(op.results).index(v), keys)


def _encloses_block(outer, inner) -> bool:
    """Is block `outer` the block `inner` or one enclosing it?"""
    cur = inner
    while cur is not None:
        if cur == outer:
            return True
        owner = cur.owner
        if owner is None:
            return False
        owner = owner.operation
        if owner.parent is None:
            return False
        cur = owner.block
    return False


def materialize(v, block, ip):
    """`v` as a value usable at `ip` (in `block`): itself when it is defined
    there or above, else a clone of its pure definition (index_key is not None)."""
    owner = v.owner
    if isinstance(owner, ir.Block) or _encloses_block(owner.operation.block, block):
        return v
    op = owner.operation
    operands = [materialize(o, block, ip) for o in op.operands]
    clone = op.clone(ip=ip)
    for i, o in enumerate(operands):
        clone.operands[i] = o
    return clone.results[list(op.results).index(v)]


# ---------------------------------------------------------------------------
# lifting an add's value out of its guards
# ---------------------------------------------------------------------------

def guards_to(op, block):
    """[(scf.if, region)] from `op` out to `block`, innermost first, or None
    when something other than an `scf.if` is in between."""
    path, cur = [], op
    while cur.block != block:
        parent = _parent(cur)
        if parent is None or parent.name != "scf.if":
            return None
        region = 0 if cur.block.region == parent.regions[0] else 1
        path.append((parent, region))
        cur = parent
    return path


def lift(op, path):
    """The add's value and a flag (None: always taken) at the level of the
    block `path` leads to, and the top-level op after which both exist."""
    with op.location, ir.InsertionPoint(op):
        value, flag = HALF.wide(op.operands[1]), None  # a 16-bit add's float32 value
    if not path:
        return value, None, op
    with op.location, ir.InsertionPoint(op):
        true = arith.constant(ir.IntegerType.get_signless(1), 1)
    for ifop, region in path:
        value, flag = H.yield_values(ifop, region, [value, true if flag is None else flag])
    return value, flag, value.owner.operation


def _hold(value, flag, top):
    """`value` and `flag` held by identity ops right after `top`: lifting a
    later add out of the same guards replaces those guards, and their
    results with them; the holders' operands follow the replacement."""
    with top.location, ir.InsertionPoint(top):
        true = arith.constant(ir.IntegerType.get_signless(1), 1)
        v = arith.select(true, value, value)
        f = None if flag is None else arith.select(true, flag, flag)
    for h in ([] if f is None else [f]) + [v, true]:  # moved after top, in order
        h.owner.operation.move_after(top)
    return v, f


def _release(*held):
    """Drop the identity ops of `_hold` (their uses take the held values)."""
    for v in held:
        if v is None:
            continue
        op = v.owner.operation
        true = op.operands[0].owner.operation
        v.replace_all_uses_with(op.operands[1])
        op.erase()
        if not len(list(true.results[0].uses)):
            true.erase()


def _or(a, b):
    if a is None or b is None:
        return None
    return arith.ori(a, b)


def _add(a, b):
    return arith.addf(a, b) if isinstance(a.type, ir.FloatType) else arith.addi(a, b)


def pairwise(values):
    """The sum of `values` as a balanced tree (one rounding per level)."""
    while len(values) > 1:
        values = [_add(values[i], values[i + 1]) if i + 1 < len(values) else values[i]
                  for i in range(0, len(values), 2)]
    return values[0]


def emit_add(target, indices, value, flag, loc, ip, block):
    """`atomic_add(target[indices], value)` at `ip`, under `scf.if flag` unless
    flag is None; the indices recomputed there where needed. A float32 sum
    into a 16-bit array is rounded once, here (lowering/common/half.py)."""
    with loc, ip:
        value = HALF.narrow(value, target.type.element_type)
        if flag is None:
            idx = [materialize(i, block, ip) for i in indices]
            dg.atomic_add(target, value, idx)
            return
        guard = scf.IfOp(flag)
        with ir.InsertionPoint(guard.then_block):
            inner = ir.InsertionPoint(scf.YieldOp([]))
            idx = [materialize(i, block, inner) for i in indices]
        with inner:
            dg.atomic_add(target, value, idx)


def _top(op, block):
    cur = op
    while cur.block != block:
        cur = _parent(cur)
    return cur


# ---------------------------------------------------------------------------
# the two rewrites
# ---------------------------------------------------------------------------

def combine_in_block(block, adds) -> bool:
    """Rewrite 1 on `block` for the candidate `adds`; True when one group
    of two or more was combined."""
    groups: dict = {}
    for op in adds:
        path = guards_to(op, block)
        if path is None:
            continue
        keys = tuple(index_key(v, block) for v in list(op.operands)[2:])
        if any(k is None for k in keys):
            continue
        groups.setdefault((op.operands[0], keys), []).append(op)
    for members in groups.values():
        if len(members) < 2:
            continue
        # members come in program order (the module's walk); the sum goes before
        # the op after the last member's top-level op, which no lifting replaces
        ops = [o.operation for o in block.operations]
        after = ops[ops.index(_top(members[-1], block)) + 1]
        target, indices = members[0].operands[0], list(members[0].operands)[2:]
        held = [_hold(*lift(m, guards_to(m, block))) for m in members]
        ip = ir.InsertionPoint(after)
        with members[-1].location, ip:
            total = pairwise([v for v, _ in held])
            flag = held[0][1]
            for _, f in held[1:]:
                flag = _or(flag, f)
        emit_add(target, _materialized_indices(members, indices, block, ip), total, flag,
                 members[-1].location, ip, block)
        for m in members:
            m.erase()
        for h in held:
            _release(*h)
        return True
    return False


def _materialized_indices(members, indices, block, ip):
    """The group's indices as values at `ip` (before the members are erased:
    recomputed from the first member's expressions)."""
    with members[0].location:
        return [materialize(i, block, ip) for i in indices]


def combine_in_loop(op) -> bool:
    """Rewrite 2 for the add `op`: True when it was moved out of its loop."""
    loop = op
    while True:
        loop = _parent(loop)
        if loop is None or loop.name == "func.func":
            return False
        if loop.name != "scf.if":
            break
    if loop.name != "scf.for":
        return False
    body = loop.regions[0].blocks[0]
    path = guards_to(op, body)
    if path is None:
        return False
    outer = loop.block
    indices = list(op.operands)[2:]
    if any(index_key(v, outer) is None for v in indices):
        return False  # changes in the loop (or is computed from its values)
    target, loc = op.operands[0], op.location
    value, flag, _ = lift(op, path)
    with loc, ir.InsertionPoint(loop):
        inits = [zero(value.type)] + (
            [] if flag is None else [arith.constant(ir.IntegerType.get_signless(1), 0)])
        # the indices, recomputed before the loop: they are invariant in it
        idx = [materialize(v, outer, ir.InsertionPoint(loop)) for v in indices]
    new = _with_iter_args(loop, inits, [value] + ([] if flag is None else [flag]))
    op.erase()
    res = list(new.results)[-len(inits):]
    ops = [o.operation for o in outer.operations]
    ip = ir.InsertionPoint(ops[ops.index(new) + 1]) if ops.index(new) + 1 < len(ops) else \
        ir.InsertionPoint(outer)
    emit_add(target, idx, res[0], res[1] if flag is not None else None, loc, ip, outer)
    return True


def _with_iter_args(loop, inits, steps):
    """`loop` rebuilt with iteration arguments starting at `inits`, each
    iteration adding `steps[i]` (or or-ing, for i1) to argument i. Returns
    the new loop (its first results replace the old loop's)."""
    old_op = loop.operation
    n_old = len(old_op.results)
    lb, ub, step = list(old_op.operands)[:3]
    old_inits = list(old_op.operands)[3:]
    with old_op.location, ir.InsertionPoint(old_op):
        new = scf.ForOp(lb, ub, step, old_inits + inits)
    if "unsignedCmp" in old_op.attributes:
        new.operation.attributes["unsignedCmp"] = old_op.attributes["unsignedCmp"]
    src = old_op.regions[0].blocks[0]
    dst = new.body
    pairs = list(zip(list(src.arguments), list(dst.arguments)[:len(src.arguments)]))
    for a, b in pairs:
        a.replace_all_uses_with(b)
    # a step may be the old body's argument itself (an add of the loop variable)
    steps = [next((b for a, b in pairs if a == v), v) for v in steps]
    with old_op.location, ir.InsertionPoint(dst):
        anchor = scf.YieldOp([]).operation  # a place to move the body before
    ops = [o.operation for o in src.operations]
    for o in ops:
        o.move_before(anchor)
    term = ops[-1]
    accs = list(dst.arguments)[len(src.arguments):]
    with old_op.location, ir.InsertionPoint(anchor):
        nxt = [arith.ori(a, s) if str(a.type) == "i1" else _add(a, s)
               for a, s in zip(accs, steps)]
        scf.YieldOp(list(term.operands) + nxt)
    term.erase()
    anchor.erase()
    for r, s in zip(list(old_op.results), list(new.operation.results)[:n_old]):
        r.replace_all_uses_with(s)
    old_op.erase()
    return new.operation


# ---------------------------------------------------------------------------
# the pass
# ---------------------------------------------------------------------------

def _candidates(module, refs):
    """The adds into add-only arrays, in program order."""
    out = []
    for fn in module.regions[0].blocks[0].operations:
        fn = fn.operation
        if fn.name != "func.func" or not len(fn.regions[0].blocks):
            continue
        args = list(fn.regions[0].blocks[0].arguments)
        known: dict = {}  # argument number -> add-only?
        for o in walk(fn):
            if o.name != N.ATOMIC_ADD:
                continue
            t = o.operands[0]
            if not H.is_arg(t) or not any(t == a for a in args):
                continue
            k = ir.BlockArgument(t).arg_number
            if k not in known:
                known[k] = add_only(fn, k, refs)
            if known[k]:
                out.append(o)
    return out


def run_once(module, refs) -> bool:
    """One rewrite (rule 1 before rule 2, so that a loop carries one sum per
    element); False when there was none left."""
    adds = _candidates(module, refs)
    depth = max((_if_depth(op) for op in adds), default=0)
    # the deepest block first: adds that share guards are combined inside them
    # (no lifting through the shared guards, whose bodies may be long)
    return (any(_combine_grouped(adds, lambda op, k=k: _climb(op, k))
                for k in range(depth + 1))
            or any(combine_in_loop(op) for op in adds))


def _if_depth(op) -> int:
    """The number of `scf.if`s directly around `op`."""
    n, cur = 0, op
    while _parent(cur) is not None and _parent(cur).name == "scf.if":
        n, cur = n + 1, _parent(cur)
    return n


def _climb(op, levels):
    """`op`, or the `levels`-th of the `scf.if`s directly around it (fewer if
    there are fewer)."""
    cur = op
    for _ in range(levels):
        parent = _parent(cur)
        if parent is None or parent.name != "scf.if":
            break
        cur = parent
    return cur


def _combine_grouped(adds, top) -> bool:
    """Rule 1 on the blocks holding `top(add)` of the adds."""
    blocks: list = []  # [(block, its adds)]
    for op in adds:
        cur = top(op)
        for block, ops in blocks:
            if block == cur.block:
                ops.append(op)
                break
        else:
            blocks.append((cur.block, [op]))
    for block, ops in blocks:
        if len(ops) > 1 and combine_in_block(block, ops):
            return True
    return False


@register_pass
@dataclass
class CombineAdds(ModulePass):
    """Sum a thread's adds into one element of an add-only array first
    (module docstring)."""
    name: ClassVar[str] = "diffgpu-combine-adds"
    summary: ClassVar[str] = ("a thread's atomic adds into one element of an add-only array "
                              "(unrolled rows, loop iterations) summed in registers, one add")

    def run(self, module) -> None:
        if not switches.on(switches.COMBINE_ADDS):
            return
        from diffgpu.lowering.facts.uniform import Uniformity
        for _ in range(MAX_REWRITES):
            uniform = Uniformity(module)
            if not run_once(module, uniform.references):
                break
        own_all(module, Uniformity(module).references)


def own_all(module, refs) -> None:
    """The owned adds of every add-only array become plain updates
    (lowering/reduce/owned_adds.py)."""
    from diffgpu.lowering.reduce.owned_adds import own
    for fn in module.regions[0].blocks[0].operations:
        fn = fn.operation
        if fn.name != "func.func" or not len(fn.regions[0].blocks):
            continue
        for i, arg in enumerate(list(fn.regions[0].blocks[0].arguments)):
            if isinstance(arg.type, ir.MemRefType) and add_only(fn, i, refs):
                adds = [_user(u) for u in arg.uses if _user(u).name == N.ATOMIC_ADD]
                if adds:
                    own(fn, arg, adds)

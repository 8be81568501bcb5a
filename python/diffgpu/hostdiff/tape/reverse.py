"""The reverse of a recorded program: adjoints per buffer, the reverse of
one operation, the forward recomputation of one (checkpointing), and the
two sweeps (every version kept; Revolve).

A launch's reverse is one `dg.vjp` of the launch on the versions it read,
with the adjoints of the arrays it wrote as cotangents; float scalars are
held constant (`dg.Const`). It is planned (plan.py) once per kernel and
layout (`layout_key`: the versions are new memory at every step, so keys
with pointers would plan every step) and run as a replay.Recipe. Its results
update the adjoints: an input's gradient is added, an in-out array's
replaces the adjoint (vjp's gradient of the initial value includes what
passes through unwritten elements), an output written whole (plan.Call
`written_once`) gets a zero adjoint. A launch with an output it may write
only in part runs `dg.autodiff` instead (Enzyme's convention on the
adjoints themselves: the written elements' adjoints are consumed, the rest
pass through). A launch none of whose written arrays has an adjoint yet is
skipped: it cannot reach the seeds.
"""
from __future__ import annotations

from diffgpu.activities import Const, Duplicated
from diffgpu.hostdiff import buffers as M
from diffgpu.hostdiff.tape import revolve
from diffgpu.hostdiff.tape.arrays import copy_root
from diffgpu.hostdiff.tape.record import Item


class Adjoints:
    """Per buffer its adjoint, laid out like the buffer (None: zero)."""

    def __init__(self):
        self.roots: dict = {}

    def has(self, item) -> bool:
        return item.view.buf.index in self.roots

    def root(self, buf):
        r = self.roots.get(buf.index)
        if r is None:
            r = self.roots[buf.index] = M.xp_of(buf.root).zeros_like(buf.root)
        return r

    def view(self, item):
        return item.view.on(self.root(item.view.buf))

    def add(self, item, g) -> None:
        buf = item.view.buf
        if (buf.index not in self.roots and item.view.whole() and type(g) is type(buf.root)
                and g.strides == buf.root.strides and g.dtype == buf.root.dtype):
            self.roots[buf.index] = g  # a fresh result: adopted, no add
            return
        v = self.view(item)
        v += g

    def set(self, item, g) -> None:
        self.view(item)[...] = g

    def zero(self, item) -> None:
        if self.has(item):
            self.view(item)[...] = 0


#: recipes kept per kernel and layout, then all dropped (as replay.py's table)
_MAX = 1024


def layout_key(op) -> tuple:
    """What a launch's reverse plan depends on besides pointers: geometry,
    per parameter its layout in its buffer and which earlier parameter is the
    same view (an alias), or a scalar's type. The seeds are the adjoints of
    the written views: laid out like them, never overlapping an argument."""
    seen, out = {}, [op.grid, op.block]
    for i, a in enumerate(op.args):
        if isinstance(a, Item):
            v = a.view
            out.append((v.offset, v.shape, v.strides, v.dtype.str, v.buf.nbytes,
                        seen.setdefault(v.key, i)))
        else:
            out.append(type(a))
    return tuple(out)


def planned_vjp(op, launcher, args, consts, seeds) -> dict:
    """The reverse of a recorded launch: a `dg.vjp` planned once per layout
    (plan.py) and run on these arguments (replay.Recipe.run with its facts
    and program looked up for them: snapshots are new memory each step, so
    pointer-keyed replays would plan every step again)."""
    from diffgpu.hostdiff.plan import Call

    kernel = launcher.kernel
    table = kernel.__dict__.get("_tape_plans")
    if table is None or not kernel._programs:
        table = kernel.__dict__["_tape_plans"] = {}
    key = op.rev[4] if op.rev is not None else layout_key(op)
    recipe = table.get(key)
    if recipe is not None:
        return recipe.run_moved(args, seeds)[0]
    recipe = Call(launcher, args, "vjp", consts, None).vjp(seeds, False)
    if len(table) >= _MAX:
        table.clear()
    table[key] = recipe
    return recipe.run(args, seeds, first=True)


def _args(op, resolve, copy_written_ints=True) -> list:
    out = []
    for a in op.args:
        if isinstance(a, Item):
            v = a.view.on(resolve(a))
            if copy_written_ints and a.write and not a.is_float:
                v = M.copy(v)  # the derivative kernel runs the primal: keep the version
            out.append(v)
        else:
            out.append(a)
    return out


def reverse_op(op, resolve, adj: Adjoints) -> bool:
    """Run the reverse of `op` (its read versions from `resolve(item)`, a
    root array), updating `adj`. False when skipped (no adjoint to pull)."""
    if op.kind == "fill":
        adj.zero(op.args[0])
        return True
    if op.kind == "copy":
        src, dst = op.args
        if not adj.has(dst):
            return False
        t = M.copy(adj.view(dst))
        adj.zero(dst)
        adj.add(src, t)
        return True
    rev = op.rev
    if rev is None:
        rev = op.rev = _plan(op)
    written, enzyme, consts, updates, _key, launcher = rev
    for item in written.values():
        if adj.has(item):
            break
    else:
        return False
    args = _args(op, resolve)
    if enzyme is not None:
        _enzyme(op, enzyme, launcher, args, adj)
        return True
    seeds = {name: adj.view(item) for name, item in written.items()}
    res = planned_vjp(op, launcher, args, consts, seeds)
    for item, how, name in updates:
        if how == "set":
            adj.set(item, res[name])
        elif how == "zero":
            adj.zero(item)
        else:
            adj.add(item, res[name])
    return True


def _plan(op) -> tuple:
    """What the reverse of launch `op` needs besides the arrays, computed at
    its first reverse: ({name: Item} of the written groups' seeds, None or
    per parameter what Enzyme's convention passes (`_shape`), the float
    scalars held constant, per group (Item, "set" / "zero" / "add", the
    result's name), `layout_key`, the launcher). What does not depend on
    the op's Items is kept per kernel and layout key (`_shape`): a loop's
    launches share it."""
    key = layout_key(op)
    table = op.kernel.__dict__.get("_tape_shapes")
    if table is None or not op.kernel._programs:
        table = op.kernel.__dict__["_tape_shapes"] = {}
    skey = (key, op.roles, op.groups, op.full)
    shape = table.get(skey)
    if shape is None:
        if len(table) >= _MAX:
            table.clear()
        shape = table[skey] = _shape(op)
    written, enzyme, consts, updates, launcher = shape
    args = op.args
    return ({n: args[i] for n, i in written}, enzyme, consts,
            tuple((args[i], how, n) for i, how, n in updates), key, launcher)


def _shape(op) -> tuple:
    """`_plan` with positions for Items: ((name, position) of each written
    group's seed, Enzyme's passing or None, consts, (position, how, name)
    per group, the launcher). Enzyme's passing: per parameter None (passed
    as it is), "const" (a float scalar held) or (first position of its
    view, "copy" / "empty" / "same": the primal a copy, scratch, or itself)."""
    roles, names = op.roles, op.kernel.arg_names
    groups = [g for g in op.groups if any(roles[i] in ("output", "inout") for i in g)]
    written = tuple((names[g[0]], g[0]) for g in groups)
    enzyme = None
    if any(roles[i] == "output" and i not in op.full for g in groups for i in g
           if not any(roles[j] == "inout" for j in g)):
        enzyme, first = [], {}
        items = op.items()
        for i, a in enumerate(op.args):
            if not isinstance(a, Item) or not a.is_float:
                enzyme.append("const" if roles[i] == "scalar" else None)
                continue
            k = a.view.key
            if k not in first:
                first[k] = i
                writes = any(b.write for b in items if b.view.key == k)
                reads = any(b.read for b in items if b.view.key == k)
                enzyme.append((i, ("copy" if reads else "empty") if writes else "same"))
            else:
                enzyme.append((first[k], None))
        enzyme = tuple(enzyme)
    consts = tuple(i for i, r in enumerate(roles) if r == "scalar")
    updates = []
    for g in op.groups:
        w = any(roles[i] in ("output", "inout") for i in g)
        read = [names[i] for i in g if roles[i] in ("input", "inout")]
        # the result is under the names of the reading parameters
        how = ("set" if read else "zero") if w else "add"
        updates.append((g[0], how, read[0] if read else None))
    return written, enzyme, consts, tuple(updates), op.kernel[op.grid, op.block]


def _enzyme(op, passing, launcher, args, adj) -> None:
    """Enzyme's convention on the adjoints: `dg.autodiff` with every float
    array Duplicated(primal, its adjoint view); written primals are copies
    (`passing`: `_shape`'s)."""
    from diffgpu.hostdiff.diff import autodiff

    acts, made = [], {}
    for i, (how, v) in enumerate(zip(passing, args)):
        if how is None:
            acts.append(v)
        elif how == "const":
            acts.append(Const(v))
        else:
            at, make = how
            if at == i:
                p = M.copy(v) if make == "copy" else M.empty_like(v) if make == "empty" else v
                made[at] = Duplicated(p, adj.view(op.args[i]))
            acts.append(made[at])
    autodiff(launcher, *acts)


def forward_op(op, resolve) -> None:
    """Run `op` again on the arrays `resolve(item)` gives (checkpointing)."""
    if op.kind == "fill":
        op.args[0].view.on(resolve(op.args[0]))[...] = op.value
    elif op.kind == "copy":
        src, dst = op.args
        dst.view.on(resolve(dst))[...] = src.view.on(resolve(src))
    else:
        op.kernel[op.grid, op.block](*_args(op, resolve, copy_written_ints=False))


def sweep_versions(tape, adj) -> None:
    """The reverse with every version kept (no checkpointing)."""
    def resolve(item):
        v = item.version
        return v.array if v is not None and v.array is not None else item.view.buf.root
    for op in reversed(tape.ops):
        tape.stats["reversed"] += reverse_op(op, resolve, adj)


def sweep_revolve(tape, adj) -> None:
    """The reverse with at most `tape.checkpoints` states (revolve.py):
    state 0 is the initial contents kept at recording; the working state
    is one more."""
    bufs = [b for b in tape.reg.buffers if b.written]
    work = {b.index: copy_root(b.first) for b in bufs}
    slots = {0: {b.index: b.first for b in bufs}}
    state = [work]

    def resolve(item):
        return state[0].get(item.view.buf.index, item.view.buf.root)

    acts = revolve.schedule(len(tape.ops), tape.checkpoints)
    for act in acts:
        kind = act[0]
        if kind == "advance":
            for j in range(act[1], act[2]):
                forward_op(tape.ops[j], resolve)
            tape.stats["recomputed"] += act[2] - act[1]
        elif kind == "store":
            slots[act[1]] = {i: copy_root(a) for i, a in work.items()}
        elif kind == "free":
            del slots[act[1]]
        elif kind == "restore":
            for i, a in work.items():
                a[...] = slots[act[1]][i]
            tape.stats["restores"] += 1
        else:
            state[0] = slots[act[2]] if act[2] is not None else work
            tape.stats["reversed"] += reverse_op(tape.ops[act[1]], resolve, adj)
            state[0] = work
    tape.stats["peak_states"] = max(tape.stats["peak_states"], revolve.counts(acts)["peak"])


__all__ = ["Adjoints", "reverse_op", "forward_op", "sweep_versions", "sweep_revolve",
           "planned_vjp", "layout_key"]

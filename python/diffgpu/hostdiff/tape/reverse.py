"""The reverse of a recorded program: adjoints per buffer, the reverse of
one operation, the forward recomputation of one (checkpointing), and the
two sweeps (every version kept; Revolve).

A launch's reverse is one `dg.vjp` of the launch on the versions it read,
with the adjoints of the arrays it wrote as cotangents; float scalars are
held constant (`dg.Const`). It is planned (plan.py) once per kernel and
layout (`layout_key`: the versions are new memory at every step, so keys
with pointers would plan every step) into a `Step`, which keeps the
recipe (replay.Recipe) and, by position, what each launch of that layout
passes and updates; a recorded op keeps its Step (`op.rev`).

The adjoints are written once where the analysis allows, as a hand chain
of `dg.vjp` calls would: the seeds are the tape's own adjoints, consumed
(replay.consume_seeds: a seed Enzyme's convention updates in place is
passed itself, not a copy; the in-out array's adjoint is then its result,
nothing to copy back), an input's gradient that is a fresh array is
adopted as its adjoint when none is live (else added), an input whose
shadow the kernel adds into gets its live adjoint (no add), and the
adjoint of an output written whole is dropped after the step (absent is
zero: the next writer's gradient is adopted, no zero fill). A launch with
an output it may write only in part runs `dg.autodiff` instead (Enzyme's
convention on the adjoints themselves: the written elements' adjoints are
consumed, the rest pass through). A launch none of whose written arrays
has an adjoint is skipped: it cannot reach the seeds. `Adjoints` counts
the device operations the reverse makes (tape.stats after gradient()).
"""
from __future__ import annotations

import numpy as np

from diffgpu.activities import Const, Duplicated
from diffgpu.hostdiff import buffers as M
from diffgpu.hostdiff.tape.consume import consume_seeds
from diffgpu.hostdiff.tape import revolve
from diffgpu.hostdiff.tape.arrays import copy_root
from diffgpu.hostdiff.tape.versions import Item

#: the counters of `Adjoints`, added to tape.stats by each sweep: reverse
#: launches (a vjp replay or a dg.autodiff), adds of a gradient into a live
#: adjoint, zero fills (new adjoints, zeroed views, the recipes' zero
#: buffers), copies (the recipes' primal and seed copies, moved views)
WORK = ("vjps", "adds", "zeros", "copies")


def _adoptable(view, g, whole=None) -> bool:
    """Can the fresh array `g` (of `view`'s shape) be the adjoint of
    `view`'s whole buffer itself? (`whole`: view.whole(), when known)"""
    root = view.buf.root
    return (type(g) is type(root) and g.strides == root.strides and g.dtype == root.dtype
            and (view.whole() if whole is None else whole))


#: arrays kept for reuse per layout (Adjoints.spare), at most
_SPARE = 4


def spec_of(a) -> tuple:
    """What an array is reused for (Adjoints.spare / take): its type,
    shape, strides and dtype."""
    return (type(a), tuple(a.shape), tuple(a.strides), a.dtype.str)


class Adjoints:
    """Per buffer its adjoint, laid out like the buffer (absent: zero).
    `keep`: the buffer indices whose adjoints are results (None: keep
    every one); another buffer's adjoint is dropped once no earlier
    operation can read it. `free`: arrays no longer needed (dropped
    adjoints, gradients added into an adjoint) per `spec_of`, which the
    reverse steps take as their scratch instead of new allocations (on a
    GPU in stream order: a later step's kernel writes it after the earlier
    one read it)."""

    __slots__ = ("roots", "keep", "free") + WORK

    def __init__(self, keep=None):
        self.roots: dict = {}
        self.keep = keep
        self.free: dict = {}
        self.vjps = self.adds = self.zeros = self.copies = 0

    def spare(self, a, spec) -> None:
        """`a` (laid out as `spec`) is no longer needed: keep it for reuse."""
        got = self.free.get(spec)
        if got is None:
            self.free[spec] = [a]
        elif len(got) < _SPARE:
            got.append(a)

    def _dropped(self, r, view) -> None:
        self.spare(r, (type(r), view.shape, view.strides, view.dtype.str))

    def has(self, item) -> bool:
        return item.view.buf.index in self.roots

    def root(self, buf):
        r = self.roots.get(buf.index)
        if r is None:
            r = self.roots[buf.index] = M.xp_of(buf.root).zeros_like(buf.root)
            self.zeros += 1
        return r

    def view(self, item):
        return item.view.on(self.root(item.view.buf))

    def add(self, item, g, whole=None) -> None:
        """The adjoint of `item` += g (g adopted when none is live: `g` must
        be the caller's to give, a fresh array)."""
        view = item.view
        r = self.roots.get(view.buf.index)
        if r is None and _adoptable(view, g, whole):
            self.roots[view.buf.index] = g
            return
        v = view.on(r if r is not None else self.root(view.buf))
        v += g
        self.adds += 1

    def set(self, item, g, whole=None) -> None:
        """The adjoint of `item` = g (a fresh array: adopted when it is the
        whole buffer's)."""
        if _adoptable(item.view, g, whole):
            self.roots[item.view.buf.index] = g
            return
        self.view(item)[...] = g
        self.copies += 1

    def zero(self, item, whole=None) -> None:
        """The adjoint of `item` is zero: dropped when it is its whole buffer."""
        view = item.view
        r = self.roots.get(view.buf.index)
        if r is None:
            return
        if view.whole() if whole is None else whole:
            del self.roots[view.buf.index]
            self._dropped(r, view)
            return
        view.on(r)[...] = 0
        self.zeros += 1

    def move(self, src, dst) -> bool:
        """`dg.copy(dst, src)` reversed: dst's adjoint moves to src (the
        array itself when dst is its whole buffer and another's)."""
        d = dst.view
        r = self.roots.get(d.buf.index)
        if r is None:
            return False
        if d.whole() and src.view.buf is not d.buf:
            del self.roots[d.buf.index]
            self.add(src, r)
            if self.roots.get(src.view.buf.index) is not r:  # added, not adopted
                self._dropped(r, d)
            return True
        t = M.copy(d.on(r))
        self.copies += 1
        self.zero(dst)
        self.add(src, t)
        return True

    def flush(self, stats: dict) -> None:
        """Add the counters to `stats` (tape.stats) and reset them."""
        for k in WORK:
            stats[k] = stats.get(k, 0) + getattr(self, k)
            setattr(self, k, 0)


#: recipes kept per kernel and layout, then all dropped (as replay.py's table)
_MAX = 1024


def layout_key(op) -> tuple:
    """What a launch's reverse plan depends on besides pointers: geometry,
    the device (the host or a GPU: one per tape), per parameter its layout
    in its buffer and which earlier parameter is the same view (an alias),
    or a scalar's type. The seeds are the adjoints of the written views:
    laid out like them, never overlapping an argument."""
    seen, out = {}, [op.grid, op.block, None]
    for i, a in enumerate(op.args):
        if isinstance(a, Item):
            v = a.view
            out[2] = (v.buf.device, type(v.buf.root))
            out.append((v.offset, v.shape, v.strides, v.dtype.str, v.buf.nbytes,
                        seen.setdefault(v.key, i)))
        else:
            out.append(type(a))
    return tuple(out)


# how an update applies a group's result to its adjoint (Step.updates)
ADD, SET, ZERO, DROP = 0, 1, 2, 3


class Step:
    """The reverse of the launches of one kernel and layout: by parameter
    position, the written groups' seeds (`seeds`: (position, name,
    whole)), the array arguments (`items`: (position, whole): a view that
    is its whole buffer is the version itself), written integer arrays
    (copied: the derivative kernel runs the primal), the read-only inputs
    whose live adjoint the kernel accumulates into (`accs`), the scratch
    the step gives the recipe (`news`: (seed key, spec_of, the argument it
    is made like, None or how it copies that argument in (`_copier`),
    maker): an array the
    adjoints no longer need, else a new one; `dead`: those not among the
    results, given back after the launch), per group the update of its
    adjoint (`updates`: (position, ADD / SET / ZERO / DROP, whole, where its
    result is, whether a result can be the adjoint itself, the result's
    spec_of: reused once added)), or Enzyme's passing (`enzyme`,
    `_enzyme_passing`); the recipe, planned at the first launch reversed,
    and its own copies and zero fills. A `lean` recipe's results are read
    from its fresh buffers and the scratch (replay.Recipe.replay_fresh:
    `where` is (0, buffer index) or (1, seed key)), another's from its
    dict of results (`where` is (0, name))."""

    __slots__ = ("seeds", "items", "ints", "accs", "updates", "enzyme", "consts", "launcher",
                 "recipe", "copies", "zeros", "reads", "lean", "news", "dead")

    def __init__(self, op, wholes):
        roles, names = op.roles, op.kernel.arg_names
        groups = [g for g in op.groups if any(roles[i] in ("output", "inout") for i in g)]
        self.seeds = tuple((g[0], names[g[0]], g[0] in wholes) for g in groups)
        args = op.args
        self.items = tuple((i, i in wholes) for i, a in enumerate(args) if isinstance(a, Item))
        self.ints = tuple(i for i, _w in self.items if args[i].write and not args[i].is_float)
        self.reads = tuple(i for i, _w in self.items if args[i].read and args[i].is_float)
        self.enzyme = _enzyme_passing(op, groups)
        self.consts = tuple(i for i, r in enumerate(roles) if r == "scalar")
        updates = []
        for g in op.groups:
            w = any(roles[i] in ("output", "inout") for i in g)
            read = [names[i] for i in g if roles[i] in ("input", "inout")]
            # the result is under the names of the reading parameters
            how = (SET if read else ZERO) if w else ADD
            updates.append((g[0], how, g[0] in wholes, read[0] if read else None, False, None))
        self.updates = tuple(updates)
        self.accs = ()
        self.launcher = op.kernel[op.grid, op.block]
        self.recipe = None
        self.copies = self.zeros = 0
        self.lean = False
        self.news = self.dead = ()

    def _plan(self, op, vals, seeds, adj) -> tuple:
        """Plan the recipe on the first launch of the layout reversed, made
        the tape's variant (consume.py), and run it; returns its results
        as `run` reads them (`res[k][x]` for an update's `where` (k, x))."""
        from diffgpu.hostdiff.plan import Call

        recipe = Call(self.launcher, vals, "vjp", self.consts, None).vjp(seeds, False)
        inputs = {u[0] for u in self.updates if u[1] == ADD}
        done, consumed, news = consume_seeds(recipe, inputs, scratch=True)
        seed_of = {p: name for p, name, _w in self.seeds}
        updates, accs = [], []
        for p, how, whole, name, _a, _s in self.updates:
            key = done.get(name)
            if key is not None and how == ADD:
                accs.append((p, key))  # the kernel adds into the adjoint given
            elif key is not None and how == SET:
                pass  # the seed, updated in place or left as it is, is the adjoint
            elif how == ZERO and seed_of.get(p) in consumed:
                if whole:  # the kernel zeroed it: dropped when it is the whole buffer
                    updates.append((p, DROP, whole, None))
            else:
                updates.append((p, how, whole, name))
        self.accs = tuple(accs)
        for p, key in self.accs:
            seeds[key] = adj.view(op.args[p])
        made = []
        for key, i in news:  # the scratch: new arrays this once, as the recipe made them
            src = vals[i]
            xp = M.xp_of(src)
            if key[0] == "copy":  # (the recipe's copy: numpy's / CuPy's, its layout)
                make = xp.empty_like
            else:
                make = lambda _src, xp=xp, shape=tuple(src.shape), dtype=src.dtype: \
                    xp.empty(shape, dtype)  # noqa: E731
            t = seeds[key] = make(src)
            copy = None
            if key[0] == "copy":
                copy = _copier(t, src)
                copy(t, src)
            made.append((key, spec_of(t), i, copy, make))
        self.news = tuple(made)
        res = recipe.run(vals, seeds, first=True)
        self.lean = recipe.lean()
        at = {name: ((0, what) if where == "buf" else (1, what))
              for name, (where, what) in recipe.results}
        used = {what for _n, (where, what) in recipe.results if where == "seed"}
        self.dead = tuple((n[0], n[1]) for n in self.news if n[0] not in used)
        # a result laid out as its whole buffer is adopted as the adjoint (the
        # layout is the Step's: so are the results' types, dtypes and strides),
        # else reused once added (a fresh array, or the scratch given)
        self.updates = tuple(
            (p, how, whole, (at[name] if self.lean else (0, name)) if name is not None else None,
             name is not None and _adoptable(op.args[p].view, res[name], whole),
             spec_of(res[name]) if name is not None else None)
            for p, how, whole, name in updates)
        self.copies = sum(how in ("copy", "copy32") for how, _s in recipe.bufs) + sum(
            n[3] is not None for n in self.news)
        self.zeros = sum(how in ("zeros", "zeros32") for how, _s in recipe.bufs)
        self.recipe = recipe
        out = ({}, {})
        for u, (_p, _h, _w, name) in zip(self.updates, updates):
            if name is not None:
                out[u[3][0]][u[3][1]] = res[name]
        for key, _spec in self.dead:
            adj.spare(seeds[key], _spec)
        return out

    def run(self, op, resolve, adj) -> bool:
        """Reverse `op` (a launch of this layout): False when skipped.
        `resolve`: None (the versions kept: sweep_versions) or
        item -> the root array holding the version it read."""
        args, roots = op.args, adj.roots
        for p, _n, _w in self.seeds:
            if args[p].view.buf.index in roots:
                break
        else:
            return False
        vals = list(args)
        if resolve is None:
            for p, whole in self.items:
                a = args[p]
                v = a.version
                r = v.array if v is not None else None
                if r is None:
                    r = a.view.buf.root
                vals[p] = r if whole else a.view.on(r)
        else:
            for p, whole in self.items:
                a = args[p]
                r = resolve(a)
                vals[p] = r if whole else a.view.on(r)
        for p in self.ints:
            vals[p] = M.copy(vals[p])  # the derivative kernel runs the primal: keep the version
            adj.copies += 1
        if self.enzyme is not None:
            _enzyme(op, self.enzyme, self.launcher, vals, adj)
            adj.vjps += 1
            return True
        seeds = {}
        for p, name, whole in self.seeds:
            a = args[p]
            r = roots.get(a.view.buf.index)
            if r is None:
                r = adj.root(a.view.buf)
            seeds[name] = r if whole else a.view.on(r)
        recipe = self.recipe
        if recipe is None:
            res = self._plan(op, vals, seeds, adj)
        else:
            for p, key in self.accs:
                seeds[key] = adj.view(args[p])
            free = adj.free
            for key, spec, i, copy, make in self.news:
                got = free.get(spec)
                t = seeds[key] = got.pop() if got else make(vals[i])
                if copy is not None:
                    copy(t, vals[i])
            if self.lean:
                res = (recipe.replay_fresh(vals, seeds), seeds)
            else:
                res = (recipe.run_moved(vals, seeds)[0],)
            for key, spec in self.dead:  # scratch primals the kernel wrote: reused
                adj.spare(seeds[key], spec)
        adj.vjps += 1
        adj.copies += self.copies
        adj.zeros += self.zeros
        for p, how, whole, where, adopt, spec in self.updates:
            a = args[p]
            if how == ADD:
                g = res[where[0]][where[1]]
                if adopt and a.view.buf.index not in roots:
                    roots[a.view.buf.index] = g  # a fresh gradient: the adjoint
                else:
                    adj.add(a, g, whole)
                    adj.spare(g, spec)
            elif how == SET:
                g = res[where[0]][where[1]]
                if adopt:
                    roots[a.view.buf.index] = g
                else:
                    adj.set(a, g, whole)
                    adj.spare(g, spec)
            elif whole:  # (DROP: the kernel zeroed it) the whole buffer's: dropped, reused
                r = roots.pop(a.view.buf.index, None)
                if r is not None:
                    v = a.view
                    adj.spare(r, (type(r), v.shape, v.strides, v.dtype.str))
            else:
                adj.zero(a, whole)
        if adj.keep is not None:
            _drop_dead(op, self.reads, adj)
        return True


def _copier(dst, src):
    """How a step copies an argument's version into its scratch `dst`
    (made like it): on a GPU, for contiguous arrays of one layout, one
    cudaMemcpyAsync device to device on the current stream (the launches');
    else an assignment (numpy's copy, CuPy's copy kernel)."""
    if (isinstance(src, np.ndarray) or dst.strides != src.strides
            or not (src.flags.c_contiguous or src.flags.f_contiguous)):
        def assign(dst, src):
            dst[...] = src
        return assign
    cuda = M.xp_of(src).cuda
    memcpy, stream, n = cuda.runtime.memcpyAsync, cuda.get_current_stream, int(src.nbytes)

    def raw(dst, src):
        memcpy(dst.data.ptr, src.data.ptr, n, 3, stream().ptr)  # 3: device to device
    return raw


def _drop_dead(op, reads, adj) -> None:
    """Drop the adjoints of buffers `op` is the first to touch (it reads
    their initial version first) that are not results: no earlier
    operation reads them."""
    for p in reads:
        a = op.args[p]
        v = a.version
        if v.number == 0 and v.first is op and v.buf.index not in adj.keep:
            r = adj.roots.pop(v.buf.index, None)
            if r is not None:
                adj.spare(r, spec_of(r))


def _enzyme_passing(op, groups):
    """None (a dg.vjp), or when an output may be written in part, per
    parameter what Enzyme's convention passes: None (as it is), "const" (a
    float scalar held) or (first position of its view, "copy" / "empty" /
    "same": the primal a copy, scratch, or itself)."""
    roles = op.roles
    if not any(roles[i] == "output" and i not in op.full for g in groups for i in g
               if not any(roles[j] == "inout" for j in g)):
        return None
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
    return tuple(enzyme)


def step_of(op, memo=None) -> Step:
    """`op`'s Step: kept on the op, else the kernel's for its layout (made at
    the first launch of a layout; `memo`: a sweep's table by the identity of
    the op's views, which a recorded loop's launches share)."""
    step = op.rev
    if type(step) is Step:
        return step
    mkey = None
    if memo is not None:
        # the recording's plan of the launch, shared by its launches on the same
        # arrays (record.py), else the op's views themselves
        plan = getattr(op, "plan", None)
        mkey = id(plan) if plan is not None else (
            op.kernel, op.grid, op.block, op.roles,
            *[a.view if type(a) is Item else type(a) for a in op.args])
        step = memo.get(mkey)
    if step is None:
        kernel = op.kernel
        table = kernel.__dict__.get("_tape_plans")
        if table is None or not kernel._programs:  # (programs dropped: start over)
            table = kernel.__dict__["_tape_plans"] = {}
        wholes = frozenset(i for i, a in enumerate(op.args)
                           if isinstance(a, Item) and a.view.whole())
        key = (layout_key(op), wholes, op.roles, op.groups, op.full)
        step = table.get(key)
        if step is None:
            if len(table) >= _MAX:
                table.clear()
            step = table[key] = Step(op, wholes)
        if memo is not None:
            memo[mkey] = step
    op.rev = step
    return step


def reverse_op(op, resolve, adj: Adjoints, memo=None) -> bool:
    """Run the reverse of `op` (its read versions from `resolve(item)`, a
    root array; None: the versions the tape kept), updating `adj`. False
    when skipped (no adjoint to pull)."""
    if op.kind == "fill":
        adj.zero(op.args[0])
        return True
    if op.kind == "copy":
        src, dst = op.args
        return adj.move(src, dst)
    return step_of(op, memo).run(op, resolve, adj)


def _enzyme(op, passing, launcher, args, adj) -> None:
    """Enzyme's convention on the adjoints: `dg.autodiff` with every float
    array Duplicated(primal, its adjoint view); written primals are copies
    (`passing`: `_enzyme_passing`'s)."""
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
                if make == "copy":
                    p = M.copy(v)
                    adj.copies += 1
                else:
                    p = M.empty_like(v) if make == "empty" else v
                made[at] = Duplicated(p, adj.view(op.args[i]))
            acts.append(made[at])
    autodiff(launcher, *acts)


def _args(op, resolve) -> list:
    return [a.view.on(resolve(a)) if isinstance(a, Item) else a for a in op.args]


def forward_op(op, resolve) -> None:
    """Run `op` again on the arrays `resolve(item)` gives (checkpointing)."""
    if op.kind == "fill":
        op.args[0].view.on(resolve(op.args[0]))[...] = op.value
    elif op.kind == "copy":
        src, dst = op.args
        dst.view.on(resolve(dst))[...] = src.view.on(resolve(src))
    else:
        op.kernel[op.grid, op.block](*_args(op, resolve))


def sweep_versions(tape, adj) -> None:
    """The reverse with every version kept (no checkpointing)."""
    tape.first_readers()  # (`_drop_dead` asks each version's first reader)
    memo, done = {}, 0
    for op in reversed(tape.ops):
        step = op.rev
        if type(step) is not Step:
            if op.kind != "launch":
                done += reverse_op(op, None, adj)
                continue
            step = step_of(op, memo)
        done += step.run(op, None, adj)
    tape.stats["reversed"] += done
    adj.flush(tape.stats)


def sweep_revolve(tape, adj) -> None:
    """The reverse with at most `tape.checkpoints` states (revolve.py):
    state 0 is the initial contents kept at recording; the working state
    is one more."""
    tape.first_readers()  # (`_drop_dead` asks each version's first reader)
    bufs = [b for b in tape.reg.buffers if b.written]
    work = {b.index: copy_root(b.first) for b in bufs}
    slots = {0: {b.index: b.first for b in bufs}}
    state = [work]

    def resolve(item):
        return state[0].get(item.view.buf.index, item.view.buf.root)

    acts = revolve.schedule(len(tape.ops), tape.checkpoints)
    memo = {}
    for act in acts:
        kind = act[0]
        if kind == "advance":
            for j in range(act[1], act[2]):
                forward_op(tape.ops[j], resolve)
            tape.stats["recomputed"] += act[2] - act[1]
        elif kind == "store":
            slots[act[1]] = {i: copy_root(a) for i, a in work.items()}
            tape.stats["stores"] = tape.stats.get("stores", 0) + 1
        elif kind == "free":
            del slots[act[1]]
        elif kind == "restore":
            for i, a in work.items():
                a[...] = slots[act[1]][i]
            tape.stats["restores"] += 1
        else:
            state[0] = slots[act[2]] if act[2] is not None else work
            tape.stats["reversed"] += reverse_op(tape.ops[act[1]], resolve, adj, memo)
            state[0] = work
    tape.stats["peak_states"] = max(tape.stats["peak_states"], revolve.counts(acts)["peak"])
    adj.flush(tape.stats)


__all__ = ["Adjoints", "Step", "reverse_op", "forward_op", "sweep_versions", "sweep_revolve",
           "layout_key", "step_of", "WORK"]

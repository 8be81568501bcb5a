"""Read/write analysis of a kernel's array parameters (for `dg.vjp` / `dg.jvp`).

For every parameter of the entry kernel of a frontend module, which memory
accesses reach it, directly or through calls (`func.call` passes the array
on; the callee's accesses count):

| access                          | read | write | atomic |
|---------------------------------|------|-------|--------|
| `memref.load %A[...]`           | yes  |       |        |
| `memref.store %v, %A[...]`      |      | yes   |        |
| `diffgpu.atomic_add %A, ...`    | yes  | yes   | yes    |
| `memref.dim %A`                 |      |       |        |
| `diffgpu.autodiff` / `fwddiff`: `%A` the primal | the callee's accesses | | |
| ... `%A` a forward-mode tangent | the callee's accesses of its primal | | |
| ... `%A` a reverse-mode shadow  | yes  | yes   |        |
| anything else taking `%A`       | yes  | yes   | (opaque) |

An in-kernel derivative runs its callee (the primal's accesses are the
callee's, as for a call); forward mode reads a tangent where the callee
reads its primal and writes it where the callee writes; reverse mode
accumulates into a read-only primal's shadow and consumes a written one's:
the shadow is read and written.

An array only read is an *input*, only written an *output*, otherwise
*in-out*. Two facts about thread-unique indices (elision.py's `index_key`:
every component the global id of one dimension or a constant) let the
functional API move fewer bytes:

- `store_key`: an output stored once (`stored_once`): its `memref.store`s,
  in the kernel's own body outside any loop, all at one thread-unique index
  (the same global ids and constants), no two on one execution path: one
  store, or several in different regions of a common `scf.if` (`if ...:
  y[i] = a else: y[i] = b`, at any nesting). Every element is then written
  at most once in a launch (given that the dimensions not named in the key
  have one thread), so its cotangent need not be consumed. Two stores one
  after the other on a path (`y[i] = a; y[i] = b`) are not: the first
  store's adjoint is zero, which erasing the consuming `shadow = 0` stores
  would lose (the cotangent would count twice). Also a 1-D
  output written in rows (`out[c * i + k]` for distinct constants `k`
  spanning less than `c`, from several stores or one constant-trip loop:
  lowering/autodiff/functional/rows.py): then the key is `[d]` of that global id.
- `load_key`: an input all of whose loads are in the kernel's own body at
  one index made of global ids only (`x[i]`, `x[j, i]`): thread t is the
  only one touching its element, so the gradient is accumulated plainly.
- `stencil`: an input (not `load_key`) of a kernel made only of the ops
  lowering/autodiff/functional/transpose.py replays, all of whose loads are in the
  kernel's own body at `gid(0) + k` (k constant), in any branches: the
  sorted offsets k. Its gradient can be gathered (thread j sums what
  threads j - k gave it, each replayed with its own branches).
- `stencil_dims`: an input whose loads, once the kernel's constant-trip
  loops are unrolled, are all at other affine stencil indices
  (`x[i + a, j + b]`, `x[i + a * W + b]`: lowering/facts/affine.py) with
  the same dimension per position: those dimensions. Its gradient is
  gathered by lowering/autodiff/functional/gather.py, whatever the launch covers.
- `store_guards`: for a `store_key` output whose key is global ids only
  (`y[i]`, `y[j, i]`) and whose store sits only under `scf.if`s (then
  branches) on conditions `gid(d) < len(A, k)` (`and`-ed, `A` a parameter):
  the list of `[d, A's position, k]`. Several stores (stored once) count
  when the innermost `scf.if` holding them all sits so and every path
  through it runs one of them (`if a: y[i] = u else: if b: y[i] = v else:
  y[i] = w`; not when a path stores nothing). The launch then knows whether
  every element is written (jvp allocates the tangent without zero-filling
  it, dg.Tape reverses the launch with `dg.vjp`): each of those extents is
  at least the output's and the launch covers it.
- `load_offsets` / `store_offsets`: an input all of whose loads (an output
  all of whose stores, each element once) are in the kernel's own body
  (outside loops, or in one constant-trip loop) at `c * gid(d) + k` per
  component, the same dimensions, several constant offsets (`x[r, j]`,
  `x[r, j + 256]`, `x[4 * r + k, j]`, ...:
  lowering/autodiff/functional/owned.py): `{"dims", "offsets"}`. The launch
  decides whether each element is one thread's.
- `accumulate_only`: an in-out array touched only by `diffgpu.atomic_add`s
  in the kernel's own body whose results are unused (`out[0] += v`): its
  final value is its initial value plus the sum, so its cotangent is only
  read and the gradient of its initial value is the cotangent itself.

    func.func @square(%y: memref<?xf32>, %x: memref<?xf32>) {diffgpu.kernel}
      %g = block_id * block_dim + thread_id            // dim 0
      %v = memref.load %x[%g]                          // x: input, load_key (0,)
      memref.store (%v * %v), %y[%g]                   // y: output, store_key (0,)
"""
from __future__ import annotations

from diffgpu import switches
from diffgpu._mlir import ir

from diffgpu.dialects import names as N
from diffgpu.dialects import ops
from diffgpu.lowering.common import targets
from diffgpu.lowering.autodiff import build as B
from diffgpu.lowering.autodiff.functional import gather, owned, transpose
from diffgpu.lowering.autodiff.functional.rows import rows_dim
from diffgpu.lowering.facts.indices import index_key, offset_of

_LOOPS = ("scf.for", "scf.while", "scf.parallel", "scf.forall")


def _funcs(module) -> dict:
    out = {}
    for op in module.body.operations:
        if op.operation.name == "func.func":
            out[ir.StringAttr(op.attributes["sym_name"]).value] = op
    return out


def _in_loop(op, fn) -> bool:
    p = op.parent
    while p is not None and p != fn.operation:
        if p.name in _LOOPS:
            return True
        p = p.parent
    return False


class _Param:
    def __init__(self):
        self.read = self.write = self.atomic = self.opaque = False
        self.loads, self.stores = [], []  # (op, key) in the kernel body
        self.adds = []  # atomic_adds in the kernel body whose result is unused
        self.nested = False  # accessed through a call


def _visit(value, fn, funcs, info: _Param, depth: int, seen) -> None:
    for use in value.uses:
        op = use.owner.operation if hasattr(use.owner, "operation") else use.owner
        name = op.name
        if name == "memref.dim":
            continue
        if name == "memref.load" and use.operand_number == 0:
            info.read = True
            if depth == 0:
                info.loads.append((op, index_key(list(op.operands)[1:]), fn))
            else:
                info.nested = True
        elif name == "memref.store" and use.operand_number == 1:
            info.write = True
            if depth == 0:
                info.stores.append((op, index_key(list(op.operands)[2:]), fn))
            else:
                info.nested = True
        elif name == N.ATOMIC_ADD and use.operand_number == N.ATOMIC_MEMREF:
            info.read = info.write = info.atomic = True
            if depth == 0 and not list(op.results[0].uses):
                info.adds.append(op)
            else:
                info.nested = True
        elif name == "func.call" and ir.FlatSymbolRefAttr(op.attributes["callee"]).value in funcs:
            callee = funcs[ir.FlatSymbolRefAttr(op.attributes["callee"]).value]
            info.nested = True
            _visit_arg(callee, use.operand_number, funcs, info, depth, seen)
        elif name in N.DIFF and (where := _diff_use(op, use.operand_number, funcs)):
            callee, k, shadow = where
            info.nested = True
            if shadow and name == N.AUTODIFF:
                info.read = info.write = True  # accumulated or consumed
            else:  # the primal, or a tangent: accessed where the callee accesses the primal
                _visit_arg(callee, k, funcs, info, depth, seen)
        else:
            info.read = info.write = info.opaque = True


def _visit_arg(callee, k: int, funcs, info: _Param, depth: int, seen) -> None:
    """The accesses of `callee` to its argument `k` (once per parameter)."""
    if (callee.operation, k) in seen:
        return
    seen.add((callee.operation, k))
    _visit(callee.regions[0].blocks[0].arguments[k], callee, funcs, info, depth + 1, seen)


def _diff_use(op, operand: int, funcs):
    """(callee, argument index, is the shadow) of operand `operand` of the
    diffgpu.autodiff / fwddiff `op`, or () (the seed, an unknown callee)."""
    view = ops.opview(op)
    callee = funcs.get(view.callee)
    at = sum(view.operand_segments) - sum(view.arg_segments)  # after the seed group
    for k, n in enumerate(view.arg_segments):
        if callee is not None and at <= operand < at + n:
            return callee, k, operand > at
        at += n
    return ()


def _ancestry(op, fn) -> list:
    """[(ancestor op, index of the region holding the previous one)], from
    `op`'s parent out to (not including) `fn`."""
    out, child, p = [], op, op.parent
    while p is not None and p != fn.operation:
        out.append((p, _region_of(child, p)))
        child, p = p, p.parent
    return out


def exclusive(a, b, fn) -> bool:
    """No execution of `fn` runs both ops: their innermost common ancestor
    is an `scf.if` holding them in different regions (then / else)."""
    up_a, up_b = _ancestry(a, fn), _ancestry(b, fn)
    for p, ra in up_a:
        for q, rb in up_b:
            if p == q:
                return p.name == "scf.if" and ra != rb
    return False  # both in the function's own block: one path runs both


def stored_once(stores, fn):
    """The one index key (elision.py's `index_key`) of `stores` (the
    `memref.store`s of one array in `fn`'s own body) when the array is
    stored once: every store outside loops at that thread-unique index and
    every two of them `exclusive`; else None."""
    keys = {index_key(list(op.operands)[2:]) for op in stores}
    if not stores or len(keys) != 1 or None in keys:
        return None
    if any(_in_loop(op, fn) for op in stores):
        return None
    for i, a in enumerate(stores):
        if not all(exclusive(a, b, fn) for b in stores[i + 1:]):
            return None
    return next(iter(keys))


def _every_path(stores, fn):
    """The innermost `scf.if` holding all of `stores` (several, `stored_once`)
    when every path through it runs one of them: both its regions cover,
    a region covering when its block holds one of the stores or an `scf.if`
    with an else whose two regions cover; else None."""
    chains = [[p for p, _ in _ancestry(s, fn)] for s in stores]
    top = next((p for p in chains[0] if all(any(p == q for q in c) for c in chains[1:])),
               None)
    if top is None or top.name != "scf.if":
        return None

    def covers(region):
        if not len(region.blocks):
            return False
        for o in region.blocks[0].operations:
            o = o.operation
            if any(o == st for st in stores):
                return True
            if o.name == "scf.if" and all(covers(r) for r in o.regions):
                return True
        return False
    return top if all(covers(r) for r in top.regions) else None


def _dims(key):
    return None if key is None else [c[1] if c[0] == "gid" else None for c in key]


def _guards(op, fn):
    """[[d, parameter position, k], ...]: the conditions `gid(d) < len(A, k)`
    of the `scf.if`s (then branches) around `op` in the kernel `fn`, or None
    when anything else encloses it."""
    from diffgpu.lowering.facts.indices import _strip, global_dim

    args = list(fn.regions[0].blocks[0].arguments)
    out = []
    p = op.parent
    while p is not None and p != fn.operation:
        if p.name != "scf.if" or _region_of(op, p) != 0:
            return None  # a loop, an else branch, ...
        conds = [p.operands[0]]
        while conds:
            c = conds.pop()
            o = c.owner.operation if not isinstance(c.owner, ir.Block) else None
            if o is not None and o.name == "arith.andi":
                conds += list(o.operands)
                continue
            if o is not None and o.name == "scf.if" and len(o.results) == 1:
                then, other = (list(r.blocks[0].operations)[-1] if r.blocks else None
                               for r in o.regions)  # `a and b`: if a {b} else {a}
                if other is not None and other.operands[0] == o.operands[0]:
                    conds += [o.operands[0], then.operands[0]]
                    continue
            if (o is None or o.name != "arith.cmpi"
                    or ir.IntegerAttr(o.attributes["predicate"]).value != 2):  # slt
                return None
            d = global_dim(o.operands[0])
            n = _strip(o.operands[1])
            dim = n.owner.operation if not isinstance(n.owner, ir.Block) else None
            if d is None or dim is None or dim.name != "memref.dim":
                return None
            a = [k for k, v in enumerate(args) if v == dim.operands[0]]
            k = _const_index(dim.operands[1])
            if not a or k is None:
                return None
            out.append([d, a[0], k])
        op, p = p, p.parent
    return out


def _region_of(op, parent) -> int:
    """Which region of `parent` holds `op` (a child)."""
    for i, r in enumerate(parent.regions):
        for b in r.blocks:
            for o in b.operations:
                if o.operation == op:
                    return i
    return -1


def _const_index(v):
    o = v.owner.operation if not isinstance(v.owner, ir.Block) else None
    if o is None or o.name != "arith.constant":
        return None
    return ir.IntegerAttr(o.attributes["value"]).value


def analyze_module(module) -> list:
    """One dict per parameter of the module's kernel (see the module
    docstring); scalars get `{"array": False}`."""
    funcs = _funcs(module)
    kernels = [f for f in funcs.values() if targets.KERNEL_ATTR in f.attributes]
    if len(kernels) != 1:
        raise ValueError(f"expected one kernel in the module, found {len(kernels)}")
    fn = kernels[0]
    plain = transpose.plain(fn)
    out = []
    for arg in fn.regions[0].blocks[0].arguments:
        if not B.is_memref(arg.type):
            out.append({"array": False})
            continue
        info = _Param()
        _visit(arg, fn, funcs, info, 0, set())
        store_key = load_key = store_guards = None
        if info.write and not info.read and not info.nested and not info.opaque:
            stores = [op for op, _, _ in info.stores]
            key = stored_once(stores, fn)
            if key is not None:
                store_key = _dims(key)
                if all(c[0] == "gid" for c in key):
                    top = stores[0] if len(stores) == 1 else _every_path(stores, fn)
                    store_guards = None if top is None else _guards(top, fn)
        if (store_key is None and info.write and not info.read and not info.nested
                and not info.opaque and info.stores):
            d = rows_dim([op for op, _, _ in info.stores], fn)  # out[c * gid + k]
            if d is not None:
                store_key = [d]
        if info.read and not info.write and not info.nested and not info.opaque:
            keys = {k for _, k, _ in info.loads}
            if len(keys) == 1:
                (key,) = keys
                if key is not None and all(c[0] == "gid" for c in key):
                    load_key = _dims(key)
        stencil = None
        if (info.read and not info.write and not info.nested and not info.opaque
                and load_key is None and plain and switches.on(switches.STENCIL)):
            offs = [offset_of(op.operands[1]) if len(op.operands) == 2 else None
                    for op, _, _ in info.loads]
            if (offs and all(o is not None and o[0] == 0 for o in offs)
                    and gather.loop_free(fn)):  # a kept loop's tape: not replayable
                stencil = sorted({o[1] for o in offs})
        stencil_dims = None  # other affine stencils (gather.py): their dims
        if (stencil is None and info.read and not info.write and not info.nested
                and not info.opaque and load_key is None and switches.on(switches.STENCIL)):
            found = gather.stencil_dims(fn, arg)
            if found is not None and found[0] == [0] and found[1] is not None:
                stencil = found[1] if plain else None  # 1-D, constant offsets once unrolled
            elif found is not None:
                stencil_dims = found[0]
        load_offsets = store_offsets = None  # x[r, j], x[r, j + 256], ...: owned.py
        if (store_key is None and info.write and not info.read and not info.nested
                and not info.opaque):
            store_offsets = owned.pattern([(op, list(op.operands)[2:]) for op, _, _ in info.stores],
                                          fn, stores=True)
        if load_key is None and info.read and not info.write and not info.nested and not info.opaque:
            load_offsets = owned.pattern([(op, list(op.operands)[1:]) for op, _, _ in info.loads], fn)
        accumulate_only = bool(info.adds) and not (info.loads or info.stores or info.nested
                                                   or info.opaque)
        out.append({"array": True, "read": info.read, "write": info.write,
                    "atomic": info.atomic, "opaque": info.opaque,
                    "store_key": store_key, "load_key": load_key, "stencil": stencil,
                    "stencil_dims": stencil_dims,
                    "store_guards": store_guards,
                    "load_offsets": load_offsets, "store_offsets": store_offsets,
                    "accumulate_only": accumulate_only})
    return out


def analyze_text(text: str) -> list:
    """`analyze_module` of the frontend module `text`."""
    from diffgpu.lowering.common import session

    with session.context(), ir.Location.unknown():  # the driver's: no new context
        return analyze_module(ir.Module.parse(text))


__all__ = ["analyze_module", "analyze_text", "exclusive", "stored_once"]

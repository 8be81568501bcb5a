"""The next row's loads one iteration ahead, in the row loop of
`diffgpu-coarsen-rows` (lowering/coarsen/rows.py).

A coarsened reverse runs R rows one after another in a block:

    scf.for %k = 0 to %n {
      x = X[gid(k), j]            wait for memory
      block_sum(...) ...          barriers, shuffles: nothing in flight
      dy = dY[gid(k), j]          wait for memory again
      block_sum(...) ...
      dX[gid(k), j] = ...
    }

A warp issues in order, so while a row's collectives run, the block has no
load in flight, and the SM hides the memory latency only with its other
blocks (4 to 6 of them for a 256-thread block of ~48 registers). Rows are
independent, so the loads of row k + 1 can be issued before row k's
collectives:

    x0, dy0 = X[gid(0), j], dY[gid(0), j]
    scf.for %k = 0 to %n iter_args(x = x0, dy = dy0) {
      k1 = min(k + 1, n - 1)
      x1, dy1 = X[gid(k1), j], dY[gid(k1), j]      in flight during row k
      ... row k on x, dy ...
      yield x1, dy1
    }

A load moves this way when it reads a kernel argument that the program never
writes (no store, no atomic: no iteration can change what a later one reads),
sits at the top level of the loop body (it runs in every iteration, so
loading it for iteration k + 1 reads an element the program reads anyway;
the clamp makes the last iteration read row n - 1 again, never a row outside
the block's), and its indices are computed by pure arithmetic from the
loop variable and values defined before the loop. Loads whose indices do
not depend on the loop variable (a parameter `g[j]`) stay where they are.
The values are bit for bit those of the loads they replace: only the moment
of the read changes. The cost is registers: each moved load holds two
values (this row's and the next) instead of one.

`prefetch(loop)` returns the number of loads moved, or a reason why none
moved (rows.py reports it with DIFFGPU_EXPLAIN).
"""
from __future__ import annotations

from diffgpu.dialects import names as N


def _op(v):
    from diffgpu._mlir import ir
    owner = v.owner
    return None if isinstance(owner, ir.Block) else owner.operation


def _parent(op):
    p = op.parent
    return None if p is None else p.operation


def _inside(op, loop) -> bool:
    while op is not None:
        if op == loop:
            return True
        op = _parent(op)
    return False


def _readonly_args(fn) -> list:
    """The memref arguments of `fn` (global memory) only loaded or measured."""
    from diffgpu._mlir import ir
    out = []
    for arg in fn.regions[0].blocks[0].arguments:
        if not isinstance(arg.type, ir.MemRefType):
            continue
        if "workgroup" in str(ir.MemRefType(arg.type).memory_space or ""):
            continue
        if all(u.owner.operation.name in ("memref.load", "memref.dim") and
               (u.owner.operation.name != "memref.load" or u.operand_number == 0)
               for u in arg.uses):
            out.append(arg)
    return out


def _index_slice(load, loop, iv):
    """The ops inside `loop` computing `load`'s indices, in program order,
    when they are pure arithmetic on `iv` and values from before the loop
    and depend on `iv`; else None."""
    seen, stack, uses_iv = [], list(load.operands)[1:], False
    while stack:
        v = stack.pop()
        if v == iv:
            uses_iv = True
            continue
        op = _op(v)
        if op is None:
            if v.owner == loop.regions[0].blocks[0]:
                return None  # an iteration argument: changes from row to row
            continue  # an argument of the function: defined before the loop
        if not _inside(op, loop):
            continue
        if not (op.name.startswith("arith.") or op.name in N.GEOMETRY) or len(op.regions):
            return None
        if _parent(op) != loop:
            return None
        if any(op == s for s in seen):
            continue
        seen.append(op)
        stack.extend(op.operands)
    if not uses_iv:
        return None
    body = [o.operation for o in loop.regions[0].blocks[0].operations]
    return [o for o in body if any(o == s for s in seen)]


def _clone(ops, mapping, ip):
    """Copies of `ops` at `ip`, their operands mapped through `mapping`
    (a list of (old, new) value pairs, extended with the copies' results)."""
    for op in ops:
        new = op.clone(ip=ip)
        for i, v in enumerate(list(new.operands)):
            for old, repl in mapping:
                if v == old:
                    new.operands[i] = repl
                    break
        mapping.extend(zip(list(op.results), list(new.results)))


def _mapped(v, mapping):
    return next((new for old, new in mapping if old == v), v)


def prefetch(loop):
    """The rewrite of the module docstring on `scf.for` `loop` (step 1, at
    least one iteration), in kernel `fn`: (loads moved, None) or (0, why)."""
    from diffgpu._mlir import arith, ir, scf

    loop = loop.operation
    fn = _parent(loop)
    while fn.name not in ("func.func", "gpu.func"):
        fn = _parent(fn)
    body = loop.regions[0].blocks[0]
    iv = body.arguments[0]
    readonly = _readonly_args(fn)
    moved = []
    for o in body.operations:
        o = o.operation
        if o.name != "memref.load" or not any(o.operands[0] == a for a in readonly):
            continue
        ops = _index_slice(o, loop, iv)
        if ops is not None:
            moved.append((o, ops))
    if not moved:
        return 0, "no load of an array it never writes at indices of the loop's row"
    lb, ub, step = list(loop.operands)[:3]
    old_inits = list(loop.operands)[3:]
    index = ir.IndexType.get()
    with loop.location, ir.InsertionPoint(loop):
        last = arith.subi(ub, arith.constant(index, 1))
        firsts = []
        for load, ops in moved:  # the first row's values, before the loop
            mapping = [(iv, lb)]
            _clone(ops, mapping, ir.InsertionPoint(loop))
            firsts.append(_clone_load(load, mapping, ir.InsertionPoint(loop)))
        new = scf.ForOp(lb, ub, step, old_inits + firsts)
    dst = new.body
    n_old = len(list(body.arguments))
    for a, b in zip(list(body.arguments), list(dst.arguments)[:n_old]):
        a.replace_all_uses_with(b)
    with loop.location, ir.InsertionPoint(dst):
        anchor = scf.YieldOp([]).operation
    ops = [o.operation for o in body.operations]
    for o in ops:
        o.move_before(anchor)
    term = ops[-1]
    iv = dst.arguments[0]
    nexts = []
    with loop.location:
        first = ops[0]
        ip = ir.InsertionPoint(first)
        k1 = arith.minui(arith.addi(iv, step, ip=ip), last, ip=ip)
        for (load, slice_ops), cur in zip(moved, list(dst.arguments)[n_old:]):
            mapping = [(iv, k1)]
            _clone(slice_ops, mapping, ip)
            nexts.append(_clone_load(load, mapping, ip))
            load.results[0].replace_all_uses_with(cur)
        with ir.InsertionPoint(anchor):
            scf.YieldOp(list(term.operands) + nexts)
    term.erase()
    anchor.erase()
    for load, _ in moved:
        load.erase()
    for r, s in zip(list(loop.results), list(new.operation.results)[:len(loop.results)]):
        r.replace_all_uses_with(s)
    loop.erase()
    _erase_unused(dst)
    return len(moved), None


def _clone_load(load, mapping, ip):
    new = load.clone(ip=ip)
    for i, v in enumerate(list(new.operands)):
        new.operands[i] = _mapped(v, mapping)
    return new.results[0]


def _erase_unused(block) -> None:
    """Pure index arithmetic of `block` (the moved loads' old indices) that
    nothing uses any more."""
    changed = True
    while changed:
        changed = False
        for o in reversed([x.operation for x in block.operations]):
            if (o.name.startswith("arith.") or o.name in N.GEOMETRY) and not len(o.regions) \
                    and len(o.results) and not any(len(list(r.uses)) for r in o.results):
                o.erase()
                changed = True

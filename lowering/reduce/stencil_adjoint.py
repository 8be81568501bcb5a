"""`diffgpu-stencil-adjoint`: a stencil's scattered shadow adds, gathered per block.

Reverse mode turns the gather `y[i] = sum_k c_k x[i + k]` into the scatter
`dx[i + k] += c_k dy[i]`: one atomic per thread and offset. This pass (after
`diffgpu-autodiff`, before `diffgpu-aggregate-atomics`) transposes the
scatter inside each block. Every thread stores its contribution for offset
`k` in a shared array (with a flag: whether it would have added it), a
barrier, then thread `t` sums the contributions of the block's threads
`t - k` and adds them to `dx[t]` once, with a plain load/add/store. Only
what crosses a block boundary stays atomic: a contribution whose target is
in another block (the source adds it), and the target's own add when its
element can receive such contributions (threads within `max k` of the block's
edges). The source thread computes its contributions as before (from its own
tape and `dy[i]`, which it still consumes), so nonlinear stencils and guards
need no re-derivation, and no thread reads another's `dy`.

It applies to the adds into one array `dx` of a function (all of them) when

1. each is a `diffgpu.atomic_add` with unused result on a float element at
   an index `[gid(d0) + k0, gid(d1) + k1, ...]`: `gid(d) = block_id(d) *
   block_dim(d) + thread_id(d)` (lowering/autodiff/elision.py's global id,
   through index casts and the tape's private allocas), distinct dimensions,
   the same dimension per position in every add, integer constants `k`, at
   least one nonzero (1-D and 2-D stencils alike);
2. nothing else in that function uses `dx` (but `memref.dim`);
3. each is at a site where a barrier can follow (lowering/reduce/hoist.py: in a
   kernel's body or the derivative function it calls once, under `scf.if`s
   only) and no later op of the thread can observe the moved add;
4. the shared arrays (1024 values and 1024 flags per add) fit, with the
   kernel's own, in SHARED_BUDGET bytes (a 3-point float32 stencil takes
   15 KiB; a 9-point float64 one would not fit and keeps its atomics).

At run time the dimensions the index does not name must have one thread and
one block (a 1-D stencil needs a 1-D launch), so the index is unique per
thread; otherwise every thread adds its contributions atomically, as before.
The source of offset `k` is the thread at coordinates `t - k` of the same
block (shared arrays indexed by the linear thread index).

    scf.if %in {
      "diffgpu.atomic_add"(%dx, %a, %im1)    // %im1 = gid - 1
      "diffgpu.atomic_add"(%dx, %b, %gid)
      "diffgpu.atomic_add"(%dx, %c, %ip1)    // %ip1 = gid + 1
    }
  becomes (values hoisted out of the guard, zero and flag false where off)
    sa[t] = a; fa[t] = in; sb[t] = b; ...; barrier
    s = (t >= 1 && fc[t - 1] ? sc[t - 1] : 0) + (fb[t] ? sb[t] : 0)
        + (t + 1 < n && fa[t + 1] ? sa[t + 1] : 0)
    if any flag: dx[gid] += s (atomic when t == 0 or t == n - 1)
    t == 0 && fa[t]: atomic dx[gid - 1] += a;  t == n - 1 && fc[t]: atomic dx[gid + 1] += c
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from diffgpu import switches
from diffgpu._mlir import arith, ir, memref, scf

from diffgpu.dialects import names as N
from diffgpu.dialects import ops as dg
from diffgpu.lowering.reduce import hoist as H
from diffgpu.lowering.common import explain
from diffgpu.lowering.facts.affine import stencil_index
from diffgpu.lowering.facts.indices import offset_of
from diffgpu.lowering.reduce.block_sum import MAX_THREADS, zero
from diffgpu.lowering.registry import ModulePass, register_pass
from diffgpu.lowering.facts.uniform import Uniformity, walk

#: marks the adds this pass emits (never transformed again)
STENCIL = "diffgpu.stencil"
#: this pass's name in remarks (lowering/common/explain.py)
PASS = "stencil-adjoint"
#: static shared memory a kernel may use with the transposition's arrays (the
#: GPU's static limit is 48 KiB per block; the rest stays for the other passes)
SHARED_BUDGET = 40 * 1024


def _key(op):
    """(dims, offsets) of an add at [gid(d0) + k0, gid(d1) + k1, ...] with
    distinct dimensions, else None."""
    comps = [offset_of(i) for i in list(op.operands)[2:]]
    if not comps or any(c is None for c in comps):
        return None
    dims = tuple(d for d, _ in comps)
    if len(set(dims)) != len(dims):
        return None
    return dims, tuple(k for _, k in comps)


def _adds(fn, uniform=None):
    """{target memref: [(atomic_add op, offsets)]} of `fn`'s transposable adds,
    all with the same dimension per index position; a target with any other
    add maps to None. With `uniform`, a per-thread add that does not qualify
    is reported (DIFFGPU_EXPLAIN)."""
    groups, dims_of = {}, {}
    for op in walk(fn):
        if op.name != N.ATOMIC_ADD or STENCIL in op.attributes:
            continue
        target = op.operands[0]
        key = _key(op)
        ok = (key is not None and not len(list(op.results[0].uses))
              and isinstance(op.operands[1].type, ir.FloatType)
              and dims_of.setdefault(target, key[0]) == key[0])
        if not ok or groups.get(target, []) is None:
            if uniform is not None and groups.get(target, []) is not None:
                _why(op, key, uniform)
            groups[target] = None
            continue
        groups.setdefault(target, []).append((op, key[1]))
    return {t: (g if g is None else (dims_of[t], g)) for t, g in groups.items()}


def _why(op, key, uniform) -> None:
    """Report why the add `op` (not transposable: `key` None, or a mismatch)
    keeps its atomic, when its index is per-thread (a uniform one is
    diffgpu-aggregate-atomics')."""
    indices = list(op.operands)[2:]
    if not indices or all(uniform.is_uniform(v) for v in indices):
        return
    if key is not None:
        why = ("the array's adds use the thread ids in different positions"
               if not len(list(op.results[0].uses)) else "the add's old value is used")
    else:
        found = stencil_index(indices)
        if not isinstance(found, tuple):
            why = found.reason
        else:
            text = ", ".join(f"gid{d} + {o.text()}" for d, o in zip(*found))
            why = f"[{text}]: an offset is not an integer constant"
    explain.missed(PASS, op, why)


def _only_user(target, ops) -> bool:
    """Every use of `target` is one of `ops` or a memref.dim."""
    for use in target.uses:
        o = use.owner.operation if hasattr(use.owner, "operation") else use.owner
        if o.name != "memref.dim" and o not in ops:
            return False
    return True


def plan(fn, uniform):
    """(target, [(op, k)], site) of one transposable group in `fn`, or None."""
    for target, found in _adds(fn, uniform if explain.active() else None).items():
        if found is None:
            continue
        dims, group = found
        if not any(any(k) for _, k in group):
            continue
        first_op = group[0][0]
        if not _only_user(target, [op for op, _ in group]):
            explain.missed(PASS, first_op, "the shadow array has other uses than these adds")
            continue
        sites = [H.site_of(op, uniform) for op, _ in group]
        if any(s is None for s in sites):
            explain.missed(PASS, first_op, "an add is in a loop or a function called more "
                           "than once (no barrier can follow it)")
            continue
        first = sites[0]
        if any(s.kernel != first.kernel or s.fn != first.fn or s.call != first.call
               for s in sites):
            explain.missed(PASS, first_op, "the adds are in different functions")
            continue
        if not all(H.unobserved(op, target, s) for (op, _), s in zip(group, sites)):
            explain.missed(PASS, first_op, "a later op of the thread may observe an add")
            continue
        need = len(group) * MAX_THREADS * (_bytes(group[0][0].operands[1].type) + 1)
        if shared_bytes(first.kernel) + need > SHARED_BUDGET:
            explain.missed(PASS, first_op, (
                f"{len(group)} offsets need {need // 1024} KiB of shared memory, over the "
                f"{SHARED_BUDGET // 1024} KiB budget (dg.vjp gathers without it)"))
            continue  # would not fit in a block's static shared memory
        return target, dims, group
    return None


def _bytes(t) -> int:
    return max(1, ir.FloatType(t).width // 8) if isinstance(t, ir.FloatType) else 8


def shared_bytes(kernel) -> int:
    """Bytes of the shared arrays `kernel` allocates already."""
    total = 0
    for op in walk(kernel):
        if op.name == N.SHARED_ALLOC:
            m = ir.MemRefType(op.results[0].type)
            n = 1
            for d in m.shape:
                n *= d
            et = m.element_type
            width = et.width if hasattr(et, "width") else 64
            total += n * max(1, width // 8)
    return total


def _position(v) -> int:
    return ir.OpResult(v).result_number


def _idx(n):
    return arith.constant(ir.IndexType.get(), n)


def _cmp(pred, a, b):
    return arith.cmpi(getattr(arith.CmpIPredicate, pred), a, b)


def _shifted(base, k):
    """base + k (index)."""
    return base if k == 0 else (arith.addi(base, _idx(k)) if k > 0
                                else arith.subi(base, _idx(-k)))


def _add(dx, value, index, atomic=True):
    if atomic:
        dg.atomic_add(dx, value, index).owner.attributes[STENCIL] = ir.UnitAttr.get()
        return
    old = memref.load(dx, index)
    memref.store(arith.addf(old, value), dx, index)


def _if(cond, body):
    branch = scf.IfOp(cond, [])
    with ir.InsertionPoint(branch.then_block):
        body()
        scf.YieldOp([])


class _Geometry:
    """Thread coordinates of the named dimensions, built at the insertion point."""

    def __init__(self, dims):
        self.dims = dims
        self.t = {d: dg.thread_id(d) for d in range(3)}
        self.n = {d: dg.block_dim(d) for d in range(3)}
        self.gid = {d: arith.addi(arith.muli(dg.block_id(d), self.n[d]), self.t[d])
                    for d in dims}
        # the linear thread index in the block, and each dimension's stride in it
        self.stride = {0: _idx(1), 1: self.n[0], 2: arith.muli(self.n[0], self.n[1])}
        self.lin = arith.addi(self.t[0], arith.muli(self.n[0], arith.addi(
            self.t[1], arith.muli(self.n[1], self.t[2]))))

    def index(self, ks):
        """[gid(d) + k] per index position."""
        return [_shifted(self.gid[d], k) for d, k in zip(self.dims, ks)]

    def inside(self, d, k):
        """i1: thread coordinate t(d) + k lies in the block."""
        if k > 0:
            return _cmp("ult", arith.addi(self.t[d], _idx(k)), self.n[d])
        if k < 0:
            return _cmp("uge", self.t[d], _idx(-k))
        return arith.constant(ir.IntegerType.get_signless(1), 1)

    def all_inside(self, ks, sign):
        cond = None
        for d, k in zip(self.dims, ks):
            c = self.inside(d, sign * k)
            cond = c if cond is None else arith.andi(cond, c)
        return cond

    def shifted_lin(self, ks, sign):
        """The linear index of the thread at coordinates t + sign * k."""
        lin = self.lin
        for d, k in zip(self.dims, ks):
            if k:
                step = self.stride[d] if abs(k) == 1 else arith.muli(self.stride[d],
                                                                     _idx(abs(k)))
                lin = arith.addi(lin, step) if sign * k > 0 else arith.subi(lin, step)
        return lin


def transpose(module, target, dims, group) -> None:
    """Rewrite the adds `group` ([(op, offsets)]) into `target`, whose index
    positions are the global ids of `dims`, as in the module docstring."""
    entries, after, loc = [], None, group[-1][0].location
    for op, k in group:
        with op.location, ir.InsertionPoint(op):
            on = arith.constant(ir.IntegerType.get_signless(1), 1)
        value, after = H.hoist(op.operands[1], H.site_of(op, Uniformity(module)))
        at = _position(value) if after is not None else value
        site = H.site_of(op, Uniformity(module))  # the guards and the call are new
        flag, after = H.hoist(on, site)
        entries.append((at, _position(flag) if after is not None else flag, k))
    if after is not None:  # later hoists rebuilt the op: its results by position
        res = list(after.results)
        entries = [(res[v], res[f], k) for v, f, k in entries]
    ip = H.after(after if after is not None else group[-1][0], site)
    for op, _ in group:
        op.erase()
    with loc, ip:
        dx = H.materialize(target, ip, site)
        i8 = ir.IntegerType.get_signless(8)
        space = ir.Attribute.parse("#gpu.address_space<workgroup>")
        geo = _Geometry(dims)
        shared = []
        for value, flag, _ in entries:
            sv = dg.shared_alloc(ir.MemRefType.get([MAX_THREADS], value.type,
                                                   memory_space=space))
            sf = dg.shared_alloc(ir.MemRefType.get([MAX_THREADS], i8, memory_space=space))
            memref.store(value, sv, [geo.lin])
            memref.store(arith.extui(i8, flag), sf, [geo.lin])
            shared.append((sv, sf))
        dg.barrier()
        one = None  # dimensions the index does not name have one thread and one block
        for d in (d for d in range(3) if d not in dims):
            for name in ("block_dim", "grid_dim"):
                c = _cmp("eq", dg.geometry(name, d), _idx(1))
                one = c if one is None else arith.andi(one, c)
        if one is None:
            _gather(dx, entries, shared, geo)
            return
        branch = scf.IfOp(one, [], has_else=True)
        with ir.InsertionPoint(branch.then_block):
            _gather(dx, entries, shared, geo)
            scf.YieldOp([])
        with ir.InsertionPoint(branch.else_block):
            for value, flag, k in entries:
                _if(flag, lambda value=value, k=k: _add(dx, value, geo.index(k)))
            scf.YieldOp([])


def _gather(dx, entries, shared, geo) -> None:
    i1 = ir.IntegerType.get_signless(1)
    true, false = arith.constant(i1, 1), arith.constant(i1, 0)
    total, seen, edge = zero(entries[0][0].type), false, false
    zero_k = (0,) * len(geo.dims)
    for (value, _, k), (sv, sf) in zip(entries, shared):
        inside = geo.all_inside(k, -1)  # the source t - k is in the block
        src = arith.select(inside, geo.shifted_lin(k, -1), geo.lin)
        got = arith.andi(inside, _cmp("ne", memref.load(sf, [src]), arith.constant(
            ir.IntegerType.get_signless(8), 0)))
        total = arith.addf(total, arith.select(got, memref.load(sv, [src]), zero(value.type)))
        seen = arith.ori(seen, got)
        edge = arith.ori(edge, arith.xori(inside, true))
    branch = scf.IfOp(seen, [])
    with ir.InsertionPoint(branch.then_block):
        split = scf.IfOp(edge, [], has_else=True)
        with ir.InsertionPoint(split.then_block):
            _add(dx, total, geo.index(zero_k))
            scf.YieldOp([])
        with ir.InsertionPoint(split.else_block):
            _add(dx, total, geo.index(zero_k), atomic=False)
            scf.YieldOp([])
        scf.YieldOp([])
    for value, flag, k in entries:
        if not any(k):
            continue
        # the target t + k is outside the block: this thread adds it atomically
        out = arith.xori(geo.all_inside(k, 1), true)
        _if(arith.andi(flag, out), lambda value=value, k=k: _add(dx, value, geo.index(k)))


@register_pass
@dataclass
class StencilAdjoint(ModulePass):
    """Gather a stencil's shadow adds per block (module docstring)."""
    name: ClassVar[str] = "diffgpu-stencil-adjoint"
    summary: ClassVar[str] = ("transpose shadow adds at gid + constant offsets into a "
                              "per-block gather; atomics only across block edges")

    def run(self, module) -> None:
        if not switches.on(switches.STENCIL):
            return
        while self._one(module):
            pass

    @staticmethod
    def _one(module) -> bool:
        uniform = Uniformity(module)
        for fn in walk(module):
            if fn.name != "func.func" or not len(fn.regions[0].blocks):
                continue
            found = plan(fn, uniform)
            if found is not None:
                transpose(module, *found)
                return True
        return False

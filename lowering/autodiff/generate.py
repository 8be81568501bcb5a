"""Creation of derivative functions, memoized per (mode, callee, activities,
target). Every generated function carries the target of the op (or the
caller) that asked for it: never a default."""
from __future__ import annotations

import hashlib
import itertools

from diffgpu._mlir import func, ir
from diffgpu.dialects import names as N
from diffgpu.dialects.ops import AutodiffOp, DiffOp, SharedAllocOp

from diffgpu.lowering.common import targets

from diffgpu.lowering.autodiff import build as B
from diffgpu.lowering.autodiff import elision as E
from diffgpu.lowering.autodiff import locals as L
from diffgpu.lowering.autodiff import shared as SH
from diffgpu.lowering.autodiff import spec as S
from diffgpu.lowering.autodiff import tape as T
from diffgpu.lowering.autodiff.activity import Activity, walk_ops
from diffgpu.lowering.autodiff.inline import inline_generated
from diffgpu.lowering.autodiff.reverse import ReverseSweep
from diffgpu.lowering.autodiff.unroll import unroll_constant_loops


class Generator:
    def __init__(self, pas, module):
        self.pas, self.module = pas, module
        self.body = module.regions[0].blocks[0]
        self.funcs = {}
        for op in self.body.operations:
            if op.operation.name == "func.func":
                self.funcs[ir.StringAttr(op.attributes["sym_name"]).value] = op
        self.made = {}
        self.busy = set()
        self.lowered = set()
        self.diffed = set()  # callees of diffgpu.autodiff/fwddiff ops
        self._tags = itertools.count(1)

    def tape_tag(self) -> int:
        """A fresh tag pairing a float tape push with its pop (tape.py)."""
        return next(self._tags)

    def lookup(self, name):
        return self.funcs.get(name)

    # -- driving --------------------------------------------------------------
    def lower_all(self):
        for name in list(self.funcs):
            self.lower_in(name)
        self.drop_shared_callees()

    def drop_shared_callees(self):
        """A non-kernel function with shared memory (the frontend's copy of a
        kernel differentiated on the host) cannot be lowered; once its
        derivative replaced every use, it is erased."""
        used = set()
        for fn in self.funcs.values():
            for region in fn.regions:
                for block in region.blocks:
                    for op in walk_ops(block):
                        if "callee" in op.attributes:
                            used.add(ir.FlatSymbolRefAttr(op.attributes["callee"]).value)
        for name in list(self.diffed):
            fn = self.funcs.get(name)
            if fn is None or name in used or targets.KERNEL_ATTR in fn.attributes:
                continue
            if SH.shared_allocs(self.pas, fn):
                del self.funcs[name]
                fn.operation.erase()

    def lower_in(self, name):
        """Replace the diffgpu.autodiff/fwddiff ops of function `name`."""
        if name in self.lowered:
            return
        self.lowered.add(name)
        fn = self.funcs[name]
        if not len(fn.regions[0].blocks):
            return
        for op in walk_ops(fn.regions[0].blocks[0]):
            if isinstance(op, DiffOp):
                self.lower_op(op)

    def lower_op(self, op):
        mode = "rev" if isinstance(op, AutodiffOp) else "fwd"
        spec = S.parse(self.pas, op, self, mode)
        if spec is None:
            return
        self.diffed.add(spec.callee)
        if mode == "rev":
            made = self.reverse(spec, op, E.whole_launch(op, self.funcs))
        else:
            from diffgpu.lowering.autodiff.forward import make_forward
            made = make_forward(self, spec, op)
        if made is None:
            return
        name, result_types, first, extra = made  # forward: primal results come first
        operands = spec.call_operands()
        if extra:  # shared arrays and their shadows, allocated by the kernel
            operands += SH.allocate_in_kernel(self.pas, op, extra)
        with ir.InsertionPoint(op), op.location:
            call = func.CallOp(result_types, ir.FlatSymbolRefAttr.get(name), operands)
        for old, new in zip(op.results, list(call.results)[first:]):
            old.replace_all_uses_with(new)
        op.operation.erase()

    # -- helpers ------------------------------------------------------------
    def clone(self, src, name, target, shared=False):
        """Clone @src as @name; `shared`: its shared arrays may become
        arguments (only for functions called from a kernel's own op)."""
        self.lower_in(ir.StringAttr(src.attributes["sym_name"]).value)
        for op in walk_ops(src.regions[0].blocks[0]):
            if isinstance(op, SharedAllocOp) and not shared:
                self.pas.fail(op, "cannot differentiate a call to a function that allocates "
                                  "shared memory (dg.shared_array): not supported yet")
        new = src.operation.clone(ip=ir.InsertionPoint(self.body))
        new.attributes["sym_name"] = ir.StringAttr.get(name)
        if targets.KERNEL_ATTR in new.attributes:
            del new.attributes[targets.KERNEL_ATTR]
        targets.set_target(new, target)
        self.funcs[name] = new
        blocks = list(new.regions[0].blocks)
        if len(blocks) > 1:  # cf.br / cf.cond_br: the sweeps follow one block
            term = list(blocks[0].operations)[-1]
            self.pas.fail(term, f"no derivative rule for '{term.operation.name}': "
                                f"@{ir.StringAttr(src.attributes['sym_name']).value} has "
                                f"unstructured control flow ({len(blocks)} blocks)")
        inline_generated(self, new)
        unroll_constant_loops(new)  # register tapes (unroll.py)
        return new

    def new_func(self, name, ins, outs, target, loc):
        with ir.InsertionPoint(self.body), loc:
            fn = func.FuncOp(name, ir.FunctionType.get(ins, outs))
        targets.set_target(fn, target)
        self.funcs[name] = fn
        fn.add_entry_block()
        return fn

    def begin(self, key, callee, at):
        if key in self.busy:
            self.pas.fail(at, f"cannot differentiate @{callee}: it is recursive")
        self.busy.add(key)

    # -- reverse mode: one function holding both sweeps ----------------------
    def reverse(self, spec, at, launch=False):
        """`launch`: the op is a whole launch's only memory user (elision.py),
        so that its shadow updates may skip atomics; a separate function."""
        key = spec.key() + (launch,)
        if key in self.made:
            return self.made[key]
        digest = spec.digest()
        if launch:
            digest = hashlib.sha1(f"{digest}|{launch}".encode()).hexdigest()[:8]
        name = f"__dg_rev_{spec.callee}_{digest}"
        grads = [t for a, t in zip(spec.acts, spec.arg_types) if a == "active"]
        callee = self.lookup(spec.callee)
        allocs = [op.results[0].type for op in SH.shared_allocs(self.pas, callee)]
        self.made[key] = (name, grads, 0, SH.kernel_types(allocs))
        if name in self.funcs:
            return self.made[key]
        self.begin(key, spec.callee, at)
        fn = self.clone(callee, name, spec.target, shared=True)
        entry = fn.regions[0].blocks[0]
        args = list(entry.arguments)
        shadows = {}
        for k, a in enumerate(spec.acts):
            if S.is_shadowed(a):
                t = spec.arg_types[k]  # a float32 scratch for dup32 (names.DUP32)
                shadows[args[k]] = entry.add_argument(
                    B.wide_memref(t) if a == N.DUP32 else t, fn.location)
        seed = [entry.add_argument(t, fn.location) for t in spec.result_types]
        sh, sh_idx, _ = SH.hoist(self.pas, fn, entry, SH.shared_allocs(self.pas, fn))
        shadows.update(sh)
        ins = [a.type for a in entry.arguments]
        fn.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(ins, grads))
        act = Activity(entry, _idx(spec.acts, ("active",)),
                       _idx(spec.acts, ("dup", "dupnoneed", N.DUP32, N.RMW_FINAL)) | set(sh_idx))
        _mark_final(fn, spec.acts)
        tape = T.Tape(entry, entry)
        R = ReverseSweep(self, act, tape, shadows, split=False)
        R.augment_calls(spec.target, entry)
        if launch:
            R.elision = E.analyze(act.dup - set(L.active_locals(act)), act.is_active, launch)
        L.reverse_shadows(R, entry)
        R.prepare(entry, noalias=bool(launch) and launch.noalias)
        ret = list(entry.operations)[-1]
        with ir.InsertionPoint(ret), ret.location:
            R.sweep(entry, kind="direct", seed=lambda: _seed(R, ret, seed),
                    finish=lambda: _finish(R, args, spec.acts, tape))
        ret.erase()
        self.busy.discard(key)
        return self.made[key]

    # -- reverse mode for calls: augmented forward + reverse -----------------
    def split(self, callee, acts, target, at):
        """(aug name, rev name, grad types) for a call of @callee, or None."""
        fn = self.lookup(callee)
        if fn is None or not len(fn.regions[0].blocks):
            self.pas.error(at, f"cannot differentiate the call to @{callee}: it has no body")
            return None
        ins, outs = S.func_types(fn)
        spec = S.DiffSpec("split", callee, acts, ins, outs, target)
        key = spec.key()
        if key in self.made:
            return self.made[key]
        h = spec.digest()
        aug_name, rev_name = f"__dg_aug_{callee}_{h}", f"__dg_revt_{callee}_{h}"
        grads = [t for a, t in zip(acts, ins) if a == "active"]
        self.made[key] = (aug_name, rev_name, grads)
        if aug_name in self.funcs and rev_name in self.funcs:
            return self.made[key]
        self.begin(key, callee, at)
        ht, ct = T.holder_types()
        aug = self.clone(fn, aug_name, target)
        entry = aug.regions[0].blocks[0]
        fh = (entry.add_argument(ht, aug.location), entry.add_argument(ct, aug.location))
        aug.attributes["function_type"] = ir.TypeAttr.get(
            ir.FunctionType.get(list(ins) + [ht, ct], list(outs)))
        rins = list(ins) + [B.wide_memref(t) if a == N.DUP32 else t for a, t in zip(acts, ins)
                            if a in _DUPS] + list(outs) + [ht, ct]
        rev = self.new_func(rev_name, rins, grads, target, aug.location)
        rentry = rev.regions[0].blocks[0]
        rargs = list(rentry.arguments)
        args = list(entry.arguments)
        shadows, pos = {}, len(ins)
        for k, a in enumerate(acts):
            if a in _DUPS:
                shadows[args[k]] = rargs[pos]
                pos += 1
        seed = rargs[pos:pos + len(outs)]
        act = Activity(entry, _idx(acts, ("active",)), _idx(acts, _DUPS))
        tape = T.Tape(entry, rentry, fwd_holder=fh, rev_holder=(rargs[-2], rargs[-1]))
        R = ReverseSweep(self, act, tape, shadows, split=True, rev_args=rargs)
        R.augment_calls(target, entry)
        L.reverse_shadows(R, rentry)
        R.prepare(entry)
        ret = list(entry.operations)[-1]
        with ir.InsertionPoint(rentry), ret.location:
            R.sweep(entry, kind="tape", seed=lambda: _seed(R, ret, seed),
                    finish=lambda: _finish(R, args, acts, None))
        self.busy.discard(key)
        return self.made[key]


#: the call arguments with a shadow in a split function: a float32 one for dup32
_DUPS = ("dup", N.DUP32)


def _idx(acts, kinds):
    return {k for k, a in enumerate(acts) if a in kinds}


def _seed(R, ret, seed):
    for v, s in zip(ret.operands, seed):
        R.add_adj(v, s)


def _finish(R, args, acts, tape):
    grads = [R.adj_or_zero(args[k]) for k, a in enumerate(acts) if a == "active"]
    R.sides.release()
    if tape is not None:
        tape.release()
    func.ReturnOp(grads)


def _mark_final(fn, acts) -> None:
    """The positions of the "rmw" arguments (names.RMW_FINAL) on the
    generated function, for dg.atomic_max/min's rule (rules/collectives.py)."""
    from diffgpu.lowering.autodiff.rules.collectives import FINAL_ATTR

    final = [k for k, a in enumerate(acts) if a == N.RMW_FINAL]
    if final:
        fn.attributes[FINAL_ATTR] = ir.DenseI64ArrayAttr.get(final)

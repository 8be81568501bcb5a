"""Shared memory (dg.shared_array) in a differentiated kernel.

A generated function is no kernel, so it cannot allocate shared memory. Its
`diffgpu.shared_alloc` ops become arguments instead, each float array
followed by a shadow array of the same type; the kernel holding the
autodiff/fwddiff op allocates them in its entry block and passes them. The
shadow starts at zero (the adjoint of memory the kernel's end discards, or
a zero tangent): thread (0, 0, 0) clears it, then a barrier.

An integer shared array (indices, counts) carries no derivative: it gets no
shadow, and its values reach the reverse sweep as the integer values its
loads gave in the forward code (SSA values, kept like any other: directly,
in a slot or on the tape; never reloaded, since shared memory is never
treated as read-only by remat.py), so a later overwrite does not change
them.

    %s = "diffgpu.shared_alloc"() : () -> memref<16xf32, #gpu.address_space<workgroup>>
  in @f becomes arguments %s, %ds of @__dg_rev_f_<h>, and the caller kernel gets
    %s = "diffgpu.shared_alloc"() ...   %ds = "diffgpu.shared_alloc"() ...
"""
from __future__ import annotations

from diffgpu._mlir import arith, ir, memref, scf

from diffgpu.lowering.common import targets
from diffgpu.dialects import ops as dg_ops
from diffgpu.dialects.ops import DiffOp, SharedAllocOp

from diffgpu.lowering.autodiff import build as B
from diffgpu.lowering.autodiff.activity import walk_ops
from diffgpu.lowering.autodiff.tape import at_begin


def shared_allocs(pas, fn):
    """The shared_alloc ops of `fn` (they must sit in its entry block)."""
    entry = fn.regions[0].blocks[0]
    found = [op for op in walk_ops(entry) if isinstance(op, SharedAllocOp)]
    for op in found:
        if op.operation.block != entry:
            pas.fail(op, f"{op.name} must be in the kernel's entry block")
    return found


def kernel_types(types):
    """The arrays the kernel allocates for shared arrays of `types`: each
    float array and its shadow, each integer array alone."""
    return [t for t in types for _ in range(2 if B.is_float(B.memref_elem(t)) else 1)]


def hoist(pas, fn, entry, allocs):
    """Turn `allocs` into arguments of `fn`, a float array followed by its
    shadow; returns ({array arg: shadow arg}, indices of the shadowed array
    args, extra arg types)."""
    shadows, indices, types = {}, [], []
    for op in allocs:
        t, loc = op.results[0].type, op.location
        a = entry.add_argument(t, loc)
        op.results[0].replace_all_uses_with(a)
        op.operation.erase()
        types.append(t)
        if not B.is_float(B.memref_elem(t)):
            continue  # integer: no derivative, no shadow
        s = entry.add_argument(t, loc)
        shadows[a] = s
        indices.append(a.arg_number)
        types.append(t)
    if shadows:
        with at_begin(entry), fn.location:
            _zero_fill(list(shadows.values()))
    return shadows, indices, types


def _zero_fill(arrays):
    tids = [dg_ops.thread_id(d) for d in range(3)]
    first = arith.cmpi(arith.CmpIPredicate.eq,
                       arith.ori(arith.ori(tids[0], tids[1]), tids[2]), B.idx(0))
    branch = scf.IfOp(first)
    with ir.InsertionPoint(branch.then_block):
        for arr in arrays:
            t = ir.MemRefType(arr.type)
            _fill(arr, list(t.shape), [], B.zero(t.element_type))
        scf.YieldOp([])
    dg_ops.barrier()


def _fill(arr, shape, idx, zero):
    if not shape:
        memref.store(zero, arr, idx)
        return
    loop = scf.ForOp(B.idx(0), B.idx(shape[0]), B.idx(1))
    with ir.InsertionPoint(loop.body):
        _fill(arr, shape[1:], idx + [loop.induction_variable], zero)
        scf.YieldOp([])


def allocate_in_kernel(pas, at, types):
    """shared_alloc ops of `types` at the entry of the function holding `at`:
    a kernel, or a function that is itself differentiated (the frontend's
    copy of a kernel differentiated on the host: higher order), whose
    derivative turns them into arguments again. Anywhere else, lowering
    rejects shared memory outside a kernel."""
    fn = at.operation.parent
    while fn is not None and fn.name != "func.func":
        fn = fn.parent
    if fn is None or (targets.KERNEL_ATTR not in fn.attributes
                      and not _differentiated(fn)):
        pas.fail(at, "a function with shared memory can only be differentiated directly "
                     "inside a kernel")
    with at_begin(fn.regions[0].blocks[0]), at.location:
        return [dg_ops.shared_alloc(t) for t in types]


def _differentiated(fn):
    """@fn is the callee of a diffgpu.autodiff/fwddiff op of its module."""
    name = ir.StringAttr(fn.attributes["sym_name"]).value
    module = fn.parent
    for f in module.regions[0].blocks[0].operations:
        for region in f.regions:
            for block in region.blocks:
                for op in walk_ops(block):
                    if isinstance(op, DiffOp) and op.callee == name:
                        return True
    return False

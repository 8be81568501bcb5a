"""Local buffers that hold active values get shadows.

A `memref.alloca` / `memref.alloc` of floats made inside the differentiated
function (a one-value slot of a generated derivative differentiated again:
the adjoint slots and branch slots of reverse mode, the loop-carried tangent
slots of forward mode) becomes `dup` once an active value is stored into it
(activity.py). Its shadow is a private buffer of the same shape, zero at the
start: in reverse mode it is allocated at the reverse function's entry and
updated without atomics (one thread owns it); in forward mode it holds the
tangents, allocated right after the buffer itself.

    %s = memref.alloca() : memref<f64>        // slot
    memref.store %x, %s[] ; %y = memref.load %s[]
  reverse:  %ds = memref.alloca() : memref<f64>; memref.store %zero, %ds[]
            dS[] += adj(y) ... adj(x) += dS[]; dS[] = 0   (rules_memref)
"""
from __future__ import annotations

from diffgpu._mlir import ir, memref, scf

from diffgpu.lowering.autodiff import build as B
from diffgpu.lowering.autodiff.tape import at_begin

ALLOCS = ("memref.alloca", "memref.alloc")


def is_local(v) -> bool:
    """`v` is a float buffer allocated by the function itself."""
    owner = v.owner
    return (not isinstance(owner, ir.Block) and owner.operation.name in ALLOCS
            and B.is_float(B.memref_elem(v.type)))


def _shadow_like(pas, m):
    t = ir.MemRefType(m.type)
    if not t.has_static_shape:
        pas.fail(m.owner, "an array of dynamic size created inside a differentiated "
                          "function holds active values: not supported")
    s = memref.alloca(t, [], [])
    _fill(s, list(t.shape), [], B.zero(t.element_type))
    return s


def _fill(arr, shape, idx, zero):
    if not shape:
        memref.store(zero, arr, idx)
        return
    loop = scf.ForOp(B.idx(0), B.idx(shape[0]), B.idx(1))
    with ir.InsertionPoint(loop.body):
        _fill(arr, shape[1:], idx + [loop.induction_variable], zero)
        scf.YieldOp([])


def active_locals(act):
    """The active local buffers, in program order."""
    return [op.results[0] for op in act.ops
            if op.operation.name in ALLOCS and op.results[0] in act.dup]


def reverse_shadows(R, rev_entry):
    """Shadows of the active local buffers at the reverse entry; plain
    (non-atomic) accumulation into them."""
    for m in active_locals(R.act):
        if m not in R.shadows:
            with at_begin(rev_entry), m.owner.location:
                R.shadows[m] = _shadow_like(R.gen.pas, m)
            R.elision[m] = ()


def tangent_buffers(pas, act, tangents):
    """Tangent buffers of the active local buffers, next to each buffer."""
    for m in active_locals(act):
        if m not in tangents:
            with ir.InsertionPoint.after(m.owner), m.owner.location:
                tangents[m] = _shadow_like(pas, m)

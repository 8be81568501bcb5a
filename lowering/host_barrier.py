"""Barriers on the host: split a kernel body into phases at top-level barriers.

The CPU runs one emulated thread after another, so `diffgpu.barrier` ("no
thread passes before every thread of the block has reached it") is emulated
by cutting the per-thread function at each top-level barrier: phase i holds
the ops between barrier i-1 and barrier i, and the entry runs, per block,
phase 0 for every thread, then phase 1 for every thread, and so on.

A value defined in one phase and used in a later one is kept in a per-block
buffer `memref<?xT>` indexed by the thread's linear index in its block
(`tx + bx * (ty + by * tz)`), stored at the end of its phase and loaded at
the start of each later phase that uses it:

    func.func private @k__thread(%A: memref<?xf32, ...>, %s: memref<64xf32>) {
      %t = ...                      // phase 0
      memref.store %v, %s[%t]
      "diffgpu.barrier"() : () -> ()
      %w = memref.load %s[%t]       // phase 1 uses %t
      ...
    }
  becomes
    func.func private @k__phase0(%A, %s, %spill0: memref<?xindex>, %lin: index) {
      %t = ...
      memref.store %v, %s[%t]
      memref.store %t, %spill0[%lin]
      return
    }
    func.func private @k__phase1(%A, %s, %spill0: memref<?xindex>, %lin: index) {
      %t = memref.load %spill0[%lin]
      %w = memref.load %s[%t]
      ...
    }

Barriers nested in control flow or in device functions are rejected by the
pass with a clear error (not yet supported), never run with wrong semantics.
Only scalar values (integers, floats, index) may live across a barrier.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Phases:
    """Per-thread functions the entry calls in order for every block."""
    functions: list
    spill_types: list = field(default_factory=list)  # memref<?xT>, one per spilled value
    anchor: object = None  # the last function; the entry is inserted after it


def _top_level(op):
    """The ancestor of `op` that sits directly in a func.func body."""
    op = op.operation
    while op.parent is not None and op.parent.name != "func.func":
        op = op.parent
    return op


def _is_scalar(t) -> bool:
    from diffgpu._mlir import ir

    from diffgpu.lowering.host_ops import isa
    return isa(ir.IndexType, t) or isa(ir.IntegerType, t) or isa(ir.FloatType, t)


def split_phases(pass_, k, n_args: int):
    """Split `k` (the per-thread function) at its top-level barriers.

    Returns Phases, or None after reporting an error through `pass_`.
    Without barriers, `k` itself is the only phase.
    """
    from diffgpu._mlir import func, ir, memref

    entry = k.regions[0].blocks[0]
    ops = [op.operation for op in entry.operations]
    if not any(op.name == "diffgpu.barrier" for op in ops):
        return Phases([k], [], k)

    segments = [[]]
    barriers = []
    for op in ops:
        if op.name == "diffgpu.barrier":
            barriers.append(op)
            segments.append([])
        else:
            segments[-1].append(op)
    phase_of = {op: i for i, seg in enumerate(segments) for op in seg}

    # Values used in a later phase than the one defining them.
    spilled = []  # (value, defining phase, {later phase: [OpOperand]})
    remat = []  # (constant, {later phase: [OpOperand]}): cloned, not stored
    for i, seg in enumerate(segments):
        for op in seg:
            for res in op.results:
                later = {}
                for use in res.uses:
                    p = phase_of[_top_level(use.owner)]
                    if p != i:
                        later.setdefault(p, []).append(use)
                if not later:
                    continue
                if op.name == "arith.constant":
                    remat.append((res, later))
                    continue
                if not _is_scalar(res.type):
                    pass_.error(op, f"a value of type {res.type} is live across a barrier; "
                                    "only scalars may be on the host target")
                    continue
                spilled.append((res, i, later))
    if pass_._failed:
        return None

    base = ir.StringAttr(k.attributes["sym_name"]).value
    base = base[:-len("__thread")] if base.endswith("__thread") else base
    idx = ir.IndexType.get()
    spill_types = [ir.MemRefType.get([ir.ShapedType.get_dynamic_size()], v.type)
                   for v, _, _ in spilled]
    arg_types = [a.type for a in entry.arguments][:n_args]
    ftype = ir.FunctionType.get(arg_types + spill_types + [idx], [])

    fns, anchor = [], k
    for i, seg in enumerate(segments):
        fn = func.FuncOp(f"{base}__phase{i}", ftype, loc=k.location,
                         ip=ir.InsertionPoint.after(anchor))
        fn.attributes["sym_visibility"] = ir.StringAttr.get("private")
        fn.attributes["diffgpu.target"] = k.attributes["diffgpu.target"]
        block = fn.add_entry_block(arg_locs=[k.location] * len(ftype.inputs))
        for op in seg:
            block.append(op)
        if i < len(segments) - 1:
            loc = seg[-1].location if seg else k.location
            func.ReturnOp([], loc=loc, ip=ir.InsertionPoint(block))
        fns.append(fn)
        anchor = fn.operation

    # Function arguments: every phase has its own copy.
    for j, arg in enumerate(list(entry.arguments)[:n_args]):
        for use in list(arg.uses):
            p = phase_of[_top_level(use.owner)]
            use.owner.operands[use.operand_number] = fns[p].arguments[j]

    # Spilled values: store at the end of the defining phase, load in later ones.
    n_spill = len(spilled)
    for s, (value, i, later) in enumerate(spilled):
        src = fns[i]
        lin = src.arguments[n_args + n_spill]
        term = src.entry_block.operations[len(src.entry_block.operations) - 1]
        memref.StoreOp(value, src.arguments[n_args + s], [lin], loc=value.owner.location,
                       ip=ir.InsertionPoint(term))
        for p, uses in later.items():
            dst = fns[p]
            ip = ir.InsertionPoint.at_block_begin(dst.entry_block)
            loaded = memref.LoadOp(dst.arguments[n_args + s],
                                   [dst.arguments[n_args + n_spill]],
                                   loc=value.owner.location, ip=ip).result
            for use in uses:
                use.owner.operands[use.operand_number] = loaded
    for value, later in remat:
        for p, uses in later.items():
            ip = ir.InsertionPoint.at_block_begin(fns[p].entry_block)
            copy = value.owner.clone(ip=ip).results[0]
            for use in uses:
                use.owner.operands[use.operand_number] = copy

    for b in barriers:
        b.erase()
    k.erase()
    return Phases([fn.operation for fn in fns], spill_types, anchor)


def linear_thread(tids, bdim, ip, loc):
    """`tx + bx * (ty + by * tz)` at `ip`."""
    from diffgpu._mlir import arith

    t = arith.MulIOp(bdim[1], tids[2], loc=loc, ip=ip).result
    t = arith.AddIOp(tids[1], t, loc=loc, ip=ip).result
    t = arith.MulIOp(bdim[0], t, loc=loc, ip=ip).result
    return arith.AddIOp(tids[0], t, loc=loc, ip=ip).result

"""The IR helpers every pass shares: one op walk, one symbol and callee reader.

    walk(fn)                       -> [fn, every op nested in fn] (pre-order)
    walk(fn, ("func.call",))       -> the func.call ops in fn
    walk(fn, include_self=False)   -> the nested ops only
    walk(fn, post_order=True)      -> nested ops before the ops holding them
    top_ops(module, ("func.func",)) -> the func.funcs directly in module's body
    walk_block(block)              -> the ops of block, nested ones included,
                                      as their typed classes (isinstance(op, AutodiffOp))
    isa(t, ir.F32Type)             -> whether type t is an f32 (never str(t) == "f32")
    is_index(t), is_int(t)         -> an index type; a signless integer type
    scalar_name(t)                 -> "f32", "i64", "index"... read from the type's
                                      class and width; None for other types
    sym_name(f)                    -> "k" for func.func @k
    callee(call)                   -> "g" for func.call @g(...), None for another op
    lookup(module, "k")            -> the op defining symbol @k in module, or None
    defined_by(v, ("arith.constant",)) -> the op defining value v, if so named
    int_attr(op, "diffgpu.coarsen", 1) -> an integer attribute's value, or the default
    apply_patterns(fn, {ThreadIdOp: lower_tid, "func.return": lower_ret})
                                   -> one-to-one rewrites of the ops nested in fn
                                      (a RewritePatternSet of Python callbacks)

`walk` collects into a list first (one C++ walk), so callers may erase or
replace the ops it returns, under one rule: once an op is erased, no handle
to it (nor to an op nested in it) is read again. The bindings make a new
Python object for every handle (no shared table of live ops), so `erase()`
through one handle leaves the others, in this list or any other, pointing at
freed memory: reading one is a use after free (an intermittent segfault, or a
wrong name read). Keep the lists to the ops a loop rewrites (`names`), or
collect the ops to rewrite first and rewrite after:

    for m in walk(module, ("gpu.module",)):         # never erased
        for op in walk(m, ("memref.atomic_rmw",)):  # each erased once, then dropped
            rewrite(op)

not `for op in walk(module): if op.name == "gpu.module": ... erase(inner)`,
whose outer list still holds the erased `inner` and reads its name next.
No MLIR is imported until a helper runs.
"""
from __future__ import annotations


def walk(op, names=None, include_self: bool = True, post_order: bool = False) -> list:
    """The ops nested in `op` (and `op` itself unless `include_self` is
    False), pre-order (post-order with `post_order`: an op after the ops
    nested in it), as `ir.Operation`s; only those named in `names` when
    given."""
    from diffgpu._mlir import ir

    root = op.operation
    found = []

    def visit(o):
        if names is None or o.name in names:
            found.append(o)
        return ir.WalkResult.ADVANCE

    root.walk(visit, ir.WalkOrder.POST_ORDER if post_order else ir.WalkOrder.PRE_ORDER)
    if not include_self and found:
        end = -1 if post_order else 0
        if found[end] == root:
            found = found[:-1] if post_order else found[1:]
    return found


def top_ops(op, names) -> list:
    """The ops directly in the (first) body of `op` (a module, gpu.module...),
    not nested deeper, named in `names`, as `ir.Operation`s."""
    body = op.operation.regions[0].blocks[0]
    return [o.operation for o in body.operations if o.operation.name in names]


def precedes(a, b) -> bool:
    """Does op `a` come before op `b` in their (common) block? (False when
    neither is found: scans the block in order.)"""
    for o in a.block.operations:
        if o.operation == a:
            return True
        if o.operation == b:
            return False
    return False


def visit_blocks(op, fn) -> None:
    """Call `fn(block)` on every block nested in `op`, outer blocks first."""
    for region in op.regions:
        for block in region.blocks:
            fn(block)
            for inner in block.operations:
                visit_blocks(inner.operation, fn)


def walk_block(block) -> list:
    """All ops of `block`, nested ones included, in pre-order, as OpViews."""
    out = []
    for op in block.operations:
        out.append(op)
        for region in op.regions:
            for b in region.blocks:
                out.extend(walk_block(b))
    return out


def isa(t, cls) -> bool:
    """Whether type (or attribute) `t` is an `ir.<cls>`, downcast or not."""
    return isinstance(t, cls) or isinstance(t.maybe_downcast(), cls)


def is_index(t) -> bool:
    from diffgpu._mlir import ir

    return isa(t, ir.IndexType)


def is_int(t) -> bool:
    """A signless integer type (i1, i32, i64...)."""
    from diffgpu._mlir import ir

    return isa(t, ir.IntegerType) and ir.IntegerType(t).is_signless


def scalar_name(t) -> str | None:
    """The name of a scalar type, read from its class and width (never from
    its printed form): "f16", "bf16", "f32", "f64", "i1".."i64" (signless),
    "index"; None for any other type (memrefs, vectors, signed integers...)."""
    from diffgpu._mlir import ir

    if isa(t, ir.IndexType):
        return "index"
    if isa(t, ir.IntegerType):
        t = ir.IntegerType(t)
        return f"i{t.width}" if t.is_signless else None
    for cls, name in ((ir.F32Type, "f32"), (ir.F64Type, "f64"), (ir.F16Type, "f16"),
                      (ir.BF16Type, "bf16")):
        if isa(t, cls):
            return name
    return None


def sym_name(op) -> str | None:
    """The symbol name of `op` (a func.func, gpu.func, gpu.module...), or None."""
    from diffgpu._mlir import ir

    attrs = op.operation.attributes
    return ir.StringAttr(attrs["sym_name"]).value if "sym_name" in attrs else None


def callee(op) -> str | None:
    """The function a `func.call` calls, or None for any other op."""
    from diffgpu._mlir import ir

    op = op.operation
    if op.name != "func.call":
        return None
    return ir.FlatSymbolRefAttr(op.attributes["callee"]).value


def lookup(module, name: str):
    """The op defining symbol `@name` directly in `module` (a func.func,
    gpu.module, memref.global...), as an `ir.Operation`, or None."""
    for op in module.operation.regions[0].blocks[0].operations:
        if sym_name(op) == name:
            return op.operation
    return None


def defined_by(value, names):
    """The op that defines `value` (an `ir.Operation`) when it is named in
    `names`; None for another op or a block argument."""
    from diffgpu._mlir import ir

    v = value.maybe_downcast()
    if isinstance(v, ir.OpResult) and v.owner.operation.name in names:
        return v.owner.operation
    return None


def const_int(v):
    """The integer constant the value `v` is, through `arith.index_cast`s
    (the frontend's `index_cast %c1 : index to i64`), else None (a float
    constant, or anything computed)."""
    from diffgpu._mlir import ir

    owner = v.owner
    while not isinstance(owner, ir.Block) and owner.operation.name == "arith.index_cast":
        owner = owner.operation.operands[0].owner
    if isinstance(owner, ir.Block) or owner.operation.name != "arith.constant":
        return None
    attr = owner.operation.attributes["value"]
    return ir.IntegerAttr(attr).value if isa(attr, ir.IntegerAttr) else None


def int_attr(op, name: str, default=None):
    """The value of the integer attribute `name` of `op`, or `default` when
    `op` has none (or one that is not an integer)."""
    from diffgpu._mlir import ir

    attrs = op.operation.attributes
    a = attrs[name] if name in attrs else None
    return ir.IntegerAttr(a).value if a is not None and isa(a, ir.IntegerAttr) else default


def apply_patterns(root, patterns: dict) -> None:
    """Rewrite the ops nested in `root` by one-to-one patterns: `patterns`
    maps an op class (an OpView subclass: dialects/ops.py's, or upstream's)
    or an op name to a callback `fn(op, rewriter)`, which gets the op as its
    typed class and either rewrites it through the `mlir.rewrite.
    PatternRewriter` (build at `rewriter.ip`, then `rewriter.replace_op(op,
    new_op or values)` / `rewriter.erase_op(op)`) and returns None, or returns
    True to leave it (no match; e.g. after reporting an error).

        def barrier(op, rewriter):
            with rewriter.ip:
                new = ir.Operation.create("gpu.barrier", loc=op.location)
            rewriter.replace_op(op, new)

        apply_patterns(fn, {BarrierOp: barrier})

    MLIR's walk-based driver (`walk_and_apply_patterns`) runs them: each op
    is visited once, new ops are not revisited, and nothing is folded or
    erased as dead, so the IR changes only where a callback rewrote it (a
    greedy driver would also fold constants and drop unused ops). An
    exception in a callback stops the walk and propagates."""
    from diffgpu._mlir import rewrite

    pset = rewrite.RewritePatternSet(root.operation.context)
    for root_op, fn in patterns.items():
        pset.add(root_op, fn)
    rewrite.walk_and_apply_patterns(root.operation, pset.freeze())

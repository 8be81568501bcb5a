"""The wrapper kernels of the host API (`dg.autodiff(kernel[grid, block],
...)`, `dg.vjp`): a new kernel whose body is one `diffgpu.autodiff` /
`diffgpu.fwddiff` op calling the kernel (`build_diff_text`); an `Active`
scalar's gradient is added to a slot of its buffer per block (`BLOCK_INDEX`).
"""
from __future__ import annotations

from diffgpu.dialects import names as N
from diffgpu.frontend.diff_lower import FUNCTIONAL, check_activity, diff_op
from diffgpu.frontend.module import ModuleBuilder, from_api_type
from diffgpu.frontend.source import FrontendError
from diffgpu.frontend.types_infer import ArrayT
from diffgpu.frontend.values import Value


#: the block's linear index %blk: each block adds its share of an Active
#: scalar's gradient to slot %blk % len(slots) of the gradient buffer (the
#: runtime sums the slots, buffers.ACTIVE_SLOTS of them), so the adds of many
#: blocks do not all queue on one address (diffgpu-aggregate-atomics sums
#: each block's threads first, docs/atomics.md)
BLOCK_INDEX = (
    f'%bx = "{N.BLOCK_ID}"() {{dim = 0 : i64}} : () -> index',
    f'%by = "{N.BLOCK_ID}"() {{dim = 1 : i64}} : () -> index',
    f'%bz = "{N.BLOCK_ID}"() {{dim = 2 : i64}} : () -> index',
    f'%gx = "{N.GRID_DIM}"() {{dim = 0 : i64}} : () -> index',
    f'%gy = "{N.GRID_DIM}"() {{dim = 1 : i64}} : () -> index',
    "%bzy = arith.muli %gy, %bz : index",
    "%byz = arith.addi %by, %bzy : index",
    "%bxyz = arith.muli %gx, %byz : index",
    "%blk = arith.addi %bx, %bxyz : index",
)


def build_diff_text(defn, mode, kinds, arg_types, target):
    """Module text and entry symbol of the host-API derivative kernel."""
    if mode not in ("reverse", "forward"):
        raise FrontendError(f"unknown differentiation mode {mode!r}")
    if getattr(defn, "kind", "kernel") != "kernel":
        raise FrontendError("only @dg.kernel functions can be launched differentiated")
    if len(kinds) != len(arg_types):
        raise FrontendError(f"{len(kinds)} activities for {len(arg_types)} arguments")
    types = [from_api_type(t) for t in arg_types]
    for k, (kind, t) in enumerate(zip(kinds, types)):
        check_activity(kind, t, mode, k)
    mb = ModuleBuilder(target)
    name = getattr(defn, "name", None) or defn.py_func.__name__
    entry = mb.symbol(f"__dg_{mode}_{name}")
    info = mb.specialize(defn, tuple(types))
    src = mb.source(defn.py_func)
    loc = src.loc(src.tree)
    params, groups, n = [], [], 0

    def param(t):
        nonlocal n
        v = Value(f"%a{n}", t)
        params.append(f"{v.ref}: {t.mlir()} {loc}")
        n += 1
        return v
    for kind, t in zip(kinds, types):
        g = [param(t)]
        if kind in ("dup", "dupnoneed", N.RMW_FINAL) + FUNCTIONAL:
            g.append(param(t))
        elif kind == N.DUP32:  # a float32 scratch shadow of a 16-bit array
            g.append(param(ArrayT("f32", t.ndim)))
        groups.append(g)
    bufs = [param(ArrayT(t.ty, 1)) for kind, t in zip(kinds, types) if kind == "active"]
    rtypes = [t for kind, t in zip(kinds, types) if kind == "active"]
    op = N.AUTODIFF if mode == "reverse" else N.FWDDIFF
    try:
        text = diff_op(op, info.symbol, kinds, groups, None, rtypes, target)
    except N.LayoutError as e:
        code = defn.py_func.__code__
        raise FrontendError(f"cannot differentiate kernel {name!r} ({code.co_filename}:"
                            f"{code.co_firstlineno}): {e}") from None
    body = []
    if rtypes:
        grads = f"%g:{len(rtypes)}" if len(rtypes) > 1 else "%g"
        body.append(f"{grads} = {text} {loc}")
        body.append(f"%c0 = arith.constant 0 : index {loc}")
        body += [f"{line} {loc}" for line in BLOCK_INDEX]
        for k, (b, t) in enumerate(zip(bufs, rtypes)):
            g = f"%g#{k}" if len(rtypes) > 1 else "%g"
            body.append(f"%n{k} = memref.dim {b.ref}, %c0 : {b.type.mlir()} {loc}")
            body.append(f"%s{k} = arith.remui %blk, %n{k} : index {loc}")
            body.append(f'%old{k} = "{N.ATOMIC_ADD}"({b.ref}, {g}, %s{k}) '
                        f"{{{N.ACTIVE_SLOTS_ATTR}}} : "
                        f"({b.type.mlir()}, {t.ty}, index) -> {t.ty} {loc}")
    else:
        body.append(f"{text} {loc}")
    body.append(f"func.return {loc}")
    head = (f"func.func @{entry}({', '.join(params)}) attributes "
            f"{{diffgpu.kernel, diffgpu.target = {target}}} {{")
    fn = "\n".join([head] + ["  " + b for b in body] + [f"}} {loc}"])
    mb.texts.append(fn)
    return mb.text(), entry

"""Which array parameters of a kernel only dg.atomic_max (or only
dg.atomic_min) updates, for `dg.vjp` / `dg.jvp` (python/diffgpu/hostdiff/rmw.py,
docs/collectives.md "Atomic max and min"). Here, in the compiler's packages,
so that the disk cache's fingerprint covers it (the access facts are cached
with it)."""
from __future__ import annotations


def rmw_kinds(text: str) -> list:
    """Per parameter of the kernel of frontend module `text`: "max" / "min"
    when every use of it in the kernel's own body (`memref.dim` aside) is a
    `diffgpu.atomic_rmw` of that one kind whose old value is unused, else
    None."""
    from diffgpu._mlir import ir
    from diffgpu.dialects import names as N
    from diffgpu.lowering.common import session, targets

    with session.context(), ir.Location.unknown():
        module = ir.Module.parse(text)
        kernels = [op for op in module.body.operations if op.operation.name == "func.func"
                   and targets.KERNEL_ATTR in op.attributes]
        if len(kernels) != 1:
            raise ValueError(f"expected one kernel in the module, found {len(kernels)}")
        out = []
        for arg in kernels[0].regions[0].blocks[0].arguments:
            kinds, ok = set(), True
            for use in arg.uses:
                op = use.owner.operation if hasattr(use.owner, "operation") else use.owner
                if op.name == "memref.dim":
                    continue
                if (op.name != N.ATOMIC_RMW or use.operand_number != 0
                        or len(list(op.results[0].uses))):
                    ok = False
                    break
                kinds.add(ir.StringAttr(op.attributes["kind"]).value)
            out.append(next(iter(kinds)) if ok and len(kinds) == 1
                       and kinds <= {"max", "min"} else None)
        return out


__all__ = ["rmw_kinds"]

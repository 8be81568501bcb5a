"""`mark_facts`: a launch's facts recorded on the frontend's module, and the
coarsening they allow (of x: lowering/coarsen/coarsen.py; of the rows of a
reverse program: lowering/coarsen/rows.py). It sits above both halves it joins: the facts
(lowering/facts/specialize.py says what they are and who reads them) and the
coarsening decision (lowering/coarsen/coarsen.py's `factor_for`).
"""
from __future__ import annotations

from diffgpu._mlir import ir

from diffgpu.dialects import names as N
from diffgpu.lowering.coarsen import coarsen
from diffgpu.lowering.coarsen import rows as rows_pass
from diffgpu.lowering.common import session
from diffgpu.lowering.facts.attrs import COARSEN_ATTR, FACTS_ATTR, NOALIAS_ATTR
from diffgpu.lowering.facts.specialize_shapes import index32_safe


def mark_facts(text: str, entry: str, facts) -> str:
    """`text` (diffgpu IR) with the launch facts (runtime Facts) recorded on
    the kernel `entry`."""
    with session.context(), ir.Location.unknown():  # the driver's: no new context
        module = ir.Module.parse(text)
        for op in module.body.operations:
            op = op.operation
            if op.name == "func.func" and op.attributes["sym_name"].value == entry:
                ftype = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
                ranks = [ir.MemRefType(t).rank if isinstance(t, ir.MemRefType) else -1
                         for t in ftype.inputs]
                text = facts.attribute_text()[:-1] + ", ranks = [" + ", ".join(
                    f"{r} : i64" for r in ranks) + "]}"
                if getattr(facts, "index32", False) and (any(  # an index parameter: i64 packed
                        isinstance(t, ir.IndexType) for t in ftype.inputs) or not index32_safe(
                        [o.operation for o in module.body.operations
                         if o.operation.name == "func.func"])):
                    text = text.replace("index32 = true", "index32 = false")
                op.attributes[FACTS_ATTR] = ir.Attribute.parse(text)
                if facts.noalias:
                    op.attributes[NOALIAS_ATTR] = ir.UnitAttr.get()
                if getattr(facts, "grid_div", False) and facts.unit_dims == (1, 2):
                    factor = coarsen.factor_for(op, module, facts.noalias, True,
                                                getattr(facts, "grid_div16", False))
                    if factor > 1:
                        op.attributes[COARSEN_ATTR] = ir.IntegerAttr.get(
                            ir.IntegerType.get_signless(64), factor)
                if getattr(facts, "rows", ()) and _reverse_wrapper(op):
                    op.attributes[rows_pass.ROWS_ATTR] = ir.DenseI64ArrayAttr.get(
                        [int(v) for v in facts.rows])
                break
        else:
            raise ValueError(f"no function @{entry} to specialise")
        return session.hand_over(module)  # the driver compiles it without a re-parse



def _reverse_wrapper(fn) -> bool:
    """Is kernel `fn` a reverse derivative wrapper (its body starts with a
    `diffgpu.autodiff`): the programs the rows coarsening is for."""
    ops = list(fn.regions[0].blocks[0].operations) if len(fn.regions[0].blocks) else []
    return bool(ops) and ops[0].operation.name == N.AUTODIFF

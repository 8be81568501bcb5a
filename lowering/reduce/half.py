"""Adds into 16-bit float arrays (float16, bfloat16), summed in float32.

A gradient element of a 16-bit array is stored in 16 bits but accumulated
in float32 (docs/language.md, 16-bit floats): where a pass sums a thread's
adds into one element before adding once (combine_adds.py), it sums their
float32 values and rounds the total once; a plain read-modify-write
(owned_adds.py) adds in float32 and rounds once when storing. The reverse
sweep's adds carry `arith.truncf` of a float32 adjoint (autodiff/elision.py
`accumulate`): `wide` takes that adjoint itself, so no term is rounded
before the sum.
"""
from __future__ import annotations

from diffgpu._mlir import arith, ir

from diffgpu.lowering.common.ir_util import isa

#: element types of the 16-bit floats
HALF_TYPES = ("f16", "bf16")


def is_half(t) -> bool:
    return isa(t, ir.F16Type) or isa(t, ir.BF16Type)


def wide(value):
    """A 16-bit float value as float32 at the current insertion point: the
    operand of the `arith.truncf` that made it from a float32 value, else
    its (exact) extension; other values as they are."""
    if not is_half(value.type):
        return value
    owner = value.owner
    if not isinstance(owner, ir.Block) and owner.operation.name == "arith.truncf":
        src = owner.operation.operands[0]
        if isa(src.type, ir.F32Type):
            return src
    return arith.extf(ir.F32Type.get(), value)


def narrow(value, element):
    """`value` in the array's `element` type: a float32 sum rounded once to a
    16-bit element (arith.truncf: to nearest even), else itself."""
    if is_half(element) and value.type != element:
        return arith.truncf(element, value)
    return value

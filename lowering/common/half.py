"""Adds into 16-bit float arrays (float16, bfloat16), summed in float32.

A gradient element of a 16-bit array is stored in 16 bits but accumulated
in float32 (docs/language.md, 16-bit floats): where a pass sums adds into
one element before adding once (lowering/reduce/combine_adds.py: a thread's,
aggregate_atomics.py: a block's), it sums their float32 values and rounds
the total once; a plain read-modify-write (lowering/reduce/owned_adds.py)
adds in float32 and rounds once when storing. The reverse
sweep's adds carry `arith.truncf` of a float32 adjoint (autodiff/elision.py
`accumulate`): `wide` takes that adjoint itself, so no term is rounded
before the sum.
"""
from __future__ import annotations

from diffgpu._mlir import arith, ir, memref

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


# registers accumulating a thread's gradient element (autodiff/functional:
# the `grad` kind's kinds._grad, owned_grad.py): float32 for a 16-bit shadow,
# written to it once, rounded once

def register_type(element):
    """The type of a register accumulating into a shadow of `element`."""
    return ir.F32Type.get() if is_half(element) else element


def into_register(value, reg_type):
    """`value` (a shadow store's or add's) as the register's type: a 16-bit
    value's float32 source (`wide`) for a float32 register."""
    return wide(value) if is_half(value.type) and not is_half(reg_type) else value


def load_register(old, acc) -> None:
    """Replace the shadow load result `old` by register `acc`'s value, at the
    current insertion point: its float32 value where `old` was extended to
    float32, else rounded to `old`'s type."""
    new = memref.load(acc, [])
    if new.type == old.type:
        old.replace_all_uses_with(new)
        return
    rounded = arith.truncf(old.type, new)
    old.replace_all_uses_with(rounded)
    for use in list(rounded.uses):
        user = use.owner.operation if hasattr(use.owner, "operation") else use.owner
        if user.name == "arith.extf" and user.results[0].type == new.type:
            user.results[0].replace_all_uses_with(new)

"""Loading host programs: LLVM-dialect text (or module) -> an ExecutionEngine.

This is the runtime's only module that imports MLIR, and only inside its
functions: the ExecutionEngine is MLIR's JIT, so loading a host program needs
the `mlir` bindings even when nothing is compiled (a disk-cache hit parses the
cached LLVM-dialect text). It never imports the compiler (`lowering`,
`dialects`): the text holds upstream LLVM-dialect ops only.

    loaded = load_text(llvm_text, opt_level=2)   # a cache hit
    loaded = load_module(module, opt_level=2)    # just compiled: no re-parse
    addr = loaded.engine.raw_lookup("_mlir_ciface_k")
    loaded.string_list("diffgpu.host_accesses")  # a module attribute (abi.py)
    prepare_large(module)                        # before load_module: LLVM stays linear

Text is parsed in one context per thread, created on first use (a context
costs ~10 ms).
"""
from __future__ import annotations

import os
import threading

from diffgpu.errors import CompileError

_LOCAL = threading.local()
_INHERITED: list = []  # a forked child's inherited context: kept, never used


def _after_fork_in_child() -> None:
    _INHERITED.append(dict(_LOCAL.__dict__))
    _LOCAL.__dict__.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class Loaded:
    """A JIT-compiled module: its engine, and what must stay alive with it."""

    def __init__(self, engine, module, keep=()):
        self.engine = engine
        self.module = module
        self.keep = tuple(keep)

    def string_list(self, attr: str) -> list[str] | None:
        """The module's string-array attribute `attr`, or None if absent."""
        from diffgpu._mlir import ir

        attrs = self.module.operation.attributes
        if attr not in attrs:
            return None
        return [ir.StringAttr(a).value for a in ir.ArrayAttr(attrs[attr])]


def _context():
    ctx = getattr(_LOCAL, "ctx", None)
    if ctx is None:
        from diffgpu._mlir import ir
        ctx = _LOCAL.ctx = ir.Context()
    return ctx


def _diagnostics(exc) -> str:
    lines = [f"{d.location}: error: {d.message}"
             for d in getattr(exc, "error_diagnostics", None) or []]
    return "\n".join(lines) or str(exc)


def parse_text(text: str):
    """Parse LLVM-dialect text in this thread's loader context."""
    from diffgpu._mlir import MLIRError, ir

    ctx = _context()
    try:
        with ctx:
            return ir.Module.parse(text)
    except MLIRError as exc:
        raise CompileError(f"cannot parse lowered host module: {_diagnostics(exc)}") from None


def load_text(text: str, opt_level: int = 2) -> Loaded:
    """JIT-compile LLVM-dialect text (e.g. a cache entry)."""
    module = parse_text(text)
    return load_module(module, opt_level, keep=(module.context,))


def load_module(module, opt_level: int = 2, keep=()) -> Loaded:
    """JIT-compile an LLVM-dialect `ir.Module` (kept alive with the engine)."""
    from diffgpu._mlir import execution_engine

    if opt_level not in (0, 1, 2, 3):
        raise ValueError(f"opt_level must be 0, 1, 2 or 3, got {opt_level!r}")
    if execution_engine is None:
        raise CompileError("this MLIR distribution has no ExecutionEngine: the CPU runtime "
                           "is unavailable")
    try:
        engine = execution_engine.ExecutionEngine(module, opt_level=opt_level)
    except Exception as exc:  # JIT failure (e.g. unresolved symbol): not the user's bug
        raise CompileError(f"JIT compilation of the host module failed: {exc}") from None
    return Loaded(engine, module, (module.context,) + tuple(keep))


# bfloat16 rounding on the host ---------------------------------------------------
# LLVM rounds float32 to bfloat16 (a bfloat16 value kept in a register across
# blocks, a stack slot of one: O0 and `prepare_large` code) with a call to the
# compiler runtime's `__truncsfbf2`, which libgcc has only from GCC 13 on: the
# JIT of such a module would fail on an older system ("Symbols not found").
# `add_bf16_rounding` defines it in the module itself, to nearest even (a NaN
# stays a quiet NaN of its sign), with integer operations only. The runtime
# function returns its bfloat16 in the low 16 bits of the first float return
# register (x86-64: xmm0; AArch64: v0), so it is written here as returning the
# float32 whose bits are those 16 bits, zero-extended.

BF16_ROUNDING = "__truncsfbf2"
_BF16_ROUNDING_TEXT = """
llvm.func @__truncsfbf2(%x: f32) -> f32 {
  %c1 = llvm.mlir.constant(1 : i32) : i32
  %c16 = llvm.mlir.constant(16 : i32) : i32
  %c64 = llvm.mlir.constant(64 : i32) : i32
  %half = llvm.mlir.constant(32767 : i32) : i32
  %mag = llvm.mlir.constant(2147483647 : i32) : i32
  %inf = llvm.mlir.constant(2139095040 : i32) : i32
  %bits = llvm.bitcast %x : f32 to i32
  %high = llvm.lshr %bits, %c16 : i32
  %odd = llvm.and %high, %c1 : i32
  %up = llvm.add %bits, %half : i32
  %up2 = llvm.add %up, %odd : i32
  %near = llvm.lshr %up2, %c16 : i32
  %abs = llvm.and %bits, %mag : i32
  %nan = llvm.icmp "ugt" %abs, %inf : i32
  %quiet = llvm.or %high, %c64 : i32
  %r = llvm.select %nan, %quiet, %near : i1, i32
  %f = llvm.bitcast %r : i32 to f32
  llvm.return %f : f32
}
"""


#
# A host with AVX512-BF16 or AVX-NE-CONVERT would get no call: LLVM selects
# `vcvtneps2bf16`, which reads a denormal float32 as zero, so a store of
# 1.4e-40 into a bfloat16 array gave 0 there and 1.4e-40 elsewhere (and at
# O0 every bfloat16 value crossing blocks is rounded again that way). So the
# module's functions are compiled without those two features
# (`target_features`; the host's other features come with its CPU name): the
# same bits on every host.
NO_BF16_CONVERT = '#llvm.target_features<["-avx512bf16", "-avxneconvert"]>'


def add_bf16_rounding(module) -> bool:
    """Define `__truncsfbf2` in the LLVM-dialect `module` unless it has it,
    and compile its functions without the hardware's bfloat16 conversions
    (comment above); True if the definition was added."""
    from diffgpu._mlir import ir

    added = True
    with module.context, ir.Location.unknown():
        features = ir.Attribute.parse(NO_BF16_CONVERT)
        for op in module.body.operations:
            op = op.operation
            if op.name != "llvm.func":
                continue
            if ir.StringAttr(op.attributes["sym_name"]).value == BF16_ROUNDING:
                added = False
            op.attributes["target_features"] = features
        if added:
            fn = ir.Operation.parse(_BF16_ROUNDING_TEXT)
            fn.attributes["target_features"] = features
            module.body.append(fn)
    return added


# Large modules (runtime/cpu.py LARGE_MODULE_LINES) ------------------------------
# MLIR's ExecutionEngine generates machine code at LLVM's default level whatever
# opt level it is given (its target machine is made before the level is
# applied), so even an O0 module gets the greedy register allocator, machine
# sinking and scheduling, whose work on a function grows as (values live across
# blocks) * (blocks): the LLVM part of a 2,000-statement gradient (1.3 M LLVM
# ops, thousands of bounds-check blocks, forward values live until the reverse
# sweep) took 28 s. `prepare_large` gives each defined function what O0 code
# generation would: a value used outside its block lives in a stack slot
# (stored where it is defined, loaded before each use elsewhere; constants and
# the entry block's allocas hold no register and stay), and the function is
# `optnone`: 6 s. The values computed are the same bits.
#
#     %v = llvm.fmul %a, %b : f64          %s = llvm.alloca %c1 x f64   // entry
#     llvm.br ^bb1                  =>     %v = llvm.fmul %a, %b : f64
#   ^bb1:                                  llvm.store %v, %s
#     ... %v ...                           llvm.br ^bb1
#                                        ^bb1:
#                                          %v1 = llvm.load %s : f64
#                                          ... %v1 ...

#: function attributes of a function compiled as O0 would (optnone needs noinline)
O0_ATTRS = ("noinline", "optnone")


def prepare_large(module) -> int:
    """Demote cross-block values to stack slots and mark the functions
    optnone, in every function defined in `module`; returns the values
    demoted."""
    from diffgpu._mlir import ir

    count = 0
    with module.context, ir.Location.unknown():
        for op in module.body.operations:
            op = op.operation
            if op.name == "llvm.func" and len(op.regions[0].blocks):
                count += _demote(op)
                _optnone(op)
    return count


def _optnone(fn) -> None:
    from diffgpu._mlir import ir

    old = list(ir.ArrayAttr(fn.attributes["passthrough"])) if "passthrough" in fn.attributes \
        else []
    names = {str(a).strip('"') for a in old}
    if "alwaysinline" in names:
        return
    fn.attributes["passthrough"] = ir.ArrayAttr.get(
        old + [ir.StringAttr.get(a) for a in O0_ATTRS if a not in names])


def _storable(t) -> bool:
    """Scalars, vectors, pointers and structs (memref descriptors); other
    types (arrays, tokens) are left as they are."""
    from diffgpu._mlir import ir, llvm

    t = t.maybe_downcast()
    return isinstance(t, (ir.IntegerType, ir.FloatType, ir.VectorType, llvm.PointerType,
                          llvm.StructType))


def _demote(fn) -> int:
    """Every value of `fn` used in another block than its own: a slot in the
    entry block, a store where it is defined, a load before each such use."""
    from diffgpu._mlir import ir, llvm

    blocks = list(fn.regions[0].blocks)
    if len(blocks) < 2:
        return 0
    entry = blocks[0]
    listed = [(b, [o.operation for o in b.operations]) for b in blocks]  # before any insert
    slots = ir.InsertionPoint(listed[0][1][0])  # allocas (and entry args' stores) go first
    one = []
    count = 0

    def demote(v, block, store_at) -> None:
        nonlocal count
        far = [(u.owner.operation, u.operand_number) for u in v.uses
               if u.owner.operation.block != block]
        if not far or not _storable(v.type):
            return
        if not one:
            i64 = ir.IntegerType.get_signless(64)
            one.append(llvm.ConstantOp(i64, ir.IntegerAttr.get(i64, 1), ip=slots).result)
        slot = llvm.AllocaOp(llvm.PointerType.get(), one[0], v.type, ip=slots).result
        llvm.StoreOp(v, slot, ip=store_at)
        for user, i in far:
            user.operands[i] = llvm.LoadOp(v.type, slot, ip=ir.InsertionPoint(user)).result
        count += 1

    for b, ops in listed:
        for a in b.arguments:
            demote(a, b, slots if b == entry else ir.InsertionPoint.at_block_begin(b))
        for op in ops:
            if not _frame_or_constant(op, b == entry):
                for r in op.results:
                    demote(r, b, ir.InsertionPoint.after(op))
    return count


def _frame_or_constant(op, in_entry: bool) -> bool:
    """LLVM constants (no register holds them) and the entry block's allocas
    (a frame slot's address): nothing to demote."""
    return op.name.startswith("llvm.mlir.") or (in_entry and op.name == "llvm.alloca")

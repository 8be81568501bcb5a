"""`diffgpu-nvvm-cleanup`: tidy gpu.modules after `convert-gpu-to-nvvm`.

Runs on the LLVM/NVVM dialect inside each `gpu.module`, before
`gpu-module-to-binary`:

- `convert-gpu-to-nvvm` asks for C-interface wrappers of every function
  (`@_mlir_ciface_f`); nothing on the GPU calls the defined ones: erased;
- device functions (defined `llvm.func`s that are not kernels) get internal
  linkage, so LLVM drops them once inlined instead of emitting each as a
  `.visible .func` in the PTX;
- f32 square roots: libdevice's `__nv_sqrtf` is `sqrt.approx.f32`; calls to
  it become `llvm.intr.sqrt` (`sqrt.rn.f32`, correctly rounded like CUDA's
  default `sqrtf` and like the CPU path);
- negative strides: index arithmetic loses its `nuw` flags
  (`llvm_flags.drop_wrap_flags`, see there; the PTX of contiguous and
  strided kernels is unchanged);
- launch facts (lowering/facts/specialize.py) of a specialised kernel: with
  `noalias`, its array pointers are `noalias`, and `readonly` where
  `diffgpu.readonly` says nothing writes the array (NVPTX then loads them
  with `ld.global.nc`); a `contiguous` array's offset parameter is 0 (the
  runtime always passes 0) and its strides are the C-order products of its
  sizes (innermost 1); those parameters and the allocated pointer (the
  runtime passes the data pointer twice) are removed: the kernel takes
  `ptr, size[r]` for such an array (the lean ABI, `lean_param_count`).

    llvm.func @f(%x: f32) -> f32 {                  llvm.func internal @f(%x: f32) -> f32 {
      %y = llvm.call @__nv_sqrtf(%x) : ...     =>     %y = llvm.intr.sqrt(%x) : (f32) -> f32
    llvm.func @_mlir_ciface_f(...) {...}            (erased)
    llvm.mul %i, %s overflow<nsw, nuw>              llvm.mul %i, %s
    llvm.func @k(%p0: !llvm.ptr, %p1: !llvm.ptr,    llvm.func @k(%p0: !llvm.ptr, %p1: !llvm.ptr {llvm.noalias,
        %off: i64, %n: i64, %s: i64)                     llvm.readonly}, %off: i64, %n: i64, %s: i64)
      (uses of %off, %s)                              (uses of llvm.mlir.constant 0, 1)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from diffgpu.lowering.common.ir_util import apply_patterns, sym_name, top_ops
from diffgpu.lowering.common.llvm_flags import WRAP_OPS, replace_op, without_flags
from diffgpu.lowering.registry import ModulePass, register_pass
from diffgpu.lowering.coarsen.coarsen import NOINLINE_ATTR
from diffgpu.lowering.facts.attrs import FACTS_ATTR, READONLY_ATTR, read_facts

CIFACE_PREFIX = "_mlir_ciface_"
KERNEL_ATTRS = ("gpu.kernel", "nvvm.kernel")
PRECISE = {"__nv_sqrtf": "llvm.intr.sqrt"}


@register_pass
@dataclass
class NvvmCleanup(ModulePass):
    """See the module docstring."""
    name: ClassVar[str] = "diffgpu-nvvm-cleanup"
    summary: ClassVar[str] = ("in gpu.modules lowered to NVVM: drop C wrappers and nuw "
                              "index flags, internalize device functions, precise f32 sqrt")

    def run(self, module) -> None:
        from diffgpu._mlir import ir

        internal = ir.Attribute.parse("#llvm.linkage<internal>")
        for gm in module.regions[0].blocks[0].operations:
            gm = gm.operation
            if gm.name != "gpu.module":
                continue
            funcs = top_ops(gm, ("llvm.func",))
            names = {sym_name(f) for f in funcs}
            for f in funcs:
                name = sym_name(f)
                if not f.regions[0].blocks:
                    continue  # a declaration (libdevice before linking, externals)
                if name.startswith(CIFACE_PREFIX) and name[len(CIFACE_PREFIX):] in names:
                    f.erase()  # a wrapper; of an external `f`, it is `f` that is one
                    continue
                if not any(k in f.attributes for k in KERNEL_ATTRS):
                    f.attributes["linkage"] = internal
                    if NOINLINE_ATTR in f.attributes:  # lowering/coarsen/coarsen.py's tails
                        f.attributes["no_inline"] = ir.UnitAttr.get()
                    if "sym_visibility" in f.attributes:
                        del f.attributes["sym_visibility"]
                _rewrite_body(f)
                if FACTS_ATTR in f.attributes:
                    apply_facts(f)


def apply_facts(f) -> None:
    """Kernel parameters under the launch facts (see the module docstring)."""
    from diffgpu._mlir import ir

    facts = read_facts(f)
    if facts.get("index32"):
        _widen_index_params(f, facts["ranks"])
    ro_attr = f.attributes[READONLY_ATTR] if READONLY_ATTR in f.attributes else None
    readonly = [bool(ir.BoolAttr(a).value) for a in ir.ArrayAttr(ro_attr)] if ro_attr else []
    block = f.regions[0].blocks[0]
    params = list(block.arguments)
    attrs = [{} for _ in params]
    i64 = ir.IntegerType.get_signless(64)
    first = list(block.operations)[0]
    ip = ir.InsertionPoint(first)
    consts = {}

    def const(v):
        if v not in consts:
            consts[v] = ir.Operation.create(
                "llvm.mlir.constant", results=[i64], attributes={"value": ir.IntegerAttr.get(i64, v)},
                loc=first.location, ip=ip).results[0]
        return consts[v]

    p, drop = 0, []
    for k, rank in enumerate(facts["ranks"]):
        if rank < 0:
            p += 1
            continue
        if k < len(facts["aligned"]) and facts["aligned"][k]:
            attrs[p + 1]["llvm.align = 16 : i64"] = True
        if facts["noalias"]:
            attrs[p + 1]["llvm.noalias"] = True
            if k < len(readonly) and readonly[k]:
                attrs[p + 1]["llvm.readonly"] = True
        if k < len(facts["contiguous"]) and facts["contiguous"][k]:
            sizes, strides = params[p + 3:p + 3 + rank], params[p + 3 + rank:p + 3 + 2 * rank]
            params[p].replace_all_uses_with(params[p + 1])  # the runtime passes one pointer
            params[p + 2].replace_all_uses_with(const(0))
            drop += [p, p + 2] + list(range(p + 3 + rank, p + 3 + 2 * rank))
            acc = const(1)
            for d in reversed(range(rank)):
                strides[d].replace_all_uses_with(acc)
                if d:
                    acc = ir.Operation.create("llvm.mul", results=[i64], operands=[acc, sizes[d]],
                                              loc=first.location, ip=ip).results[0]
        p += 3 + 2 * rank
    # the lean ABI: a contiguous array passes its pointer and sizes only
    for i in sorted(drop, reverse=True):
        block.erase_argument(i)
    attrs = [a for i, a in enumerate(attrs) if i not in set(drop)]
    # (the bindings build no `!llvm.func` type: mlir.dialects.llvm has no
    # function-type class, and its ir.Type offers only `parse`, so it is text)
    kept = [str(a.type) for a in block.arguments]
    f.attributes["function_type"] = ir.TypeAttr.get(
        ir.Type.parse(f"!llvm.func<void ({', '.join(kept)})>"))
    if any(attrs):
        f.attributes["arg_attrs"] = ir.ArrayAttr.get([
            ir.Attribute.parse("{" + ", ".join(sorted(a)) + "}") for a in attrs])
    elif "arg_attrs" in f.attributes:
        del f.attributes["arg_attrs"]


def _widen_index_params(f, ranks) -> None:
    """A kernel lowered with 32-bit indices (lowering/facts/specialize_shapes.py,
    `diffgpu-index32`) takes its arrays' offsets, sizes and strides as i32;
    the runtime packs them as 64-bit words: the parameters become i64 again,
    truncated once at entry (the launch fact `index32` says they fit)."""
    from diffgpu._mlir import ir

    i32, i64 = ir.IntegerType.get_signless(32), ir.IntegerType.get_signless(64)
    block = f.regions[0].blocks[0]
    params = list(block.arguments)
    first = list(block.operations)[0]
    p = 0
    for rank in ranks:
        if rank < 0:
            p += 1
            continue
        for a in params[p + 2:p + 3 + 2 * rank]:
            if a.type != i32:
                continue
            a.set_type(i64)
            t = ir.Operation.create("llvm.trunc", results=[i32], operands=[a],
                                    loc=first.location, ip=ir.InsertionPoint(first))
            a.replace_all_uses_except(t.results[0], t)
        p += 3 + 2 * rank


def lean_param_count(descriptors, contiguous) -> int:
    """PTX parameters of a kernel with argument `descriptors` (kernel_abi)
    whose arrays flagged in `contiguous` use the lean ABI (1 + rank); a
    trailing `("scratch", slots)` (lowering/reduce/grid_sum.py) is SCRATCH_WORDS."""
    from diffgpu.abi import SCRATCH_KIND, SCRATCH_WORDS
    n = 0
    for i, d in enumerate(descriptors):
        if d[0] == SCRATCH_KIND:
            n += SCRATCH_WORDS
        elif d[0] == "memref":
            lean = i < len(contiguous) and contiguous[i]
            n += 1 + d[1] if lean else 3 + 2 * d[1]
        else:
            n += 1
    return n


def entry_param_count(ptx: str, entry: str) -> int | None:
    """The number of `.param`s of PTX entry `entry` (None if absent)."""
    import re
    m = re.search(rf"\.entry\s+{re.escape(entry)}\s*\((.*?)\)", ptx, re.S)
    return None if m is None else m.group(1).count(".param")


def _rewrite_body(f) -> None:
    from diffgpu._mlir import ir

    def precise(op, rw):
        attrs = op.operation.attributes
        callee = ir.FlatSymbolRefAttr(attrs["callee"]).value if "callee" in attrs else None
        if callee not in PRECISE:
            return True
        replace_op(op.operation, rw, PRECISE[callee], {})

    # flags are invisible from Python: every WRAP_OPS op is rebuilt without them
    apply_patterns(f, {"llvm.call": precise, **{name: without_flags for name in WRAP_OPS}})

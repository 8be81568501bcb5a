"""`diffgpu-nvvm-cleanup`: tidy gpu.modules after `convert-gpu-to-nvvm`.

Runs on the LLVM/NVVM dialect inside each `gpu.module`, before
`gpu-module-to-binary`:

- `convert-gpu-to-nvvm` asks for C-interface wrappers of every function
  (`@_mlir_ciface_f`); nothing on the GPU calls them: they are erased;
- device functions (defined `llvm.func`s that are not kernels) get internal
  linkage, so LLVM drops them once inlined instead of emitting each as a
  `.visible .func` in the PTX;
- f32 square roots: libdevice's `__nv_sqrtf` is `sqrt.approx.f32`; calls to
  it become `llvm.intr.sqrt` (`sqrt.rn.f32`, correctly rounded like CUDA's
  default `sqrtf` and like the CPU path).

    llvm.func @f(%x: f32) -> f32 {                  llvm.func internal @f(%x: f32) -> f32 {
      %y = llvm.call @__nv_sqrtf(%x) : ...     =>     %y = llvm.intr.sqrt(%x) : (f32) -> f32
    llvm.func @_mlir_ciface_f(...) {...}            (erased)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from diffgpu.lowering.registry import ModulePass, register_pass

CIFACE_PREFIX = "_mlir_ciface_"
KERNEL_ATTRS = ("gpu.kernel", "nvvm.kernel")
PRECISE = {"__nv_sqrtf": "llvm.intr.sqrt"}


@register_pass
@dataclass
class NvvmCleanup(ModulePass):
    """See the module docstring."""
    name: ClassVar[str] = "diffgpu-nvvm-cleanup"
    summary: ClassVar[str] = ("drop C wrappers, internalize device functions and use the "
                              "precise f32 sqrt in gpu.modules lowered to NVVM")

    def run(self, module) -> None:
        from diffgpu._mlir import ir

        internal = ir.Attribute.parse("#llvm.linkage<internal>")
        for gm in module.regions[0].blocks[0].operations:
            gm = gm.operation
            if gm.name != "gpu.module":
                continue
            funcs = [op.operation for op in gm.regions[0].blocks[0].operations
                     if op.operation.name == "llvm.func"]
            names = {f.attributes["sym_name"].value for f in funcs}
            for f in funcs:
                name = f.attributes["sym_name"].value
                if name.startswith(CIFACE_PREFIX) and name[len(CIFACE_PREFIX):] in names:
                    f.erase()
                    continue
                if not f.regions[0].blocks:
                    continue  # a declaration (libdevice before linking)
                if not any(k in f.attributes for k in KERNEL_ATTRS):
                    f.attributes["linkage"] = internal
                    if "sym_visibility" in f.attributes:
                        del f.attributes["sym_visibility"]
                _precise_calls(f)


def _precise_calls(f) -> None:
    from diffgpu._mlir import ir

    calls = []

    def visit(op):
        op = op.operation
        if op.name == "llvm.call" and "callee" in op.attributes:
            callee = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
            if callee in PRECISE:
                calls.append((op, PRECISE[callee]))
        return ir.WalkResult.ADVANCE

    f.walk(visit, ir.WalkOrder.PRE_ORDER)
    for op, intr in calls:
        new = ir.Operation.create(intr, results=[op.results[0].type],
                                  operands=list(op.operands), loc=op.location,
                                  ip=ir.InsertionPoint(op))
        op.results[0].replace_all_uses_with(new.results[0])
        op.erase()

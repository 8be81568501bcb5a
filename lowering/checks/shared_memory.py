"""`diffgpu-check-shared-memory`: each GPU kernel's static shared memory fits a block.

A block of an NVIDIA GPU has at most SHARED_LIMIT bytes (48 KiB) of static
shared memory; ptxas rejects a kernel that declares more. The frontend counts
the user's `dg.shared_array`s against this limit, but passes add shared
arrays of their own after it: `diffgpu-autodiff` gives every shared array of
a differentiated kernel a shadow of the same size, `diffgpu-stencil-adjoint`
and `diffgpu-aggregate-atomics` add per-block buffers. So the GPU pipelines
check the total again once `diffgpu-lower-to-gpu` has made every shared array
a workgroup attribution of its kernel (the only place shared memory lives
then), and report the kernel at the attribution that crosses the limit:

    gpu.func @gone(...) workgroup(%a : memref<4000xf64, #gpu.address_space<workgroup>>,
                                  %da : memref<4000xf64, #gpu.address_space<workgroup>>)
  k.py:11:5: error: kernel @gone needs 64000 bytes of static shared memory, more
    than the 49152 bytes (48 KiB) a block can have on NVIDIA GPUs: ...

(`%da` has the location of the `dg.autodiff` call that created it; the user's
own arrays have their `dg.shared_array` lines.)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from diffgpu.lowering.common.ir_util import sym_name
from diffgpu.lowering.registry import ModulePass, format_location, register_pass

#: bytes of static shared memory per block, every NVIDIA chip we compile for
#: (the frontend checks the user's shared arrays against the same number)
SHARED_LIMIT = 48 * 1024


def memref_bytes(mtype) -> int:
    """Bytes of a statically shaped memref (i1 takes a byte, as in LLVM)."""
    from diffgpu._mlir import ir

    mtype = ir.MemRefType(mtype)
    count = 1
    for d in mtype.shape:
        count *= d
    elem = mtype.element_type
    width = elem.width if hasattr(elem, "width") else ir.FloatType(elem).width
    return count * max(1, (width + 7) // 8)


def workgroup_buffers(kernel) -> list:
    """The workgroup attributions (block arguments after the inputs) of a
    `gpu.func`."""
    from diffgpu._mlir import ir

    if "workgroup_attributions" not in kernel.attributes:
        return []
    n = ir.IntegerAttr(kernel.attributes["workgroup_attributions"]).value
    fn_type = ir.FunctionType(ir.TypeAttr(kernel.attributes["function_type"]).value)
    args = list(kernel.regions[0].blocks[0].arguments)
    first = len(fn_type.inputs)
    return args[first:first + n]


@register_pass
@dataclass
class CheckSharedMemory(ModulePass):
    """Fail when a GPU kernel's workgroup attributions total more than
    SHARED_LIMIT bytes (see the module docstring for an example)."""

    name: ClassVar[str] = "diffgpu-check-shared-memory"
    summary: ClassVar[str] = ("fail if a GPU kernel's static shared memory (its shared arrays, "
                              "shadows and per-block buffers) exceeds 48 KiB")

    def run(self, module):
        for gm in module.regions[0].blocks[0].operations:
            if gm.operation.name != "gpu.module":
                continue
            for fn in gm.regions[0].blocks[0].operations:
                fn = fn.operation
                if fn.name == "gpu.func" and "gpu.kernel" in fn.attributes:
                    self._check(fn)

    def _check(self, kernel):
        total, over, parts = 0, None, []
        for buf in workgroup_buffers(kernel):
            size = memref_bytes(buf.type)
            total += size
            where = format_location(buf.location)  # `-:L:C` for a module read from stdin
            parts.append(f"{size} bytes at " + (f"line {where[2:]}" if where.startswith("-:")
                                                 else where))
            if over is None and total > SHARED_LIMIT:
                over = buf
        if over is None:
            return
        sym = sym_name(kernel)
        self.error(over.location,
                   f"kernel @{sym} needs {total} bytes of static shared memory, more than "
                   f"the {SHARED_LIMIT} bytes (48 KiB) a block can have on NVIDIA GPUs: "
                   f"{', '.join(parts)} (differentiating a kernel adds a shadow of each "
                   "of its shared arrays, of the same size); use smaller shared arrays")

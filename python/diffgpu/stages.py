"""`kernel.ir(*args, stage=..., target=None)`: the IR text at any stage.

Stages, in pipeline order (each is a prefix of the registered pipeline for
the target, `diffgpu-to-ptx{chip=...}` or `diffgpu-to-host`, read from
lowering/registry.py: no pass list is repeated here):

| stage      | text after                                       | targets   |
|------------|--------------------------------------------------|-----------|
| `dialect`  | the frontend (diffgpu dialect + upstream ops)    | all       |
| `autodiff` | `diffgpu-autodiff`                               | all       |
| `gpu`      | `diffgpu-lower-to-gpu` / `diffgpu-lower-to-host` | all       |
| `nvvm`     | `convert-gpu-to-nvvm`                            | GPU       |
| `llvm`     | the whole lowering to the LLVM dialect           | all       |
| `ptx`      | `gpu-module-to-binary`: the PTX text             | GPU       |

    k.ir(A, stage="ptx", target="sm_90")   # numpy args, no GPU needed
"""
from __future__ import annotations

from diffgpu.errors import CompileError

STAGES = ("dialect", "autodiff", "gpu", "nvvm", "llvm", "ptx")
GPU_ONLY = ("nvvm", "ptx")
#: stage -> the pipeline element it ends with, per target kind
_MARKERS = {
    "gpu": {"autodiff": "diffgpu-autodiff", "gpu": "diffgpu-lower-to-gpu",
            "nvvm": "convert-gpu-to-nvvm", "llvm": "gpu-module-to-binary"},
    "host": {"autodiff": "diffgpu-autodiff", "gpu": "diffgpu-lower-to-host"},
}


def _valid_targets_text() -> str:
    from diffgpu.lowering.targets import KNOWN_CHIPS
    return "'host', " + ", ".join(repr(c) for c in KNOWN_CHIPS)


def resolve_target(target, args, kernel) -> str:
    """`target` ("host"/"sm_XX") checked, or the one `args` select."""
    from diffgpu.lowering.targets import TargetError, check_chip

    if target is None:
        from diffgpu.launch import check_launch_args, target_for
        return target_for(check_launch_args(kernel, args))
    if target == "host":
        return target
    try:
        return check_chip(target)
    except TargetError:
        raise ValueError(f"unknown target {target!r}; valid targets: "
                         f"{_valid_targets_text()}") from None


def kernel_ir(kernel, args, stage: str = "dialect", target=None, grid=None, block=None) -> str:
    if stage not in STAGES:
        raise ValueError(f"unknown stage {stage!r}; valid stages: "
                         f"{', '.join(repr(s) for s in STAGES)}")
    target = resolve_target(target, args, kernel)
    if target == "host" and stage in GPU_ONLY:
        raise ValueError(f"stage {stage!r} exists for GPU targets only; pass "
                         "target='sm_XX' (valid stages for 'host': "
                         f"{', '.join(s for s in STAGES if s not in GPU_ONLY)})")
    from diffgpu.launch import _compiler_call, build_module, check_launch_args, facts_for

    sig = check_launch_args(kernel, args)
    if grid is not None or block is not None:  # the launch geometry: its facts too
        from diffgpu.runtime.args import check_geometry
        grid, block = check_geometry(grid or 1, block or 1)
    # the program a launch on `args` runs: specialised for their launch facts
    src = build_module(kernel, sig.types, target, facts=facts_for(args, sig.types, target,
                                                                  grid, block))
    if stage == "dialect":
        return src.text
    if stage == "ptx":
        from diffgpu.lowering.gpu_ptx import compile_ptx
        return _compiler_call(lambda: compile_ptx(src.text, target), kernel.name).ptx
    elements = stage_pipeline(target, stage)
    return _compiler_call(lambda: run_pipeline(src.text, elements), kernel.name)


def stage_pipeline(target: str, stage: str) -> list[str]:
    """Pipeline element texts that end at `stage` for `target`."""
    from diffgpu.lowering import registry

    if target == "host":
        name, opts_text, kind = "diffgpu-to-host", None, "host"
    else:
        name, opts_text, kind = "diffgpu-to-ptx", f"chip={target}", "gpu"
    info = registry.pipelines()[name]
    opts = registry.make_options(info.options, opts_text, name)
    elements = registry.expand([registry.parse_one(t) for t in info.expand(opts)])
    marker = _MARKERS[kind].get(stage)
    if marker is None:  # the whole pipeline
        return [e.text() for e in elements]
    out = []
    for el in elements:
        if el.name == marker:
            if stage == "llvm":  # everything before the binary
                return [e.text() for e in out]
            out.append(el)
            return [e.text() for e in out]
        cut = _cut_nested(el, marker)
        if cut is not None:
            out.append(cut)
            return [e.text() for e in out]
        out.append(el)
    raise CompileError(f"internal: pipeline {name} has no '{marker}' for stage {stage!r}")


def _cut_nested(el, marker):
    """`el` with its nested passes cut after `marker`, or None if absent."""
    from diffgpu.lowering.registry import Element

    if not el.nested:
        return None
    for i, sub in enumerate(el.nested):
        if sub.name == marker:
            return Element(el.name, el.options, el.nested[:i + 1])
        cut = _cut_nested(sub, marker)
        if cut is not None:
            return Element(el.name, el.options, el.nested[:i] + [cut])
    return None


def run_pipeline(module_text: str, elements: list[str]) -> str:
    from diffgpu._mlir import MLIRError, ir
    from diffgpu.dialects import make_context
    from diffgpu.lowering.registry import (PipelineRunError, build_pass_manager,
                                           format_diagnostics, run_passes)

    ctx = make_context()
    with ctx, ir.Location.unknown():
        try:
            module = ir.Module.parse(module_text)
        except MLIRError as exc:
            raise CompileError(format_diagnostics(exc)) from None
        try:
            run_passes(build_pass_manager(elements, ctx), module)
        except PipelineRunError as exc:
            raise CompileError(str(exc)) from None
        return str(module)


__all__ = ["kernel_ir", "STAGES", "stage_pipeline"]

"""`kernel.ir(*args, stage=..., target=None)`: the IR text at any stage.

The stages and the pipeline prefix each ends are the compile driver's
(compiler.py: `dialect`, `autodiff`, `gpu`, `nvvm`, `llvm`, `ptx`); this
module checks the arguments and builds the program a launch on them runs.

    k.ir(A, stage="ptx", target="sm_90")   # numpy args, no GPU needed
"""
from __future__ import annotations

from diffgpu.errors import CompileError  # noqa: F401  (kernel.ir raises it)

#: the driver's stages (compiler.py), importable without MLIR
STAGES = ("dialect", "autodiff", "gpu", "nvvm", "llvm", "ptx")
GPU_ONLY = ("nvvm", "ptx")


def _valid_targets_text() -> str:
    from diffgpu.lowering.common.targets import KNOWN_CHIPS
    return "'host', " + ", ".join(repr(c) for c in KNOWN_CHIPS)


def resolve_target(target, args, kernel) -> str:
    """`target` ("host"/"sm_XX") checked, or the one `args` select."""
    from diffgpu.lowering.common.targets import TargetError, check_chip

    if target is None:
        from diffgpu.driver.launch import check_launch_args, target_for
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
    from diffgpu.driver.launch import _compiler_call, build_module, check_launch_args, facts_for

    sig = check_launch_args(kernel, args)
    if grid is not None or block is not None:  # the launch geometry: its facts too
        from diffgpu.runtime.args import check_geometry
        grid, block = check_geometry(grid or 1, block or 1)
    # the program a launch on `args` runs: specialised for their launch facts
    src = build_module(kernel, sig.types, target, facts=facts_for(args, sig.types, target,
                                                                  grid, block))
    if stage == "dialect":
        return src.text
    from diffgpu.driver import compiler
    return _compiler_call(lambda: compiler.compile(src.text, target, stage).text, kernel.name)


def stage_pipeline(target: str, stage: str) -> list[str]:
    """Pipeline element texts that end at `stage` for `target` (compiler.py)."""
    from diffgpu.driver import compiler
    return compiler.stage_pipeline(target, stage)


__all__ = ["kernel_ir", "STAGES", "stage_pipeline"]

"""Checks of upstream passes' options that MLIR would abort on.

The MLIR build has assertions on: a few upstream passes accept an option value
at pipeline-parse time and only later abort the whole process on it. Each
check here runs on the option text before MLIR sees it (`registry.expand`).
Found by running candidate pipelines in a subprocess:

- `gpu-module-to-binary{format=offload}` (any unknown format, or an empty one):
  assertion in `std::optional<CompilationTarget>` -> abort;
- `nvvm-attach-target{O=9}`: `#nvvm.target` verifier assertion -> abort
  (O must be 0..3); an unknown `chip` fails later inside ptxas/LLVM, so it is
  rejected here too, with the list of chips.
"""
from __future__ import annotations

from diffgpu.lowering import targets
from diffgpu.lowering.registry import PipelineError, register_upstream_check

#: values MLIR 22 accepts for gpu-module-to-binary's `format`
BINARY_FORMATS = ("offloading", "llvm", "assembly", "isa", "binary", "bin", "fatbin")


@register_upstream_check("gpu-module-to-binary")
def check_gpu_module_to_binary(options: dict[str, str]) -> None:
    if "format" in options and options["format"] not in BINARY_FORMATS:
        raise PipelineError(
            f"gpu-module-to-binary: unknown format {options['format']!r}; expected one of: "
            f"{', '.join(BINARY_FORMATS)} (isa/assembly give PTX text)")


@register_upstream_check("nvvm-attach-target")
def check_nvvm_attach_target(options: dict[str, str]) -> None:
    if "chip" in options:
        try:
            targets.check_chip(options["chip"])
        except targets.TargetError as exc:
            raise PipelineError(f"nvvm-attach-target: {exc}") from None
    if "O" in options:
        try:
            level = int(options["O"])
        except ValueError:
            level = -1
        if not 0 <= level <= 3:
            raise PipelineError(f"nvvm-attach-target: O must be 0, 1, 2 or 3, got "
                                f"{options['O']!r}")

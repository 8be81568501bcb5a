"""Compilation targets: the `diffgpu.target` attribute and its checks.

A target is an MLIR attribute: `#nvvm.target<O = 3, chip = "sm_90">` for an
NVIDIA GPU (the same attribute the `gpu.module` carries after lowering), or the
host target below for the CPU. Passes copy it from the enclosing op; nothing
here ever supplies a default for an op that lacks one.
"""
from __future__ import annotations

import re

TARGET_ATTR = "diffgpu.target"
KERNEL_ATTR = "diffgpu.kernel"
HOST_TRIPLE = "x86_64-unknown-linux-gnu"
HOST_TARGET = f'#llvm.target<triple = "{HOST_TRIPLE}", chip = "generic">'

#: the chips NVPTX knows and their check: ABI facts the runtime shares (abi.py)
from diffgpu.abi import KNOWN_CHIPS, TargetError, check_chip  # noqa: E402,F401


def nvvm_target(chip: str, opt_level: int = 3) -> str:
    """Text of the GPU target attribute for `chip` (validated)."""
    check_chip(chip)
    return f'#nvvm.target<O = {int(opt_level)}, chip = "{chip}">'


def target_for_name(name: str) -> str:
    """`"host"` or `"sm_XX"` (user-facing names) to the attribute text."""
    if name == "host":
        return HOST_TARGET
    return nvvm_target(name)


def is_host(attr) -> bool:
    """True if the attribute (or its text) is the host target."""
    return str(attr).startswith("#llvm.target<")


def is_gpu(attr) -> bool:
    return str(attr).startswith("#nvvm.target<")


#: the chip of an `#nvvm.target` that names none (MLIR omits its default)
DEFAULT_NVVM_CHIP = "sm_50"


#: one `key = value` of a target attribute's parameters: a string, or a bare word
_PARAM = re.compile(r'\b(\w+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([\[{])|([^,>\s\]}]+))')


def target_params(attr) -> dict:
    """The parameters of an `#nvvm.target<...>` / `#llvm.target<...>` attribute
    (or its text), as written: this is the one reader of target attributes.

        #nvvm.target<O = 3, chip = "sm_90", features = "+ptx80">
            -> {"O": "3", "chip": "sm_90", "features": "+ptx80"}

    A parameter holding an array or a dictionary (`link = [...]`, `flags =
    {...}`) maps to "[" or "{"; MLIR omits parameters at their default."""
    text = str(attr)
    start = text.find("<")
    if start < 0:
        return {}
    out = {}
    for key, quoted, nested, bare in _PARAM.findall(text[start + 1:]):
        out.setdefault(key, nested or bare or quoted)
    return out


def chip_of(attr) -> str | None:
    """The `chip` of an `#nvvm.target` attribute (or its text), else None.

    MLIR prints `#nvvm.target<O = 3>` for sm_50, its default chip: that is
    still an explicit target (the attribute was written), so it reads sm_50.
    """
    if not is_gpu(attr):
        return None
    return target_params(attr).get("chip") or DEFAULT_NVVM_CHIP


#: the triples an `#nvvm.target` may name
NVPTX_TRIPLES = ("nvptx64-nvidia-cuda", "nvptx-nvidia-cuda")


def nvvm_problem(params: dict) -> str | None:
    """Why the NVVM backend cannot take a GPU target with these parameters
    (`target_params` of an `#nvvm.target`, or the options of
    `nvvm-attach-target`), or None. The backend aborts the process on such
    values instead of reporting them, so both are checked here first:

        {"chip": "sm_90", "O": "3"}    -> None
        {"chip": "sm_90", "O": "7"}    -> "O must be 0, 1, 2 or 3, got '7'"
    """
    if "chip" in params:
        try:
            check_chip(params["chip"])
        except TargetError as exc:
            return str(exc)
    opt = params.get("O")
    if opt is not None and opt not in ("0", "1", "2", "3"):
        return f"O must be 0, 1, 2 or 3, got {opt!r}"
    triple = params.get("triple")
    if triple is not None and triple not in NVPTX_TRIPLES:
        return f"triple must be one of {', '.join(NVPTX_TRIPLES)}, got {triple!r}"
    features = params.get("features")
    if features is not None and not re.fullmatch(r"(\+ptx\d+)?", features):
        return f"features must be '+ptxNN', got {features!r}"
    if "link" in params:
        return "'link' (extra bitcode libraries) is not supported"
    return None


def gpu_target_problem(attr) -> str | None:
    """`nvvm_problem` of an `#nvvm.target` attribute (or its text), its chip
    read as `chip_of` does (MLIR omits the default sm_50)."""
    return nvvm_problem({**target_params(attr), "chip": chip_of(attr)})


def describe(attr) -> str:
    """Short user-facing name of a target attribute: `sm_90` or `host`."""
    if attr is None:
        return "<none>"
    if is_host(attr):
        return "host"
    return chip_of(attr) or str(attr)


def get_target(op):
    """The `diffgpu.target` attribute of an op (Operation or OpView), or None."""
    op = getattr(op, "operation", op)
    return op.attributes[TARGET_ATTR] if TARGET_ATTR in op.attributes else None


def set_target(op, attr) -> None:
    op = getattr(op, "operation", op)
    op.attributes[TARGET_ATTR] = attr


def copy_target(src, dst) -> None:
    """Give `dst` the target of `src`; `src` must have one (no defaults)."""
    attr = get_target(src)
    if attr is None:
        raise TargetError(f"{getattr(src, 'name', src)} has no {TARGET_ATTR} to copy")
    set_target(dst, attr)

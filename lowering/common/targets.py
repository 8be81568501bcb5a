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


#: the attribute kinds of targets, by the prefix of their text
_HOST_PREFIX, _GPU_PREFIX = "#llvm.target<", "#nvvm.target<"
#: attribute text prefix -> TypeID of that attribute class (global in MLIR)
_TYPEIDS: dict = {}


def _is_kind(attr, prefix: str) -> bool:
    """Whether `attr` (an attribute, or its text) is an `#llvm.target` /
    `#nvvm.target` (by `prefix`). The bindings have no Python class for these
    attributes, so an attribute is tested by its TypeID, compared with the
    one of a parsed example (no printing)."""
    if attr is None:
        return False
    if isinstance(attr, str):
        return attr.startswith(prefix)
    tid = _TYPEIDS.get(prefix)
    if tid is None:
        from diffgpu._mlir import ir
        example = HOST_TARGET if prefix == _HOST_PREFIX else nvvm_target("sm_90")
        tid = _TYPEIDS[prefix] = ir.Attribute.parse(example, context=attr.context).typeid
    return attr.typeid == tid


def is_host(attr) -> bool:
    """True if the attribute (or its text) is the host target."""
    return _is_kind(attr, _HOST_PREFIX)


def is_gpu(attr) -> bool:
    """True if the attribute (or its text) is a GPU (`#nvvm.target`) target."""
    return _is_kind(attr, _GPU_PREFIX)


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
    {...}`) maps to "[" or "{"; MLIR omits parameters at their default.
    (The bindings have no accessors for these attributes: neither
    mlir.dialects.nvvm nor mlir.dialects.llvm defines a target-attribute
    class, so the printed form is what there is to read, here only.)"""
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


def sm_number(chip: str) -> int:
    """`sm_90a` -> 90."""
    return int(re.match(r"sm_(\d+)", chip).group(1))


def with_min_ptx(attr, minimum: int):
    """`attr` (an `#nvvm.target`) with `features = "+ptxNN"` raised to at
    least `minimum`; the same attribute if it already names that or newer."""
    from diffgpu._mlir import ir

    params = target_params(attr)
    have = re.fullmatch(r"\+ptx(\d+)", params.get("features") or "")
    if have and int(have.group(1)) >= minimum:
        return attr
    params["features"] = f"+ptx{minimum}"
    params.setdefault("chip", chip_of(attr))
    quoted = ("triple", "chip", "features")
    text = ", ".join(f'{k} = "{v}"' if k in quoted else f"{k} = {v}" for k, v in params.items())
    return ir.Attribute.parse(f"{_GPU_PREFIX}{text}>")


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

"""`diffgpu-opt --list-passes`: our passes and pipelines (from the registry),
then the upstream MLIR passes the bindings register (`_upstream_passes.py`)."""
from __future__ import annotations

import dataclasses
import textwrap


def _options(cls) -> list[str]:
    if not dataclasses.is_dataclass(cls):
        return []
    out = []
    for f in dataclasses.fields(cls):
        tname = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
        if f.default is not dataclasses.MISSING:
            default = f" (default: {f.default!r})"
        elif f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
            default = f" (default: {f.default_factory()})"  # type: ignore[misc]
        else:
            default = " (required)"
        out.append(f"      {f.name}: {tname}{default}")
    return out


def list_passes() -> str:
    from diffgpu.lowering import registry

    lines = ["diffgpu passes (each runs on builtin.module):"]
    for name, cls in sorted(registry.passes().items()):
        lines.append(f"  --{name}: {cls.summary}")
        lines.extend(_options(cls))
    lines.append("")
    lines.append("diffgpu pipelines:")
    for name, info in sorted(registry.pipelines().items()):
        lines.append(f"  --{name}: {info.summary}")
        lines.extend(_options(info.options))
    lines.append("")
    lines.extend(upstream_lines())
    return "\n".join(lines) + "\n"


def upstream_lines() -> list[str]:
    """The upstream passes, by the op they run on. Each works by its own
    name, as a flag or inside -p; a pass restricted to an op nests there
    by itself (`--affine-loop-tile` runs on each func.func)."""
    from diffgpu.tools._upstream_passes import UPSTREAM_PASSES

    total = sum(len(v) for v in UPSTREAM_PASSES.values())
    lines = [f"upstream MLIR passes ({total}), as flags (--NAME[=OPTIONS]) or inside -p:"]
    for anchor, names in sorted(UPSTREAM_PASSES.items()):
        lines.append(f"  on {anchor}:" if anchor else "  on any op or the module:")
        lines.extend(textwrap.wrap(", ".join(names), width=88, initial_indent="    ",
                                   subsequent_indent="    ", break_on_hyphens=False))
    return lines

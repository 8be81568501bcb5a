"""`diffgpu-opt --list-passes`: our passes and pipelines, from the registry."""
from __future__ import annotations

import dataclasses


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
    lines.append("Every upstream MLIR pass is also available by its own name, as a flag "
                 "(--canonicalize, --cse, --convert-scf-to-cf, ...) or inside -p.")
    return "\n".join(lines) + "\n"

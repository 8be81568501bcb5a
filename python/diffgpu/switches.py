"""Environment switches that change the generated code.

Each is on unless set to 0, false, no or off, and each is part of the
compile cache's key (runtime/cache_key.py), so a program compiled with a
switch off is never served when it is on:

- `DIFFGPU_REMAT`: the reverse sweep recomputes cheap values instead of
  taping them (lowering/autodiff/remat.py);
- `DIFFGPU_VECTOR_RED`: sm_90 vector reductions for adjacent atomic adds
  (lowering/gpu_vector_red.py).

They exist to measure and compare both forms of the code; this module
imports nothing, so the runtime may read them without the compiler.
"""
from __future__ import annotations

import os

REMAT = "DIFFGPU_REMAT"
VECTOR_RED = "DIFFGPU_VECTOR_RED"
CODEGEN_SWITCHES = (REMAT, VECTOR_RED)


def on(name: str) -> bool:
    """Is the switch `name` on (unset, or not 0/false/no/off)?"""
    return os.environ.get(name, "1").strip().lower() not in ("0", "false", "no", "off")


def describe() -> str:
    """`DIFFGPU_REMAT=on DIFFGPU_VECTOR_RED=off`: every switch, as the compiler reads it."""
    return " ".join(f"{name}={'on' if on(name) else 'off'}" for name in CODEGEN_SWITCHES)

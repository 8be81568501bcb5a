"""The derivative rule tables against the frontend and against themselves.

- Every `arith` / `math` op the frontend can emit (read from its own source,
  so a new op there fails here) has a derivative rule or an entry in an
  INACTIVE table.
- Every INACTIVE entry says why the op carries no derivative; only those ops
  may skip differentiation (any other op touching an active value is an
  error: test/lit/autodiff/unknown-ops.mlir).
- No op is both differentiated and inactive; numpy's names map onto the
  frontend's math builtins (all of which have rules: test_math_rules.py).
"""
from __future__ import annotations

import pathlib
import re

from diffgpu.frontend import builtins_lower
from diffgpu.lowering.autodiff import reverse
from diffgpu.lowering.autodiff.rules import math as rules_math

FRONTEND = pathlib.Path(builtins_lower.__file__).parent


def _emitted_ops():
    """`arith.X` / `math.X` in the frontend's source (Python's own math
    module appears there too: its constants are no ops, and its functions
    share the op names, so they are checked like ops)."""
    ops = set()
    for path in FRONTEND.glob("*.py"):
        ops |= set(re.findall(r"(?<![\w.])((?:arith|math)\.[a-z_0-9]+)\b", path.read_text()))
    return {op for op in ops if op not in ("math.inf", "math.pi", "math.e", "math.nan")}


def test_every_emitted_op_has_a_rule_or_a_reason():
    emitted = _emitted_ops()
    assert {"math.sin", "arith.mulf", "arith.cmpf"} <= emitted  # the scan works
    known = set(reverse.ELEMENTWISE) | set(reverse.INACTIVE)
    missing = sorted(emitted - known)
    assert not missing, f"ops the frontend emits without a rule or an INACTIVE reason: {missing}"


def test_inactive_entries_give_reasons():
    for name, reason in reverse.INACTIVE.items():
        assert isinstance(reason, str) and len(reason) > 10, name
    assert "arith.bitcast" not in reverse.INACTIVE  # a float's bits carry no derivative


def test_no_op_is_both_differentiated_and_inactive():
    assert not set(reverse.ELEMENTWISE) & set(reverse.INACTIVE)
    assert not set(reverse.STRUCTURED) & set(reverse.INACTIVE)


def test_numpy_names_map_to_builtins_with_rules():
    for np_name, ours in builtins_lower.NUMPY_MATH.items():
        assert ours in builtins_lower.MATH_OPS, np_name
        assert builtins_lower.MATH_OPS[ours] in rules_math.DERIVATIVES, np_name

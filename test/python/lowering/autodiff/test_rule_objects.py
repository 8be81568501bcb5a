"""One rule object per op (lowering/autodiff/rules/registry.py): the activity
analysis and both sweeps consult only it.

- Every op with memory effects or regions has one `partials.Rule` holding
  its activity, needs, reverse and tangent behaviour; forward mode has no
  second registry.
- Replacing an op's rule object changes what the analysis concludes: the
  activity analysis asks the object, not a hard-coded list.
"""
from __future__ import annotations

import pathlib
import re

import pytest

from diffgpu._mlir import ir
from diffgpu.dialects import make_context
from diffgpu.dialects import names as N
from diffgpu.lowering.autodiff import context, forward
from diffgpu.lowering.autodiff.rules import registry as rules
from diffgpu.lowering.autodiff.activity import Activity, walk_ops
from diffgpu.lowering.autodiff.rules.partials import Rule

WITH_ACTIVITY = ("memref.load", "memref.store", N.ATOMIC_ADD, "scf.if", "scf.for",
                 "scf.while", "scf.execute_region", "scf.index_switch")


@pytest.mark.parametrize("name", WITH_ACTIVITY)
def test_structured_ops_hold_activity_and_tangent(name):
    rule = rules.STRUCTURED[name]
    assert isinstance(rule, Rule)
    assert rule.activity is not None and rule.tangent is not None
    assert rule.reverse is not None and rule.needs is not None


def test_forward_mode_has_one_registry():
    assert not hasattr(forward, "TANGENT_STRUCTURED")
    assert not set(rules.STRUCTURED) & set(rules.ELEMENTWISE)
    assert not set(rules.STRUCTURED) & set(rules.INACTIVE)


KERNEL = """
func.func @f(%A: memref<4xf32>, %x: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %v = memref.load %A[%c0] : memref<4xf32>
  %y = arith.mulf %v, %x : f32
  return %y : f32
}
"""


def _activity(dup_args, active_args):
    with make_context(), ir.Location.unknown():
        module = ir.Module.parse(KERNEL)
        entry = module.body.operations[0].regions[0].blocks[0]
        act = Activity(entry, active_args, dup_args)
        load, mul = [op for op in walk_ops(entry)
                     if op.operation.name in ("memref.load", "arith.mulf")]
        return act.is_active(load.results[0]), act.is_active(mul.results[0])


def test_activity_comes_from_the_rule_object(monkeypatch):
    assert _activity({0}, set()) == (True, True)  # load from a dup array: active
    old = rules.STRUCTURED["memref.load"]
    monkeypatch.setitem(rules.STRUCTURED, "memref.load",
                        Rule(old.needs, old.reverse, old.tangent, lambda A, op: False))
    assert _activity({0}, set()) == (False, False)
    assert _activity({0}, {1}) == (False, True)  # the default rule of arith.mulf


def _members(proto):
    return {n for c in proto.__mro__ if c.__module__ == context.__name__
            for n in vars(c) if not n.startswith("_")} | set(
        getattr(proto, "__annotations__", {}))


@pytest.mark.parametrize("cls, proto", [
    ("ReverseSweep", "ReverseContext"), ("ForwardSweep", "TangentContext"),
    ("Activity", "ActivityContext")])
def test_sweeps_implement_the_rule_context(cls, proto):
    from diffgpu.lowering.autodiff import activity, reverse
    impl = {"ReverseSweep": reverse.ReverseSweep, "ForwardSweep": forward.ForwardSweep,
            "Activity": activity.Activity}[cls]
    members = _members(getattr(context, proto))
    assert {"is_active", "is_dup"} <= members
    missing = [m for m in members if m not in vars(impl) and m != "tape_active"]
    assert not missing, f"{cls} lacks {missing} of context.{proto}"


#: sweep internals a rule must not touch (it goes through context.py)
INTERNALS = re.compile(r"\b[RFD]\.(frame|frames|tape|gen|act|sides|elision|slots|t)\b")
def test_rules_use_only_the_context():
    found = []
    tables = [p for p in pathlib.Path(rules.__file__).parent.glob("*.py")
              if p.name not in ("__init__.py", "registry.py", "partials.py")]
    assert len(tables) >= 7, tables  # arith, math, memref, scf, func, diffgpu, tape
    for path in sorted(tables):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if INTERNALS.search(line):
                found.append(f"{path.name}:{n}: {line.strip()}")
    assert not found, "\n".join(found)

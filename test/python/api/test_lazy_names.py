"""`dg.<name>` for the names diffgpu loads on first use: each is the public
object (a function or a class, never a module) whatever was touched before it,
including a direct `import diffgpu.<submodule>` of a submodule that shares the
name (`diffgpu.hostdiff.gradcheck` the module, `dg.gradcheck` the function)."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import diffgpu as dg

# Each case runs in a fresh `diffgpu` package (its modules dropped from
# sys.modules), so the first import of every submodule happens inside it.
_CHILD = r"""
import importlib, json, sys, types

def fresh():
    for mod in [m for m in sys.modules if m == "diffgpu" or m.startswith("diffgpu.")]:
        del sys.modules[mod]
    return importlib.import_module("diffgpu")

def check(dg, order):
    bad = []
    for name, (mod, attr) in dg._LAZY.items():
        value = getattr(dg, name)
        want = getattr(sys.modules[mod], attr)
        if isinstance(value, types.ModuleType) or value is not want:
            bad.append(f"after {order}: dg.{name} is {value!r}")
    return bad

names = json.loads(sys.argv[1])
mods = sorted({mod for mod, _ in json.loads(sys.argv[2]).values()})
bad = []
for first in names:              # every ordered pair: `first`, then each name
    dg = fresh()
    getattr(dg, first)
    bad += check(dg, [first])
for mod in mods:                 # a direct submodule import before any name
    dg = fresh()
    importlib.import_module(mod)
    bad += check(dg, ["import " + mod])
    dg = fresh()                 # ... and after one
    getattr(dg, names[-1])
    importlib.import_module(mod)
    bad += check(dg, [names[-1], "import " + mod])
print(json.dumps(bad))
"""


def test_lazy_names_in_every_access_order():
    names = sorted(dg._LAZY)
    out = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(names), json.dumps(dg._LAZY)],
                         capture_output=True, text=True, env=dict(os.environ))
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == []


def test_gradcheck_callable_after_gradcheck_error():
    """The user-visible form: touching dg.GradcheckError first (which imports
    the submodule diffgpu.hostdiff.gradcheck) leaves dg.gradcheck the function."""
    code = ("import diffgpu as dg\n"
            "assert issubclass(dg.GradcheckError, AssertionError)\n"
            "assert callable(dg.gradcheck), dg.gradcheck\n"
            "import diffgpu.hostdiff.gradcheck\n"
            "assert callable(dg.gradcheck), dg.gradcheck\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ))
    assert out.returncode == 0, out.stderr


@dg.kernel
def unguarded(y, x):
    i = dg.global_id(0)
    y[i] = x[i]


def test_out_of_bounds_error_is_public():
    assert issubclass(dg.OutOfBoundsError, dg.DiffgpuError)
    assert issubclass(dg.OutOfBoundsError, IndexError)
    assert "OutOfBoundsError" in dir(dg)
    y = np.zeros(4)
    with pytest.raises(dg.OutOfBoundsError, match=r"test_lazy_names.py:\d+:\d+"):
        unguarded[1, 8](y, np.ones(4))
    assert (y == 1).all()

"""The runtime only loads and launches: it never imports the compiler.

- every module of diffgpu.runtime imports with the `mlir` package blocked,
  and none of them imports diffgpu's compiler (lowering, dialects, the
  frontend, the compile driver) or the MLIR bindings;
- no import statement in runtime/, at module level or inside a function,
  names the compiler; MLIR is reached only by runtime/jit.py (the
  ExecutionEngine loader: loading a host program is JIT-compiling LLVM text);
- the ABI facts both sides share live in diffgpu.abi, which imports neither.
"""
import ast
import json
import os
import pkgutil
import subprocess
import sys

import diffgpu.runtime

RUNTIME_DIR = os.path.dirname(diffgpu.runtime.__file__)
COMPILER = ("diffgpu.lowering", "diffgpu.dialects", "diffgpu.frontend", "diffgpu.driver.compiler",
            "diffgpu.tools")
MLIR = ("mlir", "diffgpu._mlir")
#: the one runtime module allowed to reach MLIR (inside its functions)
LOADER = "jit.py"


def _runtime_modules() -> list[str]:
    return sorted(m.name for m in pkgutil.walk_packages([RUNTIME_DIR], "diffgpu.runtime.")
                  if not m.ispkg)


_CHILD = r"""
import importlib, json, sys
sys.modules["mlir"] = None  # any `import mlir...` raises ImportError
mods = json.loads(sys.argv[1])
for m in ["diffgpu.abi"] + mods:
    importlib.import_module(m)
print(json.dumps(sorted(m for m, v in sys.modules.items() if v is not None)))
"""


def test_runtime_imports_no_compiler_with_mlir_blocked():
    mods = _runtime_modules()
    assert "diffgpu.runtime.cpu" in mods and "diffgpu.runtime.jit" in mods
    out = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(mods)],
                         capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert out.returncode == 0, out.stderr
    loaded = json.loads(out.stdout.strip().splitlines()[-1])
    bad = [m for m in loaded if m.startswith(COMPILER) or m == "mlir" or m.startswith("mlir.")
           or m == "diffgpu._mlir"]
    assert not bad, f"importing the runtime imported {bad}"
    assert set(mods) <= set(loaded)


def _imports(path: str):
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield node.lineno, a.name
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.lineno, node.module
            if node.module == "diffgpu":  # `from diffgpu import lowering`
                for a in node.names:
                    yield node.lineno, f"diffgpu.{a.name}"


def test_no_runtime_module_imports_the_compiler_anywhere():
    bad = []
    names = sorted(os.path.relpath(os.path.join(d, f), RUNTIME_DIR)
                   for d, _, files in os.walk(RUNTIME_DIR) for f in files if f.endswith(".py"))
    assert "store/cache.py" in names, names
    for name in names:
        for line, mod in _imports(os.path.join(RUNTIME_DIR, name)):
            if mod.startswith(COMPILER):
                bad.append(f"runtime/{name}:{line}: {mod}")
            elif mod.split(".")[0] == "mlir" or mod == "diffgpu._mlir":
                if name != LOADER:
                    bad.append(f"runtime/{name}:{line}: {mod} (only {LOADER} loads MLIR)")
    assert not bad, "\n".join(bad)


def test_abi_module_imports_nothing_of_diffgpu():
    path = os.path.join(os.path.dirname(RUNTIME_DIR), "abi.py")
    mods = [m for _, m in _imports(path)]
    assert all(not m.startswith(("diffgpu", "mlir")) for m in mods), mods


def test_abi_facts_are_not_copied():
    """The ABI strings appear as literals only in abi.py (and in MLIR text
    that the lowering emits through the same names, never spelled again)."""
    from diffgpu import abi

    facts = [abi.ENTRY_PREFIX, abi.STATUS_FUNC, abi.ACCESSES_ATTR, abi.CANCEL_ADDR_FUNC,
             abi.RACE_SITES_ATTR, abi.RACE_SHARED_ATTR, abi.RACE_BEGIN_FUNC, abi.RACE_END_FUNC]
    pkg = os.path.dirname(os.path.dirname(RUNTIME_DIR))
    roots = [os.path.join(pkg, "diffgpu")]
    import diffgpu.lowering
    roots.append(os.path.dirname(diffgpu.lowering.__file__))
    copies = []
    for root in roots:
        for dirpath, _, files in os.walk(root):
            for name in files:
                path = os.path.join(dirpath, name)
                if not name.endswith(".py") or path.endswith(os.sep + "abi.py"):
                    continue
                with open(path, encoding="utf-8") as f:
                    tree = ast.parse(f.read(), path)
                for node in ast.walk(tree):
                    if isinstance(node, ast.Constant) and node.value in facts:
                        copies.append(f"{path}:{node.lineno}: {node.value!r}")
    assert not copies, "\n".join(copies)

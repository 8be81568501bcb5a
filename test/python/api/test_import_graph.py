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


def _imports(path: str, package: str | None = None):
    """(line, dotted name) of every import in `path`, at module level or
    inside a function: `import a.b` gives a.b, `from a import b` gives a.b
    (b a module of a, or a name defined in a); relative imports are resolved
    against `package` (the package holding the module), skipped without it."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield node.lineno, a.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                if package is None:
                    continue
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                full = f"{base}.{node.module}" if node.module else base
            else:
                full = node.module
            for a in node.names:
                yield node.lineno, f"{full}.{a.name}"


def test_no_runtime_module_imports_the_compiler_anywhere():
    bad = []
    names = sorted(os.path.relpath(os.path.join(d, f), RUNTIME_DIR)
                   for d, _, files in os.walk(RUNTIME_DIR) for f in files if f.endswith(".py"))
    assert "store/cache.py" in names, names
    for name in names:
        for line, mod in _imports(os.path.join(RUNTIME_DIR, name)):
            if mod.startswith(COMPILER):
                bad.append(f"runtime/{name}:{line}: {mod}")
            elif mod.split(".")[0] == "mlir" or mod.startswith(MLIR[1]):
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


# ---------------------------------------------------------------------------
# the import graph of all of diffgpu: no cycles, dependencies point down
# (docs/architecture.md draws it)
# ---------------------------------------------------------------------------

#: top-level modules every layer may import (they import nothing of diffgpu)
FOUNDATION = ("errors", "types", "abi", "_mlir", "_version", "switches", "activities",
              "builtins")
#: the autodiff modules its rules and functional kinds build on
#: (unroll: the access analysis unrolls a clone's loops as the derivative will;
#: checkpoint: the scf.for rule's checkpointed reverse, built on remat and tape)
AUTODIFF_CORE = ("build", "context", "tape", "locals", "elision", "remat", "spec", "unroll",
                 "checkpoint")
_LOW = {"lowering.registry", "lowering.common", "lowering.passes", "dialects", "foundation"}
_LOWERING = _LOW | {"lowering." + p for p in (
    "facts", "autodiff.core", "autodiff.rules", "autodiff.functional", "autodiff", "host",
    "checks", "coarsen", "gpu", "reduce")}
#: layer -> the layers it may import (bottom to top; the table is a DAG)
ALLOWED = {
    "foundation": set(),
    "dialects": {"foundation"},
    "lowering.passes": {"foundation"},  # passes.py, pipelines.py (passes register by name)
    "lowering.common": {"lowering.passes", "dialects", "foundation"},
    "lowering.registry": {"lowering.common", "lowering.passes"},  # the facade of both
    "lowering.facts": _LOW,
    "lowering.autodiff.core": _LOW | {"lowering.facts"},
    "lowering.autodiff.rules": _LOW | {"lowering.facts", "lowering.autodiff.core"},
    "lowering.autodiff.functional": _LOW | {"lowering.facts", "lowering.autodiff.core"},
    "lowering.autodiff": _LOW | {"lowering.facts", "lowering.autodiff.core",
                                 "lowering.autodiff.rules", "lowering.autodiff.functional"},
    "lowering.host": _LOW | {"lowering.facts"},
    "lowering.checks": _LOW | {"lowering.facts"},
    "lowering.coarsen": _LOW | {"lowering.facts"},
    "lowering.gpu": _LOW | {"lowering.facts", "lowering.checks", "lowering.coarsen"},
    "lowering.reduce": _LOW | {"lowering.facts", "lowering.gpu"},
    "frontend": {"lowering.checks", "dialects", "foundation"},
    "runtime": {"foundation"},  # never the compiler (the tests above)
    "runtime.store": {"runtime", "foundation"},
    "driver": _LOWERING | {"frontend", "runtime", "runtime.store"},
    "hostdiff": {"driver", "runtime", "runtime.store", "lowering.autodiff.functional",
                 "foundation"},
    "bridges": {"driver", "runtime", "foundation"},
    "tools": _LOWERING | {"driver"},
    "api": {"driver", "hostdiff", "bridges", "runtime", "runtime.store", "frontend",
            "foundation"},
}


def _roots() -> dict:
    import importlib
    names = ("diffgpu", "diffgpu.lowering", "diffgpu.dialects", "diffgpu.tools")
    return {n: os.path.dirname(importlib.import_module(n).__file__) for n in names}


def _modules() -> dict:
    """dotted name -> (path, is a package) of every module of diffgpu."""
    out = {}
    for pkg, root in _roots().items():
        for d, dirs, files in os.walk(root):
            dirs[:] = [x for x in dirs if x != "__pycache__"]
            rel = os.path.relpath(d, root)
            base = pkg if rel == "." else pkg + "." + rel.replace(os.sep, ".")
            for f in files:
                if f.endswith(".py"):
                    name = base if f == "__init__.py" else f"{base}.{f[:-3]}"
                    out[name] = (os.path.join(d, f), f == "__init__.py")
    return out


def _graph(mods: dict) -> dict:
    """module -> {imported diffgpu module: first line}; an imported name that is
    not a module counts as its module (`from a.b import f` -> a.b). Importing
    a.b runs a/__init__.py first: that step is no edge (a package's __init__
    holds its docstring, or names re-exported from below)."""
    graph = {}
    for name, (path, is_pkg) in mods.items():
        package = name if is_pkg else name.rpartition(".")[0]
        edges = graph[name] = {}
        for line, target in _imports(path, package):
            while target and target not in mods:
                target = target.rpartition(".")[0]
            if target and target != name:
                edges.setdefault(target, line)
    return graph


def _cycles(graph: dict) -> list:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(comp)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def layer(module: str) -> str:
    """The layer of ALLOWED that `module` belongs to."""
    parts = module.split(".")[1:]
    if not parts or parts[0] in ("api", "functional", "interop", "jax", "torch", "__main__"):
        return "api"
    if len(parts) == 1 and parts[0] in FOUNDATION:
        return "foundation"
    if parts[0] == "runtime" and parts[1:2] == ["store"]:
        return "runtime.store"
    if parts[0] != "lowering":
        return parts[0]
    sub = parts[1] if len(parts) > 1 else "passes"
    if sub in ("passes", "pipelines", "registry"):
        return "lowering.registry" if sub == "registry" else "lowering.passes"
    if sub == "autodiff" and len(parts) > 2:
        if parts[2] in ("rules", "functional"):
            return "lowering.autodiff." + parts[2]
        if parts[2] in AUTODIFF_CORE:
            return "lowering.autodiff.core"
    return "lowering." + sub


def _violations(graph: dict) -> tuple[list, list]:
    """(import cycles, layer edges not in ALLOWED), as text."""
    cycles = [sorted(c) for c in _cycles(graph)]
    edges = []
    for m, targets in sorted(graph.items()):
        for t, line in sorted(targets.items()):
            a, b = layer(m), layer(t)
            if a != b and b not in ALLOWED[a]:
                edges.append(f"{m}:{line} imports {t} ({a} -> {b} is not in ALLOWED)")
    return cycles, edges


def test_the_import_graph_is_found():
    mods = _modules()
    graph = _graph(mods)
    assert len(mods) > 150 and "diffgpu.lowering.facts.indices" in mods
    # module-level, in-function and relative imports are all edges
    assert "diffgpu.lowering.facts.specialize" in graph["diffgpu.lowering.coarsen.coarsen"]
    assert "diffgpu.lowering.autodiff.rules.registry" in graph["diffgpu.lowering.autodiff.activity"]
    assert "diffgpu.lowering.gpu.ptx" in graph["diffgpu.driver.compiler"]  # inside a function
    assert {layer(m) for m in mods} == set(ALLOWED)


def test_no_import_cycles_and_every_edge_points_down():
    cycles, edges = _violations(_graph(_modules()))
    assert not cycles, f"import cycles: {cycles}"
    assert not edges, "\n".join(edges)


def test_the_allowed_table_is_a_dag():
    assert not _cycles({a: {b: 0 for b in bs} for a, bs in ALLOWED.items()})


def test_a_cycle_or_an_upward_edge_is_caught():
    """The checks fail on a lazy import that closes a circle, and on an import
    that points up (the graph of the sources, with one edge added)."""
    graph = _graph(_modules())
    assert _violations(graph) == ([], [])
    up = {m: dict(t) for m, t in graph.items()}
    up["diffgpu.lowering.facts.specialize"]["diffgpu.lowering.coarsen.coarsen"] = 1
    cycles, edges = _violations(up)
    assert any("diffgpu.lowering.facts.specialize" in c for c in cycles)
    assert any("lowering.facts -> lowering.coarsen" in e for e in edges)
    down = {m: dict(t) for m, t in graph.items()}
    down["diffgpu.runtime.store.cache_key"]["diffgpu.lowering.common.targets"] = 7  # no cycle
    assert _violations(down) == ([], [
        "diffgpu.runtime.store.cache_key:7 imports diffgpu.lowering.common.targets "
        "(runtime.store -> lowering.common is not in ALLOWED)"])


def test_each_package_says_what_it_may_import():
    for name, (path, is_pkg) in _modules().items():
        if is_pkg and name != "diffgpu":  # the top: the user's docstring
            with open(path, encoding="utf-8") as f:
                doc = ast.get_docstring(ast.parse(f.read()))
            assert doc and "May import" in doc, name

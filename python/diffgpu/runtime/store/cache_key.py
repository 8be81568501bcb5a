"""Cache keys: everything that shapes a kernel's generated code, without MLIR.

Design: the key hashes the *inputs* of the frontend, not its output. Keying on
the output IR would be exact, but it means running the frontend (tens of
milliseconds, and the compiler's imports) on every fresh process before a hit
could be served; a GPU machine with only numpy + CuPy could not compute it.
Here the key is a walk over Python objects that imports nothing and costs
well under a millisecond per signature (see bench/cache_hit.py).

The frontend resolves a name in a kernel through the closure, the module
globals and the builtins, then follows attributes (`getattr`) on compile-time
objects (modules, classes, callables) and indexes tuples. The walk covers a
superset of every such resolution:

- for each function, every name its code mentions (`co_names` holds both
  global and attribute names; `co_freevars` the closure) is resolved the way
  the frontend resolves it, and the value is described;
- a module, class or callable is described together with every attribute
  whose name the function mentions, recursively: any chain `pkg.mod.X`,
  `Cls.attr`, `ns.sub.helper`, `TUPLE[0].X` is a path of such attributes;
- a tuple is described element by element; numbers, strings, numpy scalars
  and dtypes by their type and exact `repr`;
- a `@dg.func`/`@dg.kernel` reached anywhere adds its own source text, first
  line, and its own names' values, transitively.

Describing more than the frontend reads costs only spurious misses; anything
else the frontend may read must be in the description. Other objects (arrays,
lists, instances) are described by their type alone: the frontend rejects
them as compile-time values.

    >>> cache_key(kernel, (ArrayType("float32", 1),), "sm_90")
    '3f1c...'   # sha256 hex
"""
from __future__ import annotations

import builtins as py_builtins
import hashlib
import importlib.util
import linecache
import os
import threading
import types as pytypes
import uuid
import warnings

import numpy as np

from diffgpu import switches
from diffgpu._version import LLVM_TOOLS_DISTRIBUTION, MLIR_DISTRIBUTION, __version__

#: packages and modules whose sources make up the compiler fingerprint: all
#: that turns a kernel into a payload (launch.build_payload, the compile
#: driver, the ABI, launch specialisation); found, never imported
_COMPILER_PACKAGES = ("diffgpu.frontend", "diffgpu.dialects", "diffgpu.lowering")
_COMPILER_MODULES = ("diffgpu.builtins", "diffgpu.types", "diffgpu.activities",
                     "diffgpu.driver.launch", "diffgpu.driver.compiler", "diffgpu.abi",
                     "diffgpu.runtime.specialize")
#: a walk that visits more objects than this (an enormous object graph reached
#: through attribute names the kernel uses) gives a key that never matches
_WALK_BUDGET = 50_000
_MAX_DEPTH = 64
_SCALARS = (bool, int, float, complex, str, bytes, type(None))

_files: list | None = None
_fingerprint: tuple | None = None  # (file stamps, digest)
_fp_lock = threading.Lock()


def is_definition(x) -> bool:
    return getattr(x, "__diffgpu_definition__", False) is True


def _code_names(code) -> set:
    names = set(code.co_names) | set(code.co_freevars)
    for c in code.co_consts:
        if isinstance(c, pytypes.CodeType):
            names |= _code_names(c)
    return names


def _last_line(code) -> int:
    last = code.co_firstlineno
    for pos in code.co_positions():
        if pos[1] is not None and pos[1] > last:
            last = pos[1]
    for c in code.co_consts:
        if isinstance(c, pytypes.CodeType):
            last = max(last, _last_line(c))
    return last


def _source_of(fn) -> str:
    """The lines of `fn`'s definition (decorators to the last line of code).

    Cheaper than inspect.getsource (no tokenizing): the code object knows its
    first line and, through co_positions, the last line any of it spans.
    """
    code = fn.__code__
    filename = code.co_filename
    linecache.checkcache(filename)
    lines = linecache.getlines(filename, getattr(fn, "__globals__", {}))
    first, last = code.co_firstlineno, _last_line(code)
    if lines and 1 <= first <= last <= len(lines):
        return f"@{first}\n" + "".join(lines[first - 1:last])
    # no source file (exec, REPL): the frontend cannot compile it either
    return repr((code.co_code, code.co_consts, code.co_names, code.co_varnames))


def _resolve(fn, name):
    """(found, value) of a global name as the frontend resolves it."""
    code = fn.__code__
    if fn.__closure__ and name in code.co_freevars:
        try:
            return True, fn.__closure__[code.co_freevars.index(name)].cell_contents
        except ValueError:  # empty cell
            return False, None
    g = fn.__globals__
    if name in g:
        return True, g[name]
    if hasattr(py_builtins, name):
        return True, getattr(py_builtins, name)
    return False, None


class _Walk:
    """One key computation: `parts` collects the description lines."""

    def __init__(self):
        self.parts: list[str] = []
        self.defs: dict[int, int] = {}     # id(definition) -> its number
        self.pending: list = []
        self.objs: dict = {}               # (id(object), names) -> label of its description
        self.keep: list = []               # keeps described objects alive (ids stay unique)
        self.budget = _WALK_BUDGET

    def definition_ref(self, d) -> str:
        n = self.defs.get(id(d))
        if n is None:
            n = self.defs[id(d)] = len(self.defs)
            self.pending.append(d)
            self.keep.append(d)
        return f"<{getattr(d, 'kind', 'func')} #{n}>"

    def run(self, defn) -> str:
        self.definition_ref(defn)
        while self.pending:
            self.visit(self.pending.pop(0))
        if self.budget < 0:  # never shared: a fresh key every time
            self.parts.append(f"unbounded walk {uuid.uuid4()}")
        return "\n".join(self.parts)

    def visit(self, d) -> None:
        fn = d.py_func
        n = self.defs[id(d)]
        self.parts.append(f"## #{n} {getattr(d, 'kind', 'func')} {fn.__qualname__}\n"
                          f"{_source_of(fn)}")
        names = _code_names(fn.__code__)
        attrs = tuple(sorted(names))
        for name in attrs:
            found, val = _resolve(fn, name)
            if found:
                self.parts.append(f"{name} = {self.describe(val, attrs)}")

    def describe(self, v, attrs, depth=0) -> str:
        self.budget -= 1
        if depth > _MAX_DEPTH:  # e.g. an object making a new attribute per lookup
            self.budget = -1
        if self.budget < 0:
            return "..."
        if isinstance(v, _SCALARS) or isinstance(v, np.generic):
            return f"{type(v).__name__}:{v!r}"
        if isinstance(v, tuple):
            return "(" + ", ".join(self.describe(e, attrs, depth + 1) for e in v) + ")"
        if isinstance(v, np.ndarray) and v.ndim == 0:  # the frontend takes it as a number
            return f"ndarray0:{v.dtype.str}:{v.item()!r}"
        if isinstance(v, np.dtype):
            return f"dtype:{v.str}:{v.name}"
        walk = isinstance(v, (pytypes.ModuleType, type))
        if not walk and is_definition(v):  # (asking a module may run its __getattr__)
            return self.definition_ref(v)
        walk = walk or callable(v)
        if not walk:  # arrays, lists, instances: not compile-time values
            return f"<{type(v).__module__}.{type(v).__qualname__}>"
        # an object met again with the same attribute names is described once;
        # in another function (other names) it is walked again
        label = self.objs.get((id(v), attrs))
        if label is not None:
            return f"@{label}"
        label = self.objs[(id(v), attrs)] = str(len(self.objs))
        self.keep.append(v)
        if isinstance(v, pytypes.ModuleType):
            head = f"module {v.__name__}"
        elif isinstance(v, type):
            head = f"class {v.__module__}.{v.__qualname__}"
        else:
            name = getattr(v, "__qualname__", None) or getattr(v, "__name__", "")
            head = (f"{type(v).__qualname__} {getattr(v, '__module__', '')}.{name} "
                    f"tag={getattr(v, '__diffgpu_builtin__', None)!r}")
        fields = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for a in attrs:
                try:
                    sub = getattr(v, a)
                except Exception:  # absent, or a property that fails: the frontend fails too
                    continue
                fields.append(f"{a}: {self.describe(sub, attrs, depth + 1)}")
        return f"{label}={head}{{{', '.join(fields)}}}"


def source_fingerprint(defn) -> str:
    """Text covering `defn`'s source, its callees' sources (transitively) and
    every compile-time value they can resolve (see the module docstring)."""
    return _Walk().run(defn)


def _package_files(pkg: str) -> list[str]:
    spec = importlib.util.find_spec(pkg)
    if spec is None:
        return []
    if spec.submodule_search_locations:
        out = []
        for root in spec.submodule_search_locations:
            for dirpath, dirnames, filenames in os.walk(root):
                dirnames[:] = sorted(d for d in dirnames if not d.startswith((".", "__")))
                out += [os.path.join(dirpath, f) for f in sorted(filenames)
                        if f.endswith((".py", ".mlir"))]
        return out
    return [spec.origin] if spec.origin else []


def _compiler_files() -> list[str]:
    global _files
    if _files is None:
        files = []
        for pkg in _COMPILER_PACKAGES + _COMPILER_MODULES:
            try:
                files += _package_files(pkg)
            except (ImportError, ValueError):
                continue
        _files = files
    return _files


def compiler_fingerprint() -> str:
    """sha256 of the compiler's sources: a changed compiler invalidates entries.

    Finds the files with importlib's finders once per process and imports none
    of them (no MLIR). Re-hashed whenever a file's size or mtime changes (one
    stat per file per key).
    """
    global _fingerprint
    stamp = []
    for path in _compiler_files():
        try:
            st = os.stat(path)
            stamp.append((path, st.st_mtime_ns, st.st_size))
        except OSError:
            continue
    stamp = tuple(stamp)
    with _fp_lock:
        if _fingerprint is not None and _fingerprint[0] == stamp:
            return _fingerprint[1]
    h = hashlib.sha256()
    for path, _, _ in stamp:
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            continue
        h.update(os.path.basename(path).encode() + b"\0" + data + b"\0")
    with _fp_lock:
        _fingerprint = (stamp, h.hexdigest())
        return _fingerprint[1]


def cache_key(defn, arg_types, target: str, diff=None) -> str:
    """The cache key of `defn` compiled for `arg_types` on `target` ("host" or
    "sm_XX"); `diff` is None or (mode, activity kinds) for host-level autodiff."""
    h = hashlib.sha256()
    for part in (
        f"diffgpu {__version__}", MLIR_DISTRIBUTION, LLVM_TOOLS_DISTRIBUTION,
        f"compiler {compiler_fingerprint()}",
        f"switches {switches.describe()}",
        f"target {target}",
        f"types {', '.join(str(t) for t in arg_types)}",
        f"diff {diff!r}",
        source_fingerprint(defn),
    ):
        h.update(part.encode("utf-8") + b"\n\0")
    return h.hexdigest()

"""On-disk cache of compiled kernels, keyed without importing MLIR.

Key: sha256 over the kernel's source and its transitive callees' sources, the
module-level constants they read, the argument types, the target, the diff
mode and activities (if any), diffgpu's version, the pinned MLIR version, and
a fingerprint of the compiler's own sources (frontend, dialect, lowering).

Entry: one file `<dir>/v1/<key>.dgc`:

    DIFFGPU-CACHE 1 <sha256 of payload> <payload length>\\n<payload: JSON>

A GPU payload holds the PTX and its metadata (entry name, argument ABI); a
host payload holds the lowered LLVM-dialect text. Writes go to a temporary
file renamed into place (atomic); a corrupt or truncated entry fails its
checksum and is recompiled, never trusted.
"""
from __future__ import annotations

import hashlib
import importlib.util
import inspect
import json
import os
import tempfile
import threading
import types as pytypes
import warnings

import numpy as np

from diffgpu._version import LLVM_TOOLS_DISTRIBUTION, MLIR_DISTRIBUTION, __version__

MAGIC = b"DIFFGPU-CACHE 1"
FORMAT_DIR = "v1"
SUFFIX = ".dgc"
#: packages whose sources make up the compiler fingerprint
_COMPILER_PACKAGES = ("diffgpu.frontend", "diffgpu.dialects", "diffgpu.lowering")
_COMPILER_MODULES = ("diffgpu.builtins", "diffgpu.types", "diffgpu.activities")

_fingerprint: tuple | None = None  # (file stamps, digest)
_fp_lock = threading.Lock()


def cache_dir() -> str:
    """`$DIFFGPU_CACHE_DIR`, else `$XDG_CACHE_HOME/diffgpu`, else
    `~/.cache/diffgpu` (read at every call)."""
    d = os.environ.get("DIFFGPU_CACHE_DIR")
    if not d:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        d = os.path.join(base, "diffgpu")
    return d


def entry_path(key: str, directory: str | None = None) -> str:
    return os.path.join(directory or cache_dir(), FORMAT_DIR, key + SUFFIX)


# ---------------------------------------------------------------------------
# Keys
# ---------------------------------------------------------------------------

def is_definition(x) -> bool:
    return getattr(x, "__diffgpu_definition__", False) is True


def _is_constant(v) -> bool:
    if isinstance(v, (bool, int, float, complex, str, bytes, np.generic, np.dtype)):
        return True
    if isinstance(v, tuple):  # e.g. a shared_array shape
        return len(v) < 64 and all(_is_constant(e) for e in v)
    return isinstance(v, type) and issubclass(v, np.generic)


def _const_text(v) -> str:
    if isinstance(v, type):
        return f"<type {v.__module__}.{v.__qualname__}>"
    return f"{type(v).__name__}:{v!r}"


def _code_names(code) -> set:
    names = set(code.co_names) | set(code.co_freevars)
    for c in code.co_consts:
        if isinstance(c, pytypes.CodeType):
            names |= _code_names(c)
    return names


def _source_of(fn) -> str:
    try:
        return inspect.getsource(fn)
    except (OSError, TypeError):  # no source file (exec, REPL): hash the code
        code = fn.__code__
        return repr((code.co_code, code.co_consts, code.co_names, code.co_varnames))


def _environment(fn) -> dict:
    env = dict(getattr(fn, "__globals__", {}))
    code = fn.__code__
    if fn.__closure__:
        for name, cell in zip(code.co_freevars, fn.__closure__):
            try:
                env[name] = cell.cell_contents
            except ValueError:  # empty cell
                pass
    return env


def source_fingerprint(defn) -> str:
    """Text covering `defn`'s source, its callees' and the constants they read."""
    parts: list[str] = []
    seen: set[int] = set()

    def visit_defn(d):
        if id(d) in seen:
            return
        seen.add(id(d))
        fn = d.py_func
        parts.append(f"## {d.kind} {fn.__qualname__}\n"
                     f"{_source_of(fn)}")
        names = sorted(_code_names(fn.__code__))
        env = _environment(fn)
        for name in names:
            if name not in env:
                continue
            val = env[name]
            if is_definition(val):
                parts.append(f"{name} -> {val.name}")
                visit_defn(val)
            elif _is_constant(val):
                parts.append(f"{name} = {_const_text(val)}")
            elif isinstance(val, pytypes.ModuleType):
                for attr in names:
                    sub = getattr(val, attr, None)
                    if is_definition(sub):
                        parts.append(f"{name}.{attr} -> {sub.name}")
                        visit_defn(sub)
                    elif sub is not None and _is_constant(sub):
                        parts.append(f"{name}.{attr} = {_const_text(sub)}")

    visit_defn(defn)
    return "\n".join(parts)


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


def compiler_fingerprint() -> str:
    """sha256 of the compiler's sources: a changed compiler invalidates entries.

    Finds the files with importlib's finders and imports none of them (no
    MLIR). Re-hashed whenever a file's size or mtime changes (it is read only
    when a signature misses the in-memory table).
    """
    global _fingerprint
    files = []
    for pkg in _COMPILER_PACKAGES + _COMPILER_MODULES:
        try:
            files += _package_files(pkg)
        except (ImportError, ValueError):
            continue
    stamp = []
    for path in files:
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
        f"target {target}",
        f"types {', '.join(str(t) for t in arg_types)}",
        f"diff {diff!r}",
        source_fingerprint(defn),
    ):
        h.update(part.encode("utf-8") + b"\n\0")
    return h.hexdigest()


# ---------------------------------------------------------------------------
# Entries
# ---------------------------------------------------------------------------

def encode_entry(payload: dict) -> bytes:
    body = json.dumps(payload, sort_keys=True).encode("utf-8")
    digest = hashlib.sha256(body).hexdigest()
    return MAGIC + f" {digest} {len(body)}\n".encode("ascii") + body


def decode_entry(data: bytes) -> dict | None:
    """The payload, or None if the bytes are not one intact entry."""
    nl = data.find(b"\n")
    if nl < 0:
        return None
    header = data[:nl].split(b" ")
    if len(header) != 4 or b" ".join(header[:2]) != MAGIC:
        return None
    digest, length = header[2].decode("ascii", "replace"), header[3]
    body = data[nl + 1:]
    if not length.isdigit() or int(length) != len(body):
        return None
    if hashlib.sha256(body).hexdigest() != digest:
        return None
    try:
        payload = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    return payload if isinstance(payload, dict) else None


def load(key: str, directory: str | None = None) -> dict | None:
    """The payload stored under `key`, or None (missing, corrupt, truncated)."""
    path = entry_path(key, directory)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    payload = decode_entry(data)
    if payload is None or payload.get("key") != key:
        return None
    return payload


def store(key: str, payload: dict, directory: str | None = None) -> str | None:
    """Write the entry atomically; returns its path, or None if the cache
    directory is not writable (a warning, never an error)."""
    payload = dict(payload, key=key)
    path = entry_path(key, directory)
    data = encode_entry(payload)
    tmp = None
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=SUFFIX, dir=os.path.dirname(path))
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        return path
    except OSError as exc:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        warnings.warn(f"diffgpu: cannot write cache entry {path}: {exc}", RuntimeWarning,
                      stacklevel=3)
        return None

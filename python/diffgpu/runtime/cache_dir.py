"""Where the disk cache lives, and whether it is safe to use.

Cache entries are code that this process runs (PTX, and LLVM-dialect text the
CPU JIT compiles), and their names are predictable from the kernel source.
So a directory that another user can write is never read from:

| path                                   | must be                                  |
|----------------------------------------|------------------------------------------|
| the cache root and everything under it | a directory owned by us, not group- or   |
|                                        | world-writable                           |
| each parent, up to `~` (else `/`)      | owned by us or root; not group- or       |
|                                        | world-writable unless sticky (`/tmp`)    |

Paths are checked after resolving symlinks (`os.path.realpath`), so the chain
checked is the one the kernel reads through. Directories we create are 0700;
entries are 0600 (`tempfile.mkstemp`).

A root that fails the check gives one warning per process and reason:

    RuntimeWarning: diffgpu: not using the disk cache /tmp/shared: /tmp/shared
    is writable by other users (mode 0777); kernels are compiled in memory only
    (fix the permissions or set DIFFGPU_CACHE_DIR to a private directory)

and the process runs without the disk cache (nothing loaded, nothing stored).
"""
from __future__ import annotations

import os
import stat
import sys
import threading
import warnings

FORMAT_DIR = "v1"

_warned: set = set()
_warn_lock = threading.Lock()
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def cache_dir() -> str:
    """`$DIFFGPU_CACHE_DIR`, else `$XDG_CACHE_HOME/diffgpu`, else
    `~/.cache/diffgpu` (read at every call)."""
    d = os.environ.get("DIFFGPU_CACHE_DIR")
    if not d:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        d = os.path.join(base, "diffgpu")
    return d


def warn_once(what: str, msg: str, reason: str | None = None) -> None:
    """One RuntimeWarning per (what, reason) per process (`reason` defaults to
    `msg`), attributed to the user's line that led here (see user_stacklevel)."""
    with _warn_lock:
        if (what, msg if reason is None else reason) in _warned:
            return
        _warned.add((what, msg if reason is None else reason))
    warnings.warn(msg, RuntimeWarning, stacklevel=user_stacklevel())


def user_stacklevel() -> int:
    """The `stacklevel` for a `warnings.warn` called by our caller that names
    the first frame outside the diffgpu package: the user's launch, compile or
    autodiff line, however deep in diffgpu the warning is raised. (A thread
    of ours with no user frame names its outermost frame.)"""
    frame, level = sys._getframe(2), 2
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    return level


def _mode(st) -> str:
    return f"{stat.S_IMODE(st.st_mode):04o}"


def _own_problem(path: str, st, uid: int) -> str | None:
    """Why `path` (ours, under the root) is unsafe, or None."""
    if not stat.S_ISDIR(st.st_mode):
        return f"{path} is not a directory"
    if st.st_uid != uid:
        return f"{path} is owned by uid {st.st_uid}, not by this user (uid {uid})"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"{path} is writable by other users (mode {_mode(st)})"
    return None


def _parent_problem(path: str, st, uid: int) -> str | None:
    """Why a parent of the root is unsafe, or None."""
    if st.st_uid not in (uid, 0):
        return f"its parent {path} is owned by uid {st.st_uid}, not by this user or root"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not st.st_mode & stat.S_ISVTX:
        return (f"its parent {path} is writable by other users (mode {_mode(st)}) "
                "and not sticky")
    return None


def check_root(root: str, sub: str | None = None) -> str | None:
    """Why the cache root `root` (and `sub`, a directory under it) must not be
    used, or None if it is safe. Missing directories at or under the root
    would be created by us (0700), so only the existing ones are checked."""
    uid = os.geteuid() if hasattr(os, "geteuid") else None
    if uid is None:  # no POSIX ownership (Windows): nothing to check
        return None
    real_root = os.path.realpath(root)
    path = real_root
    if sub is not None:
        path = os.path.realpath(sub)
        expect = os.path.join(real_root, os.path.relpath(os.path.abspath(sub),
                                                         os.path.abspath(root)))
        if path != os.path.normpath(expect):
            return f"{sub} is a symlink (to {path})"
    home = os.path.realpath(os.path.expanduser("~"))
    while True:
        ours = path == real_root or path.startswith(real_root.rstrip(os.sep) + os.sep)
        try:
            st = os.lstat(path)
        except (FileNotFoundError, NotADirectoryError):  # to be created (or cannot be)
            st = None
        except OSError as exc:
            return f"cannot inspect {path}: {exc.strerror}"
        if st is not None:
            problem = _own_problem(path, st, uid) if ours else _parent_problem(path, st, uid)
            if problem:
                return problem
        if not ours and path == home or os.path.dirname(path) == path:
            return None
        path = os.path.dirname(path)


def _make_private_dirs(path: str) -> None:
    """Create `path` and missing ancestors, each with mode 0700."""
    missing = []
    p = path
    while not os.path.lexists(p):
        missing.append(p)
        parent = os.path.dirname(p)
        if parent == p:
            break
        p = parent
    for d in reversed(missing):
        try:
            os.mkdir(d, 0o700)
        except FileExistsError:  # another process made it first: checked below
            pass


def usable_dir(root: str | None = None, create: bool = False) -> str | None:
    """The entry directory `<root>/v1` if it is safe to read and write, else
    None. With `create`, missing directories are made (mode 0700); OSError if
    that fails. A safety problem warns once and returns None."""
    root = root or cache_dir()
    sub = os.path.join(root, FORMAT_DIR)
    problem = check_root(root, sub)
    if problem is None and create and not os.path.isdir(sub):
        _make_private_dirs(sub)
        problem = check_root(root, sub)  # made by another process meanwhile?
    if problem is not None:
        warn_once(root, f"diffgpu: not using the disk cache {root}: {problem}; kernels are "
                        "compiled in memory only (fix the permissions or set "
                        "DIFFGPU_CACHE_DIR to a private directory)")
        return None
    return sub if os.path.isdir(sub) else None

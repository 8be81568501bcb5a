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

Every path below the root is used through an open, checked directory
(`open_cache`, `open_checked`): opened without following a symlink
(`O_NOFOLLOW`), checked with `fstat`, then named relative to its fd
(`dir_fd=`), so a path swapped for a link after its check cannot redirect a
read, a rename or an unlink out of the cache.
"""
from __future__ import annotations

import os
import stat
import sys
import threading
import warnings

FORMAT_DIR = "v1"
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)

_warned: set = set()
_warn_lock = threading.Lock()
_PACKAGE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep  # diffgpu/


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


class UnsafeCache(OSError):
    """A path of the cache that fails its check; str() is the problem."""


def _own_problem(path: str, st, uid: int, kind: str = "dir") -> str | None:
    """Why `path` (ours, under the root; a "dir" or a "file") is unsafe, or None."""
    if stat.S_ISLNK(st.st_mode):
        return f"{path} is a symlink"
    if kind == "dir" and not stat.S_ISDIR(st.st_mode):
        return f"{path} is not a directory"
    if kind == "file" and not stat.S_ISREG(st.st_mode):
        return f"{path} is not a regular file"
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


def open_checked(name: str, dir_fd: int, path: str, kind: str = "dir",
                 flags: int = os.O_RDONLY, create: bool = False) -> int:
    """An fd of `name` in the open directory `dir_fd` (`path`: its full name,
    for messages), a "dir" or a regular "file": opened without following a
    symlink and without blocking (a FIFO), then checked with fstat: ours, not
    group- or world-writable. `create` makes a missing one (0700 / 0600).
    UnsafeCache if it is anything else; OSError if it cannot be opened."""
    uid = os.geteuid()
    if kind == "dir":
        flags |= _DIRECTORY
        if create:
            try:
                os.mkdir(name, 0o700, dir_fd=dir_fd)
            except FileExistsError:  # checked below, whatever it is
                pass
    elif create:
        flags |= os.O_CREAT
    try:
        fd = os.open(name, flags | _NOFOLLOW | _NONBLOCK, 0o600, dir_fd=dir_fd)
    except OSError as exc:  # a symlink (ELOOP), a directory for a file (EISDIR), ...
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except OSError:
            raise exc from None
        problem = _own_problem(path, st, uid, kind)
        if problem:
            raise UnsafeCache(problem) from None
        raise
    try:
        problem = _own_problem(path, os.fstat(fd), uid, kind)
    except OSError:
        os.close(fd)
        raise
    if problem:
        os.close(fd)
        raise UnsafeCache(problem)
    return fd


class CacheDir:
    """A cache opened for use (open_cache): `root_fd` and `fd`, its root and
    its entry directory `sub` (`<root>/v1`), both checked; `with` closes them."""

    def __init__(self, root: str, root_fd: int, fd: int):
        self.root, self.sub = root, os.path.join(root, FORMAT_DIR)
        self.root_fd, self.fd = root_fd, fd

    def open_sibling(self, suffix: str, kind: str, flags: int = os.O_RDONLY,
                     create: bool = False) -> int:
        """`<root>/v1<suffix>` (".lock", ".trash") through open_checked."""
        return open_checked(FORMAT_DIR + suffix, self.root_fd, self.sub + suffix, kind,
                            flags, create)

    def __enter__(self) -> "CacheDir":
        return self

    def __exit__(self, *exc) -> bool:
        os.close(self.fd)
        os.close(self.root_fd)
        return False


def open_cache(root: str | None = None, create: bool = False) -> CacheDir:
    """The cache `root` opened for use: check_root, then the root and its
    entry directory opened and checked. `create` makes missing directories
    (0700). UnsafeCache: it must not be used; OSError: it cannot be (e.g.
    FileNotFoundError: no entry directory yet)."""
    root = root or cache_dir()
    sub = os.path.join(root, FORMAT_DIR)
    problem = check_root(root, sub)
    if problem is None and create and not os.path.isdir(root):
        _make_private_dirs(root)
        problem = check_root(root, sub)  # made by another process meanwhile?
    if problem is not None:
        raise UnsafeCache(problem)
    # the root may be a symlink: check_root checked the chain it resolves to
    root_fd = os.open(root, os.O_RDONLY | _DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    try:
        problem = _own_problem(root, os.fstat(root_fd), os.geteuid())
        if problem:
            raise UnsafeCache(problem)
        return CacheDir(root, root_fd, open_checked(FORMAT_DIR, root_fd, sub, create=create))
    except BaseException:
        os.close(root_fd)
        raise


def usable_dir(root: str | None = None, create: bool = False) -> CacheDir | None:
    """The cache opened for use (open_cache), or None: missing (and not
    `create`), or unsafe (warned once). With `create`, missing directories
    are made; OSError if that fails."""
    root = root or cache_dir()
    try:
        return open_cache(root, create)
    except UnsafeCache as exc:
        warn_once(root, f"diffgpu: not using the disk cache {root}: {exc}; kernels are "
                        "compiled in memory only (fix the permissions or set "
                        "DIFFGPU_CACHE_DIR to a private directory)")
        return None
    except OSError:
        if create:
            raise
        return None

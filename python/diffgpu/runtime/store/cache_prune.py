"""A bounded disk cache: size accounting and least-recently-used pruning.

`DIFFGPU_CACHE_MAX_MB` (default 1024) caps the bytes of entries in one cache
directory. An entry's mtime is its last use (a hit re-stamps it, see
cache.read_entry), so pruning removes the oldest mtimes first, down to
PRUNE_TO of the cap, which leaves room for many stores before the next prune.

Sharing the directory between processes:

- `<root>/v1.lock` is locked (`fcntl.flock`) around every size update and
  holds the running total: each store adds its entry's bytes to it (one small
  locked read-modify-write), so the directory is never scanned per store. A
  total over the cap (or missing) makes that store scan the directory and
  prune, still holding the lock, and write back the true total. The total is
  an upper bound on the real size (entries written twice count twice), so the
  cap holds whenever no store is in flight, with any number of processes (a
  writer killed between its rename and its count leaves one entry uncounted
  until the next scan).
- A pruned entry is renamed into `<root>/v1.trash/` (atomic: the key is a miss
  from then on) and unlinked there. Readers open, then read, so a reader that
  opened it first still reads it whole (POSIX keeps an unlinked open file);
  an entry that vanishes under the scan is skipped.
- Temporary files of writers that died (`.tmp-*`, over an hour old) go too,
  and so does anything a pruner that died left in the trash.
- The lock and the trash are opened like every path of the cache
  (cache_dir.open_checked: no symlink, a regular file / a directory, ours,
  not group- or world-writable), and entries are renamed and unlinked
  relative to the open directories. One that fails is refused: a store
  warns once and leaves the cache unpruned, `cache prune`/`clear` fail;
  nothing outside the cache is touched.

    $ python -m diffgpu cache info      # size, entries, cap, directory
"""
from __future__ import annotations

import os
import stat
import time

try:
    import fcntl
except ImportError:  # no flock (Windows): no cap
    fcntl = None

from diffgpu.runtime.store.cache_dir import open_cache, warn_once

DEFAULT_MAX_MB = 1024
#: a prune stops when the entries fit in this fraction of the cap
PRUNE_TO = 0.8
#: temporary files older than this are from writers that died
STALE_TMP_S = 3600.0
SUFFIX = ".dgc"


def max_bytes() -> int:
    """The cap in bytes, from `DIFFGPU_CACHE_MAX_MB` (a positive number)."""
    text = os.environ.get("DIFFGPU_CACHE_MAX_MB", "").strip()
    if not text:
        return DEFAULT_MAX_MB << 20
    try:
        mb = float(text)
        if not mb > 0 or mb == float("inf"):
            raise ValueError
    except ValueError:
        warn_once("DIFFGPU_CACHE_MAX_MB", f"diffgpu: DIFFGPU_CACHE_MAX_MB={text!r} is not a "
                                          f"positive number; using {DEFAULT_MAX_MB}")
        return DEFAULT_MAX_MB << 20
    return max(int(mb * (1 << 20)), 1)


class _Locked:
    """`with _Locked(d) as ledger:` holds the lock of the open cache `d`;
    `ledger.total` is the recorded size (None if unknown), written back on exit."""

    def __init__(self, d):
        self.d = d
        self.total = None
        self.fd = -1

    def __enter__(self):
        self.fd = self.d.open_sibling(".lock", "file", os.O_RDWR, create=True)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX)
            text = os.pread(self.fd, 64, 0).decode("ascii", "replace").strip()
            self.total = int(text) if text.isdigit() else None
        except BaseException:
            os.close(self.fd)
            raise
        return self

    def __exit__(self, *exc):
        try:
            if self.total is not None:
                data = f"{self.total}\n".encode("ascii")
                os.pwrite(self.fd, data, 0)
                os.ftruncate(self.fd, len(data))
        finally:
            os.close(self.fd)  # releases the lock
        return False


def scan(dir_fd: int) -> list:
    """[(mtime_ns, size, name)] of the entries in the open entry directory
    `dir_fd`, unlinking temporary files of dead writers; entries that vanish
    meanwhile are skipped."""
    out = []
    now = time.time()
    try:
        it = os.scandir(dir_fd)
    except OSError:
        return out
    with it:
        for e in it:
            try:
                st = e.stat(follow_symlinks=False)
            except OSError:
                continue
            if not stat.S_ISREG(st.st_mode):
                continue
            if e.name.startswith(".tmp-"):
                if now - st.st_mtime > STALE_TMP_S:
                    try:
                        os.unlink(e.name, dir_fd=dir_fd)
                    except OSError:  # gone already
                        pass
                continue
            if e.name.endswith(SUFFIX):
                out.append((st.st_mtime_ns, st.st_size, e.name))
    return out


def _remove(dir_fd: int, trash_fd: int, name: str) -> bool:
    """Rename `name` into the trash, then unlink it; False if it vanished."""
    dst = f"{name}.{os.getpid()}.{time.monotonic_ns()}"
    try:
        os.rename(name, dst, src_dir_fd=dir_fd, dst_dir_fd=trash_fd)
        os.unlink(dst, dir_fd=trash_fd)
        return True
    except OSError:  # vanished (pruned by another process)
        return False


def _empty_trash(trash_fd: int) -> None:
    try:
        names = os.listdir(trash_fd)
    except OSError:
        return
    for name in names:
        try:
            os.unlink(name, dir_fd=trash_fd)
        except OSError:  # gone already, or not a file: left alone
            pass


def prune_locked(d, cap: int, target: int | None = None) -> int:
    """With the lock of the open cache `d` held: remove the least recently
    used entries until they fit in `target` bytes (PRUNE_TO of `cap` when
    over `cap`); returns the remaining total. UnsafeCache if the trash is
    refused (nothing removed)."""
    try:
        trash_fd = d.open_sibling(".trash", "dir")
        _empty_trash(trash_fd)  # left by a process that died mid-prune
    except FileNotFoundError:  # made when first needed
        trash_fd = None
    try:
        entries = scan(d.fd)
        total = sum(size for _, size, _ in entries)
        if target is None:
            if total <= cap:
                return total
            target = int(cap * PRUNE_TO)
        for _, size, name in sorted(entries):
            if total <= target:
                break
            if trash_fd is None:
                trash_fd = d.open_sibling(".trash", "dir", create=True)
            _remove(d.fd, trash_fd, name)  # False: it vanished (pruned by another process)
            total -= size
        return total
    finally:
        if trash_fd is not None:
            os.close(trash_fd)


def account(d, nbytes: int) -> None:
    """Record a new entry of `nbytes` in the open cache `d`; prune if over
    the cap. Never raises: a cache that cannot be accounted (its lock or
    trash refused) stays unbounded, with a warning."""
    if fcntl is None:
        return
    cap = max_bytes()
    try:
        with _Locked(d) as ledger:
            if ledger.total is None:
                ledger.total = prune_locked(d, cap)
            else:
                ledger.total += nbytes
                if ledger.total > cap:
                    ledger.total = prune_locked(d, cap)
    except OSError as exc:  # UnsafeCache too
        warn_once(d.sub + ".lock", f"diffgpu: cannot keep the cache {d.sub} under its size "
                                   f"cap: {exc}", reason=str(exc))


def info(sub: str) -> dict:
    """{"entries", "bytes", "max_bytes"} of the entry directory `sub`
    (UnsafeCache if its cache is refused: cache_dir.open_cache)."""
    try:
        with open_cache(os.path.dirname(sub)) as d:
            entries = scan(d.fd)
    except FileNotFoundError:
        entries = []
    return {"entries": len(entries), "bytes": sum(s for _, s, _ in entries),
            "max_bytes": max_bytes()}


def prune(sub: str, target: int | None = None) -> dict:
    """Prune the entry directory `sub` now (to PRUNE_TO of the cap if over
    it, or to `target` bytes); returns info before and after. UnsafeCache
    if the cache, its lock or its trash is refused; OSError if unusable."""
    before = info(sub)
    try:
        d = open_cache(os.path.dirname(sub))
    except FileNotFoundError:
        return {"before": before, "after": before}
    with d, _Locked(d) as ledger:
        ledger.total = prune_locked(d, max_bytes(), target)
    return {"before": before, "after": info(sub)}


def clear(sub: str) -> dict:
    """Remove every entry; returns info from before."""
    return prune(sub, target=0)["before"]


__all__ = ["max_bytes", "clear", "account", "prune", "info", "scan"]

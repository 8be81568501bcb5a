"""On-disk cache of compiled kernels, keyed without importing MLIR.

- keys: runtime/cache_key.py (kernel and callee sources, every compile-time
  value they resolve, types, target, diff mode, versions, compiler sources);
- where, and whether it is safe to use: runtime/cache_dir.py (ownership and
  permission checks; a directory other users can write is never read);
- size: runtime/cache_prune.py (`DIFFGPU_CACHE_MAX_MB`, least recently used
  entries pruned first).

Entry: one file `<dir>/v1/<key>.dgc`, mode 0600:

    DIFFGPU-CACHE 1 <sha256 of payload> <payload length>\\n<payload: JSON>

A GPU payload holds the PTX and its metadata (entry name, argument ABI); a
host payload holds the lowered LLVM-dialect text. Writes go to a temporary
file renamed into place (atomic); a corrupt or truncated entry fails its
checksum and is recompiled, never trusted. Readers open, then read: an entry
pruned or replaced meanwhile is still read whole, or is a miss. An entry that
is a symlink, not a regular file, or not ours is refused.
"""
from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
import time

from diffgpu.runtime import cache_prune
from diffgpu.runtime.cache_dir import FORMAT_DIR, cache_dir, usable_dir, warn_once
from diffgpu.runtime.cache_key import (  # noqa: F401  (the cache's public names)
    cache_key, compiler_fingerprint, is_definition, source_fingerprint)

MAGIC = b"DIFFGPU-CACHE 1"
SUFFIX = ".dgc"
#: a hit re-stamps an entry's mtime (its LRU age) at most this often
TOUCH_EVERY_S = 10.0
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def entry_path(key: str, directory: str | None = None) -> str:
    return os.path.join(directory or cache_dir(), FORMAT_DIR, key + SUFFIX)


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


def read_entry(path: str) -> bytes | None:
    """The bytes of the entry file at `path`, or None: missing, or refused (a
    symlink, not a regular file, not ours, writable by others; warned once).
    A hit older than TOUCH_EVERY_S gets a fresh mtime: its LRU age."""
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if os.path.islink(path):
            warn_once(path, f"diffgpu: refusing cache entry {path}: it is a symlink")
        elif not isinstance(exc, (NotADirectoryError, PermissionError)):
            warn_once(path, f"diffgpu: cannot read cache entry {path}: {exc.strerror}")
        return None
    try:
        st = os.fstat(fd)
        uid = os.geteuid() if hasattr(os, "geteuid") else st.st_uid
        if not stat.S_ISREG(st.st_mode) or st.st_uid != uid \
                or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            warn_once(path, f"diffgpu: refusing cache entry {path}: not a private file of "
                            f"this user (uid {st.st_uid}, mode {stat.S_IMODE(st.st_mode):04o})")
            return None
        chunks = []
        while True:
            chunk = os.read(fd, max(st.st_size, 1 << 16))
            if not chunk:
                break
            chunks.append(chunk)
        if time.time() - st.st_mtime > TOUCH_EVERY_S:
            try:
                os.utime(fd)
            except OSError:  # read-only media: the entry just ages
                pass
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def load(key: str, directory: str | None = None) -> dict | None:
    """The payload stored under `key`, or None (missing, corrupt, truncated,
    refused, or the cache directory is unsafe: see cache_dir.py)."""
    sub = usable_dir(directory)
    if sub is None:
        return None
    data = read_entry(os.path.join(sub, key + SUFFIX))
    if data is None:
        return None
    payload = decode_entry(data)
    if payload is None or payload.get("key") != key:
        return None
    return payload


def store(key: str, payload: dict, directory: str | None = None) -> str | None:
    """Write the entry atomically (mode 0600); returns its path, or None if the
    cache directory is not writable or not safe (a warning, never an error).
    Then prunes least recently used entries if the cache is over its cap."""
    payload = dict(payload, key=key)
    path = entry_path(key, directory)
    data = encode_entry(payload)
    tmp = None
    try:
        sub = usable_dir(directory, create=True)
        if sub is None:
            return None
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=SUFFIX, dir=sub)
        with os.fdopen(fd, "wb") as f:  # no fsync: a torn entry fails its checksum (a miss)
            f.write(data)
        os.replace(tmp, path)
        tmp = None
    except OSError as exc:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        root = directory or cache_dir()
        warn_once(root, f"diffgpu: cannot write cache entry {path}: {exc} (warned once per "
                        "cache directory and reason; kernels still run, compiled in memory)",
                  reason=exc.strerror or str(exc))
        return None
    cache_prune.account(sub, len(data))
    return path

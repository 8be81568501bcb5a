"""On-disk cache of compiled kernels, keyed without importing MLIR.

- keys: runtime/store/cache_key.py (kernel and callee sources, every compile-time
  value they resolve, types, target, diff mode, versions, compiler sources);
- where, and whether it is safe to use: runtime/store/cache_dir.py (ownership and
  permission checks; a directory other users can write is never read);
- size: runtime/store/cache_prune.py (`DIFFGPU_CACHE_MAX_MB`, least recently used
  entries pruned first).

Entry: one file `<dir>/v1/<key>.dgc`, mode 0600:

    DIFFGPU-CACHE 1 <sha256 of payload> <payload length>\\n<payload: JSON>

A GPU payload holds the PTX and its metadata (entry name, argument ABI); a
host payload holds the lowered LLVM-dialect text. Writes go to a temporary
file renamed into place (atomic); a corrupt or truncated entry fails its
checksum and is recompiled, never trusted. Readers open, then read: an entry
pruned or replaced meanwhile is still read whole, or is a miss. An entry that
is a symlink, not a regular file (a FIFO or a device is never waited on), or
not ours is refused. Only the bytes the header declares are read: an entry
of another size, or declaring more than MAX_ENTRY_BYTES, is a miss, unread.
A GPU or host payload whose code takes other arguments than the payload
says (runtime/store/entry_abi.py) is a miss too.
"""
from __future__ import annotations

import hashlib
import json
import os
import time

from diffgpu.runtime.store import cache_prune
from diffgpu.runtime.store import entry_abi
from diffgpu.runtime.store.cache_dir import (FORMAT_DIR, UnsafeCache, cache_dir, open_checked,
                                       usable_dir, warn_once)
from diffgpu.runtime.store.cache_key import (  # noqa: F401  (the cache's public names)
    cache_key, compiler_fingerprint, is_definition, source_fingerprint)

MAGIC = b"DIFFGPU-CACHE 1"
SUFFIX = ".dgc"
#: a hit re-stamps an entry's mtime (its LRU age) at most this often
TOUCH_EVERY_S = 10.0
#: the largest payload read (a cache entry or a bundle member): a bigger one is refused unread
MAX_ENTRY_BYTES = 256 << 20
#: the longest header: the magic, a sha256 in hex, a length of up to 20 digits
_HEADER_MAX = len(MAGIC) + 1 + 64 + 1 + 20 + 1
_CHUNK = 1 << 20
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
    except (ValueError, RecursionError):  # (UnicodeDecodeError is a ValueError)
        return None
    return payload if isinstance(payload, dict) else None


def entry_size(header: bytes) -> int | None:
    """The size in bytes of the entry whose first bytes are `header` (its
    header line and the payload length it declares), or None: not a header
    of at most MAX_ENTRY_BYTES of payload."""
    nl = header.find(b"\n")
    fields = header[:nl].split(b" ") if nl >= 0 else []
    if len(fields) != 4 or b" ".join(fields[:2]) != MAGIC or not fields[3].isdigit():
        return None
    length = int(fields[3])
    return nl + 1 + length if length <= MAX_ENTRY_BYTES else None


def read_entry(name: str, dir_fd: int, path: str) -> bytes | None:
    """The bytes of the entry file `name` in the open entry directory
    `dir_fd` (`path`: its full name), or None: missing, refused (a symlink,
    not a regular file, not ours, writable by others; warned once), or not
    the size its header declares (corrupt: nothing more is read). A hit older
    than TOUCH_EVERY_S gets a fresh mtime: its LRU age."""
    try:
        fd = open_checked(name, dir_fd, path, kind="file")
    except FileNotFoundError:
        return None
    except UnsafeCache as exc:
        warn_once(path, f"diffgpu: refusing cache entry {path}: not a private file of this "
                        f"user: {exc}")
        return None
    except OSError as exc:
        if not isinstance(exc, (NotADirectoryError, PermissionError)):
            warn_once(path, f"diffgpu: cannot read cache entry {path}: {exc.strerror}")
        return None
    try:
        st = os.fstat(fd)
        size = entry_size(os.pread(fd, _HEADER_MAX, 0))
        if size is None or size != st.st_size:
            return None
        chunks, left = [], size
        while left > 0:
            chunk = os.pread(fd, min(left, _CHUNK), size - left)
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
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
    refused, code whose argument layout is not the payload's (entry_abi), or
    the cache directory is unsafe: see cache_dir.py)."""
    d = usable_dir(directory)
    if d is None:
        return None
    with d:
        data = read_entry(key + SUFFIX, d.fd, os.path.join(d.sub, key + SUFFIX))
    payload = None if data is None else decode_entry(data)
    if payload is None or payload.get("key") != key:
        return None
    if payload.get("kind") in ("gpu", "host") and "flat_types" in payload \
            and entry_abi.problem(payload) is not None:
        return None  # code that does not take its arguments: recompiled, stored again
    return payload


def store(key: str, payload: dict, directory: str | None = None) -> str | None:
    """Write the entry atomically (mode 0600); returns its path, or None if the
    cache directory is not writable or not safe (a warning, never an error).
    Then prunes least recently used entries if the cache is over its cap."""
    data = encode_entry(dict(payload, key=key))
    root = directory or cache_dir()
    path = entry_path(key, root)
    try:
        d = usable_dir(root, create=True)
        if d is None:
            return None
        with d:
            _write_new(d.fd, key + SUFFIX, data)
            cache_prune.account(d, len(data))
    except OSError as exc:
        warn_once(root, f"diffgpu: cannot write cache entry {path}: {exc} (warned once per "
                        "cache directory and reason; kernels still run, compiled in memory)",
                  reason=exc.strerror or str(exc))
        return None
    return path


def _write_new(dir_fd: int, name: str, data: bytes) -> None:
    """`name` in the directory `dir_fd` becomes `data`, atomically: written
    to a new temporary file (0600; no fsync: a torn entry fails its checksum,
    a miss), then renamed over it. OSError if that fails (nothing is left)."""
    tmp = f".tmp-{os.urandom(8).hex()}{SUFFIX}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600, dir_fd=dir_fd)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=dir_fd)
        except OSError:
            pass
        raise

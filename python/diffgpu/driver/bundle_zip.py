"""Reading an untrusted zip in bounded time and memory (driver/bundle.py).

Every malformed bundle is a BundleError, never another exception and never
a wait or an allocation without bound:

| bounded                    | how                                               |
|----------------------------|---------------------------------------------------|
| the file                   | a regular file only, opened without blocking      |
|                            | (a FIFO, `/dev/zero`, a directory are refused)    |
| the zip directory          | at most MAX_DIRECTORY_BYTES, checked before       |
|                            | zipfile reads it whole                            |
| members                    | at most MAX_MEMBERS, names checked in one pass    |
|                            | (a dict: a duplicate is found in linear time)     |
| one member, all members    | declared sizes at most MAX_MEMBER_BYTES (256 MiB) |
|                            | and MAX_BUNDLE_BYTES (1 GiB), refused unread;     |
|                            | read in 1 MiB chunks, never past the declared     |
|                            | size (a longer stream fails its CRC)              |
| compression                | stored or deflated, not encrypted                 |
| JSON                       | UTF-8, nested at most MAX_JSON_DEPTH (checked     |
|                            | before parsing: json recurses per level)          |
| errors of the zip layer    | ZIP_ERRORS (zlib.error, BadZipFile, EOFError,     |
|                            | ...) become BundleError                           |

    with open_zip(path) as (name, z, members):   # {member name: ZipInfo}
        data = read_member(z, members.pop("manifest.json"))
        manifest = parse_json(name, data)
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import struct
import zipfile
import zlib

from diffgpu.errors import DiffgpuError
from diffgpu.runtime.store.cache import MAX_ENTRY_BYTES


class BundleError(DiffgpuError, ValueError):
    """A bundle file that cannot be read."""


MAX_MEMBERS = 10_000
MAX_MEMBER_BYTES = MAX_ENTRY_BYTES      # one member, uncompressed (as a cache entry)
MAX_BUNDLE_BYTES = 1 << 30              # all members together, uncompressed
MAX_DIRECTORY_BYTES = MAX_MEMBERS * 512  # the zip's central directory
MAX_JSON_DEPTH = 32
_CHUNK = 1 << 20
#: what the zip layer raises on a damaged archive (zlib.error for a broken
#: stream, RuntimeError for a flag it cannot honour, struct.error, ...)
ZIP_ERRORS = (OSError, EOFError, ValueError, TypeError, KeyError, IndexError,
               OverflowError, RuntimeError, struct.error, zlib.error, zipfile.BadZipFile)
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_PAIR = re.compile(r"\[\]|\{\}")


def _open_regular(name: str):
    """The bundle file, opened without blocking (a FIFO) and checked to be a
    regular file (not a device, a directory or a FIFO)."""
    try:
        fd = os.open(name, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) |
                     getattr(os, "O_CLOEXEC", 0))
    except (OSError, ValueError) as exc:
        raise BundleError(f"{name}: cannot open bundle: {getattr(exc, 'strerror', None) or exc}"
                          ) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise BundleError(f"{name}: not a regular file")
    return os.fdopen(fd, "rb")


def _check_directory(name: str, f) -> None:
    """The zip's central directory, which ZipFile reads whole and turns into
    one object per member, is at most MAX_DIRECTORY_BYTES."""
    end = zipfile._EndRecData(f)  # the end record ZipFile reads first
    if end and end[zipfile._ECD_SIZE] > MAX_DIRECTORY_BYTES:
        raise BundleError(f"{name}: its zip directory is {end[zipfile._ECD_SIZE]} bytes, "
                          f"more than {MAX_DIRECTORY_BYTES}")


def check_members(name: str, z) -> dict:
    """{name: ZipInfo} of the archive: at most MAX_MEMBERS, each with a safe
    name seen once (one pass, a dict), stored or deflated, not encrypted, of
    at most MAX_MEMBER_BYTES and MAX_BUNDLE_BYTES in all (declared sizes)."""
    infos = z.infolist()
    if len(infos) > MAX_MEMBERS:
        raise BundleError(f"{name}: {len(infos)} members, more than {MAX_MEMBERS}")
    members, total = {}, 0
    for info in infos:
        n = info.filename
        if not safe_member(n):
            raise BundleError(f"{name}: unsafe member path {n!r:.200} (absolute, '..' or "
                              "a drive)")
        if n in members:
            raise BundleError(f"{name}: member {n!r:.200} appears more than once")
        members[n] = info
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED) \
                or info.flag_bits & 0x1:
            raise BundleError(f"{name}: member {n!r:.200} is encrypted or compressed with "
                              f"method {info.compress_type} (bundles are deflated)")
        if info.file_size > MAX_MEMBER_BYTES:
            raise BundleError(f"{name}: member {n!r:.200} is {info.file_size} bytes, more "
                              f"than {MAX_MEMBER_BYTES}")
        total += info.file_size
    if total > MAX_BUNDLE_BYTES:
        raise BundleError(f"{name}: its members are {total} bytes, more than "
                          f"{MAX_BUNDLE_BYTES}")
    return members


def read_member(z, info) -> bytes:
    """A member's bytes, inflated in chunks: never more than its declared
    size (zipfile stops there; a longer stream fails its CRC)."""
    chunks, n = [], 0
    with z.open(info) as f:
        while True:
            chunk = f.read(_CHUNK)
            if not chunk:
                break
            n += len(chunk)
            if n > info.file_size:
                raise BundleError(f"member {info.filename!r:.200} is larger than it declares")
            chunks.append(chunk)
    return b"".join(chunks)


def parse_json(where: str, data: bytes):
    """The value of UTF-8 JSON `data` nested at most MAX_JSON_DEPTH deep
    (checked before parsing: json recurses once per level)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise BundleError(f"{where}: not UTF-8 JSON") from None
    brackets = _NOT_BRACKET.sub("", _JSON_STRING.sub("", text))
    for _ in range(MAX_JSON_DEPTH):  # each round removes the innermost level
        if not brackets:
            break
        brackets = _PAIR.sub("", brackets)
    if brackets:
        raise BundleError(f"{where}: JSON nested deeper than {MAX_JSON_DEPTH} (or unbalanced)")
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise BundleError(f"{where}: not JSON: {exc}") from None


def safe_member(name: str) -> bool:
    """A relative zip member name that stays inside the archive."""
    if not name or name.startswith(("/", "\\")) or "\\" in name or ":" in name:
        return False
    return all(part not in ("..", "") for part in name.rstrip("/").split("/"))


@contextlib.contextmanager
def open_zip(path):
    """`with open_zip(path) as (name, z, members):` the bundle file `path`
    (a str, bytes or os.PathLike) as an open ZipFile and its checked
    members (check_members); what the zip layer raises inside the block,
    there or in the caller's reads, becomes a BundleError."""
    if not isinstance(path, (str, bytes, os.PathLike)):
        raise BundleError(f"load_bundle takes a path (str, bytes or os.PathLike), "
                          f"got {type(path).__name__}")
    try:
        name = os.fsdecode(os.fspath(path))
    except TypeError as exc:  # a PathLike whose __fspath__ returns another type
        raise BundleError(f"load_bundle takes a path: {exc}") from None
    try:
        with _open_regular(name) as f:
            _check_directory(name, f)
            with zipfile.ZipFile(f) as z:
                yield name, z, check_members(name, z)
    except BundleError:
        raise
    except ZIP_ERRORS as exc:  # a damaged archive, as the zip layer finds it
        raise BundleError(f"{name}: cannot read bundle: {type(exc).__name__}: {exc}") from None

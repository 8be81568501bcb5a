"""Every path the disk cache touches is checked like its root, and used
through open, checked directories: a trash or lock that is a symlink (or not
ours, or writable by others), a FIFO for an entry, an entry grown huge, a
directory swapped for a link after its check: each is refused with one
warning or a one-line error, and nothing outside the cache is touched."""
import hashlib
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import diffgpu as dg
from diffgpu.runtime.store import cache
from diffgpu.runtime.store import cache_dir as cdir

KEY = "e" * 64


@dg.kernel
def triple(X):
    X[0] = X[0] * 3.0


@pytest.fixture
def root(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("DIFFGPU_CACHE_DIR", str(d))
    monkeypatch.setattr(cdir, "_warned", set())
    return d


@pytest.fixture
def victim(tmp_path):
    """A directory outside the cache with files in it."""
    d = tmp_path / "precious"
    d.mkdir()
    for n in ("a.txt", "b.dgc"):
        (d / n).write_text("keep me")
    return d


def intact(victim):
    return sorted(os.listdir(victim)) == ["a.txt", "b.dgc"] and all(
        (victim / n).read_text() == "keep me" for n in ("a.txt", "b.dgc"))


def one_warning(fn, match):
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        out = fn()
    msgs = [str(w.message) for w in got if issubclass(w.category, RuntimeWarning)]
    assert len(msgs) == 1 and match in msgs[0] and "\n" not in msgs[0], msgs
    return out


def cli(root, *args):
    env = dict(os.environ, DIFFGPU_CACHE_DIR=str(root))
    out = subprocess.run([sys.executable, "-m", "diffgpu", "cache", *args], env=env,
                         capture_output=True, text=True, timeout=120)
    return out.returncode, out.stdout + out.stderr


def one_line_error(rc, out, match):
    assert rc == 2 and "Traceback" not in out, out
    (line,) = out.strip().splitlines()
    assert "error:" in line and match in line, out


def test_symlinked_trash_on_a_first_launch(root, victim):
    # the reproducer: a fresh cache whose v1.trash links elsewhere; the
    # first store prunes (no size recorded yet) and emptied the linked directory
    root.mkdir(mode=0o700)
    os.symlink(victim, root / "v1.trash")
    triple._programs.clear()
    X = np.array([1.0])
    one_warning(lambda: triple[1, 1](X), "v1.trash is a symlink")
    assert X[0] == 3.0 and intact(victim)
    assert len(list((root / "v1").glob("*.dgc"))) == 1  # the entry is still stored


@pytest.mark.parametrize("action", [["clear"], ["prune", "--to-mb", "0"]])
def test_symlinked_trash_cli(root, victim, action):
    cache.store(KEY, {"v": 1})
    os.symlink(victim, root / "v1.trash")
    rc, out = cli(root, *action)
    one_line_error(rc, out, "v1.trash is a symlink")
    assert intact(victim) and cache.load(KEY) == {"v": 1, "key": KEY}  # nothing changed


def test_trash_writable_by_others_is_not_emptied(root):
    # a trash another user could fill is not ours to empty
    cache.store(KEY, {"v": 1})
    trash = root / "v1.trash"
    trash.mkdir(mode=0o700)
    trash.chmod(0o777)
    (trash / "planted").write_text("x")
    rc, out = cli(root, "clear")
    one_line_error(rc, out, "writable by other users")
    assert (trash / "planted").exists() and cache.load(KEY) is not None


@pytest.mark.parametrize("kind", ["symlink", "directory", "fifo"])
def test_lock_that_is_not_a_private_file(root, tmp_path, kind):
    cache.store(KEY, {"v": 1})
    lock = root / "v1.lock"
    lock.unlink()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_text("precious")
    {"symlink": lambda: os.symlink(elsewhere, lock), "directory": lock.mkdir,
     "fifo": lambda: os.mkfifo(lock)}[kind]()
    for action in (["clear"], ["prune"], ["prune", "--to-mb", "0"]):
        rc, out = cli(root, *action)
        one_line_error(rc, out, "v1.lock is " + ("a symlink" if kind == "symlink"
                                                 else "not a regular file"))
    assert elsewhere.read_text() == "precious" and cache.load(KEY) is not None


def test_lock_writable_by_others_is_refused(root):
    cache.store(KEY, {"v": 1})
    (root / "v1.lock").chmod(0o666)
    key = "f" * 64
    one_warning(lambda: cache.store(key, {"v": 2}), "v1.lock is writable by other users")
    assert cache.load(key) == {"v": 2, "key": key}  # stored; only the cap is not kept


@pytest.mark.parametrize("mb", ["nan", "inf", "1e400", "-1", "ten"])
def test_cli_bad_size_is_a_one_line_error(root, mb):
    cache.store(KEY, {"v": 1})
    rc, out = cli(root, "prune", "--to-mb", mb)
    assert rc == 2 and "Traceback" not in out, out
    assert f"argument --to-mb: {mb!r} is not a finite number of MiB" in out
    assert cache.load(KEY) is not None


FIFO_LOAD = """
import os, sys, warnings
from diffgpu.runtime.store import cache
key = "e" * 64
cache.store(key, {"v": 1})
path = cache.entry_path(key)
os.unlink(path)
os.mkfifo(path)
with warnings.catch_warnings(record=True) as got:
    warnings.simplefilter("always")
    print(cache.load(key), "|", "; ".join(str(w.message) for w in got))
"""


def test_fifo_entry_does_not_block(root):
    # the open came before the regular-file check and waited for a writer
    # forever; the timeout is only a safety net for that regression
    env = dict(os.environ, DIFFGPU_CACHE_DIR=str(root))
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(FIFO_LOAD)], env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("None |") and "is not a regular file" in out.stdout


class CountReads:
    """os.read / os.pread counting the bytes asked for; a call asking for
    more than `limit` bytes fails before reading anything."""

    def __init__(self, monkeypatch, limit):
        self.asked, self.limit = 0, limit
        for name in ("read", "pread"):
            real = getattr(os, name)
            monkeypatch.setattr(os, name, self.wrap(real))

    def wrap(self, real):
        def counted(fd, n, *offset):
            self.asked += n
            assert self.asked <= self.limit, f"asked for {self.asked} bytes"
            return real(fd, n, *offset)
        return counted


@pytest.mark.parametrize("declared", ["its own size", "3 GiB"])
def test_huge_entry_is_refused_unread(root, monkeypatch, declared):
    # a sparse 3 GiB entry (truncate): the old reader read it whole
    path = cache.store(KEY, {"v": 1})
    if declared == "3 GiB":  # a header that claims the whole file
        body = b"{}"
        with open(path, "wb") as f:
            f.write(cache.MAGIC + f" {'0' * 64} {(3 << 30) - 100}\n".encode() + body)
    os.truncate(path, 3 << 30)
    reads = CountReads(monkeypatch, limit=1 << 16)
    assert cache.load(KEY) is None
    assert 0 < reads.asked <= 4096
    monkeypatch.undo()
    assert cache.store(KEY, {"v": 2}) and cache.load(KEY) == {"v": 2, "key": KEY}


def test_entry_directory_swapped_after_its_check(root, tmp_path, monkeypatch):
    # v1 replaced by a link to a directory holding a planted (intact) entry
    # between check_root and the read: the read goes through the checked fd
    path = cache.store(KEY, {"v": "ours"})
    planted = tmp_path / "planted"
    planted.mkdir(mode=0o700)
    (planted / os.path.basename(path)).write_bytes(
        cache.encode_entry({"v": "planted", "key": KEY}))
    real = cdir.check_root

    def check_then_swap(r, sub=None):
        problem = real(r, sub)
        if not os.path.islink(root / "v1"):
            os.rename(root / "v1", tmp_path / "old-v1")
            os.symlink(planted, root / "v1")
        return problem
    monkeypatch.setattr(cdir, "check_root", check_then_swap)
    assert one_warning(lambda: cache.load(KEY), "v1 is a symlink") is None


def test_deeply_nested_entry_is_a_miss(root):
    # an intact checksum over JSON nested past the recursion limit
    path = cache.store(KEY, {"v": 1})
    body = b'{"key": "' + KEY.encode() + b'", "v": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    with open(path, "wb") as f:
        f.write(cache.MAGIC + f" {hashlib.sha256(body).hexdigest()} {len(body)}\n".encode()
                + body)
    assert cache.load(KEY) is None

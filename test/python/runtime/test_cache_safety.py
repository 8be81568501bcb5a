"""Cache entries are code we run: a cache directory other users can write is
never read (one warning, then compile in memory), entries that are symlinks
or not ours are refused, and what we create is private (0700 / 0600)."""
import os
import stat
import warnings

import numpy as np
import pytest

import diffgpu as dg
from diffgpu.driver.launch import STATS
from diffgpu.runtime.store import cache
from diffgpu.runtime.store import cache_dir as cdir
from diffgpu.types import ArrayType

OTHER_UID = 12345
KEY = "d" * 64
needs_root = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                                reason="chown to another uid needs root (CI runs as root)")


@dg.kernel
def double(X):
    X[0] = X[0] * 2.0


@dg.kernel
def hundred(X):
    X[0] = X[0] * 100.0


@pytest.fixture(autouse=True)
def fresh_warnings(monkeypatch):
    monkeypatch.setattr(cdir, "_warned", set())


def use(monkeypatch, path):
    monkeypatch.setenv("DIFFGPU_CACHE_DIR", str(path))
    return path


def refused(fn, match):
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        out = fn()
    msgs = [str(w.message) for w in got if issubclass(w.category, RuntimeWarning)]
    assert len(msgs) == 1 and match in msgs[0], msgs
    assert "\n" not in msgs[0]
    return out


def test_created_dirs_are_private_and_entries_0600(tmp_path, monkeypatch):
    root = use(monkeypatch, tmp_path / "a" / "b" / "cache")
    path = cache.store(KEY, {"v": 1})
    for d in (root.parent.parent, root.parent, root, root / "v1"):
        assert stat.S_IMODE(os.stat(d).st_mode) == 0o700, d
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert cache.load(KEY) == {"v": 1, "key": KEY}


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o722])
def test_group_or_world_writable_root_is_not_used(tmp_path, monkeypatch, mode):
    # the reproducer: mkdir -m 777 /tmp/shared; DIFFGPU_CACHE_DIR=/tmp/shared
    root = use(monkeypatch, tmp_path / "shared")
    root.mkdir()
    root.chmod(mode)
    assert refused(lambda: cache.store(KEY, {"v": 1}), "writable by other users") is None
    assert not (root / "v1").exists()  # nothing created there
    # one warning per process: the next use is silent
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cache.load(KEY) is None


def test_writable_parent_needs_sticky_bit(tmp_path, monkeypatch):
    # a parent others can write may swap our directory unless it is sticky (/tmp)
    parent = tmp_path / "open"
    parent.mkdir()
    root = use(monkeypatch, parent / "cache")
    root.mkdir(mode=0o700)
    parent.chmod(0o777)
    assert refused(lambda: cache.store(KEY, {"v": 1}), f"its parent {parent}") is None
    parent.chmod(0o1777)
    assert cache.store(KEY, {"v": 1}) is not None and cache.load(KEY)["v"] == 1


@needs_root
def test_root_owned_by_another_user_is_not_used(tmp_path, monkeypatch):
    root = use(monkeypatch, tmp_path / "theirs")
    root.mkdir(mode=0o700)
    os.chown(root, OTHER_UID, OTHER_UID)
    assert refused(lambda: cache.load(KEY), f"owned by uid {OTHER_UID}") is None
    assert cache.store(KEY, {"v": 1}) is None
    assert list(root.iterdir()) == []


@needs_root
def test_parent_owned_by_another_user_is_not_used(tmp_path, monkeypatch):
    parent = tmp_path / "theirs"
    parent.mkdir(mode=0o755)
    root = use(monkeypatch, parent / "cache")
    os.chown(parent, OTHER_UID, OTHER_UID)
    assert refused(lambda: cache.store(KEY, {"v": 1}), f"parent {parent}") is None
    assert not root.exists()  # never created under an unsafe parent


def test_symlinked_entry_is_refused(tmp_path, monkeypatch):
    # an entry that is a symlink to a file elsewhere (even an intact one) is not read
    use(monkeypatch, tmp_path / "cache")
    path = cache.store(KEY, {"v": 1})
    elsewhere = tmp_path / "elsewhere.dgc"
    os.replace(path, elsewhere)
    os.symlink(elsewhere, path)
    assert refused(lambda: cache.load(KEY), "symlink") is None


def test_symlinked_entry_directory_is_refused(tmp_path, monkeypatch):
    root = use(monkeypatch, tmp_path / "cache")
    cache.store(KEY, {"v": 1})
    os.rename(root / "v1", tmp_path / "real-v1")
    os.symlink(tmp_path / "real-v1", root / "v1")
    assert refused(lambda: cache.load(KEY), "symlink") is None


@needs_root
def test_entry_owned_by_another_user_is_refused(tmp_path, monkeypatch):
    use(monkeypatch, tmp_path / "cache")
    path = cache.store(KEY, {"v": 1})
    os.chown(path, OTHER_UID, OTHER_UID)
    assert refused(lambda: cache.load(KEY), "not a private file") is None
    os.chown(path, 0, 0)
    os.chmod(path, 0o666)
    cdir._warned.clear()
    assert refused(lambda: cache.load(KEY), "not a private file") is None


def plant(tmp_path, monkeypatch, victim_root):
    """An attacker's entry: `hundred`'s code stored under `double`'s key, with a
    correct checksum (computed as we would)."""
    X = np.array([1.0])
    use(monkeypatch, tmp_path / "attacker")
    hundred._programs.clear()
    hundred[1, 1](X)
    assert X[0] == 100.0
    (evil,) = (tmp_path / "attacker" / "v1").glob("*.dgc")
    key = cache.cache_key(double, (ArrayType("float64", 1),), "host")
    payload = cache.decode_entry(evil.read_bytes())
    (victim_root / "v1").mkdir(parents=True, exist_ok=True)
    target = victim_root / "v1" / (key + cache.SUFFIX)
    target.write_bytes(cache.encode_entry(dict(payload, key=key)))
    return target


@pytest.mark.parametrize("how", ["world-writable", "other-owner"])
def test_planted_entry_is_never_loaded(tmp_path, monkeypatch, how):
    # a valid entry (right key, right checksum) planted in a directory that
    # fails the checks is not run: the kernel compiles and gives its own result
    if how == "other-owner" and os.geteuid() != 0:
        pytest.skip("chown to another uid needs root (CI runs as root)")
    victim = tmp_path / "victim"
    victim.mkdir(mode=0o700)
    target = plant(tmp_path, monkeypatch, victim)
    # control: the planted entry is a working entry when the directory is ours
    use(monkeypatch, victim)
    assert cache.load(target.name[:-len(cache.SUFFIX)]) is not None
    if how == "world-writable":
        victim.chmod(0o777)
    else:
        for p in (victim, victim / "v1", target):
            os.chown(p, OTHER_UID, OTHER_UID)
    double._programs.clear()
    X = np.array([1.0])
    c0 = STATS["compile"]
    refused(lambda: double[1, 1](X), "not using the disk cache")
    assert X[0] == 2.0 and STATS["compile"] == c0 + 1

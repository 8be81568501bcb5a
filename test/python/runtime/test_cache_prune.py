"""A bounded cache: DIFFGPU_CACHE_MAX_MB, least-recently-used pruning that is
safe with concurrent processes, and `python -m diffgpu cache info|clear|prune`."""
import os
import subprocess
import sys
import threading
import time

import pytest

from diffgpu.runtime.store import cache
from diffgpu.runtime.store import cache_dir as cdir
from diffgpu.runtime.store import cache_prune

ENTRY = 10_000  # bytes of padding per test entry


@pytest.fixture
def root(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("DIFFGPU_CACHE_DIR", str(d))
    monkeypatch.setattr(cdir, "_warned", set())
    return d


def put(name, age_s=None):
    """Store an entry of about ENTRY bytes; optionally make it `age_s` old."""
    key = name * 64 if len(name) == 1 else name.ljust(64, "0")
    path = cache.store(key, {"pad": "x" * ENTRY})
    if age_s is not None:
        t = time.time() - age_s
        os.utime(path, (t, t))
    return key


def entries(root):
    return sorted(p.name[:-len(cache.SUFFIX)] for p in (root / "v1").glob("*" + cache.SUFFIX))


def size(root):
    return sum(p.stat().st_size for p in (root / "v1").glob("*" + cache.SUFFIX))


def test_cap_holds_and_oldest_go_first(root, monkeypatch):
    # cap of ~5 entries: after each store the cache fits; the survivors are
    # the most recent ones
    monkeypatch.setenv("DIFFGPU_CACHE_MAX_MB", str(5.5 * ENTRY / (1 << 20)))
    cap = cache_prune.max_bytes()
    keys = []
    for i, name in enumerate("abcdefghij"):
        keys.append(put(name, age_s=1000 - i * 10))  # a oldest ... j newest
        assert size(root) <= cap
    left = entries(root)
    assert left and left == sorted(keys[-len(left):]), left
    assert not any((root / "v1.trash").iterdir())  # nothing left in the trash


def test_a_hit_makes_an_entry_recent(root, monkeypatch):
    monkeypatch.setenv("DIFFGPU_CACHE_MAX_MB", str(4.5 * ENTRY / (1 << 20)))
    a, b, c, d = (put(n, age_s=1000 - i * 100) for i, n in enumerate("abcd"))
    assert cache.load(a) is not None  # a: oldest, but used now
    put("e")                          # over the cap: prune to 80%
    left = entries(root)
    assert a in left and b not in left, left


def test_reader_of_a_pruned_entry_reads_it_whole(root):
    # a reader that opened an entry before it was pruned still reads it all;
    # a reader that comes after sees a miss
    key = put("a")
    path = cache.entry_path(key)
    fd = os.open(path, os.O_RDONLY)
    try:
        cache_prune.clear(str(root / "v1"))
        assert not os.path.exists(path)
        data = b""
        while chunk := os.read(fd, 4096):
            data += chunk
    finally:
        os.close(fd)
    assert cache.decode_entry(data)["key"] == key
    assert cache.load(key) is None


def test_vanished_entries_and_dead_writers(root, monkeypatch):
    # entries removed behind the ledger's back, temporary files of writers
    # that died an hour ago, and a dead pruner's trash go at the next prune
    monkeypatch.setenv("DIFFGPU_CACHE_MAX_MB", str(3.5 * ENTRY / (1 << 20)))
    keys = [put(n, age_s=500 - i) for i, n in enumerate("abc")]
    os.unlink(cache.entry_path(keys[0]))  # vanished
    dead = root / "v1" / ".tmp-dead.dgc"
    dead.write_bytes(b"half")
    os.utime(dead, (time.time() - 7200,) * 2)
    fresh = root / "v1" / ".tmp-alive.dgc"
    fresh.write_bytes(b"writing")
    (root / "v1.trash").mkdir(mode=0o700)
    orphan = root / "v1.trash" / "x.dgc.123.456"  # a pruner died between rename and unlink
    orphan.write_bytes(b"old")
    put("d")
    put("e")  # over the cap: prune runs
    assert not dead.exists() and fresh.exists() and not orphan.exists()
    assert size(root) <= cache_prune.max_bytes()


def test_bad_cap_warns_and_uses_default(monkeypatch):
    monkeypatch.setattr(cdir, "_warned", set())
    for bad in ("lots", "-1", "0", "inf"):
        monkeypatch.setenv("DIFFGPU_CACHE_MAX_MB", bad)
        with pytest.warns(RuntimeWarning, match="not a positive number"):
            assert cache_prune.max_bytes() == cache_prune.DEFAULT_MAX_MB << 20
    monkeypatch.setenv("DIFFGPU_CACHE_MAX_MB", "2")
    assert cache_prune.max_bytes() == 2 << 20


def cli(root, *args):
    env = dict(os.environ, DIFFGPU_CACHE_DIR=str(root), DIFFGPU_CACHE_MAX_MB="64")
    out = subprocess.run([sys.executable, "-m", "diffgpu", "cache", *args], env=env,
                         capture_output=True, text=True, timeout=120)
    return out.returncode, out.stdout + out.stderr


def test_cli_info_prune_clear(root):
    for i, n in enumerate("abcd"):
        put(n, age_s=100 - i)
    rc, out = cli(root, "info")
    assert rc == 0 and "entries    4" in out and "of 64.0 MiB" in out and "in use" in out
    rc, out = cli(root, "prune", "--to-mb", str(2.5 * ENTRY / (1 << 20)))
    assert rc == 0 and "pruned 2 entries" in out, out
    assert len(entries(root)) == 2
    rc, out = cli(root, "clear")
    assert rc == 0 and "removed 2 entries" in out, out
    assert entries(root) == []
    rc, out = cli(root, "info")
    assert "entries    0" in out


def test_cli_refuses_unsafe_directory(root):
    put("a")
    root.chmod(0o777)
    rc, out = cli(root, "clear")
    assert rc == 1 and "writable by other users" in out
    assert len(entries(root)) == 1
    rc, out = cli(root, "info")
    assert rc == 1 and "not used" in out


WORKER = """
import os, sys
import numpy as np
import diffgpu as dg
from diffgpu.driver.launch import STATS
from diffgpu.runtime import cpu
# every module JITs at LLVM O0: half the cost per kernel; the cache stores the
# lowered module text, the same at any opt level, so the entries are unchanged
cpu.LARGE_MODULE_LINES = 0

w, n, hot, tmp = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]

def module(name, lo, hi):
    path = os.path.join(tmp, name + ".py")
    with open(path, "w") as f:
        f.write("import diffgpu as dg\\n")
        for i in range(lo, hi):
            f.write(f"@dg.kernel\\ndef k{i}(X):\\n    X[0] = X[0] * {i + 1}.0 + 0.5\\n")
    ns = {}
    exec(compile(open(path).read(), path, "exec"), ns)
    return ns

mine = module(f"w{w}", w * n, (w + 1) * n)
shared = module(f"shared{w}", 100000, 100000 + hot)  # the same kernels in every worker
for j, i in enumerate(range(w * n, (w + 1) * n)):
    X = np.array([2.0])
    mine[f"k{i}"][1, 1](X)
    assert X[0] == 2.0 * (i + 1) + 0.5, (i, X)
    if j % 25 == 0:  # re-load a shared kernel from disk (or rebuild it if pruned)
        h = 100000 + (j // 25 + w) % hot
        k = shared[f"k{h}"]
        k._programs.clear()
        X = np.array([2.0])
        k[1, 1](X)
        assert X[0] == 2.0 * (h + 1) + 0.5, (h, X)
print("ok", STATS["compile"], STATS["disk_hit"])
"""


def test_cap_holds_with_four_processes(tmp_path):
    # 160 distinct host kernels compiled by 4 processes at once into one 1 MB
    # cache (each entry ~16 KB, so about 60 fit: the cap is crossed more than
    # twice over, and pruned all along); every result is right, the
    # cap holds at the end, and while they run the cache never exceeds the
    # cap by more than one in-flight entry per process
    root = tmp_path / "cache"
    (tmp_path / "worker.py").write_text(WORKER)
    env = dict(os.environ, DIFFGPU_CACHE_DIR=str(root), DIFFGPU_CACHE_MAX_MB="1")
    cap = 1 << 20
    peak, stop = [0], threading.Event()

    def watch():
        while not stop.is_set():
            try:
                peak[0] = max(peak[0], sum(e.stat().st_size for e in os.scandir(root / "v1")
                                           if e.name.endswith(cache.SUFFIX)))
            except OSError:  # an entry pruned under us
                pass
            time.sleep(0.05)
    t = threading.Thread(target=watch)
    t.start()
    start = time.perf_counter()
    procs = [subprocess.Popen([sys.executable, str(tmp_path / "worker.py"), str(w), "40", "8",
                               str(tmp_path)], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for w in range(4)]
    try:
        outs = [p.communicate(timeout=600) for p in procs]
    finally:
        stop.set()
        t.join()
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0 and out.startswith("ok"), err[-3000:]
    compiles = sum(int(out.split()[1]) for out, _ in outs)
    assert compiles >= 160
    final = size(root)
    biggest = max(p.stat().st_size for p in (root / "v1").glob("*" + cache.SUFFIX))
    assert 0 < final <= cap, final
    assert peak[0] <= cap + 4 * biggest, (peak[0], biggest)
    for p in (root / "v1").glob("*" + cache.SUFFIX):
        assert cache.decode_entry(p.read_bytes()) is not None
    assert not list((root / "v1").glob(".tmp-*")) and not any((root / "v1.trash").iterdir())
    ledger = int((root / "v1.lock").read_text())
    assert ledger >= final
    print(f"4 processes, {compiles} compiles: {time.perf_counter() - start:.1f} s, "
          f"final {final} B, peak {peak[0]} B")


def test_symlinked_lock_is_refused_and_store_still_works(root, tmp_path):
    # the size ledger is opened without following symlinks: a planted link
    # only costs the cap (one warning), never a write through it
    put("a")
    elsewhere = tmp_path / "victim-file"
    elsewhere.write_text("precious")
    lock = root / "v1.lock"
    lock.unlink()
    os.symlink(elsewhere, lock)
    with pytest.warns(RuntimeWarning, match="size cap"):
        key = put("b")
    assert cache.load(key) is not None
    assert elsewhere.read_text() == "precious"

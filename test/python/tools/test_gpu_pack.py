"""scripts/gpu_pack.py and `gpu_all.sh --run TAG --part K`, on a fake prepared
tree (no GPU, no MLIR): every part within the limit, every case in exactly one
part, each part's `--only` list equal to the cases it carries, host programs
left out, the benches' caches in part 1 alone; and the run of one part runs
exactly what that part holds (a stand-in Python records the commands)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile

import numpy as np
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(REPO, "scripts"))
import gpu_check_io  # noqa: E402
import gpu_pack  # noqa: E402

from diffgpu.runtime.store.cache import encode_entry  # noqa: E402

MIB = 1 << 20
LIMIT = int(0.75 * MIB)
SOURCES = ["scripts/gpu_all.sh", "scripts/gpu_pack.py", "scripts/gpu_check.py"]


def _entry(path, kind, n):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(encode_entry({"kind": kind, "code": "x" * n}))


def _fake_tree(root, sizes, failed=()):
    """root/.gpucache: a manifest of len(sizes) cases (random, incompressible
    bytes of those sizes), GPU and host entries; root/bench/.cache; the sources."""
    rng = np.random.default_rng(0)
    check = os.path.join(root, ".gpucache")
    os.makedirs(check)
    cases = []
    for k, n in enumerate(sizes):
        if k in failed:  # not prepared: no file, still one part's row
            cases.append({"name": f"c{k}", "error": "CompileError: no"})
            continue
        np.savez(os.path.join(check, f"case{k}.npz"), a=rng.bytes(n))
        cases.append({"name": f"c{k}", "file": f"case{k}.npz"})
    with open(os.path.join(check, "manifest.json"), "w") as f:
        json.dump({"chip": "sm_90", "cases": cases}, f)
    with open(os.path.join(check, "bundle.dgb"), "wb") as f:
        f.write(b"bundle")
    for i in range(3):
        _entry(os.path.join(check, "cache", "v1", f"g{i}.dgc"), "gpu", 1000)
        _entry(os.path.join(check, "cache", "v1", f"h{i}.dgc"), "host", 1000)
    _entry(os.path.join(root, "bench", ".cache", "v1", "b.dgc"), "gpu", 100)
    for s in SOURCES:
        os.makedirs(os.path.join(root, os.path.dirname(s)), exist_ok=True)
        shutil.copy(os.path.join(REPO, s), os.path.join(root, s))


def _names(path):
    with tarfile.open(path) as t:
        return {m.name for m in t.getmembers() if m.isfile()}


def _part_json(path):
    with tarfile.open(path) as t:
        return json.load(t.extractfile(".gpucache/part.json"))


def _only(path, tmp_path, count):
    """The cases `gpu_check.py --run --only .gpucache/part.json` runs."""
    with tarfile.open(path) as t:
        data = t.extractfile(".gpucache/part.json").read()
    f = tmp_path / "only.json"
    f.write_bytes(data)
    return gpu_check_io.only_cases(str(f), count)


def _pack(root, limit=LIMIT, single=None):
    return gpu_pack.pack(str(root), ".gpucache", ["bench/.cache", "bench/.absent"], ".gpu",
                         limit, sources=SOURCES, single=single, log=lambda *a: None)


def test_parts_fit_and_hold_every_case_once(tmp_path):
    sizes = [200_000, 50_000, 300_000, 10_000, 400_000, 120_000, 250_000, 5_000, 350_000]
    _fake_tree(tmp_path, sizes, failed={7})
    parts = _pack(tmp_path)
    assert len(parts) >= 3  # ~1.7 MiB of incompressible cases, 0.75 MiB a part
    seen = []
    for rec in parts:
        path = tmp_path / ".gpu" / rec["file"]
        assert path.stat().st_size == rec["bytes"] <= LIMIT
        names = _names(path)
        meta = _part_json(path)
        assert meta["part"] == rec["part"] and meta["parts"] == len(parts)
        # the --only list: the cases whose files the part carries (and the failed one's row)
        carried = sorted(int(n[len(".gpucache/case"):-4]) for n in names
                         if n.startswith(".gpucache/case"))
        assert sorted(k for k in meta["cases"] if k != 7) == carried
        assert _only(path, tmp_path, len(sizes)) == set(meta["cases"])
        with open(tmp_path / ".gpu" / f"part{rec['part']}.json") as f:
            assert json.load(f) == meta["cases"] == rec["cases"]
        seen += meta["cases"]
        # the base in every part, host programs in none, the bench cache in part 1 alone
        assert {".gpucache/manifest.json", ".gpucache/bundle.dgb", *SOURCES} <= names
        assert {f".gpucache/cache/v1/g{i}.dgc" for i in range(3)} <= names
        assert not any("/h" in n for n in names if n.startswith(".gpucache/cache"))
        assert ("bench/.cache/v1/b.dgc" in names) == (rec["part"] == 1)
    assert sorted(seen) == list(range(len(sizes)))
    assert 0 in parts[0]["cases"]  # (the gradcheck and bundle rows run with case 0)


def test_everything_fits_one_part_and_the_single_tarball(tmp_path):
    _fake_tree(tmp_path, [1000, 2000, 3000])
    parts = _pack(tmp_path, limit=8 * MIB, single=".gpu.tar.xz")
    assert [p["cases"] for p in parts] == [[0, 1, 2]]
    single = tmp_path / ".gpu.tar.xz"
    assert single.read_bytes() == (tmp_path / ".gpu" / "part1.tar.xz").read_bytes()


def test_a_repack_removes_the_parts_of_a_larger_one(tmp_path):
    _fake_tree(tmp_path, [300_000] * 6)
    n = len(_pack(tmp_path))
    assert n >= 3
    assert len(_pack(tmp_path, limit=8 * MIB)) == 1
    assert sorted(os.listdir(tmp_path / ".gpu")) == ["part1.json", "part1.tar.xz", "parts.json"]


def test_a_case_too_big_for_any_part_is_an_error_and_writes_nothing(tmp_path):
    _fake_tree(tmp_path, [1000, 900_000])
    with pytest.raises(gpu_pack.PackError, match=r"case 1 \(\.gpucache/case1\.npz\)"):
        _pack(tmp_path)
    assert not (tmp_path / ".gpu" / "part1.tar.xz").exists()


def test_missing_manifest_is_an_error(tmp_path):
    os.makedirs(tmp_path / ".gpucache")
    with pytest.raises(gpu_pack.PackError, match="manifest"):
        _pack(tmp_path)


def _run_part(tmp_path, part_file, k, tag="t"):
    """Unpack a part into snap/ and run `gpu_all.sh --run TAG --part K` there
    with a stand-in Python that records its arguments."""
    snap = tmp_path / f"snap{part_file}"
    snap.mkdir()
    with tarfile.open(tmp_path / ".gpu" / part_file) as t:
        t.extractall(snap)
    log = tmp_path / f"calls{part_file}.txt"
    fake = tmp_path / "fakepy"
    fake.write_text("#!/bin/sh\nif [ \"$1\" = -c ]; then exec %s \"$@\"; fi\n"
                    "echo \"$*\" >> %s\n" % (sys.executable, log))
    fake.chmod(0o755)
    env = dict(os.environ, PYTHON=str(fake), OUT=str(tmp_path / f"out{part_file}"))
    r = subprocess.run(["bash", "scripts/gpu_all.sh", "--run", tag, "--part", str(k)], cwd=snap,
                       env=env, capture_output=True, text=True)
    calls = log.read_text().splitlines() if log.exists() else []
    return r, calls


def test_run_part_k_runs_what_part_k_holds(tmp_path):
    _fake_tree(tmp_path, [300_000] * 5)
    # part 1 also holds the benches' caches: a bench script with its cache
    _entry(str(tmp_path / "bench" / ".lcache" / "v1" / "l.dgc"), "gpu", 100)
    (tmp_path / "bench" / "launch_overhead.py").write_text("")
    parts = gpu_pack.pack(str(tmp_path), ".gpucache", ["bench/.lcache"], ".gpu", LIMIT,
                          sources=SOURCES + ["bench/launch_overhead.py"], single=None,
                          log=lambda *a: None)
    assert len(parts) >= 2
    r, calls = _run_part(tmp_path, "part1.tar.xz", 1)
    assert r.returncode == 0, r.stderr
    assert calls[0] == "scripts/gpu_check.py --run .gpucache --only .gpucache/part.json"
    assert calls[1] == "bench/launch_overhead.py --run bench/.lcache"
    assert calls[2].startswith("-m pytest -q -m gpu")
    assert "--deselect test/python/api/test_gpu.py::test_gpu_check_cache" in calls[2]
    assert len(calls) == 3
    assert os.path.exists(tmp_path / "outpart1.tar.xz" / "gpu_check-h200-t-part1.log")
    r, calls = _run_part(tmp_path, "part2.tar.xz", 2)
    assert r.returncode == 0, r.stderr
    assert calls == ["scripts/gpu_check.py --run .gpucache --only .gpucache/part.json"]


def test_run_the_wrong_part_is_refused(tmp_path):
    _fake_tree(tmp_path, [300_000] * 5)
    _pack(tmp_path)
    r, calls = _run_part(tmp_path, "part2.tar.xz", 3)
    assert r.returncode == 2 and "this snapshot holds part 2" in r.stderr
    assert calls == []


@pytest.mark.parametrize("content, message", [
    ('{"part": 2, "parts": 3, "cases": [0, 9]}', "no case 9 in the manifest"),
    ('{"part": 2}', "expected a list of case indices"),
    ('[1, "2"]', "expected a list of case indices"),
    ('[1, 2', "cannot read it"),
])
def test_only_files_gpu_check_refuses(tmp_path, content, message):
    f = tmp_path / "only.json"
    f.write_text(content)
    with pytest.raises(ValueError, match=message):
        gpu_check_io.only_cases(str(f), 5)
    f.write_text("[0, 4]")
    assert gpu_check_io.only_cases(str(f), 5) == {0, 4}

"""Bundles with launch-specialised variants (driver/aot.py, driver/bundle.py):
`dg.compile(..., grid=, block=, example_args=)` keeps the programs the JIT
path selects for those launches; a bundled launch computes its facts as the
JIT does and runs the variant compiled for exactly them, else the generic
program; malformed variant tables are refused."""
from __future__ import annotations

import hashlib
import json
import os
import sys
import zipfile

import numpy as np
import pytest

import diffgpu as dg
from diffgpu.driver.bundle import BundleError, load_bundle
from diffgpu.driver.launch import STATS
from diffgpu.errors import LaunchError
from diffgpu.runtime import gpu

HERE = os.path.dirname(os.path.abspath(__file__))
# normalised paths: a module imported through "driver/.." would carry that path into
# the source locations of its kernels (other tests compare them)
sys.path.insert(0, os.path.normpath(os.path.join(HERE, "..")))
sys.path.insert(0, os.path.normpath(os.path.join(HERE, "..", "..", "..", "bench")))
from kernels_elementwise import saxpy, square  # noqa: E402  (defined once)
import launch_overhead as LO  # noqa: E402  (the CuPy stand-in)
import vjp_overhead as VO  # noqa: E402

N = 1000
SQ = ("float32[:]", "float32[:]")
SAXPY = ("float32[:]", "float32", "float32[:]", "float32[:]")


def _f32(seed, n=N):
    return np.random.default_rng(seed).standard_normal(n).astype(np.float32)


def _bundle(tmp_path, compiled, name="b.dgb"):
    path = str(tmp_path / name)
    dg.save_bundle(path, compiled)
    return load_bundle(path)


def _counts():
    return STATS["bundle_variant"], STATS["bundle_generic"]


# ---------------------------------------------------------------------------
# host: bitwise the JIT's results; the variant when the facts match
# ---------------------------------------------------------------------------

def test_host_bundle_runs_its_variant_bitwise_like_the_jit(tmp_path):
    grid = (N + 127) // 128
    ex = [np.zeros(N, np.float32), np.float32(1.5), _f32(1), _f32(2)]
    c = dg.compile(saxpy, SAXPY, grid=grid, block=128, example_args=ex)
    assert len(c.variants) == 1
    (key,) = c.variants
    assert key.startswith("noalias=1")
    b = _bundle(tmp_path, [c])
    (entry,) = b.entries
    assert set(entry.variants) == {key}
    o, x, y = np.zeros(N, np.float32), _f32(3), _f32(4)
    before = _counts()
    launch = b["saxpy"][grid, 128]
    for _ in range(3):
        launch(o, np.float32(0.25), x, y)
    assert _counts() == (before[0] + 1, before[1])  # chosen once, then the kept Ready
    want = np.zeros(N, np.float32)
    saxpy[grid, 128](want, np.float32(0.25), x, y)
    assert want.tobytes() == o.tobytes()


def test_host_launch_whose_facts_match_no_variant_runs_the_generic_program(tmp_path):
    x = _f32(5)
    c = dg.compile(square, SQ, grid=8, block=128, example_args=[np.zeros(N, np.float32), x])
    b = _bundle(tmp_path, [c])
    before = _counts()
    inplace = x.copy()
    b["square"][8, 128](inplace, inplace)  # y and x one array: no noalias
    assert _counts() == (before[0], before[1] + 1)
    want = x.copy()
    square[8, 128](want, want)
    assert want.tobytes() == inplace.tobytes()


def test_compile_without_examples_has_no_variants():
    c = dg.compile(square, SQ)
    assert c.variants == {}


def test_bad_examples_are_value_errors():
    with pytest.raises(ValueError, match="need the launch's grid and block"):
        dg.compile(square, SQ, example_args=[np.zeros(4, np.float32)] * 2)
    with pytest.raises(ValueError, match=r"example_args\[0\] has 1 arguments"):
        dg.compile(square, SQ, grid=1, block=1, example_args=[np.zeros(4, np.float32)])
    with pytest.raises(ValueError, match=r"example_args\[1\] are \(float64"):
        dg.compile(square, SQ, grid=1, block=1,
                   example_args=[[np.zeros(4, np.float32)] * 2, [np.zeros(4)] * 2])


# ---------------------------------------------------------------------------
# GPU (sm_90) bundles, launched through the CuPy stand-in
# ---------------------------------------------------------------------------

@pytest.fixture
def launched(monkeypatch):
    """(entry name, grid) of each stand-in kernel launch."""
    VO.install_standin()
    seen = []

    class RawModule:
        def __init__(self, path=None, code=None):
            pass

        def get_function(self, name):
            return lambda grid, block, args: seen.append((name, tuple(grid)))

    sys.modules["cupy"].RawModule = RawModule
    monkeypatch.setattr(gpu, "_chips", {0: "sm_90"})
    monkeypatch.setattr(gpu, "_modules", {})
    yield seen
    sys.modules.pop("cupy", None)


def test_gpu_bundle_variant_is_the_jit_program(tmp_path, launched):
    n = 1 << 12
    ex = [np.zeros(n, np.float32), _f32(6, n)]
    c = dg.compile(square, SQ, target="sm_90", grid=n // 256, block=256, example_args=ex)
    (payload,) = c.variants.values()
    assert payload["coarsen"] == 4 and payload["lean"] == [True, True]
    jit = square.ir(*ex, stage="ptx", target="sm_90", grid=n // 256, block=256)
    assert payload["ptx"] == jit  # the very program a JIT launch of these facts compiles
    b = _bundle(tmp_path, [c])
    y, x = LO.StandinArray(np.zeros(n, np.float32)), LO.StandinArray(_f32(7, n))
    before = _counts()
    for _ in range(3):
        b["square"][n // 256, 256](y, x)
    reuse = STATS["fast_reuse"]
    b["square"][n // 256, 256](y, x)
    assert STATS["fast_reuse"] == reuse + 1  # a repeated launch: the kept Ready
    # (the first launch of a new array type takes the full path: chosen twice)
    assert _counts()[0] in (before[0] + 1, before[0] + 2) and _counts()[1] == before[1]
    assert launched == [("square", (n // 256 // 4, 1, 1))] * 4  # coarsened by 4
    # a misaligned view has other facts: the generic program, the grid as given
    del launched[:]
    big = LO.StandinArray(np.zeros(n + 1, np.float32))
    view = LO.StandinArray(np.asarray(big._h[1:]))
    variants = _counts()[0]
    b["square"][n // 256, 256](view, x)
    assert _counts() == (variants, before[1] + 1)
    assert launched == [("square", (n // 256, 1, 1))]


def test_big_grid_needs_its_fold_variant(tmp_path, launched):
    generic = _bundle(tmp_path, [dg.compile(square, SQ, target="sm_90")], "g.dgb")
    y, x = (LO.StandinArray(np.zeros(16, np.float32)) for _ in range(2))
    with pytest.raises(LaunchError, match="compiled for grids whose y and z extents fit"):
        generic["square"][(1, 70000), 32](y, x)
    assert launched == []
    folded = _bundle(tmp_path, [dg.compile(square, SQ, target="sm_90", grid=(1, 70000))])
    (key,) = folded.entries[0].variants
    assert key.endswith("grid_fold=70000,1")
    folded["square"][(1, 70000), 32](y, x)
    assert launched == [("square", (1, 35000, 2))]


# ---------------------------------------------------------------------------
# malformed variant tables
# ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def with_variants(tmp_path_factory):
    d = tmp_path_factory.mktemp("variants")
    n = 1 << 10
    sets = [[np.zeros(n, np.float32), _f32(8, n)],
            [np.zeros(n + 1, np.float32)[1:], _f32(9, n)]]  # aligned and not
    c = dg.compile(square, SQ, target="sm_90", grid=n // 256, block=256, example_args=sets)
    assert len(c.variants) == 2
    path = str(d / "v.dgb")
    dg.save_bundle(path, [c])
    return path


def _read(path):
    with zipfile.ZipFile(path) as z:
        files = {i.filename: z.read(i) for i in z.infolist()}
    return json.loads(files.pop("manifest.json")), files


def _write(path, manifest, files):
    for rec in manifest["entries"]:
        for r in [rec] + [v for v in rec.get("variants", []) if isinstance(v, dict)]:
            if isinstance(r.get("file"), str) and r["file"] in files:
                r["sha256"] = hashlib.sha256(files[r["file"]]).hexdigest()
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("manifest.json", json.dumps(manifest))
        for name, data in files.items():
            z.writestr(name, data)
    return path


def _edit_variant(payload):
    def edit(manifest, files):
        v = manifest["entries"][0]["variants"][0]
        p = json.loads(files[v["file"]])
        payload(p)
        files[v["file"]] = json.dumps(p).encode()
    return edit


def _swap_in_float64(manifest, files):
    """A variant whose code is the float64 program, its claims relabelled."""
    v = manifest["entries"][0]["variants"][0]
    p = json.loads(files[v["file"]])
    other = dg.compile(square, ("float64[:]", "float64[:]"), target="sm_90", grid=4,
                       block=256, example_args=[np.zeros(1024), np.zeros(1024)])
    q = dict(next(iter(other.variants.values())))
    for field in ("arg_types", "flat_types", "facts", "arg_names", "lean", "grid_fold"):
        q[field] = p.get(field)
    files[v["file"]] = json.dumps(q).encode()


def _dup(m, f):
    m["entries"][0]["variants"][1]["facts"] = m["entries"][0]["variants"][0]["facts"]


def _set(field, value):
    def edit(m, f):
        m["entries"][0]["variants"][0][field] = value
    return edit


@pytest.mark.parametrize("edit, match", [
    (lambda m, f: m["entries"][0].__setitem__("variants", {"a": 1}), "malformed variant table"),
    (lambda m, f: m["entries"][0].__setitem__("variants", [1]), "malformed variant table"),
    (lambda m, f: m["entries"][0].__setitem__("variants", m["entries"][0]["variants"] * 40),
     "malformed variant table"),
    (_dup, "two variants for one facts key"),
    (_set("facts", "noalias=1 contiguous=1 unit_dims=12"), "not the launch facts key of a "
                                                           "kernel with 2 arguments"),
    (_set("facts", "rm -rf"), "not the launch facts key"),
    (_set("file", "../x.json"), "unsafe member path"),
    (_set("file", "entries/9.json"), "no such member"),
    (_edit_variant(lambda p: p.__setitem__("facts", "noalias=0 contiguous=00 unit_dims=12")),
     "are not the table's"),
    (_edit_variant(lambda p: p.__setitem__("grid_fold", [70000, 1])), "are not the table's"),
    (_edit_variant(lambda p: p.__setitem__("arg_types", ["float64[:]", "float64[:]"])),
     "is not the entry's"),
    (_edit_variant(lambda p: p.__setitem__("target", "sm_80")), "target is 'sm_80'"),
    (_edit_variant(lambda p: p.__setitem__("lean", "yes")), "malformed entry"),
    (_swap_in_float64, "variant 0"),
    (lambda m, f: f.__setitem__("entries/0.json", json.dumps(dict(
        json.loads(f["entries/0.json"]), grid_fold=[70000, 1])).encode()),
     "an entry's own program is the generic one"),
])
def test_malformed_variant_tables_are_refused(tmp_path, with_variants, edit, match):
    manifest, files = _read(with_variants)
    edit(manifest, files)
    path = _write(str(tmp_path / "bad.dgb"), manifest, files)
    with pytest.raises(BundleError, match=match):
        load_bundle(path)


def test_a_flipped_variant_digest_is_refused(tmp_path, with_variants):
    manifest, files = _read(with_variants)
    v = manifest["entries"][0]["variants"][1]
    files[v["file"]] = files[v["file"]].replace(b"sm_90", b"sm_9O", 1)
    with zipfile.ZipFile(tmp_path / "flip.dgb", "w") as z:  # digests left as they were
        z.writestr("manifest.json", json.dumps(manifest))
        for name, data in files.items():
            z.writestr(name, data)
    with pytest.raises(BundleError, match="variant 1 is corrupt"):
        load_bundle(str(tmp_path / "flip.dgb"))


def test_untouched_variant_bundle_loads(with_variants):
    (entry,) = load_bundle(with_variants).entries
    assert len(entry.variants) == 2


def test_a_repeated_bundled_launch_is_the_jit_fast_path(tmp_path, launched):
    sys.path.insert(0, os.path.normpath(os.path.join(HERE, "..", "runtime")))
    from test_launch_one_way import returns, stays

    n = 1 << 12
    c = dg.compile(square, SQ, target="sm_90", grid=n // 256, block=256,
                   example_args=[np.zeros(n, np.float32), _f32(10, n)])
    launch = _bundle(tmp_path, [c])["square"][n // 256, 256]
    y, x = LO.StandinArray(np.zeros(n, np.float32)), LO.StandinArray(_f32(11, n))
    for _ in range(3):
        launch(y, x)
    seq = stays(lambda: launch(y, x))
    assert returns(seq) == [], seq
    assert seq == ["driver/aot.py", "runtime/fastpath.py", "runtime/gpu.py"], seq


def test_host_bundles_run_big_grids_as_they_are(tmp_path):
    @dg.kernel
    def rows(y):
        if dg.thread_id(0) == 0:
            y[dg.block_id(1)] = dg.grid_dim(1) + dg.block_id(1)

    b = _bundle(tmp_path, [dg.compile(rows, ("int64[:]",))])
    y = np.zeros(70000, np.int64)
    b["rows"][(1, 70000), 1](y)
    np.testing.assert_array_equal(y, 70000 + np.arange(70000))


def test_a_variant_bundle_runs_without_mlir(tmp_path):
    import subprocess

    n = 1 << 12
    c = dg.compile(square, SQ, target="sm_90", grid=n // 256, block=256,
                   example_args=[np.zeros(n, np.float32), _f32(12, n)])
    path = str(tmp_path / "nomlir.dgb")
    dg.save_bundle(path, [c])
    code = f"""
import sys
sys.modules["mlir"] = None  # any import of MLIR fails
sys.path.insert(0, {os.path.join(HERE, "..", "..", "..", "bench")!r})
import numpy as np
import vjp_overhead as VO, launch_overhead as LO
VO.install_standin()
import diffgpu as dg
from diffgpu.runtime import gpu
from diffgpu.driver.launch import STATS
gpu._chips[0] = "sm_90"
b = dg.load_bundle({path!r})
y, x = LO.StandinArray(np.zeros({n}, np.float32)), LO.StandinArray(np.ones({n}, np.float32))
b["square"][{n // 256}, 256](y, x)
print(STATS["bundle_variant"], STATS["bundle_generic"])
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["1", "0"], out.stdout

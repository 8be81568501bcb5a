"""Every malformed bundle is a BundleError, in bounded time and memory: bit
flips, deep JSON, non-path arguments, zip bombs, devices and FIFOs, too many
members; and code relabelled with another signature (digests recomputed) is
caught by the argument layout the code itself declares, in bundles and in
cache entries."""
import json
import os
import random
import struct
import subprocess
import sys
import types
import zipfile
import zlib

import numpy as np
import pytest

import diffgpu as dg
from diffgpu.driver.launch import STATS, build_payload
from diffgpu.driver import bundle_zip
from diffgpu.runtime.store import cache
from diffgpu.runtime.args import parse_type
from diffgpu.driver.bundle import BundleError, load_bundle

from test_cache_bundle import SIG, axpy, read, write

SIG64 = ("float64[:]", "float64[:]", "float64")


@dg.kernel
def corner(A):
    A[0, 0] = 1.0


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """{(target, which): bundle path} for axpy in float32 and float64 and for
    the 2-D `corner`."""
    d = tmp_path_factory.mktemp("bundles")
    out = {}
    for target in ("host", "sm_90"):
        for which, kernel, sig in (("f32", axpy, SIG), ("f64", axpy, SIG64),
                                   ("2d", corner, ("float32[:, :]",))):
            path = str(d / f"{target}-{which}.dgb")
            dg.save_bundle(path, [dg.compile(kernel, sig, target=target)])
            out[target, which] = path
    return out


def payloads(path):
    return [e.payload for e in load_bundle(path).entries]


@pytest.mark.parametrize("target", ["host", "sm_90"])
def test_bit_flips_load_equal_or_fail_cleanly(tmp_path, made, target):
    # 58 of 200 flips let zlib.error escape before; now each one is either
    # harmless (the same entries load) or a BundleError
    src = made[target, "f32"]
    data, want = open(src, "rb").read(), payloads(src)
    rng = random.Random(2024)
    path = tmp_path / "flipped.dgb"
    outcomes = set()
    for _ in range(200):
        b = bytearray(data)
        b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
        path.write_bytes(b)
        try:
            assert payloads(str(path)) == want
            outcomes.add("equal")
        except BundleError:
            outcomes.add("refused")
    assert outcomes == {"equal", "refused"}


def with_manifest(tmp_path, src, text: bytes):
    _, files = read(src)
    path = tmp_path / "m.dgb"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("manifest.json", text)
        for name, data in files.items():
            z.writestr(name, data)
    return str(path)


def test_deep_json_is_refused_before_parsing(tmp_path, made):
    deep = b"[" * 100_000 + b"]" * 100_000  # a RecursionError in json.loads before
    with pytest.raises(BundleError, match="nested deeper than 32"):
        load_bundle(with_manifest(tmp_path, made["host", "f32"], deep))
    # and in an entry, with its digest recomputed
    manifest, files = read(made["host", "f32"])
    files["entries/0.json"] = b'{"a": ' * 5000 + b"1" + b"}" * 5000
    with pytest.raises(BundleError, match="nested deeper than 32"):
        load_bundle(write(str(tmp_path / "e.dgb"), manifest, files))


def test_brackets_inside_strings_do_not_count(tmp_path, made):
    manifest, files = read(made["host", "f32"])
    manifest["note"] = "[[[[" * 100 + '\\"{{{{' * 100
    assert payloads(write(str(tmp_path / "s.dgb"), manifest, files)) == \
        payloads(made["host", "f32"])


class IntPath:
    def __fspath__(self):
        return 3


@pytest.mark.parametrize("arg", [None, 3, 1.5, ["k.dgb"], IntPath()])
def test_non_path_arguments_are_refused(arg):
    with pytest.raises(BundleError, match="load_bundle takes a path"):
        load_bundle(arg)


def member_offsets(data: bytes, name: str) -> tuple:
    """(local header, central header) offsets of member `name`."""
    i = data.index(b"PK\x01\x02")
    while True:
        n = struct.unpack_from("<H", data, i + 28)[0]
        if data[i + 46:i + 46 + n] == name.encode():
            return struct.unpack_from("<I", data, i + 42)[0], i
        i = data.index(b"PK\x01\x02", i + 46)


def bomb_bundle(tmp_path, src, stream: bytes, size: int, crc: int) -> str:
    """`src` with entries/0.json replaced by the raw deflate `stream`,
    declaring `size` bytes of CRC `crc` (written stored, then relabelled)."""
    manifest, files = read(src)
    path = tmp_path / "bomb.dgb"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        z.writestr("manifest.json", json.dumps(manifest))
        z.writestr("entries/0.json", stream)
    data = bytearray(path.read_bytes())
    local, central = member_offsets(data, "entries/0.json")
    for at in (local + 8, central + 10):  # method, (time, date), crc, sizes
        struct.pack_into("<H", data, at, zipfile.ZIP_DEFLATED)
        struct.pack_into("<I", data, at + 6, crc)
        struct.pack_into("<I", data, at + 14, size)
    path.write_bytes(data)
    return str(path)


def zeros_stream(mib: int, prefix: bytes = b"") -> bytes:
    """A raw deflate stream of `prefix` and `mib` MiB of zeros, built from
    one compressed MiB repeated (a full flush makes blocks independent)."""
    head = zlib.compressobj(9, zlib.DEFLATED, -15)
    start = head.compress(prefix) + head.flush(zlib.Z_FULL_FLUSH)
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = c.compress(b"\0" * (1 << 20)) + c.flush(zlib.Z_FULL_FLUSH)
    return start + block * mib + zlib.compressobj(9, zlib.DEFLATED, -15).flush()


@pytest.fixture
def inflated(monkeypatch):
    """[bytes zip members handed back] (reset it to start counting)."""
    count = [0]
    real = zipfile.ZipExtFile.read

    def counted(self, n=-1):
        data = real(self, n)
        count[0] += len(data)
        return data
    monkeypatch.setattr(zipfile.ZipExtFile, "read", counted)
    return count


def test_zip_bomb_that_declares_its_size_is_not_inflated(tmp_path, made, inflated):
    # 1 GiB of zeros in 1 MB: read whole, then found corrupt, before
    path = bomb_bundle(tmp_path, made["host", "f32"], zeros_stream(1024), 1 << 30, 0)
    inflated[0] = 0
    with pytest.raises(BundleError, match=f"is {1 << 30} bytes, more than {256 << 20}"):
        load_bundle(path)
    assert inflated[0] == 0


def test_zip_bomb_behind_a_small_size_is_read_to_that_size(tmp_path, made, inflated):
    # the entry's own bytes, then 64 MiB of zeros the sizes do not mention:
    # only the declared bytes are inflated and handed back
    _, files = read(made["host", "f32"])
    body = files["entries/0.json"]
    path = bomb_bundle(tmp_path, made["host", "f32"], zeros_stream(64, body), len(body),
                       zlib.crc32(body))
    want = payloads(made["host", "f32"])
    inflated[0] = 0
    assert payloads(path) == want
    assert inflated[0] <= len(body) + 1000  # the entry and the manifest


LOAD = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
from diffgpu.driver.bundle import BundleError, load_bundle
try:
    load_bundle(sys.argv[1])
except BundleError as exc:
    print("BundleError:", exc)
"""


@pytest.mark.parametrize("kind", ["fifo", "/dev/zero", "directory"])
def test_only_regular_files_are_read(tmp_path, kind):
    # a FIFO blocked the open forever, /dev/zero was read without bound: in
    # a subprocess with a timeout and a memory limit, as a safety net
    path = {"fifo": str(tmp_path / "f.dgb"), "/dev/zero": "/dev/zero",
            "directory": str(tmp_path)}[kind]
    if kind == "fifo":
        os.mkfifo(path)
    out = subprocess.run([sys.executable, "-c", LOAD, path], capture_output=True,
                         text=True, timeout=60)
    assert out.stdout.strip() == f"BundleError: {path}: not a regular file", out.stderr


def test_too_many_members_are_refused(tmp_path, made):
    manifest, files = read(made["host", "f32"])
    path = tmp_path / "many.dgb"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("manifest.json", json.dumps(manifest))
        for name, data in files.items():
            z.writestr(name, data)
        for i in range(40_000):  # 21-32 s of duplicate checks before
            z.writestr(f"pad/{i}", b"")
    with pytest.raises(BundleError, match="40002 members, more than 10000"):
        load_bundle(str(path))


def test_a_bundle_at_the_member_limit_loads(tmp_path, made):
    manifest, files = read(made["host", "f32"])
    pad = [(f"pad/{i}", b"") for i in range(bundle_zip.MAX_MEMBERS - 2)]
    path = write(str(tmp_path / "full.dgb"), manifest, files, pad)
    assert payloads(path) == payloads(made["host", "f32"])


class Name(str):
    """A member name that counts the equality tests made on it."""
    compared = 0

    def __eq__(self, other):
        Name.compared += 1
        return str.__eq__(self, other)

    __hash__ = str.__hash__


def test_duplicate_check_is_one_pass():
    # names.count(n) for every name made n^2 comparisons; a dict makes one,
    # for the one name that is there twice
    infos = []
    for name in [f"m/{i}" for i in range(5000)] + ["m/4999"]:
        info = zipfile.ZipInfo("x")
        info.filename = Name(name)
        infos.append(info)
    Name.compared = 0
    with pytest.raises(BundleError, match="'m/4999' appears more than once"):
        bundle_zip.check_members("b.dgb", types.SimpleNamespace(infolist=lambda: infos))
    assert Name.compared <= 2


def relabel(tmp_path, src, sig, name="r.dgb"):
    """`src` claiming signature `sig` everywhere a claim is (record, arg and
    flat types, argument descriptors), digests recomputed: only the code
    still says what it takes."""
    manifest, files = read(src)
    (rec,) = manifest["entries"]
    payload = json.loads(files[rec["file"]])
    payload["arg_types"] = payload["flat_types"] = list(sig)
    if payload.get("abi") is not None:
        payload["abi"] = [["memref", t.ndim, t.dtype] if hasattr(t, "ndim") else
                          ["scalar", t.dtype] for t in map(parse_type, sig)]
    rec["signature"] = ", ".join(sig)
    files[rec["file"]] = json.dumps(payload, sort_keys=True).encode()
    return write(str(tmp_path / name), manifest, files)


@pytest.mark.parametrize("target, which, sig, match", [
    ("host", "f64", SIG, r"@_mlir_ciface_axpy takes \(ptr, ptr, f64, .*need \(ptr, ptr, f32"),
    ("sm_90", "f64", SIG, r"parameter 10 of its PTX entry axpy is \.f64, its arguments need f32"),
    ("host", "2d", ("float32[:]",), r"@corner takes \(ptr, ptr, i64, i64, i64, i64, i64, i64"),
    ("sm_90", "2d", ("float32[:]",), r"PTX entry corner takes 7 parameters.* are 5"),
])
def test_code_relabelled_with_another_signature_is_refused(tmp_path, made, target, which, sig,
                                                           match):
    # float64 code under a float32 record loaded and corrupted memory
    # (`free(): invalid pointer`); a 2-D kernel under a 1-D record likewise
    with pytest.raises(BundleError, match=match):
        load_bundle(relabel(tmp_path, made[target, which], sig))
    # control: the same relabelling to the signature it has is accepted
    own = {"f64": SIG64, "2d": ("float32[:, :]",)}[which]
    src = made[target, which]
    assert payloads(relabel(tmp_path, src, own, "same.dgb")) == payloads(src)


@pytest.mark.parametrize("target", ["host", "sm_90"])
def test_relabelled_cache_entry_is_a_miss(tmp_path, monkeypatch, target):
    monkeypatch.setenv("DIFFGPU_CACHE_DIR", str(tmp_path / "cache"))
    t32, t64 = (tuple(map(parse_type, s)) for s in (SIG, SIG64))
    payload, _ = build_payload(axpy, t32, target)
    code = "llvm" if target == "host" else "ptx"
    other, _ = build_payload(axpy, t64, target)
    key = "9" * 64
    cache.store(key, payload)
    assert cache.load(key) == dict(payload, key=key)  # control
    cache.store(key, dict(payload, **{code: other[code]}))
    assert cache.load(key) is None


def test_relabelled_cache_entry_is_recompiled_and_runs_right(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    monkeypatch.setenv("DIFFGPU_CACHE_DIR", str(root))

    def run():
        A = np.zeros(4, np.float32)
        axpy[1, 4](A, np.ones(4, np.float32), np.float32(2.0))
        return A.tolist()
    axpy._programs.clear()
    assert run() == [2.0] * 4
    (entry,) = (root / "v1").glob("*.dgc")
    payload = cache.decode_entry(entry.read_bytes())
    other, _ = build_payload(axpy, tuple(map(parse_type, SIG64)), "host")
    entry.write_bytes(cache.encode_entry(dict(payload, llvm=other["llvm"])))
    axpy._programs.clear()
    c0 = STATS["compile"]
    assert run() == [2.0] * 4 and STATS["compile"] == c0 + 1


def test_each_record_reads_a_member_once(tmp_path, made):
    manifest, files = read(made["host", "f32"])
    manifest["entries"] = manifest["entries"] * 3  # one member, three records
    with pytest.raises(BundleError, match="no such member \\(or one another record names\\)"):
        load_bundle(write(str(tmp_path / "r.dgb"), manifest, files))


@dg.kernel
def sumsq(out, x):
    i = dg.global_id(0)
    if i < len(x):
        dg.atomic_add(out, 0, x[i] * x[i])


@pytest.mark.parametrize("target", ["host", "sm_90"])
@pytest.mark.parametrize("variant", ["plain", "reverse", "forward", "scratch", "lean"])
def test_compiled_code_fits_its_own_payload(target, variant):
    # no false alarms (each would be a recompile at every cache load): the
    # layouts of autodiff wrappers, per-launch scratch and the lean ABI
    from diffgpu.driver.launch import facts_for
    from diffgpu.runtime.store import entry_abi
    from diffgpu.runtime.args import infer_signature
    kernel, args, diff = axpy, (np.zeros(256, np.float32), np.ones(256, np.float32), 2.0), None
    if variant == "reverse":
        diff = ("reverse", ("dup", "dup", "active"))
    elif variant == "forward":
        diff = ("forward", ("dup", "const", "dup"))
    elif variant == "scratch":
        kernel, args = sumsq, (np.zeros(1, np.float32), np.ones(1 << 12, np.float32))
    types = infer_signature(args).types
    facts = None
    if variant in ("scratch", "lean"):
        facts = facts_for(args, types, target, (16, 1, 1), (256, 1, 1))
    payload, _ = build_payload(kernel, types, target, diff, facts)
    if variant == "scratch":
        assert ("grid_scratch" in payload["llvm"] if target == "host"
                else payload["abi"][-1][0] == "scratch")
    if variant == "lean" and target != "host":
        assert payload["lean"] == [True, True, False]
    assert entry_abi.problem(payload) is None

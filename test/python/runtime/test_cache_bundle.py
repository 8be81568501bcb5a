"""Bundles are code: load_bundle refuses zip path tricks, duplicate members,
and entries that are not what their manifest record claims (with digests
recomputed, so only the claim check can catch them)."""
import hashlib
import json
import zipfile

import numpy as np
import pytest

import diffgpu as dg
from diffgpu.driver.bundle import BundleError, load_bundle


@dg.kernel
def axpy(A, B, a):
    i = dg.global_id(0)
    if i < len(A):
        A[i] = A[i] + a * B[i]


SIG = ("float32[:]", "float32[:]", "float32")


@pytest.fixture(scope="module")
def bundles(tmp_path_factory):
    d = tmp_path_factory.mktemp("bundles")
    out = {}
    for target in ("host", "sm_90"):
        path = str(d / f"{target}.dgb")
        dg.save_bundle(path, [dg.compile(axpy, SIG, target=target)])
        out[target] = path
    return out


def read(path):
    with zipfile.ZipFile(path) as z:
        files = {i.filename: z.read(i) for i in z.infolist()}
    manifest = json.loads(files.pop("manifest.json"))
    return manifest, files


def write(path, manifest, files, extra=()):
    """A bundle with consistent digests: every record's sha256 is recomputed."""
    for rec in manifest["entries"]:
        if rec["file"] in files:
            rec["sha256"] = hashlib.sha256(files[rec["file"]]).hexdigest()
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("manifest.json", json.dumps(manifest))
        for name, data in list(files.items()) + list(extra):
            z.writestr(zipfile.ZipInfo(name), data)
    return path


def tampered(tmp_path, src, edit_payload=None, edit_record=None, rename=None, extra=()):
    manifest, files = read(src)
    (rec,) = manifest["entries"]
    payload = json.loads(files[rec["file"]])
    if edit_payload:
        edit_payload(payload)
    if edit_record:
        edit_record(rec)
    body = json.dumps(payload, sort_keys=True).encode()
    del files["entries/0.json"]
    files[rename or rec["file"]] = body
    if rename:
        rec["file"] = rename
    return write(str(tmp_path / "t.dgb"), manifest, files, extra)


def test_untouched_bundles_load_and_run(bundles):
    # control for every case below: the bundles as written are accepted
    b = load_bundle(bundles["host"])
    A = np.zeros(4, np.float32)
    b["axpy"][1, 4](A, np.ones(4, np.float32), np.float32(2.0))
    assert A.tolist() == [2.0] * 4
    (e,) = load_bundle(bundles["sm_90"]).entries
    assert e.target == "sm_90" and ".target sm_90" in e.ptx


@pytest.mark.parametrize("name", ["/abs/0.json", "../0.json", "entries/../../0.json",
                                  "entries//0.json", "C:/0.json", "entries\\..\\0.json"])
def test_member_path_tricks_are_refused(tmp_path, bundles, name):
    # the entry's own file moved to a path outside the archive's tree
    with pytest.raises(BundleError, match="unsafe member path"):
        load_bundle(tampered(tmp_path, bundles["host"], rename=name))


def test_stray_unsafe_member_is_refused(tmp_path, bundles):
    # a member nothing refers to, named to escape an extraction, still fails
    path = tampered(tmp_path, bundles["host"], extra=[("../../evil.py", b"print(1)")])
    with pytest.raises(BundleError, match="unsafe member path '../../evil.py'"):
        load_bundle(path)


@pytest.mark.filterwarnings("ignore:Duplicate name")  # zipfile warns while we build it
def test_duplicate_member_is_refused(tmp_path, bundles):
    manifest, files = read(bundles["host"])
    path = write(str(tmp_path / "d.dgb"), manifest, files,
                 extra=[("entries/0.json", files["entries/0.json"])])
    with pytest.raises(BundleError, match="more than once"):
        load_bundle(path)


def set_(key, value):
    return lambda d: d.__setitem__(key, value)


@pytest.mark.parametrize("src, edit_payload, edit_record, match", [
    # the record claims another chip than the payload's
    ("sm_90", None, set_("target", "sm_80"), "its target is 'sm_90', the manifest claims"),
    # payload and record agree on sm_80, but the PTX inside is for sm_90
    ("sm_90", set_("target", "sm_80"), set_("target", "sm_80"),
     "its PTX is for sm_90, the manifest claims sm_80"),
    # PTX for a kernel entry the payload does not name
    ("sm_90", set_("entry", "other"), None, "no .entry 'other'"),
    # GPU code dressed as a host entry, and host code dressed as GPU code
    ("sm_90", set_("target", "host"), set_("target", "host"), "must hold host code"),
    ("host", set_("target", "sm_90"), set_("target", "sm_90"), "must hold PTX"),
    # another kernel's name, another signature
    ("host", None, set_("name", "other"), "its name is 'axpy', the manifest claims 'other'"),
    ("host", set_("arg_types", ["float64[:]", "float64[:]", "float64"]), None,
     "compiled for \\(float64"),
])
def test_entries_must_be_what_they_claim(tmp_path, bundles, src, edit_payload, edit_record,
                                         match):
    with pytest.raises(BundleError, match=match):
        load_bundle(tampered(tmp_path, bundles[src], edit_payload, edit_record))


def test_docs_say_a_bundle_is_code():
    doc = " ".join(load_bundle.__doc__.split())
    assert "runs code" in doc and "like pickle" in doc and "only bundles you trust" in doc

"""Bundles: compiled kernels in one file, loadable without MLIR.

A bundle is a zip file holding `manifest.json` (format, diffgpu version,
one record per entry) and, per entry, `entries/<i>.json`: the cache payload
(PTX + ABI metadata for GPU targets, LLVM-dialect text for the host) with its
sha256 in the manifest. `load_bundle` checks every digest.

    dg.save_bundle("k.dgb", [dg.compile(k, ("float32[:]",), target="sm_90")])
    b = dg.load_bundle("k.dgb")
    b["k"][grid, block](x)       # picks the entry matching the arguments
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
import zipfile

from diffgpu._version import __version__
from diffgpu.errors import DiffgpuError, LaunchError

FORMAT = "diffgpu-bundle-1"


class BundleError(DiffgpuError, ValueError):
    """A bundle file that cannot be read."""


def save_bundle(path: str, compiled) -> str:
    """Write the CompiledKernels in `compiled` to `path` (atomically)."""
    from diffgpu.aot import CompiledKernel

    compiled = list(compiled)
    if not compiled or not all(isinstance(c, CompiledKernel) for c in compiled):
        raise TypeError("save_bundle takes a non-empty list of dg.compile(...) results")
    records, blobs = [], []
    for i, c in enumerate(compiled):
        body = json.dumps(c.payload, sort_keys=True).encode("utf-8")
        records.append({"name": c.name, "target": c.target, "signature": c.signature,
                        "file": f"entries/{i}.json", "sha256": hashlib.sha256(body).hexdigest()})
        blobs.append(body)
    manifest = {"format": FORMAT, "diffgpu": __version__, "entries": records}
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".dgb", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f, zipfile.ZipFile(f, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("manifest.json", json.dumps(manifest, indent=1))
            for rec, body in zip(records, blobs):
                z.writestr(rec["file"], body)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def load_bundle(path: str) -> "Bundle":
    """Read a bundle; BundleError if it is not an intact diffgpu bundle."""
    from diffgpu.aot import CompiledKernel

    try:
        with zipfile.ZipFile(path) as z:
            manifest = json.loads(z.read("manifest.json"))
            if manifest.get("format") != FORMAT:
                raise BundleError(f"{path}: not a {FORMAT} file")
            entries = []
            for rec in manifest["entries"]:
                body = z.read(rec["file"])
                if hashlib.sha256(body).hexdigest() != rec["sha256"]:
                    raise BundleError(f"{path}: entry {rec['file']} is corrupt")
                entries.append(CompiledKernel(json.loads(body)))
    except (OSError, KeyError, ValueError, zipfile.BadZipFile) as exc:
        if isinstance(exc, BundleError):
            raise
        raise BundleError(f"{path}: cannot read bundle: {exc}") from None
    return Bundle(entries)


class Bundle:
    """Loaded kernels by name: `bundle[name]` launches the entry matching the
    arguments' types and device."""

    def __init__(self, entries):
        self.entries = list(entries)

    def names(self) -> list[str]:
        return sorted({e.name for e in self.entries})

    def __contains__(self, name) -> bool:
        return any(e.name == name for e in self.entries)

    def __getitem__(self, name: str) -> "BundledKernel":
        found = [e for e in self.entries if e.name == name]
        if not found:
            raise KeyError(f"no kernel {name!r} in bundle (has: {', '.join(self.names())})")
        return BundledKernel(name, found)

    def __repr__(self) -> str:
        return f"<diffgpu bundle: {', '.join(repr(e) for e in self.entries)}>"


class BundledKernel:
    def __init__(self, name, entries):
        self.name, self.entries = name, entries

    def __getitem__(self, config):
        def run(*args):
            for e in self.entries:
                if e.matches(args):
                    return e[config](*args)
            sigs = "; ".join(f"({e.signature}) on {e.target}" for e in self.entries)
            self.entries[0][config]  # bad grid/block reports first
            from diffgpu.runtime.args import infer_signature
            sig = infer_signature(args, None, self.name)  # bad arguments report here
            got = ", ".join(str(t) for t in sig.types)
            raise LaunchError(f"{self.name}: no bundled entry for ({got}) on {sig.device}; "
                              f"the bundle has {sigs}")
        return run

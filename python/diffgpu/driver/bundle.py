"""Bundles: compiled kernels in one file, loadable without MLIR.

A bundle is a zip file holding `manifest.json` (format, diffgpu version,
one record per entry) and, per entry, `entries/<i>.json`: the cache payload
(PTX + ABI metadata for GPU targets, LLVM-dialect text for the host) with its
sha256 in the manifest.

    dg.save_bundle("k.dgb", [dg.compile(k, ("float32[:]",), target="sm_90")])
    b = dg.load_bundle("k.dgb")
    b["k"][grid, block](x)       # picks the entry matching the arguments

A bundle is code. Loading one and launching its kernels runs the PTX or the
host code inside it, like unpickling runs code: load only bundles you trust.
The digests catch damaged files, not malicious ones (a bundle's author writes
the digests too). `load_bundle` refuses, with a BundleError:

| refused                                      | example                          |
|----------------------------------------------|----------------------------------|
| a member name that is absolute or climbs out | `/etc/x`, `../x`, `entries/../x` |
| two members with the same name               | `entries/0.json` twice           |
| an entry whose digest is not the record's    | a flipped byte                   |
| an entry that is not what its record claims  | another name, signature, target  |
|                                              | or kind; PTX whose `.target` or  |
|                                              | `.entry` is another              |
| code whose own argument layout is not its    | float64 code under a float32     |
| signature's (runtime/store/entry_abi.py)           | record, a 2-D kernel as 1-D      |
| an entry that is not a plain kernel, or with | flat_types other than its        |
| fields of the wrong types                    | signature, `"coarsen": "x"`      |
| anything past a limit, or damaged (bit       | see driver/bundle_zip.py        |
| flips, bombs, FIFOs): in bounded time/memory |                                  |
| a malformed variant table (below)            | two variants for one facts key,  |
|                                              | a key that is no facts key, a    |
|                                              | variant of another signature     |

Launch-specialised variants (driver/aot.py): a record may list `variants`,
each `{"facts": key, "file": member, "sha256": digest}`, at most
aot.MAX_VARIANTS; each member is a payload checked like an entry (digest,
claims, fields, the code's own argument layout), of the entry's signature,
whose `facts` is the record's key (runtime/specialize.py `Facts.key`, with
as many per-argument flags as the kernel has arguments) and whose
`grid_fold` is the key's. A launch runs the variant whose key equals its
facts', else the entry's generic program.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
import zipfile

from diffgpu._version import __version__
from diffgpu.errors import LaunchError
from diffgpu.runtime.store import entry_abi
from diffgpu.driver.bundle_zip import (  # noqa: F401  (BundleError: the loader's public error)
    MAX_MEMBERS, BundleError, open_zip, parse_json, read_member, safe_member)

FORMAT = "diffgpu-bundle-1"


def save_bundle(path: str, compiled) -> str:
    """Write the CompiledKernels in `compiled` to `path` (atomically)."""
    from diffgpu.driver.aot import CompiledKernel

    compiled = list(compiled)
    if not compiled or not all(isinstance(c, CompiledKernel) for c in compiled):
        raise TypeError("save_bundle takes a non-empty list of dg.compile(...) results")
    records, blobs = [], []
    for i, c in enumerate(compiled):
        body = json.dumps(c.payload, sort_keys=True).encode("utf-8")
        records.append({"name": c.name, "target": c.target, "signature": c.signature,
                        "file": f"entries/{i}.json", "sha256": hashlib.sha256(body).hexdigest()})
        blobs.append((records[-1]["file"], body))
        if c.variants:
            records[-1]["variants"] = []
        for k, (key, payload) in enumerate(sorted(c.variants.items())):
            body = json.dumps(payload, sort_keys=True).encode("utf-8")
            records[-1]["variants"].append({"facts": key, "file": f"entries/{i}.v{k}.json",
                                            "sha256": hashlib.sha256(body).hexdigest()})
            blobs.append((records[-1]["variants"][-1]["file"], body))
    manifest = {"format": FORMAT, "diffgpu": __version__, "entries": records}
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".dgb", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f, zipfile.ZipFile(f, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("manifest.json", json.dumps(manifest, indent=1))
            for member, body in blobs:
                z.writestr(member, body)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def load_bundle(path) -> "Bundle":
    """Read a bundle; BundleError if it is not an intact diffgpu bundle.

    A bundle runs code when its kernels launch (PTX, or host code the CPU
    JIT compiles into this process), like pickle: load only bundles you
    trust. Digests, member names, each entry's claims (name, signature,
    target) and the argument layout its code declares are checked, in
    bounded time and memory (driver/bundle_zip.py); see the module
    docstring for the table.
    """
    with open_zip(path) as (name, z, members):  # each member is read once: popped
        if "manifest.json" not in members:
            raise BundleError(f"{name}: not a {FORMAT} file (no manifest.json)")
        manifest = parse_json(name, read_member(z, members.pop("manifest.json")))
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
            raise BundleError(f"{name}: not a {FORMAT} file")
        records = manifest.get("entries")
        if not isinstance(records, list) or len(records) > MAX_MEMBERS:
            raise BundleError(f"{name}: the manifest has no entry list (of at most "
                              f"{MAX_MEMBERS})")
        entries = [_load_entry(name, z, members, rec) for rec in records]
    return Bundle(entries)


_PTX_TARGET = re.compile(r"^\s*\.target\s+(sm_\w+)", re.M)
_PTX_ENTRY = re.compile(r"\.entry\s+([\w$]+)")


def _load_entry(path: str, z, members: dict, rec):
    """The CompiledKernel of one manifest record, checked against its claims."""
    from diffgpu.driver.aot import CompiledKernel

    if not isinstance(rec, dict) or not all(isinstance(rec.get(k), str) for k in
                                            ("name", "target", "signature", "file", "sha256")):
        raise BundleError(f"{path}: malformed manifest record {rec!r:.200}")
    where = f"{path}: entry {rec['file']:.200} ({rec['name']:.100} for {rec['target']:.20})"
    payload = _read_payload(where, z, members, rec, rec["file"], rec["sha256"])
    if payload.get("facts") is not None or payload.get("grid_fold") is not None:
        raise BundleError(f"{where}: an entry's own program is the generic one (its facts "
                          f"{payload.get('facts')!r:.100}, grid_fold "
                          f"{payload.get('grid_fold')!r:.50}); variants go in its table")
    variants = [_load_variant(f"{where}, variant {k}", z, members, rec, payload, v)
                for k, v in enumerate(_variant_records(where, rec))]
    try:
        entry = CompiledKernel(payload, variants=variants)
    except (KeyError, TypeError, ValueError) as exc:  # a bad type spec
        raise BundleError(f"{where}: {exc}") from None
    if entry.signature != rec["signature"]:
        raise BundleError(f"{where}: compiled for ({entry.signature}), the manifest "
                          f"claims ({rec['signature']})")
    if payload.get("flat_types") != payload["arg_types"] or payload.get("diff") is not None:
        raise BundleError(f"{where}: not a plain kernel of its signature (flat_types "
                          f"{payload.get('flat_types')!r:.200}, diff {payload.get('diff')!r:.50})")
    problem = entry_abi.problem(payload)  # the code's own argument layout
    if problem is not None:
        raise BundleError(f"{where}: {problem}")
    return entry


def _read_payload(where: str, z, members: dict, rec: dict, member, digest) -> dict:
    """The payload in `member` (digest, claims and fields checked)."""
    if not safe_member(member):
        raise BundleError(f"{where}: unsafe member path")
    info = members.pop(member, None)
    if info is None:
        raise BundleError(f"{where}: no such member (or one another record names)")
    body = read_member(z, info)
    if hashlib.sha256(body).hexdigest() != digest:
        raise BundleError(f"{where} is corrupt (digest mismatch)")
    payload = parse_json(where, body)
    if not isinstance(payload, dict):
        raise BundleError(f"{where}: not an entry")
    _check_claims(where, rec, payload)
    _check_fields(where, payload)
    return payload


def _variant_records(where: str, rec: dict) -> list:
    """The record's variant table: a list of {facts, file, sha256} strings,
    at most aot.MAX_VARIANTS, one per facts key."""
    from diffgpu.driver.aot import MAX_VARIANTS

    table = rec.get("variants", [])
    if not isinstance(table, list) or len(table) > MAX_VARIANTS or not all(
            isinstance(v, dict) and set(v) == {"facts", "file", "sha256"}
            and all(isinstance(x, str) for x in v.values()) for v in table):
        raise BundleError(f"{where}: malformed variant table (a list of at most "
                          f"{MAX_VARIANTS} {{facts, file, sha256}} strings)")
    keys = [v["facts"] for v in table]
    if len(set(keys)) != len(keys):
        raise BundleError(f"{where}: two variants for one facts key")
    return table


#: runtime/specialize.py Facts.key() (per-argument flags checked apart)
_FACTS_KEY = re.compile(r"noalias=[01] contiguous=(?P<c>[01]*) unit_dims=(-|1|2|12)"
                        r"( aligned=(?P<a>[01]*) grid_div=[01])?( grid_div16=1)?"
                        r"( extents=(?P<e>[0-9,;]*))?( index32=1)?"
                        r"( grid_fold=(?P<fy>[1-9][0-9]*),(?P<fz>[1-9][0-9]*))?")


def _load_variant(where: str, z, members: dict, rec: dict, generic: dict, v: dict) -> dict:
    """One variant's payload, checked like an entry and against its key."""
    payload = _read_payload(where, z, members, rec, v["file"], v["sha256"])
    nargs = len(generic["arg_types"])
    m = _FACTS_KEY.fullmatch(v["facts"])
    if m is None or any(m.group(g) and len(m.group(g)) != nargs for g in "ca"):
        raise BundleError(f"{where}: {v['facts']!r:.200} is not the launch facts key of "
                          f"a kernel with {nargs} arguments")
    fold = [int(m.group("fy")), int(m.group("fz"))] if m.group("fy") else None
    if payload.get("facts") != v["facts"] or payload.get("grid_fold") != fold:
        raise BundleError(f"{where}: its facts {payload.get('facts')!r:.200} / grid_fold "
                          f"{payload.get('grid_fold')!r:.50} are not the table's "
                          f"{v['facts']!r:.200}")
    for field in ("arg_types", "flat_types", "diff", "name", "entry"):
        if payload.get(field) != generic.get(field):
            raise BundleError(f"{where}: its {field} {payload.get(field)!r:.200} is not "
                              f"the entry's {generic.get(field)!r:.200}")
    problem = entry_abi.problem(payload)
    if problem is not None:
        raise BundleError(f"{where}: {problem}")
    return payload


def _check_claims(where: str, rec: dict, payload: dict) -> None:
    """The payload is what the record says: name, target, and code of the
    kind (and, for PTX, the chip and entry) that target runs."""
    for field in ("name", "target"):
        if payload.get(field) != rec[field]:
            raise BundleError(f"{where}: its {field} is {payload.get(field)!r}, the "
                              f"manifest claims {rec[field]!r}")
    target = rec["target"]
    if target == "host":
        if payload.get("kind") != "host" or not isinstance(payload.get("llvm"), str):
            raise BundleError(f"{where}: a host entry must hold host code "
                              f"(kind {payload.get('kind')!r})")
        return
    ptx = payload.get("ptx")
    if payload.get("kind") != "gpu" or not isinstance(ptx, str):
        raise BundleError(f"{where}: a {target} entry must hold PTX "
                          f"(kind {payload.get('kind')!r})")
    chips = set(_PTX_TARGET.findall(ptx))
    if chips != {target}:
        got = ", ".join(sorted(chips)) or "no .target"
        raise BundleError(f"{where}: its PTX is for {got}, the manifest claims {target}")
    if payload.get("entry") not in _PTX_ENTRY.findall(ptx):
        raise BundleError(f"{where}: its PTX has no .entry {payload.get('entry')!r}")


def _check_fields(where: str, payload: dict) -> None:
    """The fields the runtime reads are of the types it reads."""
    def strings(v):
        return isinstance(v, list) and all(isinstance(x, str) for x in v)

    coarsen = payload.get("coarsen")
    lean = payload.get("lean")
    if not isinstance(payload.get("entry"), str) or not strings(payload.get("arg_types")) \
            or not strings(payload.get("flat_types")) \
            or not (payload.get("arg_names") is None or strings(payload["arg_names"])
                    and len(payload["arg_names"]) == len(payload["arg_types"])) \
            or not (coarsen is None or type(coarsen) is int and coarsen >= 1) \
            or not (lean is None or isinstance(lean, list)
                    and all(isinstance(x, bool) for x in lean)) \
            or not (payload.get("collectives") is None or strings(payload["collectives"])) \
            or not _heap_tape_ok(payload.get("heap_tape")):
        raise BundleError(f"{where}: malformed entry (its entry, arg_types, flat_types, "
                          "arg_names, coarsen, lean, collectives or heap_tape)")


_TAPE_OPS = {"c": 1, "arg": 1, "dim": 2, "bdim": 1, "gdim": 1, "+": 2, "-": 2, "*": 2,
             "max": 2, "min": 2, "cdiv": 2, "div": 2, "trips": 3}


def _heap_tape_ok(tape) -> bool:
    """None, or {"words": None or an expression of lowering/facts/heap_tape.py,
    "initial": words on the stack}."""
    if tape is None:
        return True
    if not isinstance(tape, dict) or set(tape) != {"words", "initial"} \
            or type(tape["initial"]) is not int or tape["initial"] < 0:
        return False

    def expr(e, depth=0):
        if not isinstance(e, list) or not e or depth > 64 or _TAPE_OPS.get(e[0]) != len(e) - 1:
            return False
        if e[0] in ("c", "arg", "dim", "bdim", "gdim"):
            return all(type(x) is int and (e[0] == "c" or x >= 0) for x in e[1:])
        return all(expr(x, depth + 1) for x in e[1:])
    return tape["words"] is None or expr(tape["words"])


class Bundle:
    """Loaded kernels by name: `bundle[name]` launches the entry matching the
    arguments' types and device."""

    def __init__(self, entries):
        self.entries = list(entries)
        self._kernels: dict = {}  # name -> BundledKernel (its launches' fast-path table)

    def names(self) -> list[str]:
        return sorted({e.name for e in self.entries})

    def __contains__(self, name) -> bool:
        return any(e.name == name for e in self.entries)

    def __getitem__(self, name: str) -> "BundledKernel":
        found = self._kernels.get(name)
        if found is not None:
            return found
        entries = [e for e in self.entries if e.name == name]
        if not entries:
            raise KeyError(f"no kernel {name!r} in bundle (has: {', '.join(self.names())})")
        found = self._kernels[name] = BundledKernel(name, entries)
        return found

    def __repr__(self) -> str:
        return f"<diffgpu bundle: {', '.join(repr(e) for e in self.entries)}>"


class BundledKernel:
    """The entries of one kernel name; `kernel[grid, block](*args)` runs the
    first entry matching the arguments, through the launch fast path
    (driver/aot.py `_bind`: its variant chosen by the launch facts)."""

    def __init__(self, name, entries):
        self.name, self.entries = name, entries
        self._programs: dict = {}  # entries bound so far (fastpath.launch looks keys up then)
        self._launchers: dict = {}  # [grid, block] -> its launcher (aot.launcher)

    def __getitem__(self, config):
        from diffgpu.driver.aot import launcher
        return launcher(self, config)

    def select(self, args):
        """(entry, signature) of the first entry `args` fit; LaunchError if none."""
        for e in self.entries:
            if e.matches(args):
                sig = e.check(args)
                self._programs[id(e)] = e
                return e, sig
        sigs = "; ".join(f"({e.signature}) on {e.target}" for e in self.entries)
        from diffgpu.runtime.args import infer_signature
        sig = infer_signature(args, None, self.name)  # bad arguments report here
        got = ", ".join(str(t) for t in sig.types)
        raise LaunchError(f"{self.name}: no bundled entry for ({got}) on {sig.device}; "
                          f"the bundle has {sigs}")

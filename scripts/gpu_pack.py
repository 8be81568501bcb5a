#!/usr/bin/env python3
"""Pack what `bash scripts/gpu_all.sh --prepare` compiled into tarballs that
each fit one call to the GPU machine.

    python scripts/gpu_pack.py [--check .gpucache] [--extra bench/.cache ...]
                               [--out .gpu] [--limit-mib 60]

writes OUT/part1.tar.xz ... OUT/partN.tar.xz (xz -1), each at most LIMIT MiB
compressed (measured, not estimated: a part that comes out too big is packed
again with fewer cases), and OUT/parts.json (the sizes and each part's cases).
Every part holds:

- the sources (tracked files and untracked ones git does not ignore, as they
  are now, i.e. what --prepare compiled; docs/gpu/ left out), so that the
  snapshot unpacked on the GPU machine runs the same code whose cache keys it
  carries;
- the GPU check's directory without its cases and without the cache's host
  programs (kind "host": the GPU run never executes them): its manifest, the
  GPU programs, the AOT bundle;
- its share of the cases (the `caseK.npz` files; each case goes into the first
  part with room for it, in manifest order) and
  `CHECK/part.json`: {"part": K, "parts": N, "cases": [indices]}, the file
  `scripts/gpu_check.py --run CHECK --only CHECK/part.json` reads.

Part 1 also holds the `--extra` directories (the benches' and the tape
check's caches), whole, and case 0 (with it the gradcheck and bundle rows of
the GPU check). When everything fits into one part, it is also written to
.gpu.tar.xz (the single tarball of before). A case whose file cannot fit a
part even alone is an error that names it; nothing is written then, unless
`--leave-out K,...` names it: the cases named there are packed in no part
(parts.json lists them under "left_out", and the run reports fewer cases).
"""
from __future__ import annotations

import argparse
import io
import json
import lzma
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from concurrent.futures import ThreadPoolExecutor

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MIB = 1 << 20
#: a tar member's header and padding, at most (the estimates add it per file)
_TAR_OVERHEAD = 1024
#: the estimates are sums of each file compressed alone; the real stream is
#: measured, and a part that comes out over the limit is redone with this much
#: more room left
_SHRINK_STEP = 0.05


class PackError(Exception):
    """The caches cannot be packed as asked (the message says why)."""


# ---------------------------------------------------------------------------
# What goes where
# ---------------------------------------------------------------------------

def source_files(repo: str, skip: list[str]) -> list[str]:
    """Tracked files and untracked ones git does not ignore (relative paths),
    without docs/gpu/ and without anything under `skip` (the caches, OUT)."""
    try:
        out = subprocess.run(["git", "-C", repo, "ls-files", "-co", "--exclude-standard", "-z"],
                             capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        raise PackError(f"cannot list the sources with git in {repo}: {exc}") from None
    prefixes = [s.rstrip("/") + "/" for s in skip] + ["docs/gpu/"]
    files = []
    for name in out.decode("utf-8", "surrogateescape").split("\0"):
        if not name or any(name.startswith(p) for p in prefixes):
            continue
        if name in (".gpu.tar.xz",) or not os.path.isfile(os.path.join(repo, name)):
            continue  # (a tracked file deleted in the working tree)
        files.append(name)
    return sorted(files)


def entry_kind(path: str) -> str | None:
    """The "kind" of a cache entry file (gpu, host, ...), None if unreadable."""
    try:
        with open(path, "rb") as f:
            data = f.read()
        nl = data.find(b"\n")
        payload = json.loads(data[nl + 1:].decode("utf-8"))
    except (OSError, ValueError):
        return None
    return payload.get("kind") if isinstance(payload, dict) else None


def check_layout(repo: str, check: str):
    """(base files, cases, host entries left out) of the GPU check's directory
    `check` (relative to repo): cases = [(index, file or None)] in manifest order."""
    root = os.path.join(repo, check)
    mpath = os.path.join(root, "manifest.json")
    try:
        with open(mpath) as f:
            manifest = json.load(f)
        recs = manifest["cases"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise PackError(f"no readable manifest {mpath} ({exc}); run "
                        f"`scripts/gpu_check.py --prepare {check}` first") from None
    cases, case_files = [], set()
    for k, rec in enumerate(recs):
        name = rec.get("file") if isinstance(rec, dict) else None
        if name is not None:
            if not os.path.isfile(os.path.join(root, name)):
                raise PackError(f"case {k} ({rec.get('name')}): {check}/{name} is missing")
            case_files.add(name)
            name = f"{check}/{name}"
        cases.append((k, name))
    base, host = [], 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        rel_dir = os.path.relpath(dirpath, repo)
        for fn in sorted(filenames):
            rel = os.path.join(rel_dir, fn)
            if dirpath == root and (fn in case_files or fn == "part.json"):
                continue
            if fn.endswith(".dgc") and entry_kind(os.path.join(dirpath, fn)) == "host":
                host += 1
                continue
            base.append(rel)
    return base, cases, host


def dir_files(repo: str, directory: str) -> list[str]:
    out = []
    for dirpath, dirnames, filenames in os.walk(os.path.join(repo, directory)):
        dirnames.sort()
        out += [os.path.relpath(os.path.join(dirpath, f), repo) for f in sorted(filenames)]
    return out


# ---------------------------------------------------------------------------
# Sizes
# ---------------------------------------------------------------------------

def _compressed_size(path: str) -> int:
    with open(path, "rb") as f:
        return len(lzma.compress(f.read(), preset=1)) + _TAR_OVERHEAD


def estimate(repo: str, files: list[str]) -> dict:
    """Each file's size compressed alone (xz -1), with a tar header's room."""
    paths = [os.path.join(repo, f) for f in files]
    with ThreadPoolExecutor(max(1, min(4, os.cpu_count() or 1))) as pool:
        return dict(zip(files, pool.map(_compressed_size, paths)))


def write_tarball(repo: str, files: list[str], extra: dict, dest: str) -> int:
    """Files (relative to repo; their directories with their modes) and
    `extra` ({member name: bytes}) into dest as .tar.xz; returns its size."""
    tmp = dest + ".tmp"
    xz = shutil.which("xz")
    with open(tmp, "wb") as out:
        if xz:
            proc = subprocess.Popen([xz, "-1", "-T2", "-c"], stdin=subprocess.PIPE, stdout=out)
            sink = proc.stdin
        else:  # (no xz program: the same format from Python, one thread)
            proc, sink = None, lzma.open(out, "wb", preset=1)
        try:
            with tarfile.open(fileobj=sink, mode="w|", format=tarfile.PAX_FORMAT) as tar:
                seen = set()
                for f in files:
                    parts = f.split("/")[:-1]
                    for i in range(1, len(parts) + 1):
                        d = "/".join(parts[:i])
                        if d not in seen:
                            seen.add(d)
                            tar.add(os.path.join(repo, d), arcname=d, recursive=False)
                    tar.add(os.path.join(repo, f), arcname=f, recursive=False)
                for name, data in extra.items():
                    info = tarfile.TarInfo(name)
                    info.size, info.mode = len(data), 0o644
                    tar.addfile(info, io.BytesIO(data))
        finally:
            sink.close()
            if proc is not None and proc.wait() != 0:
                os.unlink(tmp)
                raise PackError(f"xz failed (exit status {proc.returncode}) writing {dest}")
    os.replace(tmp, dest)
    return os.path.getsize(dest)


# ---------------------------------------------------------------------------
# Splitting
# ---------------------------------------------------------------------------

def split(cases, sizes: dict, first_room: int, other_room: int, shrink=None) -> list[list]:
    """Cases into parts, first fit in manifest order: each case goes into the
    first part with room for it (part 1: `first_room` bytes of estimated
    compressed case files, each other part `other_room`), else into a new
    one; `shrink`: {part index: factor} for parts measured too big before."""
    shrink = shrink or {}
    parts: list[list] = []
    used: list[int] = []

    def room(i):
        return int((first_room if i == 0 else other_room) * shrink.get(i, 1.0))
    for k, f in cases:
        s = sizes.get(f, 0) if f else 0
        for i in range(len(parts) + 1):
            if i == len(parts):
                if s > room(i):
                    raise PackError(f"case {k} ({f}) compresses to {s / MIB:.1f} MiB: it cannot "
                                    f"fit a part with {room(i) / MIB:.1f} MiB of room for cases")
                parts.append([])
                used.append(0)
            if used[i] + s <= room(i):
                parts[i].append((k, f))
                used[i] += s
                break
    return parts or [[]]


def pack(repo: str, check: str, extras: list[str], out: str, limit: int,
         sources: list[str] | None = None, single: str | None = ".gpu.tar.xz",
         log=print, leave_out=()) -> list[dict]:
    """Write out/part1.tar.xz ... (each <= limit bytes); returns parts.json's
    list. `leave_out`: case indices packed in no part."""
    extras = [e for e in extras if os.path.isdir(os.path.join(repo, e))]
    if sources is None:
        sources = source_files(repo, [check, out] + extras)
    base, cases, host = check_layout(repo, check)
    unknown = set(leave_out) - {k for k, _ in cases}
    if unknown:
        raise PackError(f"--leave-out names cases the manifest does not have: {sorted(unknown)}")
    if leave_out:
        cases = [(k, f) for k, f in cases if k not in set(leave_out)]
        log(f"left out: cases {sorted(leave_out)}")
    extra_files = [f for e in extras for f in dir_files(repo, e)]
    log(f"sources: {len(sources)} files; {check}: {len(base)} files besides its "
        f"{len(cases)} cases ({host} host programs left out); part 1 also: "
        f"{len(extra_files)} files of {', '.join(extras) or '-'}")
    os.makedirs(os.path.join(repo, out), exist_ok=True)
    with tempfile.TemporaryDirectory(dir=os.path.join(repo, out)) as tmp:
        # the two bases, measured as tarballs of their own
        stub = json.dumps({"part": 0, "parts": 0, "cases": []}).encode()
        base_other = write_tarball(repo, sources + base, {f"{check}/part.json": stub},
                                   os.path.join(tmp, "base.tar.xz"))
        base_first = write_tarball(repo, sources + base + extra_files,
                                   {f"{check}/part.json": stub},
                                   os.path.join(tmp, "base1.tar.xz"))
        log(f"base: {base_other / MIB:.2f} MiB (part 1: {base_first / MIB:.2f} MiB)")
        if base_first >= limit:
            raise PackError(f"part 1 without any case is {base_first / MIB:.1f} MiB, over the "
                            f"limit of {limit / MIB:.1f} MiB")
        sizes = estimate(repo, [f for _, f in cases if f])
        log(f"cases: {sum(sizes.values()) / MIB:.1f} MiB compressed one by one")
        shrink: dict = {}
        for _ in range(100):
            parts = split(cases, sizes, limit - base_first, limit - base_other, shrink)
            n = len(parts)
            got, redo = [], None
            for i, part in enumerate(parts):
                idx = [k for k, _ in part]
                meta = json.dumps({"part": i + 1, "parts": n, "cases": idx}).encode()
                files = sources + base + (extra_files if i == 0 else []) + [f for _, f in part if f]
                size = write_tarball(repo, files, {f"{check}/part.json": meta},
                                     os.path.join(tmp, f"part{i + 1}.tar.xz"))
                got.append({"part": i + 1, "file": f"part{i + 1}.tar.xz", "bytes": size,
                            "cases": idx, "bench": i == 0})
                if size > limit:
                    redo = i
                    break
            if redo is None:
                break
            shrink[redo] = shrink.get(redo, 1.0) - _SHRINK_STEP
            log(f"part {redo + 1}: {got[-1]['bytes'] / MIB:.2f} MiB, over the limit: "
                "packing again with fewer cases")
        else:
            raise PackError("could not fit the parts into the limit")
        dest = os.path.join(repo, out)
        for name in os.listdir(dest):  # parts of an earlier, larger pack
            if name.startswith("part") and (name.endswith(".tar.xz") or name.endswith(".json")):
                os.unlink(os.path.join(dest, name))
        for rec in got:
            os.replace(os.path.join(tmp, rec["file"]), os.path.join(dest, rec["file"]))
            with open(os.path.join(dest, f"part{rec['part']}.json"), "w") as f:
                json.dump(rec["cases"], f)
    with open(os.path.join(dest, "parts.json"), "w") as f:
        json.dump({"limit": limit, "check": check, "extras": extras, "parts": got,
                   "left_out": sorted(leave_out)}, f, indent=1)
    for rec in got:
        log(f"{out}/{rec['file']}: {rec['bytes'] / MIB:6.2f} MiB, {len(rec['cases'])} cases"
            + (" + " + ", ".join(extras) if rec["bench"] and extras else ""))
    if single and len(got) == 1:
        shutil.copyfile(os.path.join(dest, got[0]["file"]), os.path.join(repo, single))
        log(f"everything fits one part: also {single}")
    return got


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--check", default=".gpucache", help="the GPU check's directory")
    p.add_argument("--extra", nargs="*", default=[],
                   help="more cache directories, whole, into part 1 (absent ones are skipped)")
    p.add_argument("--out", default=".gpu", help="where the parts go (default .gpu)")
    p.add_argument("--limit-mib", type=float, default=60.0,
                   help="the most MiB one compressed part may have (default 60)")
    p.add_argument("--leave-out", default="",
                   help="comma-separated case indices to pack in no part (too big to travel)")
    a = p.parse_args(argv)
    try:
        leave = [int(k) for k in a.leave_out.split(",") if k.strip()]
    except ValueError:
        print(f"gpu_pack: --leave-out takes case indices, got {a.leave_out!r}", file=sys.stderr)
        return 2
    if not a.limit_mib > 0:
        print("gpu_pack: --limit-mib must be positive", file=sys.stderr)
        return 2
    try:
        pack(REPO, a.check.rstrip("/"), [e.rstrip("/") for e in a.extra], a.out.rstrip("/"),
             int(a.limit_mib * MIB), leave_out=leave)
    except PackError as exc:
        print(f"gpu_pack: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Digest of every GPU program a prepared run would launch: one line per
program (its name, entry, target, argument types, diff mode and launch facts)
with the sha256 of its PTX, sorted. Two trees that print the same lines
compile those programs to byte-identical PTX.

    python scripts/ptx_digest.py OUT.txt        # prepares bench/peers.py and
                                                # scripts/gpu_check.py for sm_90

Runs the two `--prepare` commands in a temporary cache and reads back every
cache entry they wrote (runtime/store/cache.py's format).
"""
import hashlib
import json
import os
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def digests(root: str) -> list[str]:
    from diffgpu.runtime.store.cache import decode_entry

    lines = set()
    for base, _, files in os.walk(root):
        for f in files:
            if not f.endswith(".dgc"):
                continue
            with open(os.path.join(base, f), "rb") as fh:
                payload = decode_entry(fh.read())
            if not payload or payload.get("kind") != "gpu":
                continue
            what = {k: payload.get(k) for k in ("name", "entry", "target", "arg_types",
                                                 "diff", "facts")}
            ptx = hashlib.sha256(payload["ptx"].encode()).hexdigest()[:16]
            lines.add(f"{ptx} {json.dumps(what, sort_keys=True)}")
    return sorted(lines)


def main(out: str) -> int:
    with tempfile.TemporaryDirectory(prefix="diffgpu-ptx-digest-") as tmp:
        env = {**os.environ, "DIFFGPU_CACHE_DIR": os.path.join(tmp, "cache")}
        for cmd in (["bench/peers.py", "--prepare", os.path.join(tmp, "peers")],
                    ["scripts/gpu_check.py", "--prepare", os.path.join(tmp, "check")]):
            subprocess.run([sys.executable, *cmd], cwd=REPO, env=env, check=True,
                           stdout=subprocess.DEVNULL)
        lines = digests(tmp)
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"{len(lines)} GPU programs -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))

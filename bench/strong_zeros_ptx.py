#!/usr/bin/env python3
"""What strong zeros cost: the PTX of bench/peers.py's kernels and their
derivatives with `DIFFGPU_STRONG_ZEROS` on and off.

    python bench/strong_zeros_ptx.py [--chip sm_90] [--n 4096]

For each computation of bench/peer_cases.py the same calls as bench/peers.py
(the kernel, `dg.vjp`, host-level `dg.autodiff`) are compiled for `chip`
inside `diffgpu.interop.compile_only` (nothing runs, no GPU needed), once
per setting, each setting in a fresh process with its own empty cache. The
table counts PTX instructions (lines ending in `;` that are no directives)
of all programs of the computation, and the `selp` instructions among them;
the last column is the difference on - off. Strong zeros guard only
singular partials (sqrt, log, division, ...), so a difference appears only
where such an op is differentiated.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _count(ptx: str):
    instr = selp = 0
    for line in ptx.splitlines():
        s = line.strip()
        if not s.endswith(";") or s.startswith((".", "//")):
            continue
        instr += 1
        selp += s.startswith("selp")
    return instr, selp


def _child(chip: str, n: int) -> None:
    sys.path.insert(0, os.path.join(REPO, "bench"))
    import numpy as np

    import peer_cases as PC
    from peers import diffgpu_calls
    from diffgpu.interop import compile_only

    kernels = PC.kernels()
    rng = np.random.default_rng(0)
    out = {}
    with compile_only(chip):
        for case in PC.cases(n):
            arrs = case.make(rng)
            g = np.ones_like(arrs[case.out])
            for call in diffgpu_calls(case, kernels, arrs, g, n, np)[:3]:
                call()
            k = kernels[case.name]
            counts = [_count(p.payload["ptx"]) for p in k._programs.values()]
            out[case.name] = [sum(c[0] for c in counts), sum(c[1] for c in counts)]
    print(json.dumps(out))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chip", default="sm_90")
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        _child(a.chip, a.n)
        return
    res = {}
    for setting in ("1", "0"):
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, DIFFGPU_STRONG_ZEROS=setting, DIFFGPU_CACHE_DIR=cache)
            p = subprocess.run([sys.executable, __file__, "--child", "--chip", a.chip,
                                "--n", str(a.n)], env=env, capture_output=True, text=True)
            if p.returncode:
                sys.exit(p.stderr)
            res[setting] = json.loads(p.stdout.strip().splitlines()[-1])
    print(f"PTX of each computation's programs (kernel, dg.vjp, dg.autodiff) for {a.chip}")
    print(f"{'computation':12} {'instr on':>9} {'instr off':>9} {'selp on':>8} {'selp off':>8} "
          f"{'extra':>6}")
    for name, (on_i, on_s) in res["1"].items():
        off_i, off_s = res["0"][name]
        print(f"{name:12} {on_i:9d} {off_i:9d} {on_s:8d} {off_s:8d} {on_i - off_i:6d}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""diffgpu's own P and FB (`dg.vjp`) of bench/peers.py's cases, from one or
more directories of programs prepared by `bench/peers.py --prepare` (each
possibly from another commit), on the GPU: the same calls, checks against
float64 numpy and timer as peers.py's, without the peers. For comparing
compiler versions on a few cases in one run.

    python bench/peers.py --prepare DIR --cases layernorm,softmax      # here, per version
    python bench/rows_vjp_time.py --run DIR [DIR2 ...] --cases layernorm,softmax  # GPU
    python bench/rows_vjp_time.py --run DIR --cases layernorm --cpu-smoke   # here: the logic

Each (directory, case) runs in a process of its own (the launch caches of
one program must not serve another's); prints one line per pair: P and FB
(ms, the best of 3 medians), FB over the case's floor (bytes over the copy
bandwidth, measured in each process as peers.py does) and the largest
relative error of each result (peers.py's measure: max |err| / max(1, max
|ref|), on its sampled rows).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _one(directory: str, name: str, smoke: bool) -> None:
    if not smoke:
        sys.modules["mlir"] = None  # the GPU run needs no MLIR
    sys.path.insert(0, os.path.join(REPO, "bench"))
    sys.path.insert(0, os.path.join(REPO, "scripts"))
    import numpy as np

    import peer_cases as PC
    import peers as P
    from peer_backends import Device, Host

    os.environ.setdefault("DIFFGPU_CACHE_DIR", os.path.join(os.path.abspath(directory), "cache"))
    be = Host() if smoke else Device()
    n = P.SMOKE_N if smoke else P.N
    kernels, _ = P.preload(directory, "host" if smoke else be.chip)
    (case,) = [c for c in PC.cases(n) if c.name == name]
    rng = np.random.default_rng(0)
    host = case.make(rng)
    h64 = {p: (v.astype(np.float64) if isinstance(v, np.ndarray) and v.dtype.kind == "f" else v)
           for p, v in host.items()}
    g_host = PC._f32(rng, int(np.prod(host[case.out].shape))).reshape(host[case.out].shape)
    arrs = {p: be.to(v) for p, v in host.items()}
    s = PC.sample(n)
    primal, vjp, _, _, _ = P.diffgpu_calls(case, kernels, arrs, be.to(g_host), n, be.xp)
    grads = vjp()
    be.sync()
    errs = {f"FB {k}": P._err(be.get(grads[k]), want, idx)
            for k, (want, idx) in case.grad_ref(h64, g_host.astype(np.float64), s).items()}
    primal()
    be.sync()
    errs.update({f"P {k}": P._err(be.get(arrs[k]), want, idx)
                 for k, (want, idx) in case.primal_ref(h64, s).items()})
    fb = min(be.time(vjp) for _ in range(3))
    p = min(be.time(primal) for _ in range(3))
    src = be.xp.asarray(PC._f32(rng, n))  # the copy bandwidth, as peers.py measures it
    dst = be.xp.empty_like(src)
    copy_gbps = 2 * 4 * n / be.time(lambda: dst.__setitem__(slice(None), src)) / 1e6
    floor = case.words[1] * 4 * n / copy_gbps / 1e6
    ratio = f"{fb / floor:8.2f}"
    err = " ".join(f"{k}={v:.1e}" for k, v in errs.items())
    print(f"{os.path.basename(os.path.abspath(directory)):<14} {name:<14} {p:8.4f} {fb:8.4f} "
          f"{ratio}  {err}", flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", nargs="+", metavar="DIR", required=True)
    ap.add_argument("--cases", required=True, help="comma-separated peers.py case names")
    ap.add_argument("--cpu-smoke", action="store_true",
                    help="on numpy, tiny N (programs from peers.py --prepare DIR --cpu-smoke)")
    ap.add_argument("--one", nargs=2, metavar=("DIR", "CASE"), help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.one:
        _one(*a.one, a.cpu_smoke)
        return 0
    print(f"{'programs':<14} {'case':<14} {'P':>8} {'FB':>8} {'FB/floor':>8}  max rel. error")
    bad = 0
    for directory in a.run:
        for name in a.cases.split(","):
            r = subprocess.run([sys.executable, os.path.abspath(__file__), "--run", directory,
                                "--cases", name, "--one", directory, name]
                               + (["--cpu-smoke"] if a.cpu_smoke else []))
            bad |= r.returncode != 0
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

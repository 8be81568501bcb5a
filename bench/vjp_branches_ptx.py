#!/usr/bin/env python3
"""What the functional kinds save on outputs stored in exclusive branches:
the sm_90 PTX of `dg.vjp` of the tape tests' `lap_step` and `flux`
(test/python/tape/tape_programs.py), each storing its output once per
element from either branch of an `if`.

    python bench/vjp_branches_ptx.py [--chip sm_90] [--n 65536] [--block 256]

Per kernel, the `dg.vjp` call of bench/tape.py's heat step (float32, `n`
points, `block` threads per block, grid n / block) is compiled for `chip`
inside `diffgpu.interop.compile_only` (nothing runs, no GPU needed) twice:
with the kinds `dg.vjp` picks now, and with Enzyme's accumulating kinds
(`dup` for every array: what it picked while an output needed exactly one
store; forced here by taking the functional kinds away), and with `wrt=`
naming the stencil input only (the scalar or the second input held, as
bench/tape.py's `dg.Const(c)` holds lap_step's `c`). The table counts the
entry function of the reverse program's PTX (a coarsened program's edge
threads call a tail function, left out): instructions (lines ending in `;`
that are not directives), global atomics (`atom.` / `red.` outside shared
memory), global loads and stores (generic-address ones included),
barriers; `elem` is the elements per thread (coarsening), and the per
element columns divide the static counts by it (an upper bound on what a
thread runs per element: the entry may hold two versions of its body, and
branches). Last, the buffers the recipe makes per call (`zeros`: an extra
pass over memory; `copy`: the cotangent copied to be consumed).
"""
from __future__ import annotations

import argparse
import os
import re
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "scripts"))
import repo_imports  # noqa: E402

repo_imports.bootstrap()
sys.path.insert(0, os.path.join(REPO, "test", "python", "tape"))


def entry_body(ptx: str) -> str:
    """The text of the PTX's `.entry` function (the path most threads run;
    a coarsened kernel's edge threads call a tail function instead)."""
    return ptx[ptx.index(".entry"):]


def count(ptx: str) -> dict:
    """Static counts of the entry's instructions and memory operations.
    Global loads and stores include generic-address ones (`ld.b32`), not
    parameter, shared or local ones; atomics are `atom.` / `red.` outside
    shared memory."""
    out = {"instr": 0, "atomic": 0, "ld": 0, "st": 0, "bar": 0}
    for line in entry_body(ptx).splitlines():
        s = line.strip()
        if not s.endswith(";") or s.startswith((".", "//")):
            continue
        out["instr"] += 1
        op = s.split()[0]
        if op.startswith(("atom.", "red.")) and ".shared" not in op:
            out["atomic"] += 1
        elif op.startswith(("ld.", "st.")) and not re.search(r"\.(param|shared|local|const)\b",
                                                             op):
            out[op[:2]] += 1
        elif op.startswith(("bar.sync", "barrier.")):
            out["bar"] += 1
    return out


def compile_vjp(kernel, args, grid, block, cot, chip, enzyme: bool, wrt=None):
    """(kinds, PTX counts, recipe buffers) of the reverse program `dg.vjp`
    selects for this call."""
    import diffgpu as dg
    from diffgpu.hostdiff import plan as P
    from diffgpu.hostdiff import replay as R
    from diffgpu.interop import compile_only

    made = []
    real_recipe = R.Recipe.__init__

    def spy(self, call, mode, kinds, bufs, *rest, **kw):
        made.append((list(kinds), [how for how, _ in bufs]))
        return real_recipe(self, call, mode, kinds, bufs, *rest, **kw)

    saved_kind = P.Call.functional_kind
    R.Recipe.__init__ = spy
    if enzyme:
        P.Call.functional_kind = lambda self, g, outputs: None
    try:
        before = set(kernel._programs)
        with compile_only(chip):
            dg.vjp(kernel[grid, block], *args, cotangents=cot, wrt=wrt)
    finally:
        R.Recipe.__init__ = real_recipe
        P.Call.functional_kind = saved_kind
    new = [k for k in kernel._programs if k not in before and k[2] is not None
           and k[2][0] == "reverse"]
    (key,) = new
    kinds, bufs = made[-1]
    assert tuple(kinds) == tuple(key[2][1]), (kinds, key)
    payload = kernel._programs[key].payload
    return kinds, dict(count(payload["ptx"]), coarsen=payload.get("coarsen") or 1), bufs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chip", default="sm_90")
    ap.add_argument("--n", type=int, default=1 << 16)
    ap.add_argument("--block", type=int, default=256)
    a = ap.parse_args()
    import numpy as np

    import tape_programs as T

    n, blk = a.n, a.block
    grid = (n + blk - 1) // blk
    rng = np.random.default_rng(0)
    f32 = lambda: rng.standard_normal(n).astype(np.float32)  # noqa: E731
    calls = {"lap_step": (T.lap_step, (np.zeros(n, np.float32), f32(), np.float32(0.25)), "dst",
                          ["src"]),
             "flux": (T.flux, (np.zeros(n, np.float32), f32(), f32()), "f", ["u"])}
    print(f"The {a.chip} PTX of the dg.vjp reverse program's entry, n = {n}, block = {blk}: "
          "static counts (elem: elements per thread, coarsened) and per element")
    cols = ("instr", "atomic", "ld", "st", "bar")
    print(f"{'kernel':9} {'way':12} {'kinds':20} {'elem':>4} "
          + " ".join(f"{c:>6}" for c in cols)
          + "  atomic/el ld/el st/el  buffers")
    for name, (k, args, out, wrt) in calls.items():
        cot = {out: np.ones(n, np.float32)}
        for way, enzyme, w in (("enzyme", True, None), ("now", False, None),
                               ("now, wrt=", False, wrt)):
            if way.endswith("="):
                way += ",".join(w)
            kinds, c, bufs = compile_vjp(k, args, grid, blk, cot, a.chip, enzyme, w)
            e = c["coarsen"]
            print(f"{name:9} {way:12} {','.join(kinds):20} {e:4d} "
                  + " ".join(f"{c[x]:6d}" for x in cols)
                  + f"  {c['atomic'] / e:9.2f} {c['ld'] / e:5.2f} {c['st'] / e:5.2f}  "
                  + ",".join(bufs))

if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""What the rows coarsening of `dg.vjp` (lowering/coarsen/rows.py) does to
the sm_90 PTX (no GPU needed): per program of test/python/kernels_rows_fast.py
at ROWS rows of 1024 float32 (bench/peers.py's `layernorm` / `softmax` at
2^26 elements), the rows per block R the launch facts choose, the PTX's
lines, instructions, global atomics (`atom.global` / `red.global`), plain
global stores (`st.global`: dX, written once; `st generic`: stores through
generic addresses, global or local), global loads, `bar.sync`,
`.local` accesses, and the global atomics per row a block executes (the
static count: every atomic of these programs runs once per block and
thread; divided by R for a coarsened program).

    python bench/rows_coarsen_ptx.py [--chip sm_90] [--rows 65536]

Rows: layernorm_fast's and softmax_fast's reverse with the rule's R
(runtime/specialize.py `rows_factor`), with R asked to be 1 (off), 4, 8,
32, 64 (`DIFFGPU_ROWS`) -- "got" is what the compiler applied (softmax_fast
has no parameter gradient to sum: never coarsened) -- and
layernorm_fast_rows (4 rows per block written in the kernel, its reverse
unrolled by autodiff) for comparison. Counts are
static, in the program text.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "scripts")); import repo_imports; repo_imports.bootstrap()  # noqa: E402,E702,I001
sys.path.insert(0, os.path.join(REPO, "test", "python"))

import diffgpu as dg  # noqa: E402
import kernels_rows_fast as K  # noqa: E402
from diffgpu.interop import compile_only  # noqa: E402
from diffgpu.runtime import specialize as S  # noqa: E402


def counts(ptx: str) -> dict:
    """Static counts of one program's PTX."""
    lines = ptx.splitlines()
    instr = sum(1 for line in lines
                if line.strip().endswith(";") and not line.strip().startswith((".", "//")))
    return {"lines": len(lines), "instructions": instr,
            "atomics": len(re.findall(r"\batom\.global|\bred\.global", ptx)),
            "st.global": len(re.findall(r"\bst\.global", ptx)),
            "st generic": len(re.findall(r"\bst\.[bfsu]\d", ptx)),
            "ld.global": len(re.findall(r"\bld\.global", ptx)),
            "bar.sync": len(re.findall(r"\bbar\.sync", ptx)),
            ".local": len(re.findall(r"\.local\b", ptx))}


def vjp_program(kernel, launch, args, rows_override: int | None):
    """(payload) of the reverse program dg.vjp compiles for `kernel[launch]`
    on `args` (Y's cotangent the first argument's shape), R forced to
    `rows_override` (None: the rule)."""
    saved = S.ROWS_OVERRIDE
    S.ROWS_OVERRIDE = saved if rows_override is None else rows_override
    S._SHAPED.clear()  # the facts of a layout are memoised
    try:
        kernel._programs.clear()
        with compile_only(CHIP):
            dg.vjp(kernel[launch], *args, cotangents={"Y": args[0]})
    finally:
        S.ROWS_OVERRIDE = saved
        S._SHAPED.clear()
    (payload,) = [p.payload for k, p in kernel._programs.items()
                  if k[1] == CHIP and k[2] and k[2][0] == "reverse"]
    return payload


CHIP = "sm_90"


def main(argv=None) -> int:
    global CHIP
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--chip", default="sm_90")
    p.add_argument("--rows", type=int, default=65536)
    a = p.parse_args(argv)
    CHIP = a.chip
    os.environ.setdefault("DIFFGPU_CACHE_DIR", tempfile.mkdtemp(prefix="rows_ptx_"))
    n = a.rows
    X = np.zeros((n, K.COLS), np.float32)  # never touched: no pages
    v = np.ones(K.COLS, np.float32)
    ln = (np.zeros_like(X), X, v, v.copy())
    sm = (np.zeros_like(X), X)
    cases = []
    for name, kernel, args in (("layernorm_fast", K.layernorm_fast, ln),
                               ("softmax_fast", K.softmax_fast, sm)):
        for r in (None, 1, 4, 8, 32, 64):
            cases.append((name, kernel, K.fast_launch(n), args, r))
    cases.append(("layernorm_fast_rows", K.layernorm_fast_rows, K.rows_launch(n), ln, 1))
    head = ("program", "R asked -> got", "lines", "instructions", "atomics", "st.global", "st generic",
            "ld.global",
            "bar.sync", ".local", "atomics/row")
    print(f"{n} rows of {K.COLS} float32, {K.THREADS} threads per block, {CHIP} PTX of "
          "dg.vjp's reverse program")
    print(f"{head[0]:<22}{head[1]:>16}" + "".join(f"{h:>13}" for h in head[2:]))
    for name, kernel, launch, args, r in cases:
        payload = vjp_program(kernel, launch, args, r)
        got = payload.get("rows") or [1, 0]
        per_block = 4 if kernel is K.layernorm_fast_rows else got[0]
        c = counts(payload["ptx"])
        asked = "rule" if r is None else str(r)
        label = "4 (kernel)" if kernel is K.layernorm_fast_rows else f"{asked} -> {got[0]}"
        row = [label] + [c[k] for k in head[2:-1]] + [f"{c['atomics'] / per_block:.2f}"]
        print(f"{name:<22}{row[0]:>16}" + "".join(f"{x:>13}" for x in row[1:]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

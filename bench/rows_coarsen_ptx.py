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

The second table looks inside the row loop of the coarsened reverse
(from the first target of a backward branch to the last backward branch:
one row's code) of layernorm_fast (256 threads x 4 columns) and
layernorm_v8 (128 x 8), with the next row's loads issued an iteration ahead
(lowering/coarsen/prefetch.py) and without (`prefetch off`, the rewrite
stubbed here): per row its `bar.sync`, `shfl.sync`, shared loads/stores,
global loads (vector `.v2`/`.v4` ones apart), the global loads it issues
before its first barrier (the next row's, in flight during this row's
collectives), and for the whole program `.local` accesses, static shared
bytes and, where `ptxas` is on the PATH, its registers per thread and the
blocks an SM holds at that count (65536 registers, allocated per warp in
units of 8 per thread; 2048 threads, 32 blocks). softmax_fast and
softmax_v8 (not coarsened: no loop) give their whole reverse's counts.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "scripts")); import repo_imports; repo_imports.bootstrap()  # noqa: E402,E702,I001
sys.path.insert(0, os.path.join(REPO, "test", "python"))

import diffgpu as dg  # noqa: E402
import kernels_rows_fast as K  # noqa: E402
import kernels_rows_variants as V  # noqa: E402
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


def row_loop(ptx: str) -> list:
    """The lines of the row loop: from the first target of a backward branch
    to the last backward branch (the whole program when there is none)."""
    lines = ptx.splitlines()
    labels = {m.group(1): i for i, line in enumerate(lines)
              if (m := re.match(r"^(\$L__\w+):", line))}
    back = [(labels[t], i) for i, line in enumerate(lines)
            for t in re.findall(r"\bbra(?:\.uni)?\s+(\$L__\w+);", line) if labels.get(t, i) < i]
    if not back:
        return lines
    return lines[min(a for a, _ in back):max(b for _, b in back) + 1]


def registers(ptx: str):
    """ptxas -v's registers per thread, or None without ptxas."""
    exe = shutil.which("ptxas")
    if exe is None:
        return None
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "k.ptx")
        with open(src, "w") as f:
            f.write(ptx)
        out = subprocess.run([exe, f"-arch={CHIP}", "-v", src, "-o", os.path.join(d, "k.cubin")],
                             capture_output=True, text=True).stderr
    m = re.search(r"Used (\d+) registers", out)
    return int(m.group(1)) if m else None


def blocks_per_sm(regs, threads: int):
    if regs is None:
        return None
    per_thread = -(-regs // 8) * 8
    warps = 65536 // (per_thread * 32)
    return min(warps // (threads // 32), 2048 // threads, 32)


def per_row(ptx: str, threads: int) -> dict:
    body = "\n".join(row_loop(ptx))
    first_bar = body.find("bar.sync")
    loads = [m.start() for m in re.finditer(r"\bld\.global", body)]
    regs = registers(ptx)
    return {"bar.sync": len(re.findall(r"\bbar\.sync", body)),
            "shfl.sync": len(re.findall(r"\bshfl\.sync", body)),
            "ld.shared": len(re.findall(r"\bld\.shared", body)),
            "st.shared": len(re.findall(r"\bst\.shared", body)),
            "ld.global": len(loads),
            "vector": len(re.findall(r"\bld\.global[.a-z0-9]*\.v[24]\.", body)),
            "before bar": sum(x < first_bar for x in loads) if first_bar >= 0 else len(loads),
            ".local": len(re.findall(r"\.local\b", ptx)),
            "smem B": sum(int(n) for n in re.findall(r"\.shared \.align \d+ \.b8 \w+\[(\d+)\]", ptx)),
            "regs": "n/a" if regs is None else regs,
            "blocks/SM": blocks_per_sm(regs, threads) or "n/a"}


def loop_table(n: int) -> None:
    """The second table of the module docstring."""
    from diffgpu.lowering.coarsen import rows as R
    X = np.zeros((n, K.COLS), np.float32)
    v = np.ones(K.COLS, np.float32)
    ln, sm = (np.zeros_like(X), X, v, v.copy()), (np.zeros_like(X), X)
    cases = [("layernorm_fast", K.layernorm_fast, K.fast_launch(n), ln, K.THREADS),
             ("layernorm_v8", V.layernorm_v8, V.v8_launch(n), ln, V.V8_THREADS),
             ("softmax_fast", K.softmax_fast, K.fast_launch(n), sm, K.THREADS),
             ("softmax_v8", V.softmax_v8, V.v8_launch(n), sm, V.V8_THREADS)]
    head = ("bar.sync", "shfl.sync", "ld.shared", "st.shared", "ld.global", "vector",
            "before bar", ".local", "smem B", "regs", "blocks/SM")
    print(f"\nper row of the coarsened reverse (R = the rule's): the row loop's code, "
          f"{CHIP} PTX")
    print(f"{'program':<16}{'prefetch':>10}{'R':>4}" + "".join(f"{h:>11}" for h in head))
    real = R.prefetch
    for name, kernel, launch, args, threads in cases:
        for on in (True, False):
            R.prefetch = real if on else (lambda loop: (0, "off (bench/rows_coarsen_ptx.py)"))
            saved = os.environ["DIFFGPU_CACHE_DIR"]  # not the disk cache's program
            os.environ["DIFFGPU_CACHE_DIR"] = tempfile.mkdtemp(prefix="rows_ptx_off_")
            try:
                payload = vjp_program(kernel, launch, args, None)
            finally:
                R.prefetch = real
                os.environ["DIFFGPU_CACHE_DIR"] = saved
            rows = (payload.get("rows") or [1, 0])[0]
            if rows == 1 and not on:
                continue  # not coarsened: nothing to prefetch
            c = per_row(payload["ptx"], threads)
            label = ("on" if on else "off") if rows > 1 else "-"
            print(f"{name:<16}{label:>10}{rows:>4}" + "".join(f"{c[h]!s:>11}" for h in head))


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
    loop_table(n)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""What the collectives become in PTX (no GPU needed): per kernel and its
gradient (the kernel running `dg.autodiff` of it, as `dg.vjp` launches),
the sm_90 PTX's `shfl.sync`, `bar.sync`, global atomics (`atom.` /
`red.global`), `.entry` count and instruction count.

    python bench/collectives_ptx.py [--chip sm_90]

Rows: a block sum of 256 threads with `dg.block_sum` against the
shared-memory tree of docs/language.md; layernorm and softmax of
test/python/kernels_rows_collective.py (R = 4096 rows of C = 1024) and
`layernorm_rows4`; kernels_rows_params.py's `layernorm_rows` (shared-memory
trees, 2 rows per block) for comparison. Counts are static (instructions in
the program text), not executions.
"""
from __future__ import annotations

import argparse
import os
import re
import sys

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "scripts")); import repo_imports; repo_imports.bootstrap()  # noqa: E402,E702,I001
sys.path.insert(0, os.path.join(REPO, "test", "python"))

import diffgpu as dg  # noqa: E402
import kernels_rows_collective as K  # noqa: E402
import kernels_rows_params as P  # noqa: E402

R, C = 4096, 1024


@dg.kernel
def block_sum_collective(out, x):
    i = dg.global_id(0)
    s = dg.block_sum(x[i])
    if dg.thread_id(0) == 0:
        out[dg.block_id(0)] = s


@dg.kernel
def block_sum_tree(out, x):
    tile = dg.shared_array(256, np.float32)
    t = dg.thread_id(0)
    tile[t] = x[dg.global_id(0)]
    dg.syncthreads()
    s = 128
    while s > 0:
        if t < s:
            tile[t] += tile[t + s]
        dg.syncthreads()
        s //= 2
    if t == 0:
        out[dg.block_id(0)] = tile[0]


@dg.kernel
def ln_grad(X, dX, g, dg_, b, db, Y, dY):
    dg.autodiff(K.layernorm, dg.Duplicated(X, dX), dg.Duplicated(g, dg_),
                dg.Duplicated(b, db), dg.Duplicated(Y, dY))


@dg.kernel
def ln4_grad(X, dX, g, dg_, b, db, Y, dY):
    dg.autodiff(K.layernorm_rows4, dg.Duplicated(X, dX), dg.Duplicated(g, dg_),
                dg.Duplicated(b, db), dg.Duplicated(Y, dY))


@dg.kernel
def sm_grad(X, dX, Y, dY):
    dg.autodiff(K.softmax, dg.Duplicated(X, dX), dg.Duplicated(Y, dY))


@dg.kernel
def ln_rows_grad(y, dy, x, dx, g, dg_, b, db):
    dg.autodiff(P.layernorm_rows, dg.Duplicated(y, dy), dg.Duplicated(x, dx),
                dg.Duplicated(g, dg_), dg.Duplicated(b, db))


def _counts(ptx: str) -> dict:
    instr = sum(1 for line in ptx.splitlines()
                if line.strip().endswith(";") and not line.strip().startswith((".", "//")))
    return {"shfl": len(re.findall(r"shfl\.sync", ptx)), "bar": len(re.findall(r"bar\.sync", ptx)),
            "atomics": len(re.findall(r"\batom\.|\bred\.global", ptx)),
            "entries": len(re.findall(r"\.entry ", ptx)), "instructions": instr}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--chip", default="sm_90")
    a = p.parse_args(argv)
    m = np.zeros((R, C), np.float32)
    v = np.zeros(C, np.float32)
    x = np.zeros(256 * 64, np.float32)
    out = np.zeros(64, np.float32)
    rows = [
        ("block sum, dg.block_sum", block_sum_collective, (out, x), (64,), (256,)),
        ("block sum, shared tree", block_sum_tree, (out, x), (64,), (256,)),
        ("layernorm", K.layernorm, (m, v, v.copy(), m.copy()), (1, R), (C, 1)),
        ("layernorm gradient", ln_grad, (m, m.copy(), v, v.copy(), v.copy(), v.copy(),
                                         m.copy(), m.copy()), (1, R), (C, 1)),
        ("layernorm_rows4 gradient", ln4_grad, (m, m.copy(), v, v.copy(), v.copy(), v.copy(),
                                                m.copy(), m.copy()), (1, R // K.ROWS4), (C, 1)),
        ("softmax", K.softmax, (m, m.copy()), (1, R), (C, 1)),
        ("softmax gradient", sm_grad, (m, m.copy(), m.copy(), m.copy()), (1, R), (C, 1)),
        ("layernorm_rows (shared trees) gradient", ln_rows_grad,
         (m, m.copy(), m.copy(), m.copy(), v, v.copy(), v.copy(), v.copy()),
         (R // P.ROWS,), (P.THREADS,)),
    ]
    head = ("kernel", "shfl.sync", "bar.sync", "atomics", ".entry", "instructions")
    print(f"{head[0]:<40} " + " ".join(f"{h:>12}" for h in head[1:]))
    for name, k, args, grid, block in rows:
        ptx = k.ir(*args, stage="ptx", target=a.chip, grid=grid, block=block)
        c = _counts(ptx)
        print(f"{name:<40} " + " ".join(f"{c[key]:>12}" for key in
                                         ("shfl", "bar", "atomics", "entries", "instructions")))
    return 0


if __name__ == "__main__":
    sys.exit(main())

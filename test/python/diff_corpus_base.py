"""The framework of diff_corpus_gpu.py: its case record, the helpers its
cases build arguments with, the activities of one differentiated run, the
GPU-check case list and the copies with other block sizes.

Kept apart from the kernels so that the corpus files (diff_corpus_reduce,
_tile and _atomic) hold kernels and their references only; `load_variant`
re-runs a corpus file itself, whose kernels compile its block size and tile
side in."""
from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass
from typing import Callable

import numpy as np

import diffgpu as dg


@dataclass
class DiffCase:
    name: str
    kernel: object
    grid: object
    block: object
    make: Callable  # (dtype, rng) -> list of numpy launch arguments
    kinds: tuple  # per argument: "dup", "out", "const", "active"
    ref: Callable | None = None
    vjp: Callable | None = None
    xfail: str | None = None  # a known compiler bug, described
    tol: dict | None = None  # dg.gradcheck options (eps, atol, rtol) if not the defaults


def collector(cases: list):
    """The `@case(grid, block, make, kinds, ...)` decorator of a corpus
    module: it appends a DiffCase for the kernel to `cases`."""
    def case(grid, block, make, kinds, ref=None, vjp=None, xfail=None, tol=None):
        def deco(kernel):
            cases.append(DiffCase(kernel.name, kernel, grid, block, make, tuple(kinds), ref,
                                  vjp, xfail, tol or {}))
            return kernel
        return deco
    return case


def rnd(rng, dtype, *shape, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, shape).astype(dtype)


def zeros(dtype, *shape):
    return np.zeros(shape, dtype)


def activities(c: DiffCase, args, mode: str, rng):
    """Activities for one run: reverse mode seeds every dup shadow with
    random values, forward mode gives random tangents (outputs too: they are
    overwritten or accumulated into, so their tangent matters only where the
    kernel accumulates)."""
    out = []
    for a, k in zip(args, c.kinds):
        if k in ("dup", "out"):
            out.append(dg.Duplicated(a, rng.standard_normal(a.shape).astype(a.dtype)))
        elif k == "active":
            out.append(dg.Active(a) if mode == "reverse"
                       else dg.Duplicated(a, type(a)(rng.standard_normal())))
        else:
            out.append(dg.Const(a) if not isinstance(a, np.ndarray) else a)
    return out


def load_variant(name: str, path: str, block: int, tile: int):
    """A fresh copy of the corpus module `name` (file `path`) whose kernels use
    `block` threads per 1-D block and `tile` x `tile` 2-D tiles (module
    constants are compiled in, so the copy has its own kernels and cache
    entries)."""
    variant = f"{name}_b{block}_t{tile}"
    if variant in sys.modules:
        return sys.modules[variant]
    spec = importlib.util.spec_from_file_location(variant, path)
    mod = importlib.util.module_from_spec(spec)
    mod._BLOCK_OVERRIDE = (block, tile)
    sys.modules[variant] = mod
    spec.loader.exec_module(mod)
    return mod


def gpu_cases(cases, block: int, tile: int):
    """(name, kernel, grid, block, mode, make(rng), ref) per case, dtype and
    mode, for scripts/gpu_check.py: "launch" (expected: the numpy `ref`),
    "reverse" and "forward" (expected: the CPU's results; not for cases that
    fail to differentiate, see `xfail`)."""
    tag = "" if (block, tile) == (8, 4) else f" b{block}"
    out = []
    for c in cases:
        for dt in (np.float32, np.float64):
            modes = ("launch",) if c.xfail else ("launch", "reverse", "forward")
            for mode in modes:
                if mode == "launch" and c.ref is None:
                    continue

                def make(r, c=c, dt=dt, mode=mode):
                    args = [dt(a) if isinstance(a, float) else a for a in c.make(dt, r)]
                    return args if mode == "launch" else activities(c, args, mode, r)
                name = f"diff{tag} {c.name} {mode} {np.dtype(dt).name}"
                out.append((name, c.kernel, c.grid, c.block, mode, make,
                            c.ref if mode == "launch" else None))
    return out

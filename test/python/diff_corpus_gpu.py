"""Differentiated kernels that use shared memory, barriers and atomics.

`CASES` is a list of `DiffCase`: kernel, grid, block, `make(dtype, rng)`
building numpy launch arguments, `kinds` (per argument "dup": a float array
the kernel reads, "out": a float array it writes or accumulates into, both
differentiated as Duplicated; "const"; "active": a float scalar), and
optionally `ref(*args)` (numpy primal: updates float64 copies in place) and
`vjp(args, D)` (analytic: {index: gradient} for output seeds D). test_gpu_diff.py
checks every case in both modes against finite differences (dg.gradcheck),
float32 against float64 and, where given, `ref` and `vjp`;
scripts/gpu_check.py imports `gpu_cases()` to run them on a GPU.

The kernels live in three modules, by what they do with shared memory:
diff_corpus_reduce.py (block reductions and scans), diff_corpus_tile.py
(tiles, halos, neighbours) and diff_corpus_atomic.py (primal atomics); this
module gathers their cases in the corpus order `ORDER` (scripts/gpu_check.py
seeds each case by its position).

All kernels keep barriers reachable by every thread of a block: guards that
differ within a block only skip loads/stores, and returns are block-uniform
or come after the last barrier.
"""
from __future__ import annotations

import importlib
import os

from diff_corpus_base import DiffCase
from diff_corpus_base import gpu_cases as _gpu_cases
from diff_corpus_base import load_variant as _load_variant

# threads per block (1-D kernels) and 2-D tile side: small for the CPU tests
# (whole Jacobians); `load_variant` makes a copy with blocks of several warps
B, T = globals().get("_BLOCK_OVERRIDE") or (8, 4)

PARTS = ("diff_corpus_reduce", "diff_corpus_tile", "diff_corpus_atomic")

# the cases in corpus order (the numbers of the sections of the part modules)
ORDER = ("block_sumsq", "stencil3", "scan_hs", "transpose_tile", "block_softmax",
         "atomic_loss", "weighted_hist", "matvec_tiled", "smooth_passes",
         "shared_f64_mixed", "tile2d_neighbours", "dot_atomic", "guarded_barrier",
         "tanh_reduce", "atomic_product", "inner_autodiff_shared", "inner_fwddiff_shared")


def _part(name: str):
    """Part module `name`: the imported one, or in a copy made by
    `load_variant` a copy of it with this copy's block size and tile side."""
    if "_BLOCK_OVERRIDE" not in globals():
        return importlib.import_module(name)
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), name + ".py")
    return _load_variant(name, path, B, T)


def _gather() -> list[DiffCase]:
    cases = {c.name: c for name in PARTS for c in _part(name).CASES}
    if sorted(cases) != sorted(ORDER):
        raise RuntimeError(f"diff_corpus_gpu.ORDER lists {sorted(ORDER)}, the part modules "
                           f"define {sorted(cases)}")
    return [cases[name] for name in ORDER]


CASES: list[DiffCase] = _gather()


def load_variant(block: int, tile: int):
    """A fresh copy of this module, and of its part modules, whose kernels
    use `block` threads per 1-D block and `tile` x `tile` 2-D tiles
    (diff_corpus_base.load_variant)."""
    return _load_variant(__name__, __file__, block, tile)


def gpu_cases():
    """The GPU check's cases of this module (diff_corpus_base.gpu_cases)."""
    return _gpu_cases(CASES, B, T)

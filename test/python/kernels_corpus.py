"""A corpus of kernels covering the frontend's Python, with numpy references.

`CASES` is a list of `Case`: kernel, `make(dtype, xp)` building the launch
arguments (numpy or CuPy via `xp`), grid, block, and `ref(*args)` which
updates numpy copies of the arguments in place to the expected result. Used
by test_corpus.py on the CPU and importable by a GPU check script:

    for case in CASES:
        args = case.make(np.float32, cupy)
        case.kernel[case.grid, case.block](*args)

The kernels are defined once, by concept, in corpus_arith.py, corpus_control.py
and corpus_functions.py; importing them registers their cases here in that
order (corpus_base.py holds `Case` and the `@case` decorator).
"""
from __future__ import annotations

import corpus_arith  # noqa: F401  (registers its cases)
import corpus_control  # noqa: F401
import corpus_functions  # noqa: F401
from corpus_base import BLOCK, CASES, GRID, N, Case

__all__ = ["CASES", "Case", "N", "GRID", "BLOCK"]

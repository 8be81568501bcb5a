"""The shared part of the kernel corpus (kernels_corpus.py): the `Case`
record, the `@case(make, ref)` decorator that registers a kernel in `CASES`,
and the input builders. The kernels live in corpus_arith.py (arithmetic,
typing, math), corpus_control.py (conditions, loops) and corpus_functions.py
(device functions, arrays, geometry, shared memory, atomics, differentiation
inside kernels).

    @case(x_y(), lambda x, y: y.__setitem__(slice(None), 2.0 * x + 1))
    @dg.kernel
    def weak_literals(x, y): ...
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

N = 37
BLOCK = 16
GRID = (N + BLOCK - 1) // BLOCK
SCALE = 3.0
ITERS = 4
TILE = 16


@dataclass
class Case:
    name: str
    kernel: object
    make: Callable  # (dtype, xp) -> list of launch arguments
    ref: Callable  # (*numpy args) -> None, updates the arrays in place
    grid: object = GRID
    block: object = BLOCK
    needs_autodiff: bool = False


CASES: list[Case] = []


def case(make, ref, grid=GRID, block=BLOCK, needs_autodiff=False):
    def deco(kernel):
        CASES.append(Case(kernel.name, kernel, make, ref, grid, block, needs_autodiff))
        return kernel
    return deco


def rand(dtype, xp, *shape, lo=-1.0, hi=1.0, seed=0):
    rng = np.random.default_rng(seed * 100 + len(shape) * 7 + int(lo * 10) + 50)
    return xp.asarray(rng.uniform(lo, hi, shape).astype(dtype))


def grid_vals(dtype, xp, n=N, lo=-2.0):
    """Values away from integer/threshold boundaries: lo + k/4 + 0.03."""
    return xp.asarray((lo + np.arange(n) / 4 + 0.03).astype(dtype))


def zeros(dtype, xp, *shape):
    return xp.zeros(shape, dtype)


def x_y(lo=-1.0, hi=1.0):
    return lambda dt, xp: [rand(dt, xp, N, lo=lo, hi=hi), zeros(dt, xp, N)]

"""A derivative's heap tape that outgrows the GPU's malloc heap, with trip
counts read from an array (no formula of the launch, so nothing is checked
before it): the launch is a LaunchError after it ran, never a fault
(lowering/autodiff/tape.py, runtime/tape_overflow.py), and the same program
runs right after it in the same process, with the right gradient (the CUDA
context survived). Mode "overflow" (gpu_check_io.run_case): the last
argument holds the trip counts of the launch that must overflow (2^21 per
thread, 1,024 threads: 16 MiB buffers, far over the 1 GiB heap diffgpu
sets); the case's own trip counts (300: one heap buffer of 512 words per
thread) give the gradient compared with the CPU's. On the CPU, where
`malloc` does not fail, only the second launch runs."""
from __future__ import annotations

import os
import sys

import numpy as np

import diffgpu as dg

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "test", "python"))
from kernels_loop_tapes import spin  # noqa: E402

THREADS = 1024
BIG = 1 << 21


def _args(r):
    x = r.uniform(-1, 1, THREADS)
    return [dg.Duplicated(np.zeros(THREADS), np.ones(THREADS)),
            dg.Duplicated(x, np.zeros(THREADS)),
            np.full(THREADS, 300, np.int32),
            np.full(THREADS, BIG, np.int32)]


def cases():
    return [("tape overflow: LaunchError, then the same program runs", spin, 4, 256,
             "overflow", _args, None)]

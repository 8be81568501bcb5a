"""Warp and block collectives (docs/collectives.md): every collective launched,
differentiated in reverse and forward mode, on blocks of 64 threads, 96
(three warps) and 8x4x2 (linear thread order; a block that is not a
multiple of 32 is a LaunchError before the launch, the same on both
devices: test/python/runtime/test_launch_checks.py); atomic max/min/sub; layernorm and softmax as row
programs in one launch, launched, differentiated and through dg.vjp. The
GPU must give the CPU's results (sums: to the check's tolerance; the CPU
adds in the GPU's order), and the numpy references where given."""
from __future__ import annotations

import os
import sys

import numpy as np

import diffgpu as dg

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "test", "python"))
import kernels_collectives as K  # noqa: E402
import kernels_rows_collective as ROWS  # noqa: E402

BLOCKS = {"64": 64, "96": 96, "8x4x2": (8, 4, 2)}
NB = 3  # blocks


def _f32(r, *shape):
    return r.standard_normal(shape).astype(np.float32)


def _n(block):
    return int(np.prod(block))


def _launch(n):
    return lambda r: [_f32(r, NB, n), np.zeros((NB, n), np.float32)]


def _reverse(n):
    return lambda r: [dg.Duplicated(_f32(r, NB, n), np.zeros((NB, n), np.float32)),
                      dg.Duplicated(np.zeros((NB, n), np.float32), _f32(r, NB, n))]


def _forward(n):
    return lambda r: [dg.Duplicated(_f32(r, NB, n), _f32(r, NB, n)),
                      dg.Duplicated(np.zeros((NB, n), np.float32), np.zeros((NB, n), np.float32))]


def _ref(name):
    def ref(X, Y):
        Y[...] = K.reference(name, X)
    return ref


def _rows(R, C, vjp=False):
    def make(r):
        X, g, b = _f32(r, R, C), (1 + 0.1 * _f32(r, C)).astype(np.float32), _f32(r, C)
        if vjp:
            return [np.zeros((R, C), np.float32), X, g, b, _f32(r, R, C)]
        return [X, g, b, np.zeros((R, C), np.float32)]
    return make


def _rows_reverse(R, C):
    def make(r):
        z = np.zeros
        return [dg.Duplicated(_f32(r, R, C), z((R, C), np.float32)),
                dg.Duplicated((1 + 0.1 * _f32(r, C)).astype(np.float32), z(C, np.float32)),
                dg.Duplicated(_f32(r, C), z(C, np.float32)),
                dg.Duplicated(z((R, C), np.float32), _f32(r, R, C))]
    return make


def _ln_ref(X, g, b, Y):
    Y[...] = ROWS.layernorm_ref(X.astype(np.float64), g, b)


def cases():
    out = []
    for name in sorted(K.OPS):
        k = K.OPS[name]
        for label, block in BLOCKS.items():
            n = _n(block)
            out.append((f"collective {name}: launch, block {label}", k, NB, block, "launch",
                        _launch(n), _ref(name)))
            out.append((f"collective {name}: reverse, block {label}", k, NB, block, "reverse",
                        _reverse(n), None))
        out.append((f"collective {name}: forward, block 64", k, NB, 64, "forward", _forward(64),
                    None))
        out.append((f"collective {name}: forward, block 96", k, NB, 96, "forward", _forward(96),
                    None))
    out.append(("collective atomics max/min/sub: launch", K.atomics_k, 8, 128, "launch",
                lambda r: [np.array([-np.inf, np.inf, 0.0], np.float32), _f32(r, 1024)], None))
    for n in (64, 96):
        for dt in (np.int32, np.int64):
            out.append((f"collective integers {np.dtype(dt).name}: launch, block {n}", K.ints_k, 1,
                        n, "launch", lambda r, n=n, dt=dt: [
                            r.integers(-1000, 1000, (1, n)).astype(dt), np.zeros((6, n), dt)],
                        None))
    out.append(("collective second order (forward of the reverse): block 64", K.mix_grad_k, 1,
                64, "forward", lambda r: [
                    dg.Duplicated((np.arange(64) / 64 + 0.25).astype(np.float32)[r.permutation(64)],
                                  _f32(r, 64)),
                    dg.Duplicated(np.zeros(64, np.float32), np.zeros(64, np.float32)),
                    dg.Duplicated(np.zeros(64, np.float32), np.zeros(64, np.float32)),
                    dg.Duplicated(_f32(r, 64), np.zeros(64, np.float32))], None))
    for n in (64, 96):
        out.append((f"collective shuffles by a value: launch, block {n}", K.shfl_var_k, 1, n,
                    "launch", lambda r, n=n: [_f32(r, 1, n), np.zeros((1, n), np.float32)],
                    None))
        out.append((f"collective shuffles by a value: reverse, block {n}", K.shfl_var_k, 1, n,
                    "reverse", lambda r, n=n: [
                        dg.Duplicated(_f32(r, 1, n), np.zeros((1, n), np.float32)),
                        dg.Duplicated(np.zeros((1, n), np.float32), _f32(r, 1, n))], None))
    out.append(("collective two in a loop: reverse", K.two_in_loop_k, 1, 64, "reverse",
                lambda r: [dg.Duplicated(_f32(r, 1, 64), np.zeros((1, 64), np.float32)),
                           dg.Duplicated(np.zeros((1, 64), np.float32), _f32(r, 1, 64))], None))
    out.append(("collective two in a loop: launch", K.two_in_loop_k, 1, 64, "launch",
                lambda r: [_f32(r, 1, 64), np.zeros((1, 64), np.float32)], None))
    R, C = 64, 1024
    grid, block = ROWS.row_launch(R, C)
    out += [
        ("rows layernorm: launch", ROWS.layernorm, grid, block, "launch", _rows(R, C), _ln_ref),
        ("rows layernorm: reverse", ROWS.layernorm, grid, block, "reverse", _rows_reverse(R, C),
         None),
        ("rows layernorm: vjp", ROWS.layernorm_out_first, grid, block, "vjp", _rows(R, C, vjp=True),
         None),
        ("rows layernorm 992 columns: vjp", ROWS.layernorm_out_first, (1, 8), (992, 1), "vjp",
         _rows(8, 992, vjp=True), None),
        ("rows softmax: launch", ROWS.softmax, grid, block, "launch",
         lambda r: [_f32(r, R, C), np.zeros((R, C), np.float32)],
         lambda X, Y: Y.__setitem__(Ellipsis, ROWS.softmax_ref(X.astype(np.float64)))),
        ("rows softmax: vjp", ROWS.softmax_out_first, grid, block, "vjp",
         lambda r: [np.zeros((R, C), np.float32), _f32(r, R, C), _f32(r, R, C)], None),
        ("rows layernorm 4 rows per block: launch", ROWS.layernorm_rows4, (1, 17), block,
         "launch", _rows(66, C), _ln_ref),
        ("rows layernorm 4 rows per block: reverse", ROWS.layernorm_rows4, (1, 17), block,
         "reverse", _rows_reverse(66, C), None),
        ("rows layernorm strided 3000 columns: launch", ROWS.layernorm_strided, 16, 256,
         "launch", _rows(16, 3000), _ln_ref),
    ]
    return out

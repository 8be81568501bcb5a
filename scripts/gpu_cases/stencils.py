"""Stencil adjoints and batched block sums on the GPU: dg.vjp's gathered
gradients of 2-D, 3-D and flattened affine stencils
(lowering/autodiff/functional/gather.py: no atomics), conv2d's image and
filter gradients (the filter's 25 taps summed per block together:
lowering/reduce/block_sums.py), the same kernels under dg.autodiff
(Enzyme's convention: scatter atomics and per-block transposition), and
several uniform sums at one site for block sizes with full warps and
without (the per-thread fallback). The CPU's results are expected."""
from __future__ import annotations

import os
import sys

import numpy as np

import diffgpu as dg

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "test", "python"))
import kernels_stencil2d as S  # noqa: E402


@dg.kernel
def moments(out, x):
    i = dg.global_id(0)
    if i < len(x):
        v = x[i]
        dg.atomic_add(out, 0, 1.0)
        dg.atomic_add(out, 1, v)
        dg.atomic_add(out, 2, v * v)


def _a(r, *shape, dtype=np.float32):
    return r.standard_normal(shape).astype(dtype)


def _grid(n, b):
    return (n + b - 1) // b


def _conv(h, w, dtype=np.float32):
    def make(r):
        return [np.zeros((h - 4, w - 4), dtype), _a(r, h, w, dtype=dtype),
                _a(r, 5, 5, dtype=dtype), _a(r, h - 4, w - 4, dtype=dtype)]
    return make


def _conv_rev(h, w):
    def make(r):
        y = np.zeros((h - 4, w - 4), np.float32)
        return [dg.Duplicated(y, _a(r, h - 4, w - 4)),
                dg.Duplicated(_a(r, h, w), np.zeros((h, w), np.float32)),
                dg.Duplicated(_a(r, 5, 5), np.zeros((5, 5), np.float32))]
    return make


def _same(shape, extra=(), dtype=np.float32):
    """y, x (, extra), dy for a stencil whose output has x's shape."""
    def make(r):
        return [np.zeros(shape, dtype), _a(r, *shape, dtype=dtype), *extra,
                _a(r, *shape, dtype=dtype)]
    return make


def _same_rev(shape, extra=()):
    def make(r):
        return [dg.Duplicated(np.zeros(shape, np.float32), _a(r, *shape)),
                dg.Duplicated(_a(r, *shape), np.zeros(shape, np.float32)), *extra]
    return make


def cases():
    out = []
    for h, w, b in ((260, 196, 16), (1028, 1028, 16), (100, 68, 8)):
        g = (_grid(h - 4, b), _grid(w - 4, b))
        out.append((f"conv2d {h}x{w} launch", S.conv2d, g, (b, b), "launch",
                    lambda r, h=h, w=w: _conv(h, w)(r)[:3], None))
        out.append((f"conv2d {h}x{w} vjp (image gathered, filter block-summed)", S.conv2d,
                    g, (b, b), "vjp", _conv(h, w), None))
        out.append((f"conv2d {h}x{w} reverse", S.conv2d, g, (b, b), "reverse",
                    _conv_rev(h, w), None))
    out.append(("conv2d 68x68 vjp f64", S.conv2d, (4, 4), (16, 16), "vjp",
                _conv(68, 68, np.float64), None))
    out.append(("conv2d 36x36 vjp, 8x8 threads (grid-stride)", S.conv2d, (1, 1), (8, 8),
                "vjp", _conv(36, 36), None))
    out.append(("blur3 vjp", S.blur3, (16, 12), (16, 16), "vjp", _same((250, 190)), None))
    out.append(("blur3 reverse", S.blur3, (16, 12), (16, 16), "reverse",
                _same_rev((250, 190)), None))
    out.append(("laplace3d vjp", S.laplace3d, (8, 8, 8), (8, 8, 4), "vjp",
                _same((60, 62, 30)), None))
    out.append(("laplace3d reverse", S.laplace3d, (8, 8, 8), (8, 8, 4), "reverse",
                _same_rev((60, 62, 30)), None))
    n, wd = 300 * 256, 256
    out.append(("flat5 vjp (runtime W)", S.flat5, _grid(n, 256), 256, "vjp",
                _same((n,), (wd,)), None))
    out.append(("flat5 reverse", S.flat5, _grid(n, 256), 256, "reverse",
                _same_rev((n,), (wd,)), None))
    m = n - 2 * wd - 2
    out.append(("flat_conv3 vjp (x[i + a*W + b])", S.flat_conv3, _grid(m, 256), 256, "vjp",
                lambda r: [np.zeros(m, np.float32), _a(r, n), wd, _a(r, m)], None))
    for block in (256, 48, 1024):
        k = 100003
        out.append((f"moments f32 block {block} (three sums, one barrier)", moments,
                    _grid(k, block), block, "launch",
                    lambda r, k=k: [np.zeros(3, np.float32), _a(r, k)], None))
    out.append(("moments f64 block 128", moments, _grid(100003, 128), 128, "launch",
                lambda r: [np.zeros(3, np.float64), _a(r, 100003, dtype=np.float64)], None))
    return out

"""2-D and 3-D stencil kernels as users write them, defined once: the stencil
adjoint's tests (test/python/lowering/reduce/test_stencil_affine.py), the GPU
check cases (scripts/gpu_cases/stencils.py) and bench/peers.py import them.

`conv2d` is a valid 2-D convolution (cross-correlation, as in deep learning)
of an image with a 5x5 filter: a 2-D grid, one thread per output element, a
bounds guard and the two constant-trip loops over the filter taps. Its
reverse mode scatters `dx[i + a, j + b] += w[a, b] * dy[i, j]` (the image
gradient) and adds `dy[i, j] * x[i + a, j + b]` into `dw[a, b]` (the filter
gradient: 25 sums over the whole grid).
"""
import diffgpu as dg

#: filter size of `conv2d`
K = 5


@dg.kernel
def conv2d(y, x, w):
    i = dg.global_id(0)
    j = dg.global_id(1)
    if i < y.shape[0] and j < y.shape[1]:
        acc = 0.0
        for a in range(5):
            for b in range(5):
                acc += w[a, b] * x[i + a, j + b]
        y[i, j] = acc


@dg.kernel
def blur3(y, x):
    """A 3x3 box blur of the interior, written out (no loops)."""
    i = dg.global_id(0)
    j = dg.global_id(1)
    if i >= 1 and i < x.shape[0] - 1 and j >= 1 and j < x.shape[1] - 1:
        y[i, j] = (x[i - 1, j - 1] + x[i - 1, j] + x[i - 1, j + 1]
                   + x[i, j - 1] + 2.0 * x[i, j] + x[i, j + 1]
                   + x[i + 1, j - 1] + x[i + 1, j] + x[i + 1, j + 1]) * 0.1


@dg.kernel
def laplace3d(y, x):
    """The 7-point Laplacian of a 3-D array's interior."""
    i = dg.global_id(0)
    j = dg.global_id(1)
    k = dg.global_id(2)
    if (i >= 1 and i < x.shape[0] - 1 and j >= 1 and j < x.shape[1] - 1
            and k >= 1 and k < x.shape[2] - 1):
        y[i, j, k] = (x[i - 1, j, k] + x[i + 1, j, k] + x[i, j - 1, k] + x[i, j + 1, k]
                      + x[i, j, k - 1] + x[i, j, k + 1] - 6.0 * x[i, j, k])


@dg.kernel
def flat5(y, x, W):
    """A 5-point stencil on a row-major image of width W stored flat, one
    thread per element (1-D grid): x[i - W], x[i - 1], x[i], x[i + 1], x[i + W]."""
    i = dg.global_id(0)
    if i >= W and i < len(x) - W:
        y[i] = x[i - W] + x[i - 1] + x[i + 1] + x[i + W] - 4.0 * x[i]


@dg.kernel
def flat_conv3(y, x, W):
    """A 3x3 filter over a flat row-major image of width W (loops over the
    taps): y[i] = sum_{a, b} x[i + a * W + b]."""
    i = dg.global_id(0)
    if i < len(y):
        acc = 0.0
        for a in range(3):
            for b in range(3):
                acc += x[i + a * W + b]
        y[i] = acc

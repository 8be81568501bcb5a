"""A tiled block reduction with shared memory and barriers, differentiated.

Each block of 64 threads sums tanh(x)^2 over its tile through a tree of
barriers; reverse mode mirrors the barriers and runs on the CPU (every
thread of a block reaches a barrier before any passes it) and on the GPU.
"""
import numpy as np

import diffgpu as dg

BLOCK = 64


@dg.kernel
def block_sum(out, x):
    s = dg.shared_array(BLOCK, np.float64)
    t = dg.thread_id(0)
    i = dg.global_id(0)
    v = 0.0
    if i < len(x):
        v = dg.tanh(x[i])
    s[t] = v * v
    dg.syncthreads()
    stride = BLOCK // 2
    while stride > 0:
        if t < stride:
            s[t] += s[t + stride]
        dg.syncthreads()
        stride //= 2
    if t == 0:
        out[dg.block_id(0)] = s[0]


n, blocks = 1000, (1000 + BLOCK - 1) // BLOCK
x = np.random.default_rng(1).standard_normal(n)
out = np.zeros(blocks)
block_sum[blocks, BLOCK](out, x)
ref = np.add.reduceat(np.tanh(x) ** 2, np.arange(0, n, BLOCK))
print(f"block sums: max |error| = {np.max(np.abs(out - ref)):.2e}")

dout = np.ones(blocks)
dx = np.zeros(n)
dg.autodiff(block_sum[blocks, BLOCK], dg.Duplicated(np.zeros(blocks), dout),
            dg.Duplicated(x, dx))
grad = 2 * np.tanh(x) * (1 - np.tanh(x) ** 2)
print(f"gradient:   max |error| = {np.max(np.abs(dx - grad)):.2e}")
assert np.allclose(out, ref) and np.allclose(dx, grad)

try:
    import cupy as cp
    has_gpu = cp.cuda.runtime.getDeviceCount() > 0
except Exception:
    has_gpu = False
if has_gpu:
    xg, dxg = cp.asarray(x), cp.zeros(n)
    dg.autodiff(block_sum[blocks, BLOCK], dg.Duplicated(cp.zeros(blocks), cp.ones(blocks)),
                dg.Duplicated(xg, dxg))
    print(f"GPU gradient: max |error| = {float(cp.max(cp.abs(dxg - cp.asarray(grad)))):.2e}")
else:
    print("GPU: skipped (no CuPy or no GPU here)")

"""Why the reverse kernel of an elementwise map is slow on the H200: a probe.

Hand-written CUDA variants of the reverse sweep of `y[i] = 2 x[i] + 1`
(dg.autodiff with Duplicated(y, dy), Duplicated(x, dx)), timed on CuPy:

    full          x, y, ld dy, st dy = 0, dx += ...   (what diffgpu emits)
    loads_first   all loads, then all stores          (same result unless dy aliases dx)

Run on the GPU machine from the repo root (needs the bench bundle only for
the import path): python3 bench/store_order_probe.py. Results and reading:
docs/gpu/RESULTS.md.
"""
import sys
sys.argv = [sys.argv[0]]
sys.path.insert(0, "bench"); sys.path.insert(0, "scripts")
sys.modules.setdefault("mlir", None)
import gpu_check  # noqa
import cupy as cp, numpy as np
from gpu_bench import _time_cupy, N, BLOCK
x = cp.random.standard_normal(N, dtype=cp.float32); y = cp.empty_like(x)
dy = cp.random.standard_normal(N, dtype=cp.float32); dx = cp.zeros_like(x)
grid = N // BLOCK
body = {
 "full": "float v = x[i]; y[i] = 2.f*v+1.f; float d = dy[i]; dy[i] = 0.f; dx[i] += 2.f*d;",
 "no_dy_zero": "float v = x[i]; y[i] = 2.f*v+1.f; float d = dy[i]; dx[i] += 2.f*d;",
 "dx_store_only": "float v = x[i]; y[i] = 2.f*v+1.f; float d = dy[i]; dy[i] = 0.f; dx[i] = 2.f*d;",
 "no_primal": "float d = dy[i]; dy[i] = 0.f; dx[i] += 2.f*d;",
 "dy_zero_only": "dy[i] = 0.f;",
 "dy_half": "dy[i] = 0.5f;",
 "rw_dx": "dx[i] += 1.f;",
 "loads_first": "float v = x[i]; float d = dy[i]; float a = dx[i]; y[i] = 2.f*v+1.f; dy[i] = 0.f; dx[i] = a + 2.f*d;",
}
body_r = {"full_restrict": body["full"]}
for name, b in list(body.items()) + list(body_r.items()):
    r = "__restrict__ " if name.endswith("restrict") else ""
    src = (f'extern "C" __global__ void g(float* {r}y, float* {r}dy, const float* {r}x, '
           f'float* {r}dx, long n) {{ long i = (long)blockIdx.x * blockDim.x + threadIdx.x; '
           f'if (i < n) {{ {b} }} }}')
    k = cp.RawKernel(src, "g")
    dy[...] = cp.random.standard_normal(N, dtype=cp.float32)
    print(f"{name:16} {_time_cupy(lambda: k((grid,), (BLOCK,), (y, dy, x, dx, np.int64(N)))):.3f} ms")
dy[...] = 1.0
print("copy into zeros-then-ones", _time_cupy(lambda: cp.copyto(y, x)))
z = cp.zeros_like(x)
print("copy from zeros", _time_cupy(lambda: cp.copyto(y, z)))

"""The seed kernels and the small kernels several test files launch, defined
once: test_api.py (CPU), test_gpu.py (GPU) and scripts/gpu_check.py import
them from here.

- `f` squares A[0]; `df` differentiates it inside a kernel (docs/seed.md);
- `axpy`: A += a * B, elementwise, guarded by len(A);
- `sq`: y = a * x * x, elementwise (host-level reverse mode in the tests).
"""
import diffgpu as dg


@dg.kernel
def f(A):
    A[0] *= A[0]


@dg.kernel
def df(A, dA):
    dg.autodiff(f, dg.Duplicated(A, dA))


@dg.kernel
def axpy(A, B, a):
    i = dg.global_id(0)
    if i < len(A):
        A[i] = A[i] + a * B[i]


@dg.kernel
def sq(y, x, a):
    i = dg.global_id(0)
    if i < len(x):
        y[i] = a * x[i] * x[i]

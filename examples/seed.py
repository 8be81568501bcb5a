"""The seed case: differentiate a kernel *inside* another kernel.

Enzyme.jl failed on this (the nested compilation was built for the host, not
for the PTX target of the kernel it sits in). In diffgpu the target is an
attribute on every op, copied by every pass: the derivative functions of `f`
generated inside `df` are compiled for the same target as `df`.

Runs on the CPU always, prints the PTX for sm_90, and runs on the GPU when CuPy
and a GPU are present.
"""
import numpy as np

import diffgpu as dg


@dg.kernel
def f(A):
    A[0] *= A[0]


@dg.kernel
def df(A, dA):
    dg.autodiff(f, dg.Duplicated(A, dA))


def run(xp, where):
    A = xp.ones(1, xp.float32)
    f[1, 1](A)
    print(f"{where}: f(A=1)            -> A = {float(A[0])}")
    assert float(A[0]) == 1.0
    A = xp.full(1, 3, xp.float32)
    dA = xp.ones(1, xp.float32)
    df[1, 1](A, dA)
    print(f"{where}: df(A=3, dA=1)     -> A = {float(A[0])}, dA = {float(dA[0])}"
          "   (d(a*a)/da = 2a = 6, a cached before the overwrite)")
    assert float(A[0]) == 9.0 and float(dA[0]) == 6.0


A, dA = np.ones(1, np.float32), np.ones(1, np.float32)
ptx = df.ir(A, dA, stage="ptx", target="sm_90")
entry = [line for line in ptx.splitlines() if ".entry" in line or ".target" in line]
print("PTX for sm_90:", " | ".join(s.strip() for s in entry))

# the generated derivative functions all carry the kernel's target
autodiff_ir = df.ir(A, dA, stage="autodiff", target="sm_90")
derivs = [line.strip().split("(")[0] for line in autodiff_ir.splitlines()
          if "func.func" in line and "__dg_" in line]
print("derivative functions:", ", ".join(d.split()[-1] for d in derivs) or "none")
assert all('chip = "sm_90"' in line for line in autodiff_ir.splitlines()
           if "func.func" in line), "a function lost the sm_90 target"

run(np, "CPU")

try:
    import cupy as cp
    has_gpu = cp.cuda.runtime.getDeviceCount() > 0
except Exception:  # no CuPy, no driver, no device
    has_gpu = False
if has_gpu:
    run(cp, "GPU")
else:
    print("GPU: skipped (no CuPy or no GPU here)")

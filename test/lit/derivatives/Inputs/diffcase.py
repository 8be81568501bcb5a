"""The derivative functions diffgpu-autodiff makes of a @dg.func of scalars,
for the FileCheck tests of this folder: `case(f, n)` differentiates f(a[0],
..., a[n-1]) in reverse mode (dg.autodiff, every argument Active) and in
forward mode (dg.fwddiff, every argument Duplicated with tangent 1.0) and
prints both functions, @__dg_rev_<f>_ first, then @__dg_fwd_<f>_."""
import linecache

import numpy as np

import diffgpu as dg


def _kernels(f, src, tag):
    ns = {"dg": dg, "f": f}
    name = f"<diffcase-{tag}-{f.name}>"
    linecache.cache[name] = (len(src), None, src.splitlines(True), name)  # for the frontend
    exec(compile(src, name, "exec"), ns)
    return ns


def _print(ns, args):
    for mode in ("rev", "fwd"):
        ir = dg.kernel(ns[mode]).ir(*args, stage="autodiff")
        start = ir.index(f"func.func @__dg_{mode}_")
        print(ir[start:ir.index("\n  }", start)])
        print("// -----")


def case(f, n, dtype=np.float64):
    """f of n scalars read from an array of `dtype`."""
    args = ", ".join(f"dg.Active(a[{k}])" for k in range(n))
    tangents = ", ".join(f"dg.Duplicated(a[{k}], 1.0)" for k in range(n))
    src = (f"def rev(out, a):\n    out[0] = dg.autodiff(f, {args})[0]\n"
           f"def fwd(out, a):\n    out[0] = dg.fwddiff(f, {tangents})\n")
    _print(_kernels(f, src, "scalars"), (np.zeros(1, dtype), np.zeros(n, dtype)))


def array_case(f, dtype=np.float64):
    """f(A, v) of an array A (Duplicated, its shadow dA) and a scalar v read
    from x[0] (Active in reverse mode, tangent 1.0 forward)."""
    src = ("def rev(A, dA, x):\n    dg.autodiff(f, dg.Duplicated(A, dA), dg.Active(x[0]))\n"
           "def fwd(A, dA, x):\n    dg.fwddiff(f, dg.Duplicated(A, dA), dg.Duplicated(x[0], 1.0))\n")
    z = np.zeros(1, dtype)
    _print(_kernels(f, src, "array"), (z, z, z))

"""Kernels the PyTorch / JAX / DDP tests wrap, with their references, and the
GPU signatures they launch compiled ahead of time for a machine without MLIR:

    python test/python/interop_kernels.py --prepare .gpucache [--chip sm_90]

writes into `.gpucache/cache` (the directory test_gpu.py reads there too).
"""
import os
import sys

import diffgpu as dg


@dg.kernel
def square_scale(y, x, a):
    """y = a * x**2, elementwise."""
    i = dg.global_id(0)
    if i < len(x):
        y[i] = a * x[i] * x[i]


@dg.kernel
def mul_add(u, v, x, y):
    """Two outputs: u = x * y, v = sin(x) + y."""
    i = dg.global_id(0)
    if i < len(x):
        u[i] = x[i] * y[i]
        v[i] = dg.sin(x[i]) + y[i]


@dg.kernel
def dense_tanh(y, x, w, b):
    """y = tanh(x @ w + b), one thread per element of y."""
    i = dg.global_id(0)
    j = dg.global_id(1)
    if i < y.shape[0] and j < y.shape[1]:
        acc = b[j]
        for k in range(x.shape[1]):
            acc += x[i, k] * w[k, j]
        y[i, j] = dg.tanh(acc)


@dg.kernel
def gather(y, x, idx):
    """y[i] = x[idx[i]]: x's gradient sums the cotangents of every i with the
    same index (many threads adding into one element)."""
    i = dg.global_id(0)
    if i < len(y):
        y[i] = x[idx[i]]


BLOCK = 64
DENSE_BLOCK = (BLOCK, 1)  # 1-D blocks of whole warps: what dg.jax on the GPU launches


def grid_1d(x, **_):
    return (x.shape[0] + BLOCK - 1) // BLOCK


def grid_dense(x, w, **_):
    return ((x.shape[0] + BLOCK - 1) // BLOCK, w.shape[1])


def dense_out(x, w, **_):
    return (x.shape[0], w.shape[1]), x.dtype


def gather_out(x, idx, **_):
    return tuple(idx.shape), x.dtype


def grid_idx(idx, **_):
    return (idx.shape[0] + BLOCK - 1) // BLOCK


#: kernel -> (output specs, scalars, grid, block): how the tests wrap each one
OPS = {
    "square_scale": (square_scale, {"y": "x"}, {"a": float}, grid_1d, BLOCK),
    "mul_add": (mul_add, {"u": "x", "v": "x"}, {}, grid_1d, BLOCK),
    "dense_tanh": (dense_tanh, {"y": dense_out}, {}, grid_dense, DENSE_BLOCK),
}


#: ops only the 16-bit tests wrap (test_torch16.py, test_jax16.py: integer
#: indices, inputs of their own)
OPS16 = {"gather": (gather, {"y": gather_out}, {}, grid_idx, BLOCK)}
#: the 16-bit float dtypes the bridges take, and the gather's calls: 4096
#: cotangents summed into 8 elements of x (int32 indices: JAX's default)
DTYPES16 = ("float16", "bfloat16")
GATHER = (8, 4096)

#: the CPU/GPU test arguments of each op, framework-free: an array shape, or a
#: float passed as it is (test_torch.py and test_jax.py build their tensors)
TEST_ARGS = {
    "square_scale": ((70,), 1.5),
    "mul_add": ((70,), (70,)),
    "dense_tanh": ((5, 3), (3, 4), (4,)),
}


def wrap(module, name):
    """`module.op(...)` (dg.torch or dg.jax) for the kernel `name` of OPS
    or OPS16."""
    kernel, outputs, scalars, grid, block = {**OPS, **OPS16}[name]
    return module.op(kernel, outputs=outputs, scalars=scalars, grid=grid, block=block)


def gpu_inputs():
    """(kernel name, inputs by name) of every call the GPU tests make: the
    shapes and dtypes test_torch.py / test_jax.py launch on the GPU."""
    import numpy as np

    calls = []
    for dt in ("float32", "float64"):
        def arr(*shape, dt=dt):
            return np.zeros(shape, dt)
        calls += [("square_scale", {"x": arr(70), "a": 1.5}),
                  ("mul_add", {"x": arr(70), "y": arr(70)}),
                  ("dense_tanh", {"x": arr(5, 3), "w": arr(3, 4), "b": arr(4)}),
                  ("dense_tanh", {"x": arr(32, 4), "w": arr(4, 8), "b": arr(8)})]
    calls.append(("square_scale", {"x": np.zeros(1 << 20, "float32"), "a": 3.0}))
    return calls + gpu_inputs16()


def numpy16(dtype: str):
    """The numpy dtype of a 16-bit dtype name (bfloat16: ml_dtypes')."""
    import numpy as np

    if dtype == "bfloat16":
        import ml_dtypes
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(dtype)


def gpu_inputs16():
    """The 16-bit calls of the GPU tests (test_torch16.py, test_jax16.py):
    every op of TEST_ARGS, and the gather, in float16 and bfloat16."""
    import numpy as np

    calls = []
    for dt in DTYPES16:
        for name, shapes in sorted(TEST_ARGS.items()):
            calls.append((name, {n: s if isinstance(s, float) else np.zeros(s, numpy16(dt))
                                 for n, s in zip(_input_names(name), shapes)}))
        calls.append(("gather", {"x": np.zeros(GATHER[0], numpy16(dt)),
                                 "idx": np.zeros(GATHER[1], np.int32)}))
    return calls


def _input_names(name):
    kernel, outputs, *_ = OPS[name]
    return [n for n in kernel.arg_names if n not in outputs]


def prepare(chip: str) -> None:
    """Compile the forward and backward programs of every GPU test call."""
    from diffgpu.interop import KernelOp
    from diffgpu.interop import prepare as prepare_op

    try:  # dg.jax on a CUDA jaxlib launches its own programs (jax_gpu.py)
        from diffgpu.bridges.jax_gpu import prepare as prepare_jax
    except ImportError:
        prepare_jax = None
    for name, inputs in gpu_inputs():
        kernel, outputs, scalars, grid, block = {**OPS, **OPS16}[name]
        spec = KernelOp(kernel, outputs, grid, block, scalars)
        prepare_op(spec, chip, inputs)
        if prepare_jax is not None:
            prepare_jax(spec, chip, inputs)


def reference(name, xp, *args):
    """The kernel's outputs computed with array module `xp` (numpy, torch,
    jax.numpy), for gradient comparisons."""
    if name == "square_scale":
        x, a = args
        return a * x * x
    if name == "mul_add":
        x, y = args
        return x * y, xp.sin(x) + y
    if name == "dense_tanh":
        x, w, b = args
        return xp.tanh(x @ w + b)
    raise KeyError(name)


def main(argv) -> int:
    import argparse

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--prepare", metavar="DIR", required=True)
    p.add_argument("--chip", default="sm_90")
    ns = p.parse_args(argv)
    os.environ["DIFFGPU_CACHE_DIR"] = os.path.join(os.path.abspath(ns.prepare), "cache")
    prepare(ns.chip)
    print(f"prepared the interop test kernels for {ns.chip} in {os.environ['DIFFGPU_CACHE_DIR']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The cases of scripts/gpu_check.py: (name, kernel, grid, block, mode,
make(rng), ref or None), mode "launch", "reverse" or "forward" (or "generic":
specialisation off; "vjp": dg.vjp, the last argument the cotangent of the
kernel's first parameter; "overflow": dg.autodiff, on a GPU first with the
last argument as the kernel's last, which must overflow the heap tape:
scripts/gpu_cases/tape_overflow.py); `make` builds the arguments (values or activities) from
a numpy Generator, `ref` (numpy reference) updates copies of them in place to
the expected result, None: the CPU's result is expected.

    ("axpy f32", axpy, 8, 128, "launch", lambda r: [_f32(r, n), _f32(r, n), np.float32(0.5)])

The kernels below, and every case list of the test files it imports
(test/python/kernels_corpus.py, diff_corpus_gpu.py, test_atomics.py,
test_stencil_adjoint.py, test_higher_order.py, test_gradients.py,
test_vector_red.py) and of gpu_check_specialize.py, and every `scripts/gpu_cases/*.py` module's
`cases()`. A new case goes into one of these lists; a new feature gets its own module
in scripts/gpu_cases/.
"""
from __future__ import annotations

import importlib.util
import os
import sys

import numpy as np

import diffgpu as dg
import gpu_check_specialize as SPEC

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

sys.path.insert(0, os.path.join(REPO, "test", "python"))
from kernels_seed import axpy  # noqa: E402  (the seed kernels, defined once)
from kernels_seed import df as seed_df  # noqa: E402
from kernels_seed import f as seed_f  # noqa: E402


@dg.kernel
def add2d(C, A, B):
    i = dg.global_id(0)
    j = dg.global_id(1)
    if i < C.shape[0]:
        if j < C.shape[1]:
            C[i, j] = A[i, j] * B[i, j] + 1.0


@dg.kernel
def total(out, x):
    i = dg.global_id(0)
    if i < len(x):
        dg.atomic_add(out, 0, x[i])


@dg.kernel
def block_sum(out, x):
    s = dg.shared_array(64, np.float32)
    t = dg.thread_id(0)
    i = dg.global_id(0)
    s[t] = 0.0
    if i < len(x):
        s[t] = x[i]
    dg.syncthreads()
    if t == 0:
        acc = 0.0
        for k in range(64):
            acc += s[k]
        out[dg.block_id(0)] = acc


@dg.kernel
def sq(y, x, a):
    i = dg.global_id(0)
    if i < len(x):
        y[i] = a * dg.sin(x[i]) * x[i]


def _f32(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def builtin_cases():
    n = 1000
    return [
        ("seed f", seed_f, 1, 1, "launch", lambda r: [np.full(1, 3.0, np.float32)]),
        ("seed df", seed_df, 1, 1, "launch",
         lambda r: [np.full(1, 3.0, np.float32), np.ones(1, np.float32)]),
        ("axpy f32", axpy, 8, 128, "launch", lambda r: [_f32(r, n), _f32(r, n), np.float32(0.5)]),
        ("axpy f64 strided", axpy, 4, 128, "launch",
         lambda r: [r.standard_normal(2 * n)[::2], r.standard_normal(n), 1.5]),
        ("axpy i32", axpy, 8, 128, "launch",
         lambda r: [np.arange(n, dtype=np.int32), np.ones(n, np.int32), np.int32(3)]),
        ("add2d transposed", add2d, (4, 4), (16, 16), "launch",
         lambda r: [np.zeros((50, 40), np.float32), _f32(r, 40, 50).T, _f32(r, 50, 40)]),
        ("atomic total", total, 8, 128, "launch",
         lambda r: [np.zeros(1, np.float64), np.ones(n, np.float64)]),
        ("atomic total coarsened x16 + tail", total, 16, 128, "launch",
         lambda r: [np.zeros(1, np.float32), _f32(r, n)]),
        ("shared block_sum", block_sum, 16, 64, "launch",
         lambda r: [np.zeros(16, np.float32), np.arange(n, dtype=np.float32) % 7]),
        ("reverse sq", sq, 8, 128, "reverse",
         lambda r: [dg.Duplicated(np.zeros(n, np.float32), _f32(r, n)),
                    dg.Duplicated(_f32(r, n), np.zeros(n, np.float32)),
                    dg.Active(np.float32(1.5))]),
        ("forward sq", sq, 8, 128, "forward",
         lambda r: [dg.Duplicated(np.zeros(n, np.float64), np.zeros(n, np.float64)),
                    dg.Duplicated(r.standard_normal(n), r.standard_normal(n)), dg.Const(0.5)]),
    ]


def test_module(filename: str, name: str):
    """Import test/python/<filename> as module `name` (None if missing); test
    files live in folders that mirror the packages (test/python/<package>/),
    their helper modules at test/python/ itself, each name once."""
    found = [os.path.join(d, filename)
             for d, _, files in os.walk(os.path.join(REPO, "test", "python")) if filename in files]
    if not found:
        return None
    path, = found
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def corpus_cases():
    """Cases of test/python/kernels_corpus.py (`CASES` of `Case`: name,
    kernel, make(dtype, xp), ref(*numpy args), grid, block), in float32 and
    float64; their expected results come from the numpy reference `ref`."""
    mod = test_module("kernels_corpus.py", "kernels_corpus")
    if mod is None:
        return []
    out = []
    for c in getattr(mod, "CASES", []):
        for dt in (np.float32, np.float64):
            out.append((f"corpus {c.name} {np.dtype(dt).name}", c.kernel, c.grid, c.block,
                        "launch", lambda r, c=c, dt=dt: c.make(dt, np), c.ref))
    return out


def diff_corpus_cases():
    """Cases of test/python/diff_corpus_gpu.py (`gpu_cases()`: kernels with
    shared memory, barriers and atomics; launch, reverse and forward mode,
    float32 and float64); expected: the numpy reference (launch) or the CPU."""
    mod = test_module("diff_corpus_gpu.py", "diff_corpus_gpu")
    if mod is None:
        return []
    return mod.gpu_cases() + mod.load_variant(64, 16).gpu_cases()  # and 2-warp blocks


def atomics_cases():
    """Cases of test/python/lowering/reduce/test_atomics.py (`gpu_cases()`): atomic adds summed
    per block and per warp (2^26-term float32 sums, partial warps, early
    return, nested guards, integer counts, 3-D blocks, an Active scalar's
    gradient) and of test/python/lowering/reduce/test_stencil_adjoint.py (stencil gradients
    gathered per block), of test/python/lowering/autodiff/test_higher_order.py (second- and
    third-order derivatives) and of test/python/lowering/reduce/test_vector_red.py (row
    gathers and scatter-adds: sm_90 vector reductions); expected: a numpy
    reference or the CPU. The 2^26 sums' "max |err|" over the sum (about
    7.3e7) is their relative error."""
    out = []
    for filename in ("test_atomics.py", "test_stencil_adjoint.py", "test_higher_order.py",
                     "test_vector_red.py"):
        mod = test_module(filename, filename[:-3] + "_cases")
        if mod is not None:
            out += mod.gpu_cases()
    return out


def gradient_cases():
    """The gradient corpus of test/python/lowering/autodiff/test_gradients.py (`CASES`: kernel,
    grid, block, args(), activity kinds), each in reverse mode (random
    adjoints in the shadows, gradients of Active scalars returned) and in
    forward mode (random tangents); expected results: the CPU's."""
    mod = test_module("test_gradients.py", "test_gradients_corpus")
    if mod is None:
        return []
    out = []
    for name, (kernel, grid, block, make, kinds) in getattr(mod, "CASES", {}).items():
        for mode in ("reverse", "forward"):
            out.append((f"grad {name} {mode}", kernel, grid, block, mode,
                        lambda r, make=make, kinds=kinds, mode=mode: _activities(
                            make(), kinds, mode, r), None))
    return out


def _activities(args, kinds, mode, rng):
    """Wrap args per activity kind; shadows/tangents random (zero for the
    forward tangents of outputs is not needed: random is the general case)."""
    out = []
    for a, kind in zip(args, kinds):
        is_array = isinstance(a, np.ndarray)
        if kind == "dup" and is_array and a.dtype.kind == "f":
            out.append(dg.Duplicated(a, rng.standard_normal(a.shape).astype(a.dtype)))
        elif kind in ("dup", "active") and not is_array and mode == "forward":
            out.append(dg.Duplicated(a, float(rng.standard_normal())))
        elif kind == "active" and mode == "reverse":
            out.append(dg.Active(a))
        else:
            out.append(a if is_array else dg.Const(a))
    return out


def all_cases():
    """(name, kernel, grid, block, mode, make(rng), ref or None) of every case."""
    return ([c + (None,) for c in builtin_cases()] + corpus_cases() + gradient_cases()
            + diff_corpus_cases() + SPEC.cases() + atomics_cases() + topic_cases())


def topic_modules() -> list[str]:
    """The `scripts/gpu_cases` modules' names (without .py), in file-name order."""
    folder = os.path.join(REPO, "scripts", "gpu_cases")
    return sorted(f[:-3] for f in (os.listdir(folder) if os.path.isdir(folder) else ())
                  if f.endswith(".py") and not f.startswith("_"))


def topic_cases(names=None):
    """The cases of the `scripts/gpu_cases/*.py` modules `names` in that order (all of
    them, in file-name order, when None; one per feature: collectives, stencils,
    vectors, ...), each with a `cases()` returning tuples of the form above."""
    folder = os.path.join(REPO, "scripts", "gpu_cases")
    out = []
    for name in topic_modules() if names is None else names:
        spec = importlib.util.spec_from_file_location(f"gpu_cases_{name}",
                                                      os.path.join(folder, name + ".py"))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        out += list(mod.cases())
    return out

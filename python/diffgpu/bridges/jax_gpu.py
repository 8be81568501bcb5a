"""dg.jax on CUDA: XLA launches diffgpu's PTX itself, on its own stream.

The mechanism is jaxlib's GPU kernel-call custom call (the one jax-triton
uses; jax_kernel_call.py says which target and convention): its payload is
a serialized kernel call (PTX, entry name, grid, threads per block, and a
list of parameters, each a device buffer or a scalar value). XLA runs it
inside the compiled program, on its stream, with no host round trip and no
CuPy.

diffgpu's entry takes each array as a memref descriptor: (allocated pointer,
aligned pointer, offset, sizes..., strides...). We pass the allocated pointer
as a 0 scalar (only the aligned one is read), the aligned pointer as the
buffer parameter, and offset 0 with the row-major sizes and strides XLA's
default layout has. Every array, written ones included, is an operand, so
the buffer parameters consume XLA's operand buffers in order; each written
array (outputs, shadows) is aliased to a result, so XLA never sees an
operand change behind its back. Outputs start as zeros made in the graph.

16-bit arrays (float16, bfloat16) are stored in 16 bits and computed in
float32, as in every launch; in the reverse kernel the shadow of each 16-bit
array is a float32 array (kind `dup32`, as `dg.vjp` makes): a cotangent
goes in widened (exactly), a gradient is accumulated in float32 and rounded
to its array's dtype once, by XLA after the call.

Limits: the block must be one-dimensional with a multiple of 32 threads (the
custom call launches `num_warps * 32` threads in x); a derivative kernel
whose tape needs device malloc relies on CUDA's default 8 MB heap, and as
XLA cannot read the tape's overflow flag, a tape that outgrows it traps
(the call fails) instead of computing garbage (runtime/tape_overflow.py
`trapping_ptx`).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.extend.core import Primitive
from jax.interpreters import mlir

from diffgpu.bridges import jax_kernel_call as kernel_call
from diffgpu.errors import LaunchError

_SCALAR = {"float32": "fp32", "float64": "fp64", "int32": "i32", "int64": "i64"}

call_p = Primitive("diffgpu_kernel_call")
call_p.multiple_results = True


def _abstract_eval(*avals, results, **_):
    return [jax.core.ShapedArray(shape, dt) for shape, dt in results]


call_p.def_abstract_eval(_abstract_eval)


def _lowering(ctx, *operands, ptx, entry, params, grid, threads, results, aliases, cc):
    lib = kernel_call.library()
    form = kernel_call.choose(lib)
    warps = threads // 32
    try:  # jaxlib >= 0.5: (name, num_warps, num_ctas, shared_mem, ptx, ttir, cc)
        kernel = lib.TritonKernel(entry, warps, 1, 0, ptx, "", cc)
    except TypeError:  # older: no num_ctas
        kernel = lib.TritonKernel(entry, warps, 0, ptx, "", cc, 1, 1, 1)
    kparams = [lib.create_array_parameter(0, 0) if p[0] == "array"
               else lib.create_scalar_parameter(p[1], p[2]) for p in params]
    call = lib.TritonKernelCall(kernel, grid[0], grid[1], grid[2], kparams)
    return kernel_call.emit(ctx, operands, call.to_proto(entry, b""), aliases, form)


mlir.register_lowering(call_p, _lowering, platform="cuda")


def _chip() -> tuple[str, int]:
    dev = jax.devices("gpu")[0]
    cc = str(getattr(dev, "compute_capability", "9.0"))
    major, minor = (int(v) for v in cc.split(".")[:2])
    return f"sm_{major}{minor}", major * 10 + minor


def _array_params(shape) -> list:
    strides, acc = [], 1
    for s in reversed(shape):
        strides.insert(0, acc)
        acc *= s
    return ([("scalar", 0, "i64"), ("array",), ("scalar", 0, "i64")]
            + [("scalar", int(s), "i64") for s in shape]
            + [("scalar", int(s), "i64") for s in strides])


def _threads(block) -> int:
    b = tuple(block) if isinstance(block, (tuple, list)) else (block,)
    if any(int(v) != 1 for v in b[1:]) or int(b[0]) % 32 or not 32 <= int(b[0]) <= 1024:
        raise LaunchError(f"dg.jax on the GPU launches one-dimensional blocks of a multiple "
                          f"of 32 threads (XLA's kernel call counts warps); got block {block}")
    return int(b[0])


def _grid(grid) -> tuple:
    g = tuple(int(v) for v in (grid if isinstance(grid, (tuple, list)) else (grid,)))
    return g + (1,) * (3 - len(g))


def _types(spec, arguments: dict) -> tuple:
    """The kernel's argument types (arrays: dtype and rank; scalars)."""
    from diffgpu.runtime.args import infer_signature

    names = spec.kernel.arg_names
    sample = [np.zeros((1,) * a.ndim, a.dtype) if hasattr(a, "ndim") else a
              for a in (arguments[n] for n in names)]
    return infer_signature(sample, names, spec.kernel.name).types


def _kinds(spec, arguments: dict, wrt, float_outputs) -> tuple:
    """Activities of the reverse kernel: float outputs and `wrt` arrays dup,
    or dup32 (a float32 shadow) for the 16-bit ones."""
    from diffgpu.types import STORAGE_DTYPES, dtype_name

    def kind(n):
        if n not in wrt and n not in float_outputs:
            return "const"
        return "dup32" if dtype_name(arguments[n].dtype) in STORAGE_DTYPES else "dup"
    return tuple(kind(n) for n in spec.kernel.arg_names)


def prepare(spec, chip: str, inputs: dict) -> None:
    """Compile for `chip` the forward and reverse programs `forward_call` /
    `vjp_call` use for inputs like these (numpy arrays and scalars), into the
    disk cache; no GPU needed."""
    from diffgpu.driver.launch import get_program
    from diffgpu.runtime.args import numpy_dtype
    from diffgpu.types import FLOAT_DTYPES, dtype_name

    arguments = dict(inputs)
    for n in spec.outputs:
        shape, dtype = spec.out_shape(n, inputs)
        arguments[n] = np.zeros(shape, numpy_dtype(dtype_name(dtype), f"output {n!r}"))
    types = _types(spec, arguments)
    wrt = [n for n in spec.arrays if dtype_name(arguments[n].dtype) in FLOAT_DTYPES]
    outs = [n for n in spec.outputs if dtype_name(arguments[n].dtype) in FLOAT_DTYPES]
    get_program(spec.kernel, types, chip)
    get_program(spec.kernel, types, chip, ("reverse", _kinds(spec, arguments, wrt, outs)))


def _launch(spec, arguments: dict, flat: list, written: list, diff=None) -> list:
    """Bind the primitive. `flat`: (name, array or None for a scalar, value)
    in the entry's argument order; `written`: indices of flat arrays that
    the kernel writes, returned in that order."""
    from diffgpu.driver.launch import get_program
    from diffgpu.runtime.gpu import check_abi

    chip, cc = _chip()
    types = _types(spec, arguments)
    program = get_program(spec.kernel, types, chip, diff)
    check_abi(program.payload.get("abi"), program.flat_types)
    params, operands, op_index = [], [], {}
    for k, (name, array, value) in enumerate(flat):
        if array is None:
            # Python scalars: float64 / int64, as the signature types them
            params.append(("scalar", value, _SCALAR["float64" if isinstance(value, float)
                                                    else "int64"]))
        else:
            op_index[k] = len(operands)
            operands.append(array)
            params += _array_params(array.shape)
    grid, block = spec.geometry(arguments)
    from diffgpu.runtime.args import grid_fold
    if grid_fold(_grid(grid)):  # its generic program reads the hardware's y and z
        from diffgpu.errors import LaunchError
        raise LaunchError(f"{spec.kernel.name}: grid {_grid(grid)} exceeds the GPU's 65535 "
                          "along y or z; the JAX bridge launches such grids only on the CPU")
    coarsen = int(program.payload.get("coarsen") or 1)  # 1 for generic programs
    if coarsen > 1:
        g = _grid(grid)
        grid = (g[0] // coarsen,) + g[1:]
    results = tuple((tuple(flat[k][1].shape), np.dtype(flat[k][1].dtype)) for k in written)
    aliases = tuple((op_index[k], r) for r, k in enumerate(written))
    from diffgpu.runtime.tape_overflow import trapping_ptx  # XLA cannot read the tape's flag
    return call_p.bind(*operands, ptx=trapping_ptx(program.payload["ptx"]), entry=program.entry,
                       params=tuple(params), grid=_grid(grid), threads=_threads(block),
                       results=results, aliases=aliases, cc=cc)


def forward_call(spec, scalars: dict, arrays, structs) -> list:
    """The kernel's outputs (zero-initialised, then written) on XLA's stream."""
    arguments = dict(scalars)
    arguments.update(zip(spec.arrays, arrays))
    for n, st in zip(spec.outputs, structs):
        arguments[n] = jnp.zeros(st.shape, st.dtype)
    flat = [(n, None, arguments[n]) if n in spec.scalars else (n, arguments[n], None)
            for n in spec.kernel.arg_names]
    written = [k for k, (n, _, _) in enumerate(flat) if n in spec.outputs]
    return _launch(spec, arguments, flat, written)


def vjp_call(spec, scalars: dict, arrays, cots: dict, wrt, structs) -> list:
    """Gradients of the arrays `wrt` (zero shadows in, J^T cotangents out);
    `cots`: the cotangents of the float outputs, by name."""
    arguments = dict(scalars)
    arguments.update(zip(spec.arrays, arrays))
    for n, st in zip(spec.outputs, structs):
        arguments[n] = jnp.zeros(st.shape, st.dtype)
    flat, written, grads = [], [], []
    kinds = _kinds(spec, arguments, wrt, list(cots))
    for n, kind in zip(spec.kernel.arg_names, kinds):
        if n in spec.scalars:
            flat.append((n, None, arguments[n]))
            continue
        if n in spec.outputs:
            written.append(len(flat))
        flat.append((n, arguments[n], None))
        if kind != "const":  # dup, or dup32: a float32 shadow of a 16-bit array
            dtype = jnp.float32 if kind == "dup32" else arguments[n].dtype
            shadow = (jnp.asarray(cots[n], dtype) if n in cots
                      else jnp.zeros(arguments[n].shape, dtype))
            if n in wrt:
                grads.append((len(written), arguments[n].dtype))
            written.append(len(flat))
            flat.append((n, shadow, None))
    out = _launch(spec, arguments, flat, written, diff=("reverse", kinds))
    return [out[i].astype(dtype) for i, dtype in grads]  # dup32: rounded once


__all__ = ["forward_call", "vjp_call", "prepare", "call_p"]

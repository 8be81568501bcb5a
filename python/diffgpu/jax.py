"""`dg.jax`: a diffgpu kernel as a JAX function, usable under `jax.jit`, with
diffgpu's gradient as its `custom_vjp`.

    import diffgpu as dg

    f = dg.jax.op(scale, outputs={"y": "x"}, scalars={"a": float},
                  grid=lambda x, **_: (x.shape[0] + 255) // 256, block=256)
    y = jax.jit(lambda x: f(x, 2.0))(x)
    g = jax.grad(lambda x: f(x, 2.0).sum())(x)      # diffgpu's reverse kernel

Arguments follow `dg.torch.op` (see diffgpu.interop.KernelOp): `outputs` are
the parameters the kernel writes (returned zero-initialised, then written),
`scalars` are Python numbers baked into the trace (not differentiated).

Where it runs is chosen when the function is traced, from
`jax.default_backend()`:

- "cpu": `jax.pure_callback` into diffgpu's CPU JIT (the arrays are copied
  to writeable numpy buffers; one host callback per call);
- "gpu" (CUDA): `jax_gpu.py`: XLA launches diffgpu's PTX itself on its own
  stream through jaxlib's GPU kernel-call custom call (the one jax-triton
  uses), no host round trip. The PTX comes from diffgpu's cache, so a machine
  without MLIR runs signatures compiled beforehand (`dg.compile` / the
  scripts' `--prepare` steps).

Importing this imports JAX; `import diffgpu` does not.
"""
from __future__ import annotations

import jax
import numpy as np

from diffgpu.errors import LaunchError
from diffgpu.interop import DTYPES, FLOAT_DTYPES, KernelOp, dtype_name, numpy_dtype, vjp


def op(kernel, *, outputs, grid, block, scalars=None):
    """A JAX function of the kernel's inputs (its non-output parameters, in
    order) returning the output array, or a tuple of them in parameter
    order. Differentiable with jax.grad/jax.vjp (reverse mode) in its array
    inputs of float dtype."""
    spec = KernelOp(kernel, outputs, grid, block, scalars)
    return KernelFunction(spec)


class KernelFunction:
    """`op(...)`'s result; `spec` is its KernelOp."""

    def __init__(self, spec: KernelOp):
        self.spec = spec
        self._fn = jax.custom_vjp(self._primal, nondiff_argnums=(0,))
        self._fn.defvjp(self._fwd, self._bwd)

    def __repr__(self) -> str:
        return f"<diffgpu jax op {self.spec.kernel.name}({', '.join(self.spec.inputs)})>"

    def __call__(self, *inputs):
        s = self.spec
        args = s.bind(inputs)
        scalars = []
        for n in s.inputs:
            if n in s.scalars:
                v = args[n]
                if isinstance(v, bool) or not isinstance(v, (int, float, np.number)):
                    raise LaunchError(f"{s.kernel.name}: scalar {n!r} must be a Python number "
                                      f"(it is baked into the trace), got {type(v).__name__}")
                scalars.append((n, s.scalars[n](v)))
        arrays = [jax.numpy.asarray(args[n]) for n in s.arrays]
        for n, a in zip(s.arrays, arrays):
            if dtype_name(a.dtype) not in DTYPES:
                raise LaunchError(f"{s.kernel.name}: input {n!r} has dtype {a.dtype}; "
                                  f"diffgpu arrays are {', '.join(DTYPES)} (float64 needs "
                                  "jax.config.update('jax_enable_x64', True))")
        out = self._fn(tuple(scalars), *arrays)
        return out[0] if len(s.outputs) == 1 else tuple(out)

    def prepare(self, chip: str, *inputs) -> None:
        """Compile for `chip` (e.g. "sm_90"), on a machine without a GPU, the
        forward and backward programs that calls on inputs of these shapes
        and dtypes launch on a GPU (arrays or scalars; values do not
        matter); they go to the disk cache."""
        from diffgpu.bridges.jax_gpu import prepare

        args = self.spec.bind(inputs)
        prepare(self.spec, chip, {n: self.spec.scalars[n](v) if n in self.spec.scalars
                                  else np.asarray(v) for n, v in args.items()})

    # -- shapes ---------------------------------------------------------------

    def _out_structs(self, arrays) -> list:
        inputs = dict(zip(self.spec.arrays, arrays))
        out = []
        for n in self.spec.outputs:
            shape, dtype = self.spec.out_shape(n, inputs)
            if dtype_name(dtype) not in DTYPES:
                raise LaunchError(f"{self.spec.kernel.name}: output {n!r} has dtype {dtype}; "
                                  f"diffgpu arrays are {', '.join(DTYPES)}")
            out.append(jax.ShapeDtypeStruct(shape, numpy_dtype(dtype)))
        return out

    def _wrt(self, arrays) -> list:
        return [n for n, a in zip(self.spec.arrays, arrays) if dtype_name(a.dtype) in FLOAT_DTYPES]

    # -- custom_vjp rules -----------------------------------------------------

    def _primal(self, scalars, *arrays):
        structs = self._out_structs(arrays)
        if _on_gpu():
            from diffgpu.bridges.jax_gpu import forward_call
            return tuple(forward_call(self.spec, dict(scalars), arrays, structs))
        out = jax.pure_callback(lambda *xs: self._host_forward(scalars, xs, structs),
                                tuple(structs), *arrays, vmap_method="sequential")
        return tuple(out)

    def _fwd(self, scalars, *arrays):
        return self._primal(scalars, *arrays), arrays

    def _bwd(self, scalars, arrays, cotangents):
        wrt = self._wrt(arrays)
        structs = [jax.ShapeDtypeStruct(a.shape, a.dtype)
                   for n, a in zip(self.spec.arrays, arrays) if n in wrt]
        out_structs = self._out_structs(arrays)
        cots = {n: c for n, c, st in zip(self.spec.outputs, cotangents, out_structs)
                if dtype_name(st.dtype) in FLOAT_DTYPES}  # integer outputs: float0
        if _on_gpu():
            from diffgpu.bridges.jax_gpu import vjp_call
            grads = vjp_call(self.spec, dict(scalars), arrays, cots, wrt, out_structs)
        else:
            grads = jax.pure_callback(
                lambda *xs: self._host_vjp(scalars, xs, wrt, list(cots)),
                tuple(structs), *arrays, *cots.values(), vmap_method="sequential")
        by_name = dict(zip(wrt, grads))
        return tuple(by_name.get(n) for n in self.spec.arrays)

    # -- host (CPU) implementations --------------------------------------------

    def _host_arguments(self, scalars, arrays, structs=None) -> dict:
        s = self.spec
        arguments = dict(scalars)
        arguments.update({n: np.array(a) for n, a in zip(s.arrays, arrays)})  # writeable
        for n, st in zip(s.outputs, structs or self._out_structs(arrays)):
            arguments[n] = np.zeros(st.shape, st.dtype)
        return arguments

    def _host_forward(self, scalars, arrays, structs):
        s = self.spec
        arguments = self._host_arguments(scalars, arrays, structs)
        s.launcher(arguments)(*s.ordered(arguments))
        return tuple(arguments[n] for n in s.outputs)

    def _host_vjp(self, scalars, xs, wrt, outputs):
        s = self.spec
        arrays, cts = xs[:len(s.arrays)], xs[len(s.arrays):]
        arguments = self._host_arguments(scalars, arrays)
        cotangents = dict(zip(outputs, (np.asarray(c) for c in cts)))
        grads = vjp(s.launcher(arguments), s.kernel.arg_names, arguments, cotangents, wrt,
                    zeros_like=np.zeros_like)
        return tuple(grads[n] for n in wrt)


def _on_gpu() -> bool:
    return jax.default_backend() == "gpu"


__all__ = ["op", "KernelFunction"]

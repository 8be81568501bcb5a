"""What `dg.torch` and `dg.jax` share: a kernel seen as a pure function.

A diffgpu kernel writes its results into arrays it is given. A framework
operator instead takes inputs and returns fresh outputs. `KernelOp` records
which kernel parameters are outputs (allocated zero-filled by the framework,
so `out[i] += ...` accumulates into zero), which are scalars, and how to get
the launch geometry from the arguments:

    spec = KernelOp(scale, outputs={"y": "x"}, scalars={"a": float},
                    grid=lambda x, **_: (x.shape[0] + 255) // 256, block=256)
    spec.inputs            # ['x', 'a']: the operator's parameters, in order

The reverse pass (`vjp`) follows diffgpu's shadow convention: every
differentiated array gets a zero-filled shadow (shadows accumulate), each
output's shadow starts as a copy of the cotangent (a written array's shadow is
consumed), and after the reverse kernel the inputs' shadows hold J^T times the
cotangents. Importing this imports neither MLIR, torch nor JAX.
"""
from __future__ import annotations

from diffgpu.errors import LaunchError

#: dtypes a framework tensor may have (diffgpu's array element types)
DTYPES = ("float32", "float64", "int32", "int64")
FLOAT_DTYPES = ("float32", "float64")


class KernelOp:
    """How a kernel becomes an operator; see the module docstring.

    - `outputs`: {parameter: spec}; spec is the name of an input (same shape
      and dtype) or a callable `f(**inputs) -> (shape, dtype)`;
    - `scalars`: {parameter: float or int}: parameters passed by value
      (not differentiated); every other input is an array;
    - `grid`: an int/tuple, or `f(**arguments) -> int/tuple` called with every
      kernel argument (inputs and outputs) by name; `block`: an int/tuple.
    """

    def __init__(self, kernel, outputs, grid, block, scalars=None):
        from diffgpu.api import Kernel

        if not isinstance(kernel, Kernel):
            raise TypeError(f"expected a @dg.kernel, got {type(kernel).__name__}")
        names = kernel.arg_names
        if not isinstance(outputs, dict) or not outputs:
            raise TypeError(f"outputs must be a non-empty dict {{parameter: spec}} naming "
                            f"parameters of {kernel.name}({', '.join(names)})")
        scalars = dict(scalars or {})
        for n in list(outputs) + list(scalars):
            if n not in names:
                raise TypeError(f"{kernel.name} has no parameter {n!r} "
                                f"(parameters: {', '.join(names)})")
        for n, t in scalars.items():
            if t not in (float, int):
                raise TypeError(f"scalar {n!r}: type must be float or int, got {t!r}")
            if n in outputs:
                raise TypeError(f"{n!r} is both an output and a scalar")
        self.kernel, self.grid, self.block = kernel, grid, block
        self.outputs = [n for n in names if n in outputs]
        self.out_specs = outputs
        self.scalars = scalars
        self.inputs = [n for n in names if n not in outputs]
        self.arrays = [n for n in self.inputs if n not in scalars]
        for n, spec in outputs.items():
            if isinstance(spec, str) and spec not in self.arrays:
                raise TypeError(f"output {n!r}: {spec!r} is not an array input of "
                                f"{kernel.name} (array inputs: {', '.join(self.arrays)})")
            if not isinstance(spec, str) and not callable(spec):
                raise TypeError(f"output {n!r}: spec must be an input name or a callable "
                                f"(**inputs) -> (shape, dtype), got {spec!r}")
        if not callable(grid):
            from diffgpu.runtime.args import check_geometry
            check_geometry(grid, block)

    def out_shape(self, name: str, inputs: dict):
        """(shape, dtype) of output `name` given the inputs by name."""
        spec = self.out_specs[name]
        if isinstance(spec, str):
            return tuple(inputs[spec].shape), inputs[spec].dtype
        shape, dtype = spec(**inputs)
        return tuple(shape), dtype

    def geometry(self, arguments: dict) -> tuple:
        grid = self.grid(**arguments) if callable(self.grid) else self.grid
        return grid, self.block

    def launcher(self, arguments: dict):
        return self.kernel[self.geometry(arguments)]

    def bind(self, args: tuple) -> dict:
        """The operator's positional arguments by input name (arity checked)."""
        if len(args) != len(self.inputs):
            raise LaunchError(f"{self.kernel.name} operator takes {len(self.inputs)} inputs "
                              f"({', '.join(self.inputs)}), got {len(args)}")
        return dict(zip(self.inputs, args))

    def ordered(self, arguments: dict) -> list:
        return [arguments[n] for n in self.kernel.arg_names]


def vjp(launcher, names, arguments: dict, cotangents: dict, wrt, zeros_like, copy,
        view=None) -> dict:
    """Gradients {name: J^T cotangents} of the arrays `wrt`.

    `arguments` holds every kernel argument by name, outputs in their initial
    (zero) state; `zeros_like(x)` and `copy(x)` allocate framework arrays on
    the arguments' device and `view(x)` gives diffgpu a zero-copy array of one
    (numpy on the CPU, `__cuda_array_interface__` on the GPU). The one place
    torch and JAX call diffgpu's reverse mode.
    """
    from diffgpu.activities import Duplicated
    from diffgpu.diff import autodiff

    view = view or (lambda x: x)
    shadows = {n: copy(cotangents[n]) for n in cotangents}
    for n in wrt:
        shadows[n] = zeros_like(arguments[n])

    def act(n):
        x = arguments[n]
        if isinstance(x, (int, float)):
            return x
        return Duplicated(view(x), view(shadows[n])) if n in shadows else view(x)

    autodiff(launcher, *[act(n) for n in names])
    return {n: shadows[n] for n in wrt}


def dtype_name(dtype) -> str:
    """'float32' for torch.float32, jnp.float32, np.float32, 'float32'."""
    text = str(dtype)
    return text.rsplit(".", 1)[-1]


__all__ = ["KernelOp", "vjp", "dtype_name", "DTYPES", "FLOAT_DTYPES"]

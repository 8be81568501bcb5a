"""What `dg.torch` and `dg.jax` share: a kernel seen as a pure function.

A diffgpu kernel writes its results into arrays it is given. A framework
operator instead takes inputs and returns fresh outputs. `KernelOp` records
which kernel parameters are outputs (allocated zero-filled by the framework,
so `out[i] += ...` accumulates into zero), which are scalars, and how to get
the launch geometry from the arguments:

    spec = KernelOp(scale, outputs={"y": "x"}, scalars={"a": float},
                    grid=lambda x, **_: (x.shape[0] + 255) // 256, block=256)
    spec.inputs            # ['x', 'a']: the operator's parameters, in order

The reverse pass (`vjp`) is `dg.vjp` on the kernel's arguments with the
cotangents of the outputs: it returns new gradient arrays of the inputs and
leaves the cotangents alone. `compile_only(chip)` prepares the GPU programs
of a call on a machine without a GPU. Importing this imports neither MLIR,
torch nor JAX.
"""
from __future__ import annotations

import contextlib

from diffgpu.errors import LaunchError
from diffgpu.types import FLOAT_DTYPES, dtype_name  # noqa: F401  (public here too)

#: dtypes a framework tensor may have (diffgpu's array element types): the
#: 16-bit floats are stored in 16 bits and computed in float32, and their
#: gradients are accumulated in float32 then rounded once to their dtype
DTYPES = ("float32", "float64", "float16", "bfloat16", "int32", "int64")


def numpy_dtype(dtype):
    """The numpy dtype of a framework's (or numpy's) dtype or its name;
    bfloat16 is ml_dtypes' (LaunchError without ml_dtypes)."""
    from diffgpu.runtime.args import numpy_dtype as of_name

    return of_name(dtype_name(dtype), f"dtype {dtype}")


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


def vjp(launcher, names, arguments: dict, cotangents: dict, wrt, zeros_like,
        view=None, wrap=None) -> dict:
    """Gradients {name: J^T cotangents} of the arrays `wrt`, by `dg.vjp`.

    `arguments` holds every kernel argument by name, outputs in their initial
    (zero) state; `view(x)` gives diffgpu a zero-copy array of a framework
    array (numpy on the CPU, `__cuda_array_interface__` on the GPU), `wrap(g)`
    turns a gradient diffgpu returns (a new numpy or CuPy array) into a
    framework array, and `zeros_like(x)` stands for the gradient of an array
    the kernel never reads. The one place torch and JAX call diffgpu's
    reverse mode.
    """
    from diffgpu.functional import vjp as functional_vjp

    view = view or (lambda x: x)
    wrap = wrap or (lambda x: x)
    args = [x if isinstance(x, (int, float)) else view(x)
            for x in (arguments[n] for n in names)]
    floats = {n: view(c) for n, c in cotangents.items()  # integer outputs have none
              if dtype_name(getattr(arguments[n], "dtype", "")) in FLOAT_DTYPES}
    grads = functional_vjp(launcher, *args, cotangents=floats)
    return {n: wrap(grads[n]) if n in grads else zeros_like(arguments[n]) for n in wrt}


@contextlib.contextmanager
def compile_only(chip: str):
    """Inside, launches on numpy arrays (and torch CPU tensors) compile their
    programs for `chip` into the cache and run nothing: the way to prepare,
    without a GPU, exactly the programs a GPU run of the same calls (same
    shapes, dtypes and geometry) will look up, `dg.vjp`'s included."""
    import diffgpu.driver.launch as launch_module

    patches = [(launch_module, "target_for", lambda sig: chip),
               (launch_module, "run_program", lambda *args, **kwargs: None)]
    # the launch fast path keeps programs per launch key and argument
    # signature, and dg.vjp / dg.autodiff replay plans per call key: while the
    # target is not the arguments', no launch has a key (every one takes the
    # slow path to get_program) and nothing is remembered or kept
    from diffgpu.hostdiff import replay
    from diffgpu.runtime import fastpath
    patches += [(fastpath, "launch_key", lambda *args, **kwargs: None),
                (fastpath, "remember", lambda *args, **kwargs: None),
                (replay, "keep", lambda *args, **kwargs: None)]
    saved = [(mod, name, getattr(mod, name)) for mod, name, _ in patches]
    for mod, name, value in patches:
        setattr(mod, name, value)
    try:
        yield
    finally:
        for mod, name, value in saved:
            setattr(mod, name, value)


def prepare(spec: KernelOp, chip: str, inputs: dict) -> None:
    """Compile for `chip`, without a GPU, the programs an operator of `spec`
    launches on a GPU for inputs of these shapes and dtypes: `inputs` maps
    each input name to a numpy array (or a scalar). The forward kernel and
    the `dg.vjp` of the backward go to the disk cache, which a machine
    without MLIR then reads (DIFFGPU_CACHE_DIR): both the programs
    specialised to the launch facts of these calls and the generic ones."""
    import numpy as np

    arguments = dict(inputs)
    for n in spec.outputs:
        shape, dtype = spec.out_shape(n, inputs)
        arguments[n] = np.zeros(shape, numpy_dtype(dtype))
    wrt = [n for n in spec.arrays if dtype_name(arguments[n].dtype) in FLOAT_DTYPES]
    cotangents = {n: np.zeros_like(arguments[n]) for n in spec.outputs}
    import diffgpu.driver.launch as launch_module

    def calls():
        spec.launcher(arguments)(*spec.ordered(arguments))
        vjp(spec.launcher(arguments), spec.kernel.arg_names, arguments, cotangents, wrt,
            zeros_like=np.zeros_like)

    with compile_only(chip):
        calls()  # the programs specialised to these launches' facts
        saved = launch_module.facts_for
        launch_module.facts_for = lambda *args, **kwargs: None
        try:  # and the generic ones, which a GPU run falls back to if its facts differ
            calls()
        finally:
            launch_module.facts_for = saved


__all__ = ["KernelOp", "vjp", "compile_only", "prepare", "dtype_name", "numpy_dtype", "DTYPES",
           "FLOAT_DTYPES"]

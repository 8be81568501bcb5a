"""diffgpu: differentiable GPU kernels written in Python.

Importing diffgpu never imports MLIR: compile-time modules load it lazily, so a
machine with only numpy + CuPy runs cached kernels and bundles.

    import diffgpu as dg

    @dg.kernel
    def f(A):
        A[0] *= A[0]

    f[1, 1](A)                                   # numpy: CPU; CuPy: GPU
    dg.autodiff(f[1, 1], dg.Duplicated(A, dA))   # reverse mode on the host
"""
import sys as _sys
from types import ModuleType as _ModuleType

from diffgpu._version import __version__  # noqa: F401
from diffgpu.activities import Active, Const, Duplicated, DuplicatedNoNeed  # noqa: F401
from diffgpu.api import Func, Kernel, func, kernel  # noqa: F401
from diffgpu.hostdiff.diff import autodiff, fwddiff  # noqa: F401
from diffgpu.errors import (CompileError, DiffgpuError, DivergentBarrierError,  # noqa: F401
                            LaunchError, RaceError)

_API = [
    "__version__", "kernel", "func", "Kernel", "Func",
    "Const", "Duplicated", "DuplicatedNoNeed", "Active",
    "autodiff", "fwddiff", "vjp", "jvp", "gradcheck", "GradcheckError",
    "compile", "CompiledKernel", "save_bundle", "load_bundle", "BundleError", "synchronize",
    "CompileError", "DiffgpuError", "LaunchError", "RaceError", "OutOfBoundsError",
    "DivergentBarrierError", "racecheck", "explain",
    "Tape", "TapeError", "copy", "fill",
]

#: names loaded on first use: name -> (module, attribute)
_LAZY = {
    "vjp": ("diffgpu.functional", "vjp"),
    "jvp": ("diffgpu.functional", "jvp"),
    "gradcheck": ("diffgpu.hostdiff.gradcheck", "gradcheck"),
    "GradcheckError": ("diffgpu.hostdiff.gradcheck", "GradcheckError"),
    "compile": ("diffgpu.driver.aot", "compile"),
    "CompiledKernel": ("diffgpu.driver.aot", "CompiledKernel"),
    "save_bundle": ("diffgpu.driver.bundle", "save_bundle"),
    "load_bundle": ("diffgpu.driver.bundle", "load_bundle"),
    "BundleError": ("diffgpu.driver.bundle", "BundleError"),
    "synchronize": ("diffgpu.runtime.gpu", "synchronize"),
    "racecheck": ("diffgpu.runtime.racecheck", "racecheck"),
    "explain": ("diffgpu.driver.explain", "explain"),
    "OutOfBoundsError": ("diffgpu.runtime.cpu", "OutOfBoundsError"),
    "Tape": ("diffgpu.hostdiff.tape.tape", "Tape"),
    "TapeError": ("diffgpu.hostdiff.tape.errors", "TapeError"),
    "copy": ("diffgpu.hostdiff.tape.ops", "copy"),
    "fill": ("diffgpu.hostdiff.tape.ops", "fill"),
}

#: submodules imported on first use: the framework bridges (they import
#: torch / JAX, the pip extra named), `dg.torch.op(kernel, ...)`,
#: `dg.jax.op(kernel, ...)`, and `dg.functional.access(...)` (no extra)
_SUBMODULES = {"torch": ("diffgpu.torch", "torch"), "jax": ("diffgpu.jax", "jax"),
               "functional": ("diffgpu.functional", None)}


def _builtins() -> dict:
    """Kernel builtins (thread_id, atomic_add, exp, ...) from diffgpu.builtins."""
    import importlib

    try:
        mod = importlib.import_module("diffgpu.builtins")
    except ImportError:
        return {}
    return {k: v for k, v in vars(mod).items()
            if not k.startswith("_") and getattr(v, "__diffgpu_builtin__", None)}


def _bind_lazy(module) -> None:
    """Bind every lazy name `module` provides, so no later import can leave a
    module object where the user expects the function of the same name."""
    for name, (mod, attr) in _LAZY.items():
        if mod == module.__name__:
            globals()[name] = getattr(module, attr)


class _Package(_ModuleType):
    """diffgpu's module type. Importing a submodule binds it on its package
    (`import diffgpu.hostdiff.gradcheck` sets `diffgpu.hostdiff.gradcheck` to the module); where
    that submodule's name is also a lazy name (`dg.gradcheck`, the function),
    the package keeps the lazy names instead, whoever imported it and when."""

    def __setattr__(self, name, value):
        if (name in _LAZY and isinstance(value, _ModuleType)
                and value.__name__ == f"{__name__}.{name}"):
            _bind_lazy(value)
            return
        super().__setattr__(name, value)


_sys.modules[__name__].__class__ = _Package


def __getattr__(name):
    if name in _LAZY:
        import importlib

        mod, attr = _LAZY[name]
        module = importlib.import_module(mod)
        _bind_lazy(module)
        value = getattr(module, attr)
    elif name in _SUBMODULES:
        import importlib

        mod, extra = _SUBMODULES[name]
        try:
            value = importlib.import_module(mod)
        except ModuleNotFoundError as exc:
            if extra is None:
                raise
            raise ImportError(f"dg.{name} needs {exc.name} (pip install "
                              f"'diffgpu[{extra}]')") from None
    elif name == "__all__":  # `from diffgpu import *` leaves Python's compile alone
        value = [k for k in _API if k != "compile"] + sorted(
            k for k in _builtins() if k not in _API)
    else:
        table = _builtins()
        if name not in table:
            raise AttributeError(f"module 'diffgpu' has no attribute {name!r}")
        value = table[name]
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY) | set(_builtins()))

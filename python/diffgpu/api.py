"""`@dg.kernel` and `@dg.func`: the decorated objects users launch and call.

    @dg.kernel
    def scale(A, a):
        i = dg.global_id(0)
        if i < len(A):
            A[i] *= a

    scale[blocks, 256](A, 2.0)     # numpy -> CPU, CuPy -> GPU

Types come from the launch arguments; each signature compiles once (memory
and disk cache, see runtime/store/cache.py). Importing this never imports MLIR.
"""
from __future__ import annotations

import functools
import inspect
import os

from diffgpu.errors import DiffgpuError, LaunchError, user_facing  # noqa: F401  (api.user_facing)
from diffgpu.runtime.args import check_geometry


class Definition:
    """A decorated Python function (the frontend reads `py_func`, `kind`, `name`)."""

    __diffgpu_definition__ = True
    kind = ""

    def __init__(self, py_func):
        if not inspect.isfunction(py_func):
            raise TypeError(f"@dg.{self.kind} decorates a Python function, "
                            f"got {type(py_func).__name__}")
        self.py_func = py_func
        self.name = py_func.__name__
        functools.update_wrapper(self, py_func)
        params = inspect.signature(py_func).parameters.values()
        self.arg_names = [p.name for p in params]
        bad = [p.name for p in params if p.kind not in
               (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        if bad:
            raise TypeError(f"@dg.{self.kind} {self.name}: *args, **kwargs and keyword-only "
                            f"parameters are not supported ({', '.join(bad)})")
        self._programs: dict = {}  # (types, target, diff) -> runnable program

    def __repr__(self) -> str:
        return f"<diffgpu {self.kind} {self.name}({', '.join(self.arg_names)})>"

    @user_facing
    def __call__(self, *args, **kwargs):
        raise LaunchError(
            f"{self.kind} '{self.name}' cannot be called from Python; "
            + ("launch it with " + f"{self.name}[grid, block](...)" if self.kind == "kernel"
               else "call it from a @dg.kernel or @dg.func"))


class Kernel(Definition):
    """A launchable kernel: `kernel[grid, block](*args)`."""

    kind = "kernel"

    @user_facing
    def __getitem__(self, config) -> "Launcher":
        if not isinstance(config, tuple) or len(config) != 2:
            raise LaunchError(f"launch configuration must be {self.name}[grid, block], "
                              f"got {self.name}[{config!r}]")
        grid, block = check_geometry(*config)
        return Launcher(self, grid, block)

    @property
    def signatures(self) -> list[str]:
        """The signatures compiled (or loaded) in this process, with targets."""
        out = []
        for types, target, diff, *_facts in self._programs:  # variants: listed once
            text = f"({', '.join(str(t) for t in types)}) on {target}"
            text += f" [{diff[0]} {', '.join(diff[1])}]" if diff else ""
            if text not in out:
                out.append(text)
        return out

    @user_facing
    def ir(self, *args, stage: str = "dialect", target: str | None = None,
           grid=None, block=None) -> str:
        """The IR text of this kernel for `args` at `stage` (see diffgpu.driver.stages);
        `grid`/`block`: the launch geometry, when its facts should count."""
        from diffgpu.driver.stages import kernel_ir
        return kernel_ir(self, args, stage=stage, target=target, grid=grid, block=block)


class Func(Definition):
    """A device function: callable from kernels and funcs, never launched."""

    kind = "func"

    @user_facing
    def __getitem__(self, config):
        raise LaunchError(f"func '{self.name}' is a device function and cannot be launched; "
                          "call it from a @dg.kernel, or decorate it with @dg.kernel")


class Launcher:
    """`kernel[grid, block]`: calling it launches; dg.autodiff/fwddiff take it
    (hostdiff/diff.py knows it by `__diffgpu_launcher__`, not by importing it)."""

    __diffgpu_launcher__ = True

    def __init__(self, kernel: Kernel, grid: tuple, block: tuple):
        self.kernel, self.grid, self.block = kernel, grid, block

    def __repr__(self) -> str:
        return f"{self.kernel.name}[{self.grid}, {self.block}]"

    @user_facing
    def __call__(self, *args, **kwargs) -> None:
        if kwargs:
            args = bind_arguments(self.kernel, args, kwargs)
        launch, bind = _LAUNCH or _launch_functions()
        launch(self.kernel, args, self.grid, self.block, bind)


#: (runtime/fastpath.py `launch`, driver/launch.py `bind`: its slow path) once
#: imported (an import statement per launch costs 0.5 us)
_LAUNCH = None


def _launch_functions():
    global _LAUNCH
    from diffgpu.driver.launch import bind
    from diffgpu.runtime.fastpath import launch
    _LAUNCH = (launch, bind)
    return _LAUNCH


def bind_arguments(defn, args, kwargs) -> tuple:
    """Positional + keyword launch arguments in parameter order."""
    names = defn.arg_names
    out = list(args) + [_MISSING] * (len(names) - len(args))
    for k, v in kwargs.items():
        if k not in names:
            raise LaunchError(f"{defn.name}() has no parameter '{k}' "
                              f"(parameters: {', '.join(names)})")
        i = names.index(k)
        if i < len(args):
            raise LaunchError(f"{defn.name}() got argument '{k}' twice")
        out[i] = v
    missing = [n for n, v in zip(names, out) if v is _MISSING]
    if missing or len(out) > len(names):
        raise LaunchError(f"{defn.name}() takes {len(names)} arguments ({', '.join(names)}); "
                          + (f"missing {', '.join(missing)}" if missing
                             else f"got {len(args)} positional"))
    return tuple(out)


_MISSING = object()


def _decorator(cls, fn, kwargs):
    if kwargs:
        raise TypeError(f"@dg.{cls.kind} takes no options (got {', '.join(kwargs)})")
    if fn is None:
        return lambda f: cls(f)
    return cls(fn)


def kernel(fn=None, **kwargs):
    """Decorate a kernel: `@dg.kernel` (or `@dg.kernel()`).

    Takes a Python function defined in a file (positional parameters only)
    and returns a `Kernel`; `kernel[grid, block](*args)` compiles it for the
    argument types (once per signature) and runs it on numpy (CPU) or CUDA
    (GPU) arrays. Nothing is compiled at decoration time."""
    return _decorator(Kernel, fn, kwargs)


def func(fn=None, **kwargs):
    """Decorate a device function: `@dg.func` (or `@dg.func()`).

    Takes a Python function defined in a file and returns a `Func`: callable
    from kernels and other funcs (it may return a value or a tuple), never
    launched from the host."""
    return _decorator(Func, fn, kwargs)

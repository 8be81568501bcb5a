"""diffgpu: differentiable GPU kernels written in Python.

Importing diffgpu never imports MLIR: compile-time modules load it lazily, so a
machine with only numpy + CuPy runs cached kernels and bundles.
"""
from diffgpu._version import __version__  # noqa: F401
from diffgpu.errors import CompileError, LaunchError  # noqa: F401

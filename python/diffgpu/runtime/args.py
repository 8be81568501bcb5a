"""Launch arguments: classify, type and validate them before anything runs.

Importing this never imports MLIR or CuPy. Every check here raises
`LaunchError` with the argument's position (and name when known), so a bad
launch leaves the user's arrays untouched.

    >>> infer_signature([np.ones(4, np.float32), 2.0])
    Signature(types=(ArrayType('float32', 1), ScalarType('float64')), device='host', gpu_id=None)
"""
from __future__ import annotations

import numbers
import sys
from dataclasses import dataclass

import numpy as np

from diffgpu.errors import LaunchError
from diffgpu.types import DTYPES, MAX_NDIM, STORAGE_DTYPES, ArrayType, ScalarType

#: block limits of NVIDIA GPUs (x, y, z) and on the product
BLOCK_LIMITS = (1024, 1024, 64)
BLOCK_THREADS = 1024
#: grid limits of a launch (x, y, z); y and z beyond the hardware's 65535
#: are folded (`hardware_grid`), so only their product is bounded further
GRID_LIMITS = (2**31 - 1, 2**31 - 1, 2**31 - 1)
#: the hardware's grid y / z limit, and the most y * z rows a launch may have
HW_GRID_YZ = 65535
GRID_ROWS = HW_GRID_YZ * HW_GRID_YZ

_NUMPY_SCALARS = {np.float32: "float32", np.float64: "float64",
                  np.int32: "int32", np.int64: "int64"}
_INT64 = (-(2**63), 2**63 - 1)


@dataclass(frozen=True)
class Signature:
    """The argument types of one launch and the device they select."""
    types: tuple
    device: str  # "host" or "gpu"
    gpu_id: int | None = None


def describe_arg(i: int, names=None) -> str:
    if names and i < len(names):
        return f"argument {i} ('{names[i]}')"
    return f"argument {i}"


def is_device_array(x) -> bool:
    if isinstance(x, np.ndarray):
        return False
    try:
        return hasattr(x, "__cuda_array_interface__")
    except Exception:  # the property exists but refuses (torch: requires_grad)
        return True


def _check_dtype_ndim(dtype, ndim, where: str) -> ArrayType:
    name = np.dtype(dtype).name if _is_dtype(dtype) else str(dtype)
    if name not in DTYPES:
        raise LaunchError(f"{where}: unsupported dtype {name}; diffgpu arrays are "
                          f"{', '.join(DTYPES)}")
    if ndim == 0:
        raise LaunchError(f"{where}: 0-d arrays are not supported; pass a scalar "
                          "(e.g. float(x)) or a 1-element array")
    if ndim > MAX_NDIM:
        raise LaunchError(f"{where}: {ndim}-d array; diffgpu arrays have 1 to "
                          f"{MAX_NDIM} dimensions")
    return ArrayType(name, ndim)


def _is_dtype(d) -> bool:
    try:
        np.dtype(d)
        return True
    except TypeError:
        return False


def _check_strides(strides, itemsize: int, where: str) -> None:
    for s in strides:
        if s % itemsize:
            raise LaunchError(f"{where}: byte stride {s} is not a multiple of the "
                              f"item size {itemsize}; make a copy (np.ascontiguousarray)")


def host_array_type(x: np.ndarray, where: str) -> ArrayType:
    if isinstance(x, np.ma.MaskedArray):  # kernels would read the masked values too
        raise LaunchError(f"{where}: numpy masked arrays are not supported (kernels "
                          "would ignore the mask); pass x.filled(value), or "
                          "np.ma.getdata(x) to use the data as it is")
    t = _check_dtype_ndim(x.dtype, x.ndim, where)
    if not x.dtype.isnative:
        raise LaunchError(f"{where}: non-native byte order; "
                          "use x.astype(x.dtype.newbyteorder('='))")
    _check_strides(x.strides, x.itemsize, where)
    if not x.flags.writeable:
        raise LaunchError(f"{where}: read-only array; kernels may write their "
                          "arguments, pass a writeable copy (x.copy())")
    return t


def torch_of(x):
    """The torch module when `x` is a torch tensor, else None (never imports
    torch: a tensor exists only once torch is imported)."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, getattr(torch, "Tensor", ())):
        return torch
    return None


def numpy_dtype(name: str, where: str):
    """The numpy dtype of a diffgpu dtype name: ml_dtypes' for bfloat16
    (numpy has none of its own; LaunchError at `where` without ml_dtypes)."""
    if name == "bfloat16":  # numpy knows it once ml_dtypes is imported
        try:
            import ml_dtypes
        except ImportError:
            raise LaunchError(f"{where}: bfloat16 tensors need the ml_dtypes package "
                              "(pip install ml_dtypes)") from None
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def torch_interface(x, where: str) -> dict:
    """The `__cuda_array_interface__` of a torch CUDA tensor, from torch's own
    attributes (pointer, shape, strides, dtype): torch's property has no
    bfloat16 (older versions raise, newer ones say "<V2", a void type), so
    "typestr" here is the numpy dtype itself (ml_dtypes' bfloat16 for it)."""
    if x.requires_grad:
        raise LaunchError(f"{where}: a torch tensor that requires grad; kernels write their "
                          "arguments in place, which autograd would not see: pass x.detach() "
                          "(or use dg.torch.op for a differentiable operator)")
    if x.layout is not torch_of(x).strided:
        raise LaunchError(f"{where}: a {x.layout} torch tensor; pass a dense one (x.to_dense())")
    name = str(x.dtype).rpartition(".")[2]
    if name not in DTYPES:
        raise LaunchError(f"{where}: unsupported dtype torch.{name}; diffgpu arrays are "
                          f"{', '.join(DTYPES)}")
    item = x.element_size()
    strides = None if x.is_contiguous() else tuple(int(s) * item for s in x.stride())
    return {"shape": tuple(int(n) for n in x.shape), "typestr": numpy_dtype(name, where),
            "strides": strides, "data": (int(x.data_ptr()) if x.numel() else 0, False),
            "version": 2}


def cuda_interface(x, where: str = "array") -> dict:
    """`x.__cuda_array_interface__` (a torch CUDA tensor's from its own
    attributes: `torch_interface`), checked to be a dict with a shape and a
    type; LaunchError otherwise."""
    if torch_of(x) is not None and getattr(x, "is_cuda", False):
        return torch_interface(x, where)
    try:
        cai = x.__cuda_array_interface__
    except Exception as exc:  # a property that raises
        raise LaunchError(f"{where}: cannot read __cuda_array_interface__: {exc}") from None
    if not isinstance(cai, dict) or "shape" not in cai or "typestr" not in cai:
        raise LaunchError(f"{where}: malformed __cuda_array_interface__")
    if cai["typestr"] in ("<V2", "|V2"):  # CuPy 14's bfloat16 (ml_dtypes) says "void"
        dt = getattr(x, "dtype", None)
        if isinstance(dt, np.dtype) and dt.name == "bfloat16":
            cai = dict(cai, typestr=dt)
    return cai


def device_array_type(x, where: str) -> ArrayType:
    cai = cuda_interface(x, where)
    dtype = np.dtype(cai["typestr"])
    shape = tuple(cai["shape"])
    t = _check_dtype_ndim(dtype, len(shape), where)
    if not dtype.isnative:
        raise LaunchError(f"{where}: non-native byte order")
    strides = cai.get("strides")
    if strides is not None:
        _check_strides(strides, dtype.itemsize, where)
    data = cai.get("data")
    if isinstance(data, (tuple, list)) and len(data) > 1 and data[1]:
        raise LaunchError(f"{where}: read-only device array; pass a writeable copy")
    if cai.get("mask") is not None:
        raise LaunchError(f"{where}: masked arrays are not supported")
    return t


def scalar_type(x, where: str) -> ScalarType:
    if isinstance(x, (bool, np.bool_)):
        raise LaunchError(f"{where}: bool scalars are not supported; pass int(x)")
    for cls, name in _NUMPY_SCALARS.items():
        if type(x) is cls:
            return ScalarType(name)
    if isinstance(x, np.generic) and np.dtype(type(x)).name in STORAGE_DTYPES:
        raise LaunchError(f"{where}: {np.dtype(type(x)).name} scalars are not supported "
                          "(16-bit floats are for arrays); pass np.float32(x)")
    if isinstance(x, np.generic):
        raise LaunchError(f"{where}: unsupported scalar type {type(x).__name__}; "
                          "use int, float, np.int32, np.int64, np.float32 or np.float64")
    if isinstance(x, numbers.Integral):
        if not _INT64[0] <= int(x) <= _INT64[1]:
            raise LaunchError(f"{where}: integer {x} does not fit in int64")
        return ScalarType("int64")
    if isinstance(x, numbers.Real):
        return ScalarType("float64")
    raise LaunchError(f"{where}: unsupported argument of type {type(x).__name__}; "
                      "expected a numpy/CuPy array or an int/float scalar")


def arg_type(x, where: str):
    """(type, device) of one argument; device is "host", "gpu" or None (scalar)."""
    if isinstance(x, np.ndarray):
        return host_array_type(x, where), "host"
    if is_device_array(x):
        return device_array_type(x, where), "gpu"
    if hasattr(x, "__array_interface__") or hasattr(x, "__array__"):
        if not isinstance(x, (numbers.Number, np.generic)):
            raise LaunchError(f"{where}: unsupported array type {type(x).__name__}; "
                              "pass a numpy array (np.asarray(x)) or a CUDA array")
    return scalar_type(x, where), None


def infer_signature(args, names=None, kernel_name="kernel") -> Signature:
    """Types of all arguments and the one device they agree on."""
    types, devices = [], {}
    for i, x in enumerate(args):
        t, dev = arg_type(x, describe_arg(i, names))
        types.append(t)
        if dev is not None:
            devices.setdefault(dev, i)
    if len(devices) > 1:
        raise LaunchError(
            f"{kernel_name}: mixes host (numpy) and device (CUDA) arrays: "
            f"{describe_arg(devices['host'], names)} is a numpy array, "
            f"{describe_arg(devices['gpu'], names)} a device array; move them to one device")
    device = next(iter(devices), "host")
    gpu_id = None
    if device == "gpu":
        ids = {}
        for i, x in enumerate(args):
            if is_device_array(x):
                ids.setdefault(device_id(x), i)
        if len(ids) > 1:
            raise LaunchError(f"{kernel_name}: arrays live on different GPUs {sorted(ids)}")
        gpu_id = next(iter(ids))
    return Signature(tuple(types), device, gpu_id)


def device_id(x) -> int:
    """The CUDA device an array lives on (CuPy arrays, torch tensors, others)."""
    dev = getattr(x, "device", None)
    did = getattr(dev, "id", None)
    if isinstance(did, int):
        return did
    idx = getattr(dev, "index", None)  # torch.device
    if isinstance(idx, int):
        return idx
    return pointer_device(cuda_interface(x, "array")["data"][0])


def pointer_device(ptr: int) -> int:
    """The CUDA device that owns device pointer `ptr` (CuPy's runtime; only
    reached for a device array, so CuPy is loaded)."""
    try:
        import cupy
    except ImportError as exc:
        raise LaunchError(f"device arrays need CuPy, which cannot be imported: {exc}") from None
    try:
        return int(cupy.cuda.runtime.pointerGetAttributes(ptr).device)
    except Exception:
        return int(cupy.cuda.runtime.getDevice())


def check_arity(args, names, kernel_name: str) -> None:
    if len(args) != len(names):
        raise LaunchError(f"{kernel_name}() takes {len(names)} argument"
                          f"{'s' if len(names) != 1 else ''} ({', '.join(names)}), "
                          f"got {len(args)}")


def _dims(value, what: str, limits) -> tuple:
    if isinstance(value, (bool, np.bool_)):
        raise LaunchError(f"{what} must be an int or a tuple of up to 3 ints, got a bool")
    if isinstance(value, (numbers.Integral,)):
        value = (int(value),)
    if not isinstance(value, (tuple, list)) or not 1 <= len(value) <= 3:
        raise LaunchError(f"{what} must be an int or a tuple of 1 to 3 ints, got {value!r}")
    dims = []
    for k, v in enumerate(value):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Integral):
            raise LaunchError(f"{what}[{k}] must be an int, got {v!r}")
        v = int(v)
        if v < 1:
            raise LaunchError(f"{what}[{k}] must be positive, got {v}")
        if v > limits[k]:
            raise LaunchError(f"{what}[{k}] = {v} exceeds the limit {limits[k]}")
        dims.append(v)
    return tuple(dims + [1] * (3 - len(dims)))


_GEOMETRY: dict = {}


def check_geometry(grid, block) -> tuple[tuple, tuple]:
    """Normalize grid and block to 3-tuples; LaunchError if out of range.
    Valid geometries are remembered (launch loops repeat theirs)."""
    key = (grid, block) if _plain_ints(grid) and _plain_ints(block) else None
    hit = _GEOMETRY.get(key) if key is not None else None
    if hit is not None:
        return hit
    g, b = _check_geometry(grid, block)
    if key is not None and len(_GEOMETRY) < 4096:
        _GEOMETRY[key] = (g, b)
    return g, b


def _plain_ints(v) -> bool:
    """An int or a tuple of ints, exactly (bools and numpy ints are checked
    every time: `True == 1`)."""
    return type(v) is int or (type(v) is tuple and all(type(x) is int for x in v))


def _check_geometry(grid, block) -> tuple[tuple, tuple]:
    g = _dims(grid, "grid", GRID_LIMITS)
    if g[1] * g[2] > GRID_ROWS:
        raise LaunchError(f"grid {g}: y * z = {g[1] * g[2]} exceeds the limit {GRID_ROWS} "
                          f"({HW_GRID_YZ} * {HW_GRID_YZ}, the GPU's y and z extents)")
    b = _dims(block, "block", BLOCK_LIMITS)
    if b[0] * b[1] * b[2] > BLOCK_THREADS:
        raise LaunchError(f"block {b} has {b[0] * b[1] * b[2]} threads; at most "
                          f"{BLOCK_THREADS} per block")
    return g, b


def grid_fold(grid) -> tuple:
    """() for a grid the GPU runs as it is, else its logical (y, z) extents:
    a grid with y or z beyond HW_GRID_YZ runs on `hardware_grid(grid)`, its
    program compiled for those extents (lowering/gpu/ops.py `fold_geometry`).

    >>> grid_fold((2, 70000, 1)), grid_fold((2, 65535, 65535))
    ((70000, 1), ())
    """
    return () if grid[1] <= HW_GRID_YZ and grid[2] <= HW_GRID_YZ else (grid[1], grid[2])


def hardware_grid(grid) -> tuple:
    """The grid a GPU launches for the logical `grid` (a checked 3-tuple):
    itself when y and z fit, else (x, hy, hz) with hy, hz <= HW_GRID_YZ and
    hy * hz >= y * z rows, as few extra rows as possible (fewer than hz);
    hardware block (by, bz) is logical row `by + bz * hy`, i.e. block
    (row % y, row // y) in y and z, and blocks past the last row return.

    >>> hardware_grid((2, 70000, 1)), hardware_grid((3, 65536, 2))
    ((2, 35000, 2), (3, 43691, 3))
    """
    gx, gy, gz = grid
    if gy <= HW_GRID_YZ and gz <= HW_GRID_YZ:
        return grid
    rows = gy * gz
    hz = -(-rows // HW_GRID_YZ)
    return (gx, -(-rows // hz), hz)


def parse_type(spec):
    """`"float32[:, :]"` -> ArrayType, `"float32"` -> ScalarType; types pass through.

    The same spelling `str(ArrayType)` prints, so specs round-trip.
    """
    if isinstance(spec, (ArrayType, ScalarType)):
        return spec
    if not isinstance(spec, str):
        raise ValueError(f"type spec must be a string like 'float32[:]' or 'int64', "
                         f"got {spec!r}")
    text = spec.replace(" ", "")
    if "[" in text:
        name, _, rest = text.partition("[")
        if not rest.endswith("]"):
            raise ValueError(f"bad type spec {spec!r}: expected e.g. 'float32[:, :]'")
        dims = rest[:-1].split(",")
        if any(d != ":" for d in dims) or not 1 <= len(dims) <= MAX_NDIM:
            raise ValueError(f"bad type spec {spec!r}: dimensions are written ':' "
                             f"(1 to {MAX_NDIM} of them)")
        if name not in DTYPES:
            raise ValueError(f"bad type spec {spec!r}: dtype must be one of {', '.join(DTYPES)}")
        return ArrayType(name, len(dims))
    if text not in DTYPES:
        raise ValueError(f"bad type spec {spec!r}: expected one of {', '.join(DTYPES)}, "
                         "optionally followed by [:], [:, :] or [:, :, :]")
    if text in STORAGE_DTYPES:
        raise ValueError(f"bad type spec {spec!r}: {text} is for arrays only "
                         f"('{text}[:]'); pass scalars as float32")
    return ScalarType(text)

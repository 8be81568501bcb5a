"""GPU runtime: load PTX with CuPy (driver JIT) and launch it.

Imports only numpy at module level; CuPy is imported on first use, MLIR never.
Kernel ABI (docs/IR.md): per array argument `ptr allocated, ptr aligned,
i64 offset, i64 size[rank], i64 stride[rank]` (strides in elements; we pass
the data pointer twice and offset 0); scalars by value.
"""
from __future__ import annotations

import os
import re
import tempfile
import threading
import warnings

import numpy as np

from diffgpu.errors import LaunchError
from diffgpu.types import ArrayType

_NP_SCALAR = {"float32": np.float32, "float64": np.float64,
              "int32": np.int32, "int64": np.int64}
_modules: dict[tuple, object] = {}
_raw: dict[tuple, object] = {}  # the same key -> its cupy.RawModule (its globals)
_lock = threading.Lock()


def cupy_module():
    """The `cupy` module, or a LaunchError saying it is missing."""
    try:
        import cupy
    except ImportError as exc:
        raise LaunchError(f"device arrays need CuPy, which cannot be imported: {exc}") from None
    return cupy


def available() -> bool:
    """True if CuPy imports and sees at least one GPU."""
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


_chips: dict[int, str] = {}


def chip_for_device(device_id: int) -> str:
    """`sm_XY` of a CUDA device, validated against the chips we compile for."""
    chip = _chips.get(device_id)
    if chip is None:
        chip = _chips[device_id] = _query_chip(device_id)
    return chip


def _query_chip(device_id: int) -> str:
    from diffgpu.abi import TargetError, check_chip

    cupy = cupy_module()
    cc = cupy.cuda.Device(device_id).compute_capability  # e.g. "90"
    chip = f"sm_{cc}"
    try:
        return check_chip(chip)
    except TargetError as exc:
        raise LaunchError(f"GPU {device_id}: {exc}") from None


def synchronize() -> None:
    """Wait for the current device's work (no-op without CuPy)."""
    try:
        import cupy
    except ImportError:
        return
    cupy.cuda.get_current_stream().synchronize()


def _load_function(ptx: str, entry: str, device_id: int):
    key = (ptx, entry, device_id)
    with _lock:
        fn = _modules.get(key)
        if fn is not None:
            return fn
        cupy = cupy_module()
        with cupy.cuda.Device(device_id):
            # RawModule(path=...) loads .ptx/.cubin files through the driver JIT
            fd, path = tempfile.mkstemp(suffix=".ptx", prefix="diffgpu-")
            try:
                with os.fdopen(fd, "w") as f:
                    f.write(ptx)
                module = cupy.RawModule(path=path)
                fn = module.get_function(entry)  # loads the module (driver JIT)
            except Exception as exc:  # CUDADriverError: PTX too new, bad entry...
                raise LaunchError(f"the CUDA driver cannot load kernel '{entry}' on GPU "
                                  f"{device_id}: {type(exc).__name__}: {exc}") from None
            finally:
                os.unlink(path)
        _modules[key] = fn
        _raw[key] = module
        return fn


def _flag_of(ptx: str, entry: str, device_id: int):
    """The device address (a CuPy MemoryPointer) of the module's tape
    overflow flag, after `_load_function` loaded it."""
    from diffgpu.abi import TAPE_OVERFLOW_GLOBAL
    _load_function(ptx, entry, device_id)
    return _raw[(ptx, entry, device_id)].get_global(TAPE_OVERFLOW_GLOBAL)


def pack_args(args, arg_types, lean=None) -> list:
    """The kernel's flat argument list (numpy scalars CuPy passes by value);
    `lean[i]`: array i uses the lean ABI of a specialised kernel (pointer
    and sizes only, lowering/gpu/nvvm.py). Arrays are read through their
    `__cuda_array_interface__`, torch tensors through their own attributes
    (args.cuda_interface: pointer, shape, strides; bfloat16 included)."""
    from diffgpu.runtime.args import cuda_interface
    out = []
    for i, (x, t) in enumerate(zip(args, arg_types)):
        if isinstance(t, ArrayType) and lean and lean[i]:
            cai = cuda_interface(x)
            out.append(np.uint64(int(cai["data"][0])))
            out += [np.int64(int(s)) for s in cai["shape"]]
        elif isinstance(t, ArrayType):
            cai = cuda_interface(x)
            shape = tuple(int(s) for s in cai["shape"])
            itemsize = np.dtype(cai["typestr"]).itemsize
            strides = cai.get("strides")
            if strides is None:  # C-contiguous
                strides, acc = [], 1
                for s in reversed(shape):
                    strides.insert(0, acc)
                    acc *= s
            else:
                strides = [int(s) // itemsize for s in strides]
            ptr = np.uint64(int(cai["data"][0]))
            out += [ptr, ptr, np.int64(0)]
            out += [np.int64(s) for s in shape]
            out += [np.int64(s) for s in strides]
        else:
            out.append(_NP_SCALAR[t.dtype](x))
    return out


def check_abi(abi, arg_types) -> None:
    """The entry's argument descriptors (lowering/gpu_ptx.kernel_abi, stored
    in the cache) must describe `arg_types`: a stale or foreign entry fails
    here instead of reading garbage on the GPU."""
    if abi is None:
        return
    from diffgpu.abi import user_descriptors
    abi = user_descriptors(abi)  # the per-launch scratch is the runtime's (runtime/scratch.py)
    want = [["memref", t.ndim, t.dtype] if isinstance(t, ArrayType) else ["scalar", t.dtype]
            for t in arg_types]
    got = [list(d) for d in abi]
    if got != want:
        raise LaunchError(f"compiled kernel ABI {got} does not match the arguments {want}")


# Derivative kernels whose per-thread tape outgrows its stack part call
# device `malloc`, whose heap is 8 MB by default: raise it once per device,
# before the first such launch (CUDA refuses afterwards).
HEAP_BYTES = 1 << 30
_MALLOC_DECL = re.compile(r"\.extern\s+\.func\s*(\([^)]*\))?\s*malloc\s*\(")
_heap_ready: set[int] = set()
#: the tape's overflow flag (lowering/autodiff/tape.py, abi.TAPE_OVERFLOW_GLOBAL)
_FLAG_DECL = re.compile(r"\.visible\s+\.global\s[^;]*\b__dg_tape_overflow\b")


def uses_malloc(ptx: str) -> bool:
    """True if the PTX declares (and so calls) device `malloc`."""
    return _MALLOC_DECL.search(ptx) is not None


def ensure_malloc_heap(device_id: int) -> None:
    """Raise the device malloc heap (cudaLimitMallocHeapSize) of `device_id`
    to min(HEAP_BYTES, free memory / 4), once; never lowers it. If CUDA
    refuses (a malloc kernel already ran in this context), warn and go on
    with the current heap."""
    if device_id in _heap_ready:
        return
    cupy = cupy_module()
    rt = cupy.cuda.runtime
    limit = getattr(rt, "cudaLimitMallocHeapSize", 2)  # the enum's value in CUDA
    with _lock, cupy.cuda.Device(device_id):
        if device_id in _heap_ready:
            return
        try:
            current = int(rt.deviceGetLimit(limit))
            free, _total = rt.memGetInfo()
            want = min(HEAP_BYTES, int(free) // 4)
            if current < want:
                rt.deviceSetLimit(limit, want)
        except Exception as exc:  # CUDARuntimeError: too late for this context
            warnings.warn(f"diffgpu: cannot raise the device malloc heap of GPU {device_id} "
                          f"({type(exc).__name__}: {exc}); kernels that spill their tape to "
                          "the heap may run out of memory", RuntimeWarning, stacklevel=3)
        _heap_ready.add(device_id)


_heap_room: dict = {}


def heap_room(device_id: int) -> tuple:
    """(bytes of the malloc heap, threads the device holds at once) of
    `device_id`, after `ensure_malloc_heap`: what a launch's heap tapes must
    fit (runtime/launch_checks.py `check_heap`); read once per device."""
    found = _heap_room.get(device_id)
    if found is not None:
        return found
    ensure_malloc_heap(device_id)
    cupy = cupy_module()
    rt = cupy.cuda.runtime
    limit = getattr(rt, "cudaLimitMallocHeapSize", 2)
    try:
        with cupy.cuda.Device(device_id) as dev:
            heap = int(rt.deviceGetLimit(limit))
            attrs = dev.attributes
            resident = int(attrs["MultiProcessorCount"]) * \
                int(attrs["MaxThreadsPerMultiProcessor"])
    except Exception:  # a CUDA that does not say: the heap asked for, every thread held
        heap, resident = HEAP_BYTES, 1 << 62
    found = _heap_room[device_id] = (heap, resident)
    return found


def pack_fast(args, arg_types, lean=None) -> tuple:
    """`pack_args` for arrays with CuPy's attributes (runtime/fastpath.py)."""
    out = []
    for i, (x, t) in enumerate(zip(args, arg_types)):
        if isinstance(t, ArrayType) and lean and lean[i]:
            out.append(np.uint64(x.data.ptr))
            out += [np.int64(n) for n in x.shape]
        elif isinstance(t, ArrayType):
            ptr = np.uint64(x.data.ptr)
            item = x.itemsize
            out += [ptr, ptr, np.int64(0)]
            out += [np.int64(n) for n in x.shape]
            out += [np.int64(st // item) for st in x.strides]
        else:
            out.append(_NP_SCALAR[t.dtype](x))
    return tuple(out)


_CPOINTER: list = []


def as_kernel_pointers(packed: tuple) -> tuple:
    """`packed` with each value already in CuPy's kernel-argument form
    (`cupy.cuda.function.CNumpyArray`: what CuPy would build from a numpy
    scalar at every launch, through its `__array_interface__`), so that a
    launch reusing them converts nothing. Plain values where CuPy has no
    such class (other versions, the benchmark's stand-in)."""
    if not _CPOINTER:
        try:
            from cupy.cuda.function import CNumpyArray
            CNumpyArray(np.int64(0))
            _CPOINTER.append(CNumpyArray)
        except Exception:  # no such class here: numpy scalars it is
            _CPOINTER.append(None)
    make = _CPOINTER[0]
    return packed if make is None else tuple(make(v) for v in packed)


class GpuProgram:
    """A PTX module and its entry, launchable on CuPy arrays."""

    def __init__(self, ptx: str, entry: str, abi=None, lean=None, name=None):
        self.ptx, self.entry, self.meta = ptx, entry, abi
        self.name = name  # the kernel's, for errors
        self.lean = tuple(bool(x) for x in lean) if lean else None
        self._checked = False
        self.uses_malloc = uses_malloc(ptx)
        #: read the tape's overflow flag after each launch (`watch_tape`)
        self.watching = False
        self._flags: dict = {}  # device id -> (its flag's MemoryPointer, a host word)
        self._fns: dict = {}  # device id -> loaded function (launch_cached)
        self._cuda = None  # (CuPy's current-device query, its Device), with the first one
        self.scratch = _scratch_of(abi)

    def launch_cached(self, ready, args, arg_types, device_id: int) -> None:
        """Launch from the fast path: `ready` (a fastpath.Ready, one per
        launch key) keeps, from the key's second launch on, the loaded
        function, the packed arguments and CuPy's current-device query."""
        packed = ready.packed
        if packed is None:
            fn = self._fns.get(device_id)
            if fn is None:
                if not self._checked:
                    check_abi(self.meta, arg_types)
                    self._checked = True
                if self.uses_malloc:
                    ensure_malloc_heap(device_id)
                cupy = cupy_module()
                self._cuda = (cupy.cuda.runtime.getDevice, cupy.cuda.Device)
                fn = self._fns[device_id] = self._load(device_id)
            if self.watching:  # read the tape's flag after each launch (`watch_tape`)
                fn = self._checking(fn, device_id)
            packed = (fn, as_kernel_pointers(pack_fast(args, arg_types, self.lean))) + self._cuda
            if ready.seen:
                ready.packed = packed
        fn, values, current, device = packed
        if current() == device_id:
            fn(ready.grid, ready.block, values)
        else:
            with device(device_id):
                fn(ready.grid, ready.block, values)

    def launch(self, args, arg_types, grid, block, device_id: int = 0) -> None:
        if not self._checked:
            check_abi(self.meta, arg_types)
            self._checked = True
        if self.uses_malloc:
            ensure_malloc_heap(device_id)
        fn = self._load(device_id)
        cupy = cupy_module()
        flat = pack_args(args, arg_types, self.lean)
        with cupy.cuda.Device(device_id):
            fn(tuple(grid), tuple(block), tuple(flat))
            if self.watching:
                self.check_tape(device_id)

    def watch_tape(self) -> None:
        """From now on read the tape's overflow flag after each launch (a
        program whose heap tape has no formula, or whose launch reached the
        heap: runtime/launch_checks.py, which calls this before the launch
        key's first launch packs it); nothing for PTX without the flag."""
        self.watching = self.watching or (self.uses_malloc and
                                          _FLAG_DECL.search(self.ptx) is not None)

    def _checking(self, fn, device_id: int):
        """`fn` followed by `check_tape`: what the packed launch of a watched
        program calls (its callers keep it: the fast path, dg.vjp's replay)."""
        def launch(grid, block, values):
            fn(grid, block, values)
            self.check_tape(device_id)
        return launch

    def check_tape(self, device_id: int) -> None:
        """After a launch on the current stream: wait for it, read the flag
        (8 bytes) and, if a thread's tape could not grow, clear it and raise
        the LaunchError (runtime/launch_checks.py `overflow_error`). While
        the stream captures a CUDA graph nothing runs, so nothing is read:
        the program is noted for the graph of `tape.capture`, which reads
        its flag after each replay (runtime/graph_flags.py)."""
        from diffgpu.runtime import graph_flags
        cupy = cupy_module()
        graph_flags.note(self, device_id)
        ptr, word = self.flag(device_id)
        with cupy.cuda.Device(device_id):
            stream = cupy.cuda.get_current_stream()
            if _capturing(stream):  # a CUDA graph being captured: no sync possible
                return
            ptr.copy_to_host_async(word.ctypes.data, 8, stream)
            stream.synchronize()
            if not word[0]:
                return
            words = int(word[0])
            ptr.memset_async(0, 8, stream)
            stream.synchronize()
        raise self.overflow(device_id, words)

    def flag(self, device_id: int) -> tuple:
        """(the device address of the module's overflow flag, a CuPy
        MemoryPointer; an 8-byte host word to read it into), loaded once
        per device."""
        found = self._flags.get(device_id)
        if found is None:
            found = self._flags[device_id] = (
                _flag_of(self.ptx, self.entry, device_id), np.zeros(1, np.int64))
        return found

    def overflow(self, device_id: int, words: int) -> LaunchError:
        """The error of a launch whose flag read `words` (not 0)."""
        from diffgpu.runtime.tape_overflow import overflow_error
        heap, _ = heap_room(device_id)
        return overflow_error(self.name or self.entry, words,
                              f"the GPU's malloc heap of {heap} bytes")

    def _load(self, device_id: int):
        """The loaded entry; for a kernel with per-launch scratch, a launcher
        that appends the scratch of the current stream (runtime/scratch.py)."""
        fn = _load_function(self.ptx, self.entry, device_id)
        return fn if self.scratch is None else self.scratch.wrap(fn, device_id)


def _capturing(stream) -> bool:
    """Is `stream` (CuPy's) capturing a CUDA graph (dg.Tape's `capture`)?"""
    test = getattr(stream, "is_capturing", None)
    return bool(test()) if test is not None else False


def _scratch_of(abi):
    """The GpuScratch of a program with these descriptors, or None."""
    from diffgpu.abi import scratch_slots
    slots = scratch_slots(abi)
    if not slots:
        return None
    from diffgpu.runtime.scratch import GpuScratch
    return GpuScratch(slots, as_kernel_pointers)

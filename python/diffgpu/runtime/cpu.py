"""CPU runtime: host-target kernels through MLIR's ExecutionEngine on numpy arrays.

    prog = compile_host(module_text)          # diffgpu IR, host target
    prog.launch("saxpy", (2.0, x, y), (ScalarType("float32"), ArrayType("float32", 1),
                ArrayType("float32", 1)), grid=(4, 1, 1), block=(256, 1, 1))
    text = prog.llvm_text                     # cacheable
    prog2 = HostProgram.from_llvm_text(text)  # no recompilation

The entry of kernel `k` is the function `k` of the lowered module (or
`__dg_entry_k` when `k` is a C library name such as `exp`), with the C
interface (`_mlir_ciface_k`) of `diffgpu-lower-to-host`: the kernel's
arguments, then grid x, y, z and block x, y, z (index). Arrays pass as memref
descriptors: `allocated, aligned, offset, sizes[r], strides[r]`, strides in
elements, negative and non-contiguous allowed (data pointer of element 0,
offset 0). Every thread of the grid runs on one CPU thread, one after
another; launches of one program are serialised (the geometry lives in a
module global). Ctrl-C stops a launch from the main thread
(runtime/host_signal.py): KeyboardInterrupt within about a second, even
from an endless `while`.
Array accesses are bounds-checked: an out-of-range index raises
OutOfBoundsError naming the kernel's source location after the launch,
instead of crashing the process.

MLIR is imported inside functions only: importing this module does not.
"""
from __future__ import annotations

import ctypes
import threading

import numpy as np

from diffgpu.errors import CompileError, DiffgpuError, LaunchError
from diffgpu.runtime import host_signal, racecheck
from diffgpu.types import ArrayType, ScalarType

PIPELINE = "diffgpu-to-host"
#: entries of kernels named like C library functions (lowering/to_host.py)
ENTRY_PREFIX = "__dg_entry_"
OPT_LEVEL = 2
_SCALAR_CTYPES = {"float32": ctypes.c_float, "float64": ctypes.c_double,
                  "int32": ctypes.c_int32, "int64": ctypes.c_int64}
_INT_RANGE = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}
_descriptor_classes: dict[int, type] = {}
#: lowering/host_bounds.py: status function and the module's access locations
STATUS_FUNC = "__dg_host_status"
ACCESSES_ATTR = "diffgpu.host_accesses"
#: lowering/host_cancel.py: address of the module's cancel flag
CANCEL_ADDR_FUNC = "__dg_host_cancel_addr"
#: lowering/host_racecheck.py: the race-checked variant's site tables
RACE_SITES_ATTR = "diffgpu.race_sites"
RACE_SHARED_ATTR = "diffgpu.race_shared"
#: C-interface functions of the module that are not kernels
_HELPER_PREFIXES = ("__dg_host_", "__dg_race_")


class OutOfBoundsError(DiffgpuError, IndexError):
    """A kernel indexed an array out of its bounds on the CPU. The access was
    skipped (a load read 0); the rest of the launch ran."""


def _descriptor_class(rank: int) -> type:
    cls = _descriptor_classes.get(rank)
    if cls is None:
        cls = type(f"MemRef{rank}D", (ctypes.Structure,), {"_fields_": [
            ("allocated", ctypes.c_void_p), ("aligned", ctypes.c_void_p),
            ("offset", ctypes.c_int64), ("sizes", ctypes.c_int64 * rank),
            ("strides", ctypes.c_int64 * rank)]})
        _descriptor_classes[rank] = cls
    return cls


def memref_descriptor(a: np.ndarray):
    """A ranked memref descriptor viewing `a` (any strides, in elements)."""
    item = a.itemsize
    if any(s % item for s in a.strides):
        raise LaunchError(f"array strides {a.strides} are not multiples of the element size {item}")
    d = _descriptor_class(a.ndim)()
    ptr = a.ctypes.data  # address of element (0, ..., 0), also for negative strides
    d.allocated = ptr
    d.aligned = ptr
    d.offset = 0
    d.sizes[:] = list(a.shape)
    d.strides[:] = [s // item for s in a.strides]
    return d


def _check_dims(what: str, dims) -> tuple:
    dims = tuple(dims)
    if len(dims) != 3 or not all(isinstance(d, (int, np.integer)) and not isinstance(d, bool)
                                 for d in dims):
        raise LaunchError(f"{what} must be a tuple of 3 ints, got {dims!r}")
    if any(d < 1 or d > 2**31 - 1 for d in dims):
        raise LaunchError(f"{what} sizes must be between 1 and 2**31-1, got {dims!r}")
    return tuple(int(d) for d in dims)


def _pack_arg(i: int, value, typ, keep: list):
    """A pointer for the packed argument list (and what must stay alive)."""
    if isinstance(typ, ArrayType):
        if not isinstance(value, np.ndarray):
            raise LaunchError(f"argument {i}: expected a numpy array, got {type(value).__name__}")
        if value.dtype.name != typ.dtype or value.ndim != typ.ndim:
            raise LaunchError(f"argument {i}: expected a {typ.ndim}-d {typ.dtype} array, got "
                              f"a {value.ndim}-d {value.dtype.name} array")
        desc = memref_descriptor(value)
        ptr = ctypes.pointer(desc)
        keep += [value, desc, ptr]
        return ctypes.cast(ctypes.pointer(ptr), ctypes.c_void_p)
    if isinstance(typ, ScalarType):
        ctype = _SCALAR_CTYPES.get(typ.dtype)
        if ctype is None:
            raise LaunchError(f"argument {i}: unsupported scalar type {typ.dtype}")
        if isinstance(value, (bool, np.bool_)) or not isinstance(
                value, (int, float, np.integer, np.floating)):
            raise LaunchError(f"argument {i}: expected a {typ.dtype} scalar, got {value!r}")
        if typ.dtype in _INT_RANGE:
            if not isinstance(value, (int, np.integer)):
                raise LaunchError(f"argument {i}: expected an integer, got {value!r}")
            lo, hi = _INT_RANGE[typ.dtype]
            if not lo <= int(value) <= hi:
                raise LaunchError(f"argument {i}: {value} does not fit in {typ.dtype}")
            cval = ctype(int(value))
        else:
            cval = ctype(float(np.dtype(typ.dtype).type(value)))
        keep.append(cval)
        return ctypes.cast(ctypes.pointer(cval), ctypes.c_void_p)
    raise LaunchError(f"argument {i}: unknown argument type {typ!r}")


class HostProgram:
    """A lowered host module in an ExecutionEngine; launch its kernels."""

    def __init__(self, llvm_text: str, _engine, _keep=(), _accesses=(), _race=None):
        self.llvm_text = llvm_text
        self._race = _race  # (sites, shared entries) of a race-checked program, or None
        self._engine = _engine  # kept alive as long as the program
        self._keep = _keep
        self._accesses = tuple(_accesses)  # source location of access number N+1
        self._entries: dict[str, object] = {}
        self._lock = threading.Lock()
        self._status = None
        if f"@_mlir_ciface_{STATUS_FUNC}(" in llvm_text:
            addr = _engine.raw_lookup("_mlir_ciface_" + STATUS_FUNC)
            if addr:
                self._status = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(addr)
        self._dirty = False  # a launch was interrupted before its status was read
        self._cancel = None  # ctypes.c_int64 at the module's cancel flag
        if f"@_mlir_ciface_{CANCEL_ADDR_FUNC}(" in llvm_text:
            addr = self._call_i64(CANCEL_ADDR_FUNC)
            if addr:
                self._cancel = ctypes.c_int64.from_address(addr)

    def _call_i64(self, name: str) -> int:
        """Call the module's C-interface function `name() -> i64` (0 if absent)."""
        addr = self._engine.raw_lookup("_mlir_ciface_" + name)
        if not addr:
            return 0
        res = ctypes.c_int64(0)
        args = (ctypes.c_void_p * 1)(ctypes.cast(ctypes.pointer(res), ctypes.c_void_p))
        ctypes.CFUNCTYPE(None, ctypes.c_void_p)(addr)(args)
        return res.value

    @classmethod
    def from_llvm_text(cls, text: str, opt_level: int = OPT_LEVEL) -> "HostProgram":
        """Rebuild from `llvm_text` (e.g. a cache entry) without recompiling
        the diffgpu IR; LLVM optimises (`opt_level` 0-3) and JIT-compiles it."""
        from diffgpu._mlir import MLIRError, ir
        from diffgpu.dialects import make_context
        from diffgpu.lowering.registry import format_diagnostics

        ctx = make_context()
        try:
            with ctx:
                module = ir.Module.parse(text)
        except MLIRError as exc:
            raise CompileError("cannot parse lowered host module: "
                               f"{format_diagnostics(exc)}") from None
        accesses = []
        if ACCESSES_ATTR in module.operation.attributes:
            from diffgpu._mlir import ir as _ir
            accesses = [_ir.StringAttr(a).value
                        for a in _ir.ArrayAttr(module.operation.attributes[ACCESSES_ATTR])]
        race = None
        if RACE_SITES_ATTR in module.operation.attributes:
            race = tuple([ir.StringAttr(a).value
                          for a in ir.ArrayAttr(module.operation.attributes[name])]
                         if name in module.operation.attributes else []
                         for name in (RACE_SITES_ATTR, RACE_SHARED_ATTR))
        return cls(text, _make_engine(module, opt_level), (ctx, module), accesses, race)

    def kernel_names(self) -> list[str]:
        """Names of the kernels (entries with the C interface)."""
        import re
        names = re.findall(r"llvm\.func @_mlir_ciface_([\w$.]+)\(", self.llvm_text)
        return [n[len(ENTRY_PREFIX):] if n.startswith(ENTRY_PREFIX) else n
                for n in names if not n.startswith(_HELPER_PREFIXES)]

    def _entry(self, name: str):
        fn = self._entries.get(name)
        if fn is None:
            if name not in self.kernel_names():
                raise LaunchError(f"no host kernel named {name!r} in this program "
                                  f"(kernels: {', '.join(self.kernel_names()) or 'none'})")
            symbol = ENTRY_PREFIX + name
            if f"@_mlir_ciface_{symbol}(" not in self.llvm_text:
                symbol = name
            addr = self._engine.raw_lookup("_mlir_ciface_" + symbol)
            if not addr:
                raise LaunchError(f"host kernel {name!r} could not be found in the JIT")
            fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(addr)
            self._entries[name] = fn
        return fn

    @property
    def racecheck(self) -> bool:
        """Is this the race-checked variant (`compile_host(..., racecheck=True)`)?"""
        return self._race is not None

    def launch(self, kernel_name: str, args, arg_types, grid, block, arg_names=None) -> None:
        """Run `kernel_name` on the grid: `grid`, `block` are (x, y, z) tuples.

        `args`: numpy arrays and Python/numpy scalars, `arg_types` the matching
        diffgpu.types ArrayType/ScalarType. Raises LaunchError before running
        anything if they do not match. A race-checked program raises RaceError
        after a launch with a data race (`arg_names` name the arrays in it).
        """
        args, arg_types = tuple(args), tuple(arg_types)
        if len(args) != len(arg_types):
            raise LaunchError(f"kernel {kernel_name!r} takes {len(arg_types)} arguments, "
                              f"got {len(args)}")
        grid, block = _check_dims("grid", grid), _check_dims("block", block)
        fn = self._entry(kernel_name)
        keep: list = []
        ptrs = [_pack_arg(i, a, t, keep) for i, (a, t) in enumerate(zip(args, arg_types))]
        for d in grid + block:
            v = ctypes.c_int64(d)
            keep.append(v)
            ptrs.append(ctypes.cast(ctypes.pointer(v), ctypes.c_void_p))
        packed = (ctypes.c_void_p * len(ptrs))(*ptrs)
        regions = race = None
        if self._race is not None:
            names = list(arg_names or [])
            names += [f"argument {i}" for i in range(len(names), len(args))]
            regions = racecheck.Regions(args, names)
        with self._lock:
            if self._dirty:  # an interrupted launch left its status behind
                self._read_status()
            if regions is not None:
                self._race_begin(regions)  # resets the race state
            self._dirty = True
            host_signal.run(fn, packed, self._cancel)
            bad = self._read_status()
            self._dirty = False
            if regions is not None:
                report = self._race_end()
                race = racecheck.race_error(kernel_name, report, regions, self._race[0],
                                            self._race[1], grid, block)
        if race is not None:
            raise race
        if bad:
            where = self._accesses[bad - 1] if bad <= len(self._accesses) else "?"
            raise OutOfBoundsError(
                f"kernel '{kernel_name}': array index out of bounds at {where} (on the CPU "
                "the access was skipped, a load read 0; the rest of the launch ran)")

    def _race_begin(self, regions) -> None:
        keep: list = []
        n = ctypes.c_int64(regions.count)
        args = (ctypes.c_void_p * 2)(
            racecheck.descriptor_ptr(regions.table, keep, memref_descriptor),
            ctypes.cast(ctypes.pointer(n), ctypes.c_void_p))
        self._helper("__dg_race_begin")(args)

    def _race_end(self) -> np.ndarray:
        report = np.zeros(racecheck.REPORT_WORDS, np.int64)
        keep: list = []
        args = (ctypes.c_void_p * 1)(racecheck.descriptor_ptr(report, keep, memref_descriptor))
        self._helper("__dg_race_end")(args)
        return report

    def _helper(self, name: str):
        addr = self._engine.raw_lookup("_mlir_ciface_" + name)
        if not addr:
            raise LaunchError(f"the race-checked program lacks '{name}'")
        return ctypes.CFUNCTYPE(None, ctypes.c_void_p)(addr)

    def _read_status(self) -> int:
        """Number of the first out-of-bounds access since the last call, or 0."""
        if self._status is None:
            return 0
        res = ctypes.c_int64(0)
        args = (ctypes.c_void_p * 1)(ctypes.cast(ctypes.pointer(res), ctypes.c_void_p))
        self._status(args)
        return res.value


def _make_engine(module, opt_level: int):
    from diffgpu._mlir import execution_engine

    if opt_level not in (0, 1, 2, 3):
        raise ValueError(f"opt_level must be 0, 1, 2 or 3, got {opt_level!r}")

    if execution_engine is None:
        raise CompileError("this MLIR distribution has no ExecutionEngine: the CPU runtime "
                           "is unavailable")
    try:
        return execution_engine.ExecutionEngine(module, opt_level=opt_level)
    except Exception as exc:  # JIT failure (e.g. unresolved symbol): not the user's bug
        raise CompileError(f"JIT compilation of the host module failed: {exc}") from None


def _check_host_only(module) -> None:
    """GPU-target functions cannot run here (the pass leaves them untouched)."""
    from diffgpu.lowering import targets

    for op in module.body.operations:
        t = targets.get_target(op)
        if op.operation.name == "func.func" and t is not None and not targets.is_host(t):
            name = str(op.operation.attributes["sym_name"]).strip('"')
            raise CompileError(f"function '@{name}' targets {targets.describe(t)}; the CPU "
                               "runtime compiles host-target modules only")


def lower_host(module_text: str, racecheck: bool = False, cancel: bool = True) -> str:
    """Run `diffgpu-to-host` (`{racecheck=1}`: the race-checked variant;
    `{cancel=0}`: no Ctrl-C checks) on diffgpu IR text; the LLVM-dialect text."""
    from diffgpu._mlir import MLIRError, ir
    from diffgpu.dialects import make_context
    from diffgpu.lowering.registry import (PipelineRunError, build_pass_manager,
                                           format_diagnostics, run_passes)

    ctx = make_context()
    try:
        with ctx:
            module = ir.Module.parse(module_text)
    except MLIRError as exc:
        raise CompileError(f"invalid diffgpu IR:\n{format_diagnostics(exc)}") from None
    _check_host_only(module)
    with ctx, ir.Location.unknown():  # as diffgpu-opt runs passes
        try:
            flags = " ".join(f for f, on in (("racecheck=1", racecheck),
                                              ("cancel=0", not cancel)) if on)
            pipeline = PIPELINE + (f"{{{flags}}}" if flags else "")
            run_passes(build_pass_manager(pipeline, ctx), module)
        except PipelineRunError as exc:
            raise CompileError(str(exc)) from None
        return str(module)


def compile_host(module_text: str, opt_level: int = OPT_LEVEL,
                 racecheck: bool = False, cancel: bool = True) -> HostProgram:
    """diffgpu IR text (host-target kernels) -> a launchable HostProgram.

    Raises CompileError with the diagnostics (`file:line:col: error: ...`)
    of any pass that fails. `opt_level` is LLVM's (O0 JITs several times
    faster, runs a few times slower). `racecheck`: the variant with the
    data-race detector (runtime/racecheck.py); `cancel=False`: without the
    Ctrl-C checks (only to measure their cost: such a launch cannot be stopped)."""
    return HostProgram.from_llvm_text(lower_host(module_text, racecheck, cancel), opt_level)

"""CPU runtime: host-target kernels through MLIR's ExecutionEngine on numpy arrays.

    prog = compiler.compile_host(module_text)  # diffgpu IR, host target (compiler.py)
    prog.launch("saxpy", (2.0, x, y), (ScalarType("float32"), ArrayType("float32", 1),
                ArrayType("float32", 1)), grid=(4, 1, 1), block=(256, 1, 1))
    text = prog.llvm_text                     # cacheable
    prog2 = HostProgram.from_llvm_text(text)  # no recompilation

This module only loads and launches: the compiler (compiler.py) lowers the
diffgpu IR; runtime/jit.py turns the LLVM-dialect module into machine code.
The ABI (entry names, argument packing, status and cancel functions) is
abi.py's: the kernel's arguments, then grid x, y, z and block x, y, z
(index); arrays pass as memref descriptors, strides in elements, negative
and non-contiguous allowed (data pointer of element 0, offset 0). Every thread of the grid runs on one CPU thread, one after
another; launches of one program are serialised (the geometry lives in a
module global). Ctrl-C stops a launch from the main thread
(runtime/host_signal.py): KeyboardInterrupt within about a second, even
from an endless `while`.
Array accesses are bounds-checked: an out-of-range index raises
OutOfBoundsError naming the kernel's source location after the launch,
instead of crashing the process.

Importing this module imports no MLIR and no compiler.
"""
from __future__ import annotations

import ctypes
import threading

import numpy as np

from diffgpu import switches
from diffgpu.abi import (ACCESSES_ATTR, CANCEL_ADDR_FUNC, CIFACE_PREFIX, ENTRY_PREFIX,
                         HELPER_PREFIXES, RACE_BEGIN_FUNC, RACE_END_FUNC, RACE_SHARED_ATTR,
                         RACE_SITES_ATTR, SCRATCH_ATTR, STATUS_FUNC, TAPE_STATUS_FUNC,
                         kernel_of_entry, parse_scratch)
from diffgpu.errors import CompileError, DiffgpuError, LaunchError
from diffgpu.runtime import host_signal, jit, loaded, racecheck
from diffgpu.runtime.tape_overflow import overflow_error
from diffgpu.types import ArrayType, ScalarType

#: LLVM-dialect text longer than this (lines) is JIT-compiled at opt level 0:
#: LLVM's O1/O2 pipelines are super-linear on one huge function. A flat sum
#: of 500 terms (11,000 lines) takes 2.95 s at O2 and 0.35 s at O0; 1,000
#: terms (22,000 lines) 11 s at O2; its gradient (91,000 lines) 17.6 s at O2
#: and 3 s at O0. LLVM keeps IEEE semantics at every level (no fast-math
#: flags are emitted), so the values are the same bits. Such a module also gets
#: runtime/jit.py `prepare_large`: LLVM's code generation stays linear in it.
LARGE_MODULE_LINES = 8_000


def is_large(text: str) -> bool:
    return text.count("\n") > LARGE_MODULE_LINES


def opt_level_for(text: str, opt_level: int | None) -> int:
    """The LLVM opt level used to JIT `text` when `opt_level` is asked for
    (None: `DIFFGPU_OPT`, diffgpu/switches.py)."""
    if opt_level is None:
        try:
            opt_level = switches.host_opt_level()
        except ValueError as exc:
            raise CompileError(str(exc)) from None
    return 0 if is_large(text) else opt_level


def _max_loaded() -> int:
    try:
        return loaded.max_loaded()
    except ValueError as exc:
        raise CompileError(str(exc)) from None


def _jit(module, text: str, level: int, keep=()):
    """JIT-compile the LLVM-dialect `module` (`text`: its text) at `level`."""
    _max_loaded()  # a bad DIFFGPU_MAX_LOADED: an error before any work
    if is_large(text):
        jit.prepare_large(module)
    if "bf16" in text:  # LLVM may call the compiler runtime's bfloat16 rounding
        jit.add_bf16_rounding(module)
    return jit.load_module(module, level, keep=keep)

_SCALAR_CTYPES = {"float32": ctypes.c_float, "float64": ctypes.c_double,
                  "int32": ctypes.c_int32, "int64": ctypes.c_int64}
_INT_RANGE = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}
_descriptor_classes: dict[int, type] = {}


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
        if _dtype_name(value.dtype) != typ.dtype or value.ndim != typ.ndim:
            raise LaunchError(f"argument {i}: expected a {typ.ndim}-d {typ.dtype} array, got "
                              f"a {value.ndim}-d {value.dtype.name} array")
        desc = memref_descriptor(value)
        ptr = ctypes.pointer(desc)
        keep += [desc, ptr]  # not `value`: the caller keeps it alive during the run
        return ctypes.addressof(ptr)  # where the pointer to the descriptor is stored
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
        return ctypes.addressof(cval)
    raise LaunchError(f"argument {i}: unknown argument type {typ!r}")


_DTYPE_NAMES: dict = {}


def _host_heap() -> str:
    """Which heap a host tape outgrew: the test cap (switches.py) or malloc's."""
    cap = switches.tape_cap_words()
    return ("the heap" if cap is None else
            f"the heap's test cap ({switches.TAPE_CAP}={cap} words a buffer)")


def _dtype_name(dtype) -> str:
    """`dtype.name`, remembered per dtype (numpy computes it in Python: 1.5 us)."""
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        name = _DTYPE_NAMES[dtype] = dtype.name
    return name


class HostProgram:
    """A lowered host module in an ExecutionEngine; launch its kernels. At
    most DIFFGPU_MAX_LOADED programs hold their engine at once
    (runtime/loaded.py): an unloaded one JIT-compiles its text again, at
    `level`, when it is next used."""

    def __init__(self, llvm_text: str, _engine, _keep=(), _accesses=(), _race=None,
                 level: int = 2):
        self.llvm_text = llvm_text
        self.level = level  # the LLVM opt level it was JIT-compiled at
        self.loads = 0  # times its text was JIT-compiled (1, more after unloads)
        self._race = _race  # (sites, shared entries) of a race-checked program, or None
        self._accesses = tuple(_accesses)  # source location of access number N+1
        self._lock = threading.RLock()
        self._dirty = False  # a launch was interrupted before its status was read
        self._scratch_slots: dict = {}  # kernel -> slots of its per-launch scratch
        self._scratch: dict = {}  # kernel -> its runtime/scratch.HostScratch
        #: kernel -> R: a reverse program running R rows of grid y per block
        #: (lowering/coarsen/rows.py): its launches run ceil(y / R) blocks in y
        self.row_blocks: dict = {}
        #: entry -> the user's kernel name, for errors (a derivative's entry is generated)
        self.shown: dict = {}
        self._bind(_engine, _keep)

    def _bind(self, engine, keep) -> None:
        """Launch through `engine` (`keep`: what must live as long as it)."""
        self._engine, self._keep = engine, keep
        self._entries: dict[str, object] = {}
        self._status = None
        #: where the status function writes (read under the lock)
        self._status_word = ctypes.c_int64(0)
        self._status_args = (ctypes.c_void_p * 1)(
            ctypes.cast(ctypes.pointer(self._status_word), ctypes.c_void_p))
        if f"@{CIFACE_PREFIX}{STATUS_FUNC}(" in self.llvm_text:
            addr = engine.raw_lookup(CIFACE_PREFIX + STATUS_FUNC)
            if addr:
                self._status = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(addr)
        self._tape = None  # the tape's overflow reader (abi.TAPE_STATUS_FUNC), if any
        if f"@{CIFACE_PREFIX}{TAPE_STATUS_FUNC}(" in self.llvm_text:
            addr = engine.raw_lookup(CIFACE_PREFIX + TAPE_STATUS_FUNC)
            if addr:
                self._tape = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(addr)
        self._cancel = None  # ctypes.c_int64 at the module's cancel flag
        if f"@{CIFACE_PREFIX}{CANCEL_ADDR_FUNC}(" in self.llvm_text:
            addr = self._call_i64(CANCEL_ADDR_FUNC)
            if addr:
                self._cancel = ctypes.c_int64.from_address(addr)
        self.loads += 1
        loaded.added(self, _max_loaded())

    @property
    def is_loaded(self) -> bool:
        return self._engine is not None

    def _load(self) -> None:
        """JIT-compile the text again if the program was unloaded (the lock held)."""
        if self._engine is None:
            module = jit.parse_text(self.llvm_text)
            done = _jit(module, self.llvm_text, self.level, keep=(module.context,))
            self._bind(done.engine, (done,))

    def _unload(self) -> None:
        """Release the engine, the module and its context (runtime/loaded.py);
        a program launching in another thread keeps them."""
        if not self._lock.acquire(blocking=False):
            return
        try:
            if self._engine is not None:
                if self._dirty:  # an interrupted launch's status and scratch
                    self._read_status()
                    self._reset_scratch()
                    self._dirty = False
                self._engine = self._keep = self._status = self._cancel = None
                self._entries = {}
                loaded.removed(self)
        finally:
            self._lock.release()

    def _call_i64(self, name: str) -> int:
        """Call the module's C-interface function `name() -> i64` (0 if absent)."""
        addr = self._engine.raw_lookup(CIFACE_PREFIX + name)
        if not addr:
            return 0
        res = ctypes.c_int64(0)
        args = (ctypes.c_void_p * 1)(ctypes.cast(ctypes.pointer(res), ctypes.c_void_p))
        ctypes.CFUNCTYPE(None, ctypes.c_void_p)(addr)(args)
        return res.value

    @classmethod
    def from_llvm_text(cls, text: str, opt_level: int | None = None) -> "HostProgram":
        """Rebuild from `llvm_text` (e.g. a cache entry) without recompiling
        the diffgpu IR; LLVM optimises (`opt_level` 0-3) and JIT-compiles it."""
        module = jit.parse_text(text)
        host_signal.interruption_point()  # a Ctrl-C held back while parsing: no JIT
        level = opt_level_for(text, opt_level)
        done = _jit(module, text, level, keep=(module.context,))
        return cls._from_loaded(text, done, level)

    @classmethod
    def from_module(cls, module, text: str, opt_level: int | None = None) -> "HostProgram":
        """The program of a just-lowered LLVM-dialect `module` (`text`: its
        text, kept for the cache): JIT-compiled without parsing it again."""
        level = opt_level_for(text, opt_level)
        return cls._from_loaded(text, _jit(module, text, level), level)

    @classmethod
    def _from_loaded(cls, text: str, done, level: int) -> "HostProgram":
        accesses = done.string_list(ACCESSES_ATTR) or []
        race = None
        sites = done.string_list(RACE_SITES_ATTR)
        if sites is not None:
            race = (sites, done.string_list(RACE_SHARED_ATTR) or [])
        prog = cls(text, done.engine, (done,), accesses, race, level)
        prog._scratch_slots = parse_scratch(done.string_list(SCRATCH_ATTR))
        return prog

    def kernel_names(self) -> list[str]:
        """Names of the kernels (entries with the C interface)."""
        import re
        names = re.findall(rf"llvm\.func @{CIFACE_PREFIX}([\w$.]+)\(", self.llvm_text)
        return [kernel_of_entry(n) for n in names if not n.startswith(HELPER_PREFIXES)]

    def _entry(self, name: str):
        fn = self._entries.get(name)
        if fn is None:
            if name not in self.kernel_names():
                raise LaunchError(f"no host kernel named {name!r} in this program "
                                  f"(kernels: {', '.join(self.kernel_names()) or 'none'})")
            symbol = ENTRY_PREFIX + name
            if f"@{CIFACE_PREFIX}{symbol}(" not in self.llvm_text:
                symbol = name
            with self._lock:
                self._load()
                addr = self._engine.raw_lookup(CIFACE_PREFIX + symbol)
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
        args = tuple(args)
        self.run_packed(kernel_name, self.pack(kernel_name, args, arg_types, grid, block), args,
                        arg_names)

    def pack(self, kernel_name: str, args, arg_types, grid, block) -> tuple:
        """(entry function, packed argument array, what keeps it valid, grid,
        block) of a launch: a function of the arguments' types, data pointers, shapes,
        strides and scalar values and of the geometry, so the launch fast
        path (runtime/fastpath.py) reuses it while those stay the same. It
        keeps no reference to the arrays themselves."""
        args, arg_types = tuple(args), tuple(arg_types)
        if len(args) != len(arg_types):
            raise LaunchError(f"kernel {kernel_name!r} takes {len(arg_types)} arguments, "
                              f"got {len(args)}")
        grid, block = _check_dims("grid", grid), _check_dims("block", block)
        rows = self.row_blocks.get(kernel_name)
        if rows:
            grid = (grid[0], -(-grid[1] // rows), grid[2])
        fn = self._entry(kernel_name)
        keep: list = []
        ptrs = [_pack_arg(i, a, t, keep) for i, (a, t) in enumerate(zip(args, arg_types))]
        if kernel_name in self._scratch_slots:
            ptrs += self._scratch_pointers(kernel_name)
        for d in grid + block:
            v = ctypes.c_int64(d)
            keep.append(v)
            ptrs.append(ctypes.addressof(v))
        return fn, (ctypes.c_void_p * len(ptrs))(*ptrs), keep, grid, block

    def run_packed(self, kernel_name: str, packed, args, arg_names=None) -> None:
        """Run a launch `pack` built for `args` (which the caller keeps alive)."""
        _, packed, _keep, grid, block = packed
        regions = race = None
        if self._race is not None:
            names = list(arg_names or [])
            names += [f"argument {i}" for i in range(len(names), len(args))]
            regions = racecheck.Regions(args, names)
        with self._lock:
            fn = self._entry(kernel_name)  # JIT-compiled again if it was unloaded
            loaded.touch(self)
            if self._dirty:  # an interrupted launch left its status behind
                self._read_status()
                self._reset_scratch()
            if regions is not None:
                self._race_begin(regions)  # resets the race state
            self._dirty = True
            host_signal.run(fn, packed, self._cancel)  # the launch's last call out
            bad = tape = 0
            if self._status is not None:  # `_read_status`, without a call back in here
                self._status(self._status_args)
                bad = self._status_word.value
            if self._tape is not None:  # the words a tape could not grow to (and clear)
                self._tape(self._status_args)
                tape = self._status_word.value
            self._dirty = False
            if regions is not None:
                report = self._race_end()
                race = racecheck.race_error(kernel_name, report, regions, self._race[0],
                                            self._race[1], grid, block)
        if race is not None:
            raise race
        if tape:
            raise overflow_error(self.shown.get(kernel_name, kernel_name), tape, _host_heap())
        if bad:
            where = self._accesses[bad - 1] if bad <= len(self._accesses) else "?"
            raise OutOfBoundsError(
                f"kernel '{kernel_name}': array index out of bounds at {where} (on the CPU "
                "the access was skipped, a load read 0; the rest of the launch ran)")

    def _scratch_pointers(self, kernel_name: str) -> list:
        """The packed pointers of the kernel's per-launch scratch (runtime/scratch.py)."""
        found = self._scratch.get(kernel_name)
        if found is None:
            from diffgpu.runtime.scratch import HostScratch
            found = self._scratch.setdefault(kernel_name, HostScratch(
                self._scratch_slots[kernel_name], memref_descriptor))
        return found.pointers

    def _reset_scratch(self) -> None:
        """After an interrupted launch: its last block never zeroed the scratch."""
        for s in self._scratch.values():
            s.reset()

    def _race_begin(self, regions) -> None:
        keep: list = []
        n = ctypes.c_int64(regions.count)
        args = (ctypes.c_void_p * 2)(
            racecheck.descriptor_ptr(regions.table, keep, memref_descriptor),
            ctypes.cast(ctypes.pointer(n), ctypes.c_void_p))
        self._helper(RACE_BEGIN_FUNC)(args)

    def _race_end(self) -> np.ndarray:
        report = np.zeros(racecheck.REPORT_WORDS, np.int64)
        keep: list = []
        args = (ctypes.c_void_p * 1)(racecheck.descriptor_ptr(report, keep, memref_descriptor))
        self._helper(RACE_END_FUNC)(args)
        return report

    def _helper(self, name: str):
        addr = self._engine.raw_lookup(CIFACE_PREFIX + name)
        if not addr:
            raise LaunchError(f"the race-checked program lacks '{name}'")
        return ctypes.CFUNCTYPE(None, ctypes.c_void_p)(addr)

    def _read_status(self) -> int:
        """Number of the first out-of-bounds access since the last call, or 0
        (the tape's overflow flag is cleared too)."""
        if self._tape is not None:
            self._tape(self._status_args)
        if self._status is None:
            return 0
        self._status(self._status_args)
        return self._status_word.value

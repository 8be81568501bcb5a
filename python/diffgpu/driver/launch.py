"""Compile-or-load a kernel for one signature, and run it.

`get_program(defn, types, target, diff)` looks in the definition's in-memory
table, then in the disk cache (runtime/store/cache.py), and only then compiles
(frontend -> lowering), storing the result. A GPU cache hit imports neither
the frontend nor MLIR: the payload holds the PTX and everything needed to
launch it.
"""
from __future__ import annotations

import hashlib
import os
import threading

from diffgpu.driver import remarks as explain_remarks
from diffgpu.errors import CompileError, DiffgpuError
from diffgpu.runtime import fastpath, specialize
from diffgpu.runtime.store import cache
from diffgpu.runtime.args import check_arity, infer_signature, parse_type
from diffgpu.runtime.launch_checks import check_block, check_heap, watch_unknown
from diffgpu.runtime.racecheck import enabled as racecheck_enabled
from diffgpu.runtime.specialize import launch_facts

STATS = fastpath.STATS  # the counters (runtime/fastpath.py says which)
_locks: dict = {}
_locks_guard = threading.Lock()


def _lock_for(key) -> threading.Lock:
    with _locks_guard:
        return _locks.setdefault(key, threading.Lock())


def target_for(sig) -> str:
    """User-facing target name a signature selects: "host" or "sm_XX"."""
    if sig.device == "host":
        return "host"
    from diffgpu.runtime import gpu
    return gpu.chip_for_device(sig.gpu_id)


def launch(kernel, args, grid, block) -> None:
    """Check, compile (once per signature and launch facts) and run `kernel`
    on `args`: runtime/fastpath.py `launch`, whose misses `bind` serves."""
    fastpath.launch(kernel, args, grid, block, bind)


def bind(kernel, args, grid, block, key):
    """The slow path of a launch (`fastpath.launch`'s miss on `key`, None
    when an argument's type is not fast-path material). A known token
    whose per-value checks pass: the launch's `Ready`, stored under `key`
    and returned for the fast path to run. Otherwise the full path: the
    checks of runtime/args.py (their errors), the program, the run; the
    token is remembered and None returned."""
    fast = kernel.__dict__.get("_fast")
    if type(fast) is fastpath.Table:
        if not kernel._programs:  # programs dropped (tests force reloads): start over
            fast.clear()
        elif key is not None:
            ready = _checked_ready(kernel, fast, args, grid, block, key)
            if ready is not None:
                return ready
    check_arity(args, kernel.arg_names, kernel.name)
    sig = infer_signature(args, kernel.arg_names, kernel.name)
    target = target_for(sig)
    program = get_program(kernel, sig.types, target,
                          facts=facts_for(args, sig.types, target, grid, block))
    run_program(program, args, sig, grid, block)
    fastpath.remember(kernel, args, sig)
    return None


def _checked_ready(kernel, fast, args, grid, block, key):
    """The `Ready` of a launch with a known token whose per-value checks
    pass (stored in `fast.hot` under `key`), or None."""
    entry = fast.get(fastpath.token(args))
    if entry is None:
        return None
    checked = fastpath.check_values(entry, args, key)
    if checked is None:
        return None
    gpu_id, arrays = checked
    sig = entry.sig
    if gpu_id is not None and gpu_id != sig.gpu_id:
        sig = type(sig)(sig.types, sig.device, gpu_id)
    race = key[-1] if sig.device == "host" else False  # host keys end with the switch
    values = specialize.fact_values(arrays, grid, block)
    mem = (values, gpu_id, race)
    found = entry.programs.get(mem)
    if found is None:
        target = target_for(sig)
        facts = None if values is None else specialize.Facts(*values)
        if facts is not None:
            facts = None if facts.trivial() else facts.for_target(target)
        found = entry.programs[mem] = get_program(kernel, sig.types, target, facts=facts)
    if found.heap_tape is not None:  # once per launch key (runtime/launch_checks.py)
        check_heap(found, args, grid, block, sig)
    ready = fastpath.Ready(found, sig, grid, block)
    hot = fast.hot
    if len(hot) >= fastpath._HOT_MAX:
        hot.clear()
    hot[key] = ready
    return ready


def facts_for(args, types, target: str, grid=None, block=None):
    """The launch facts (runtime/specialize.py) a program for `target` is
    specialised for, or None (the generic program)."""
    facts = launch_facts(args, types, grid, block)
    return None if facts is None else facts.for_target(target)


def program_key(defn, types, target: str, diff=None, facts=None) -> str:
    """The disk-cache key of a program: `cache.cache_key`, and the launch
    facts of a specialised one."""
    key = cache.cache_key(defn, types, target, diff)
    if facts is None:
        return key
    return hashlib.sha256(f"{key}\n\0facts {facts.key()}".encode()).hexdigest()


def run_program(program, args, sig, grid, block) -> None:
    """Run `program` on checked `args` (launches of the fast path run
    through their `fastpath.Ready`). LaunchError, before anything runs,
    when the program's collectives do not fit the block
    (runtime/launch_checks.py)."""
    check_block(program, block)
    if program.heap_tape is not None:
        check_heap(program, args, grid, block, sig)
    if program.kind == "gpu":  # coarsened x, folded y / z (fastpath.gpu_grid)
        program.gpu.launch(args, program.flat_types, fastpath.gpu_grid(program, grid), block,
                           sig.gpu_id or 0)
    else:
        program.host.launch(program.entry, list(args), list(program.flat_types), grid, block,
                            program.payload.get("arg_names"))


class Program:
    """A compiled entry: `kind` "host" or "gpu", its entry name and the flat
    argument types of that entry (primal/shadow pairs for diff wrappers)."""

    def __init__(self, payload: dict, host=None):
        self.payload = payload
        self.kind = payload["kind"]
        self.entry = payload["entry"]
        self.flat_types = tuple(parse_type(t) for t in payload["flat_types"])
        self.coarsen = int(payload.get("coarsen") or 1)
        #: () or the logical (y, z) grid extents the program was folded for
        self.grid_fold = tuple(payload.get("grid_fold") or ())
        #: () or (R, remainder): a reverse program running R rows of grid y per
        #: block (lowering/coarsen/rows.py); its launch divides grid y by R
        self.rows = tuple(payload.get("rows") or ())
        #: the warp / block collectives the entry reaches (lowering/checks/collectives.py)
        self.collectives = tuple(payload.get("collectives") or ())
        #: the words of its heap tapes, a formula of the launch (lowering/facts/heap_tape.py)
        self.heap_tape = payload.get("heap_tape")
        self.host = host
        self.gpu = None
        if self.kind == "gpu":
            from diffgpu.runtime.gpu import GpuProgram
            self.gpu = GpuProgram(payload["ptx"], self.entry, payload.get("abi"),
                                  payload.get("lean"), payload.get("name"))
            watch_unknown(self)  # a tape of no formula: its overflow flag read after launches
        elif host is None:
            from diffgpu.runtime.cpu import HostProgram
            self.host = _compiler_call(lambda: HostProgram.from_llvm_text(payload["llvm"]),
                                       payload.get("name", self.entry))
        if self.rows and self.host is not None:
            self.host.row_blocks[self.entry] = self.rows[0]
        if self.host is not None and payload.get("name"):  # the name its errors give
            self.host.shown[self.entry] = payload["name"]


def program_facts(facts, diff):
    """The launch `facts` a program of `diff` is specialised for: the `rows`
    fact only for reverse programs (lowering/coarsen/rows.py), so that
    primal programs are not compiled once per rows per block."""
    if facts is not None and facts.rows and (diff is None or diff[0] != "reverse"):
        import dataclasses
        facts = dataclasses.replace(facts, rows=())
        facts = None if facts.trivial() else facts
    return facts


def get_program(defn, types, target: str, diff=None, facts=None) -> Program:
    """The runnable program of `defn` for `types` on `target` ("host"/"sm_XX").

    `diff` is None or (mode, activity kinds) for host-level autodiff wrappers;
    `facts` None (generic) or the launch facts to specialise for. A
    specialised program that is not cached where the compiler cannot run
    (a GPU machine without MLIR) falls back to the generic one.
    """
    checked = target == "host" and racecheck_enabled()  # its own compiled variant
    facts = program_facts(facts, diff)
    mem_key = (tuple(types), target, diff) + ((facts.key(),) if facts is not None else ()) \
        + (("racecheck",) if checked else ())
    prog = defn._programs.get(mem_key)
    if prog is not None:
        STATS["memory_hit"] += 1
        return prog
    with _lock_for((id(defn), mem_key)):
        prog = defn._programs.get(mem_key)
        if prog is not None:
            STATS["memory_hit"] += 1
            return prog
        key = program_key(defn, types, target, diff, facts)
        if checked:
            key = hashlib.sha256(f"{key}\n\0racecheck".encode()).hexdigest()
        payload = cache.load(key)
        prog = None
        if payload is not None and _payload_ok(payload, target):
            try:
                prog = Program(payload)
                STATS["disk_hit"] += 1
            except Exception:  # an entry we cannot use (here): rebuild it
                prog = None
        if prog is None and facts is not None and not compiler_available():
            # the generic program; for a folded grid the one with only its fold
            fallback = specialize.Facts(grid_fold=facts.grid_fold) if facts.grid_fold \
                else None
            if fallback is not None and fallback == facts:
                _import_compiler()  # its CompileError: not cached, cannot compile
            prog = get_program(defn, types, target, diff, fallback)
            STATS["generic_fallback"] += 1
        if prog is None:
            payload, host = build_payload(defn, types, target, diff, facts, checked)
            from diffgpu.runtime.host_signal import deferred_sigint
            with deferred_sigint():  # the entry and the cache's size ledger: whole or not at all
                cache.store(key, payload)
            prog = Program(payload, host=host)
            STATS["compile"] += 1
        defn._programs[mem_key] = prog
        explain_remarks.report(defn.name, target, diff, prog.payload)  # DIFFGPU_EXPLAIN
        return prog


def _payload_ok(payload: dict, target: str) -> bool:
    kind = "host" if target == "host" else "gpu"
    need = ("entry", "flat_types") + (("ptx",) if kind == "gpu" else ("llvm",))
    return payload.get("kind") == kind and payload.get("target") == target and all(
        isinstance(payload.get(k), (str, list)) for k in need)


_COMPILER: list = []


def compiler_available() -> bool:
    """Can this process compile (MLIR and the frontend import)?"""
    if not _COMPILER:
        try:
            _import_compiler()
            _COMPILER.append(True)
        except CompileError:
            _COMPILER.append(False)
    return _COMPILER[0]


def _import_compiler():
    from diffgpu.runtime.host_signal import deferred_sigint
    try:
        with deferred_sigint():  # a half-done import of MLIR crashes the process later
            from diffgpu import _mlir  # noqa: F401  (compiling needs MLIR)
            from diffgpu import frontend
    except ImportError as exc:
        raise CompileError(
            "this kernel signature is not in the cache "
            f"({cache.cache_dir()}) and the compiler cannot be imported ({exc}); "
            "compile it on a machine with MLIR (same diffgpu sources) first") from None
    return frontend


def _compiler_call(fn, what: str):
    """Run a compiler step; internal failures become a CompileError. Ctrl-C
    is held back (runtime/host_signal.py: an interrupted MLIR pass manager
    or JIT would crash the process later) until the step's next
    interruption point (between two passes, before the JIT) or its end."""
    from diffgpu.runtime.host_signal import deferred_sigint, raised_by_handler
    try:
        with deferred_sigint():
            return fn()
    except DiffgpuError:
        raise
    except Exception as exc:
        if os.environ.get("DIFFGPU_DEBUG") or raised_by_handler(exc):  # a SIGINT handler's
            raise
        raise CompileError(f"internal compiler error while compiling {what}: "
                           f"{type(exc).__name__}: {exc} (set DIFFGPU_DEBUG=1 for the "
                           "traceback)") from None


def build_module(defn, types, target: str, diff=None, facts=None):
    """The frontend's ModuleSource for `defn` (a diff wrapper if `diff`),
    its entry marked with the launch `facts` (lowering/facts/specialize.py)."""
    from diffgpu.lowering.common.targets import target_for_name

    facts = program_facts(facts, diff)

    frontend = _import_compiler()
    attr = target_for_name(target)
    if diff is None:
        src = _compiler_call(lambda: frontend.build_module(defn, tuple(types), attr),
                             defn.name)
    else:
        mode, kinds = diff
        src = _compiler_call(
            lambda: frontend.build_diff_module(defn, mode, list(kinds), tuple(types), attr),
            f"the {mode} derivative of {defn.name}")
    if facts is not None and not facts.trivial():
        from diffgpu.lowering.coarsen.mark import mark_facts
        import dataclasses
        text = _compiler_call(lambda: mark_facts(src.text, src.entry, facts), defn.name)
        src = dataclasses.replace(src, text=text)
    if facts is not None and facts.grid_fold and target != "host":
        import dataclasses
        from diffgpu.lowering.gpu.ops import mark_grid_fold
        from diffgpu.runtime.args import hardware_grid
        gy, gz = facts.grid_fold
        fold = (gy, gz) + hardware_grid((1, gy, gz))[1:]
        text = _compiler_call(lambda: mark_grid_fold(src.text, src.entry, fold), defn.name)
        src = dataclasses.replace(src, text=text)
    return src


#: activity kinds whose parameter gets a shadow right after it in the entry
#: (cot, grad: dg.vjp's kinds, docs/functional.md; dup32: a float32 shadow of
#: a 16-bit array, dialects/names.py DUP32)
SHADOWED_KINDS = ("dup", "dupnoneed", "cot", "grad", "dup32", "rmw")


def flat_types(types, diff) -> list:
    """Argument types of the entry: diff wrappers add shadows and gradient slots."""
    from diffgpu.types import ArrayType

    if diff is None:
        return list(types)
    mode, kinds = diff
    out, grads = [], []
    for t, k in zip(types, kinds):
        out.append(t)
        if k == "dup32":
            out.append(ArrayType("float32", t.ndim))
        elif k in SHADOWED_KINDS:
            out.append(t)
        if k == "active" and mode == "reverse":
            grads.append(ArrayType(t.dtype, 1))
    return out + grads


def flat_names(names, diff) -> list:
    """Names of the entry's arguments (as flat_types): `shadow(x)` and
    `gradient(x)` for the slots a diff wrapper adds (race reports)."""
    if diff is None:
        return list(names)
    mode, kinds = diff
    out, grads = [], []
    for n, k in zip(names, kinds):
        out.append(n)
        if k in SHADOWED_KINDS:
            out.append(f"shadow({n})")
        if k == "active" and mode == "reverse":
            grads.append(f"gradient({n})")
    return out + grads


def build_payload(defn, types, target: str, diff=None, facts=None, racecheck=False):
    """Compile from source: (cache payload, host program or None);
    `racecheck`: the host variant with the data-race detector. A reverse
    program whose rows were coarsened (lowering/coarsen/rows.py) keeps
    (R, remainder) as "rows" and the grid fold of its coarsened grid."""
    from diffgpu.lowering.coarsen.rows import folded_grid, record
    from diffgpu.lowering.facts import heap_tape
    with record() as coarsened, heap_tape.record() as tapes:
        payload, host = _compile_payload(defn, types, target, diff, facts, racecheck)
    if payload["entry"] in tapes:  # the words its heap tapes take (runtime/launch_checks.py)
        payload["heap_tape"] = tapes[payload["entry"]]
    rows = coarsened.get(payload["entry"])
    if rows:
        payload["rows"] = list(rows)
        fold = folded_grid(facts.grid_fold if facts is not None else (), rows[0])
        if fold:
            payload["grid_fold"] = list(fold)
        else:
            payload.pop("grid_fold", None)
    return payload, host


def _compile_payload(defn, types, target: str, diff=None, facts=None, racecheck=False):
    """`build_payload`'s compile: (cache payload, host program or None)."""
    src = build_module(defn, types, target, diff, facts)
    payload = {"name": defn.name, "target": target, "entry": src.entry,
               "arg_types": [str(t) for t in types],
               "flat_types": [str(t) for t in flat_types(types, diff)],
               "diff": [diff[0], list(diff[1])] if diff else None,
               "facts": facts.key() if facts is not None else None,
               "arg_names": flat_names(defn.arg_names, diff), "racecheck": racecheck}
    from diffgpu.lowering.common.explain import collect  # the passes' remarks, kept
    from diffgpu.lowering.checks.collectives import record_used  # the entry's collectives
    if target == "host":
        from diffgpu.driver.compiler import compile_host
        with collect() as remarks, record_used() as used:
            host = _compiler_call(lambda: compile_host(src.text, racecheck=racecheck),
                                  defn.name)
        payload.update(kind="host", llvm=host.llvm_text, remarks=[r.text() for r in remarks],
                       collectives=list(used.get(src.entry, ())))
        return payload, host
    from diffgpu.driver.compiler import compile_ptx
    with collect() as remarks, record_used() as used:
        res = _compiler_call(lambda: compile_ptx(src.text, target), defn.name)
    payload["remarks"] = [r.text() for r in remarks]
    payload["collectives"] = list(used.get(src.entry, ()))
    abi = res.kernels.get(src.entry) if isinstance(res.kernels, dict) else None
    payload.update(kind="gpu", ptx=res.ptx, abi=_jsonable(abi))
    if facts is not None:  # the lean ABI of contiguous arrays (lowering/gpu/nvvm.py)
        payload["lean"] = _lean_layout(res, src.entry, abi, facts)
    if facts is not None:  # did lowering/coarsen/coarsen.py rewrite it?
        from diffgpu.lowering.coarsen.coarsen import factor_in_ptx
        payload["coarsen"] = factor_in_ptx(res.ptx, src.entry)
    if facts is not None and facts.grid_fold:  # y, z read from the folded grid (gpu/ops.py)
        payload["grid_fold"] = list(facts.grid_fold)
    return payload, None


def _lean_layout(res, entry: str, abi, facts):
    """Per argument, whether the compiled entry takes the lean ABI (pointer
    and sizes) for it: checked against the PTX's parameter count."""
    from diffgpu.lowering.gpu.nvvm import entry_param_count, lean_param_count

    ptx = getattr(res, "ptx", None) or getattr(res, "text", "")
    got = entry_param_count(ptx, entry)
    if abi is None or got is None:
        return None
    lean = [bool(c) for c in facts.contiguous]
    if got == lean_param_count(abi, lean) and any(lean):
        return lean
    if got == lean_param_count(abi, ()):
        return None
    raise CompileError(f"internal: kernel '{entry}' has {got} PTX parameters, which matches "
                       "neither its full nor its lean argument layout")


def _jsonable(x):
    if x is None or isinstance(x, (str, int, float, bool)):
        return x
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if hasattr(x, "__dict__"):
        return {k: _jsonable(v) for k, v in vars(x).items()}
    return str(x)


def check_launch_args(kernel, args):
    """Arity + types + device of a launch, without running anything."""
    check_arity(args, kernel.arg_names, kernel.name)
    return infer_signature(args, kernel.arg_names, kernel.name)


__all__ = ["launch", "get_program", "Program", "STATS"]

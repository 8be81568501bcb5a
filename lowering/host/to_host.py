"""`diffgpu-lower-to-host` and the `diffgpu-to-host` pipeline: kernels on the CPU.

No upstream pass runs a `gpu.launch` on the CPU, so this lowering is ours. Each
kernel `@k(args)` whose `diffgpu.target` is the host target becomes:

- `@k__thread(args, shared...)` (private): the kernel body, run once per
  emulated thread; a `func.return` in it ends that thread only. Each
  `diffgpu.shared_alloc` becomes a trailing argument of the default memory
  space (one buffer per block, allocated by the entry). Calls to `@k` from
  other functions are redirected to `@k__thread`.
- `@k(args..., %gx, %gy, %gz, %bx, %by, %bz: index)` with `llvm.emit_c_interface`
  (the host ABI; grid then block sizes, x y z): it writes the geometry global
  (see host/ops.py), loops over blocks (z, y, x) and, inside, over threads
  (z, y, x), calling `@k__thread`.

Host device functions are renamed `@__dg_dev_<name>` (names starting with
`__dg_` are kept), so that no user function can clash with, or be called in
place of, a C library function the lowering declares (`@exp`, `@malloc`...);
kernel entries keep their names, except names in `RESERVED` (`@exp` becomes
`@__dg_entry_exp`; see `entry_name`).
Geometry ops in every host function read the global; `diffgpu.atomic_add`
becomes load/add/store; integer divisions get a divisor that cannot trap;
math.copysign becomes a sign-bit select (host/ops.py); loads and stores are bounds-checked (host/bounds.py). Calls from kernels to functions that
reach a barrier or shared memory are inlined (host/inline.py); kernels with
barriers (at top level or in scf.if/for/while) are split into phases run
for every thread of a block in turn (host/barrier.py): the entry then calls
`@k__phaseN` instead of `@k__thread`. GPU-target functions are left untouched.

    func.func @k(%A: memref<?xf32, strided<[?], offset: ?>>)
        attributes {diffgpu.kernel, diffgpu.target = #llvm.target<...>} {
      %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
      ...
    }
  becomes
    memref.global "private" @__dg_host_geometry : memref<12xindex> = uninitialized
    func.func private @k__thread(%A: memref<...>) attributes {diffgpu.target = ...} {
      %g = memref.get_global @__dg_host_geometry : memref<12xindex>
      %t = memref.load %g[%c0] : memref<12xindex>
      ...
    }
    func.func @k(%A: memref<...>, %gx: index, %gy: index, %gz: index,
                 %bx: index, %by: index, %bz: index)
        attributes {diffgpu.target = ..., llvm.emit_c_interface} {
      scf.for %iz = %c0 to %gz step %c1 { ... scf.for %tx = %c0 to %bx step %c1 {
        memref.store %tx, %g[%c0] : memref<12xindex>
        func.call @k__thread(%A) : (memref<...>) -> ()
      } ... }
      return
    }
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from diffgpu.dialects import names as N
from diffgpu.abi import ENTRY_PREFIX, host_entry
from diffgpu.lowering.host import barrier as host_barrier
from diffgpu.lowering.host import bounds as host_bounds
from diffgpu.lowering.host import cancel as host_cancel
from diffgpu.lowering.host import inline as host_inline
from diffgpu.lowering.host import ops as host_ops
from diffgpu.lowering.host import racecheck as host_racecheck
from diffgpu.lowering.common import targets
from diffgpu.lowering.common.ir_util import apply_patterns, lookup, sym_name, top_ops, walk
from diffgpu.lowering.registry import ModulePass, register_pass, register_pipeline

THREAD_SUFFIX = "__thread"
DEVICE_PREFIX = "__dg_dev_"
_LIBM = ("acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "cbrt", "ceil",
         "copysign", "cos", "cosh", "erf", "erfc", "exp", "exp2", "expm1", "fabs", "floor",
         "fma", "fmax", "fmin", "fmod", "log", "log10", "log1p", "log2", "pow", "rint",
         "round", "roundeven", "sin", "sinh", "sqrt", "tan", "tanh", "trunc")
#: symbols the upstream lowering may declare (libm, allocation): a kernel of
#: one of these names gets the entry `@__dg_entry_<name>` instead of `@<name>`
RESERVED = frozenset(_LIBM + tuple(n + "f" for n in _LIBM) + (
    "malloc", "free", "aligned_alloc", "calloc", "realloc", "memcpy", "memmove", "memset",
    "memrefCopy", "abort", "printf", "puts"))
_DIFF_OPS = N.DIFF


@register_pass
@dataclass
class LowerToHost(ModulePass):
    """Turn host-target kernels into CPU entry points that emulate the grid;
    `racecheck=1` adds the data-race detector (host/racecheck.py);
    `cancel=0` leaves out the Ctrl-C checks (host/cancel.py; to measure them)."""

    racecheck: bool = False
    cancel: bool = True
    name: ClassVar[str] = "diffgpu-lower-to-host"
    summary: ClassVar[str] = ("emulate host-target kernels on the CPU: grid/block loops, "
                              "geometry, shared memory, atomics, barriers")

    def run(self, module) -> None:
        from diffgpu._mlir import ir

        funcs = top_ops(module, ("func.func",))
        host = [f for f in funcs if targets.get_target(f) is not None
                and targets.is_host(targets.get_target(f))]
        if not host:
            return
        kernels = [f for f in host if targets.KERNEL_ATTR in f.attributes]
        names = {sym_name(f) for f in funcs}
        self._check(host, kernels, names)
        if self._failed:
            return
        for f in host:  # device functions: out of the C library's namespace
            name = sym_name(f)
            if f not in kernels and f.regions[0].blocks and not name.startswith("__dg_"):
                ir.SymbolTable.set_symbol_name(f, DEVICE_PREFIX + name)
                ir.SymbolTable.replace_all_symbol_uses(name, DEVICE_PREFIX + name, module)
        for f in host:  # atomics, division guards, copysign: one pattern each
            apply_patterns(f, host_ops.op_patterns(mark=self.racecheck))
        if kernels:  # every user-visible load/store, before ours exist
            host_bounds.check_accesses(module, host, targets.get_target(kernels[0]))
            if self.racecheck:
                host_racecheck.instrument(module, host, targets.get_target(kernels[0]))
        host_ops.ensure_geometry_global(module)
        for f in host:
            apply_patterns(f, host_ops.geometry_patterns())
        if kernels and self.cancel:  # Ctrl-C: the user's loops check the cancel flag
            host_cancel.add_flag(module, targets.get_target(kernels[0]))
            host_cancel.instrument_loops(host)
        try:  # calls reaching barriers/shared memory: into the kernels
            host_inline.inline_barrier_calls(kernels, host)
        except host_inline.InlineError as exc:
            self.fail(exc.op, str(exc))
        for k in kernels:
            with k.location:  # builders that take no loc= (block arguments)
                entry = entry_name(sym_name(k))
                self._lower_kernel(module, k)
                if self.cancel and not self._failed:  # a cancelled launch ends at once
                    host_cancel.stop_entry(lookup(module, entry))

    # Checks, all before any rewrite -----------------------------------------
    def _check(self, host, kernels, names) -> None:
        for f in host:
            if not f.regions[0].blocks:
                continue  # an external declaration
            is_kernel = f in kernels
            for op in walk(f):
                name = op.name
                if name in _DIFF_OPS:
                    self.error(op, f"'{name}' must be lowered by diffgpu-autodiff before "
                                   "diffgpu-lower-to-host")
                elif name in host_ops.GEOMETRY_BASE:
                    if host_ops.geometry_dim(op) not in (0, 1, 2):
                        self.error(op, f"'{name}' needs a dim attribute of 0, 1 or 2")
                elif name == N.ATOMIC_ADD:
                    why = host_ops.check_atomic_add(op)
                    if why:
                        self.error(op, why)
                elif name == N.SHARED_ALLOC:
                    if not is_kernel:
                        self.error(op, f"{N.SHARED_ALLOC} must be in a kernel on the host "
                                       "target")
                    elif not _static_memref(op.results[0].type):
                        self.error(op, f"{N.SHARED_ALLOC} needs a memref of static shape")
        for f in host:
            name = sym_name(f)
            if f not in kernels and f.regions[0].blocks and not name.startswith("__dg_") \
                    and DEVICE_PREFIX + name in names:
                self.error(f, f"cannot rename device function '@{name}': symbol "
                              f"'@{DEVICE_PREFIX}{name}' already exists")
        for k in kernels:
            name = sym_name(k)
            if len(k.regions[0].blocks) != 1:
                self.error(k, f"host kernel '@{name}' needs a body of one block")
                continue
            if _func_results(k):
                self.error(k, f"kernel '@{name}' returns values; kernels return nothing")
            taken = {name + THREAD_SUFFIX, entry_name(name)} - {name}
            taken |= {n for n in names if n.startswith(name + "__phase")}
            for t in sorted(taken & names):
                self.error(k, f"cannot lower kernel '@{name}': symbol '@{t}' already exists")

    # One kernel -------------------------------------------------------------
    def _lower_kernel(self, module, k) -> None:
        from diffgpu._mlir import ir

        name = sym_name(k)
        tname = name + THREAD_SUFFIX
        ir.SymbolTable.set_symbol_name(k, tname)
        ir.SymbolTable.replace_all_symbol_uses(name, tname, module)
        del k.attributes[targets.KERNEL_ATTR]
        k.attributes["sym_visibility"] = ir.StringAttr.get("private")
        n_user = len(k.regions[0].blocks[0].arguments)
        if self.racecheck:
            host_racecheck.record_shared(module, name, walk(
                k, (N.SHARED_ALLOC,)))
        shared_types = _shared_to_args(k)
        user_types = [a.type for a in k.regions[0].blocks[0].arguments][:n_user]
        if not host_barrier.has_barrier(k):
            _build_entry(entry_name(name), k, user_types, shared_types, None, self.racecheck)
            return
        for op, msg in host_barrier.check_placement(k):
            self.error(op, msg)
        if self._failed:
            return
        lowering = host_barrier.BarrierLowering(k, n_user + len(shared_types), name)
        lowering.racecheck = self.racecheck
        try:
            _build_entry(entry_name(name), k, user_types, shared_types, lowering,
                         self.racecheck)
            lowering.finish()
        except host_barrier.BarrierError as exc:
            self.fail(exc.op, str(exc))


def entry_name(kernel: str) -> str:
    """Symbol of the host entry of `kernel` (abi.host_entry; the runtime reads it back
    with abi.kernel_of_entry)."""
    return host_entry(kernel, kernel in RESERVED or kernel.startswith(("_mlir", "__mlir")))


def _func_results(f) -> list:
    from diffgpu._mlir import ir

    ft = ir.FunctionType(ir.TypeAttr(f.attributes["function_type"]).value)
    return list(ft.results)


def _static_memref(t) -> bool:
    from diffgpu._mlir import ir

    from diffgpu.lowering.common.ir_util import isa
    return isa(t, ir.MemRefType) and ir.MemRefType(t).has_static_shape


def _set_inputs(f, inputs) -> None:
    from diffgpu._mlir import ir

    ft = ir.FunctionType.get(list(inputs), _func_results(f))
    f.attributes["function_type"] = ir.TypeAttr.get(ft)


def _shared_to_args(k) -> list:
    """Each shared_alloc in `k`'s entry block becomes a trailing argument of
    the default memory space; returns the new argument types."""
    entry = k.regions[0].blocks[0]
    types = []
    for op in walk(k, (N.SHARED_ALLOC,)):
        t = host_ops.strip_address_space(op.results[0].type)
        arg = entry.add_argument(t, op.location)
        op.results[0].replace_all_uses_with(arg)
        op.erase()
        types.append(t)
    _set_inputs(k, [a.type for a in entry.arguments])
    return types


class EntryContext:
    """What the block-level code of an entry needs (see host/barrier.py)."""

    def __init__(self, loc, geom, zero, one, bdim, args, ip, nthreads=None, spill=None):
        self.loc, self.geom, self.zero, self.one = loc, geom, zero, one
        self.bdim, self.args, self.ip = bdim, args, ip
        self.nthreads, self.spill = nthreads, spill

    def thread_loops(self, ip):
        """z, y, x loops over the block's threads writing the geometry
        global; returns (inner ip, [tx, ty, tz])."""
        from diffgpu._mlir import ir, scf

        ivs = [None] * 3
        for d in (2, 1, 0):
            loop = scf.ForOp(self.zero, self.bdim[d], self.one, loc=self.loc, ip=ip)
            scf.YieldOp([], loc=self.loc, ip=ir.InsertionPoint(loop.body))
            ip = ir.InsertionPoint.at_block_terminator(loop.body)
            host_ops.store_geometry(self.geom, d, loop.induction_variable, ip, self.loc)
            ivs[d] = loop.induction_variable
        return ip, ivs

    def call_per_thread(self, fn, ip, mask, lowering) -> None:
        """Call phase `fn` for every thread (with its mask slot set, if any)."""
        from diffgpu._mlir import func, ir, scf

        tip, tids = self.thread_loops(ip)
        lin = host_barrier.linear_thread(tids, self.bdim, tip, self.loc)
        if mask is not None:
            active = lowering.load_slot(mask, self.spill, self.nthreads, lin, tip, self.loc)
            guard = scf.IfOp(active, loc=self.loc, ip=tip)
            tip = ir.InsertionPoint(guard.then_block)
            scf.YieldOp([], loc=self.loc, ip=tip)
            tip = ir.InsertionPoint.at_block_terminator(guard.then_block)
        callee = ir.FlatSymbolRefAttr.get(sym_name(fn))
        return func.CallOp([], callee, self.args + [self.spill, lin, self.nthreads]
                           + lowering.mbufs, loc=self.loc, ip=tip).operation


def _build_entry(name, k, user_types, shared_types, lowering, racecheck=False) -> None:
    """`@name(user args..., gx, gy, gz, bx, by, bz)`: the grid/block loops
    around a call of `k` per thread, or around `lowering`'s block program
    (with `racecheck`, each block's shared arrays are race-checked regions)."""
    from diffgpu._mlir import arith, func, ir, memref, scf

    loc, target = k.location, targets.get_target(k)
    idx = ir.IndexType.get()
    n_user = len(user_types)
    ftype = ir.FunctionType.get(list(user_types) + [idx] * 6, [])
    entry_fn = func.FuncOp(name, ftype, loc=loc, ip=ir.InsertionPoint.after(k))
    targets.set_target(entry_fn.operation, target)
    entry_fn.attributes["llvm.emit_c_interface"] = ir.UnitAttr.get()
    block = entry_fn.add_entry_block(arg_locs=[loc] * (n_user + 6))
    args = list(block.arguments)
    user, geo = args[:n_user], args[n_user:]
    grid, bdim = geo[:3], geo[3:]

    ip = ir.InsertionPoint(block)
    g = host_ops.geometry_ref(ip, loc)
    for d in range(3):
        host_ops.store_geometry(g, 6 + d, bdim[d], ip, loc)
        host_ops.store_geometry(g, 9 + d, grid[d], ip, loc)
    zero = host_ops.const_index(0, ip, loc)
    one = host_ops.const_index(1, ip, loc)

    bip = ip
    for d in (2, 1, 0):  # blocks: z, y, x
        loop = scf.ForOp(zero, grid[d], one, loc=loc, ip=bip)
        scf.YieldOp([], loc=loc, ip=ir.InsertionPoint(loop.body))
        bip = ir.InsertionPoint.at_block_terminator(loop.body)
        host_ops.store_geometry(g, 3 + d, loop.induction_variable, bip, loc)
    shared = [memref.AllocOp(t, [], [], loc=loc, ip=bip).result for t in shared_types]
    pushed = host_racecheck.register_shared(shared, bip, loc) if racecheck else []
    ctx = EntryContext(loc, g, zero, one, bdim, user + shared, bip)
    if lowering is None:
        tip, _ = ctx.thread_loops(bip)
        callee = ir.FlatSymbolRefAttr.get(sym_name(k))
        func.CallOp([], callee, user + shared, loc=loc, ip=tip)
        bufs = shared
    else:
        nthreads = arith.MulIOp(arith.MulIOp(bdim[0], bdim[1], loc=loc, ip=bip).result,
                                bdim[2], loc=loc, ip=bip).result
        per_thread = arith.ConstantOp(idx, 0, loc=loc, ip=bip)  # set below
        size = arith.MulIOp(nthreads, per_thread.result, loc=loc, ip=bip).result
        i8 = ir.IntegerType.get_signless(8)
        spill_t = ir.MemRefType.get([ir.ShapedType.get_dynamic_size()], i8)
        spill = memref.AllocOp(spill_t, [size], [], loc=loc, ip=bip).result
        ctx.nthreads, ctx.spill = nthreads, spill
        ctx.pre_ip = ir.InsertionPoint(spill.owner)  # more per-block buffers go first
        lowering.run(ctx)
        nbytes = host_barrier.SLOT_BYTES * max(1, len(lowering.slot_types))
        per_thread.operation.attributes["value"] = ir.IntegerAttr.get(idx, nbytes)
        bufs = shared + [spill]
    host_racecheck.unregister_shared(pushed, bip, loc)
    for buf in bufs:
        memref.DeallocOp(buf, loc=loc, ip=bip)
    func.ReturnOp([], loc=loc, ip=ip)


@dataclass
class HostPipelineOptions:
    """`diffgpu-to-host{racecheck=1}`: the data-race detector's variant;
    `cancel=0`: without the Ctrl-C checks (for measuring them)."""

    racecheck: bool = False
    cancel: bool = True


#: upstream lowering of the host module to the LLVM dialect, after our passes.
#: rsqrt has no libm function: expand it first; log1p/expm1 must go to libm
#: (convert-math-to-llvm would rewrite them as log(1+x)/exp(x)-1, inexact),
#: so libm runs before math-to-llvm; math-to-funcs covers ipowi/fpowi;
#: arith-expand covers floordivsi/ceildivsi and friends; diffgpu-chunk-blocks keeps
#: convert-scf-to-cf linear in a block's bounds-checked accesses (common/chunk_blocks.py).
HOST_LLVM_LOWERING = (
    "func.func(math-expand-ops{ops=rsqrt})",
    "convert-math-to-funcs",
    "convert-math-to-libm",
    "convert-math-to-llvm",
    "func.func(arith-expand)",
    "diffgpu-chunk-blocks",
    "convert-scf-to-cf",
    "expand-strided-metadata",
    "convert-to-llvm",
    "reconcile-unrealized-casts",
)


@register_pipeline("diffgpu-to-host", "diffgpu IR to the LLVM dialect for the CPU "
                   "(ExecutionEngine)", HostPipelineOptions)
def _host_pipeline(opts) -> list[str]:
    flags = " ".join(f for f, on in (("racecheck=1", opts.racecheck),
                                      ("cancel=0", not opts.cancel)) if on)
    lower = "diffgpu-lower-to-host" + (f"{{{flags}}}" if flags else "")
    # the race-checked variant checks the program as written: the block sums
    # of diffgpu-aggregate-atomics add barriers that could hide its races
    aggregate = [] if opts.racecheck else ["diffgpu-block-sums", "diffgpu-aggregate-atomics"]
    # and runs its blocks as launched: no rows coarsening (lowering/coarsen/rows.py)
    rows = [] if opts.racecheck else ["diffgpu-coarsen-rows"]
    return ["diffgpu-verify-targets", "diffgpu-autodiff", "diffgpu-verify-targets",
            "diffgpu-expand-special-math", "diffgpu-check-barriers", "diffgpu-check-collectives",
            "diffgpu-specialize", "diffgpu-stencil-adjoint", *rows, "diffgpu-combine-adds",
            *aggregate, "diffgpu-expand-collectives", lower,
            *HOST_LLVM_LOWERING, "diffgpu-drop-wrap-flags"]

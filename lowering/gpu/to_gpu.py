"""`diffgpu-lower-to-gpu`: kernels into `gpu.module`s, our ops into `gpu` ops.

Input: the IR of docs/IR.md after `diffgpu-autodiff` (no `diffgpu.autodiff`
or `diffgpu.fwddiff` left in GPU functions). For each distinct GPU target
(`#nvvm.target<...>`) of the module's functions the pass creates
`gpu.module @diffgpu_<chip>` whose `targets` is exactly that attribute, copied
from the functions (never a default), and sets `gpu.container_module`:

- each kernel `@k` becomes `gpu.func @k(...) kernel` (same arguments, body
  moved, `func.return` -> `gpu.return`);
- each other function of that target (device functions, generated derivative
  functions) moves, still a `func.func`, into the same `gpu.module`; a kernel
  also called with `func.call` gets a device copy `@k__dg_device`;
- moved functions keep `diffgpu.target` and `diffgpu.kernel`, so
  `diffgpu-verify-targets` still checks them;
- `diffgpu.thread_id/block_id/block_dim/grid_dim {dim = d}` -> `gpu.thread_id x`
  etc., `diffgpu.barrier` -> `gpu.barrier`, `diffgpu.atomic_add` ->
  `memref.atomic_rmw addf|addi`, `diffgpu.shared_alloc` -> a workgroup
  attribution of the kernel, `math.ipowi` -> a call to a generated helper
  (lowering/gpu/ops.py);
- the gpu.module carries NVPTX's `llvm.data_layout` (8-byte aligned i64);
- host-target functions are left untouched.

    func.func @k(%A: memref<?xf32, strided<[?], offset: ?>>)
        attributes {diffgpu.kernel, diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
      %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
      ...
      return
    }
  becomes
    module attributes {gpu.container_module} {
      gpu.module @diffgpu_sm_90 [#nvvm.target<O = 3, chip = "sm_90">] {
        gpu.func @k(%A: memref<?xf32, strided<[?], offset: ?>>) kernel
            attributes {diffgpu.kernel, diffgpu.target = #nvvm.target<...>} {
          %t = gpu.thread_id x
          ...
          gpu.return
        }
      }
    }

Kernel ABI (what `convert-gpu-to-nvvm` makes of a kernel's arguments; the
PTX `.entry` takes these parameters, in argument order):

- memref of rank r (`memref<?x..xT, strided<[?, ..], offset: ?>>`): 3 + 2r
  parameters: `.u64` allocated pointer, `.u64` aligned pointer (the one
  accessed), `.u64` offset, `.u64` size[0..r-1], `.u64` stride[0..r-1]; offset
  and strides count elements, not bytes, and strides may be negative or 0.
  The runtime passes the array's data pointer (its first element) twice and
  offset 0 (byte offsets are folded into the pointer);
- f32 / f64 scalar: `.f32` / `.f64` by value; i32: `.u32`; i64 and `index`:
  `.u64`; i1: `.u8` (0 or 1);
- shared memory is not a parameter: it is static `.shared` memory.

`kernel_abi()` (lowering/gpu/ptx.py) gives, per kernel, one descriptor per
argument: `("memref", rank, dtype)` or `("scalar", dtype)`, dtype a numpy name
("float32", "float64", "int32", "int64", or "bool"); `index` is ("scalar",
"int64"). The pipeline `diffgpu-to-ptx{chip=sm_XX}` lives in
lowering/gpu/ptx.py, `compile_ptx()` in python/diffgpu/driver/compiler.py.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from diffgpu.dialects import names as N
from diffgpu.lowering.common import targets as T
from diffgpu.lowering.common.ir_util import callee as callee_of, sym_name, walk
from diffgpu.lowering.gpu.ops import (bad_memref, expand_ipowi, fresh, guard_rows, read_fold,
                                      rewrite_ops)
from diffgpu.lowering.registry import ModulePass, register_pass

DIFF_OPS = N.DIFF
DEVICE_SUFFIX = "__dg_device"
_FUNC_PROPS = ("sym_name", "function_type", "sym_visibility", "res_attrs")
#: NVPTX64's data layout (LLVM 22). Without it the MLIR -> LLVM translation
#: gives i64 loads/stores LLVM's default 4-byte alignment and the backend
#: splits them in two 32-bit accesses.
NVPTX_DATA_LAYOUT = "e-p6:32:32-i64:64-i128:128-v16:16-v32:32-n16:32:64"


@register_pass
@dataclass
class LowerToGpu(ModulePass):
    """Move GPU kernels and functions into `gpu.module`s (see module docstring).

    Option `chip`: when set, every GPU function must target that chip.
    """
    name: ClassVar[str] = "diffgpu-lower-to-gpu"
    summary: ClassVar[str] = "move GPU kernels into gpu.module and rewrite diffgpu ops to gpu ops"
    chip: str = ""

    def __post_init__(self):
        if self.chip:
            T.check_chip(self.chip)

    def run(self, module) -> None:
        from diffgpu._mlir import ir

        body = module.regions[0].blocks[0]
        funcs = {}
        for op in body.operations:
            op = op.operation
            if op.name == "func.func":
                funcs[sym_name(op)] = op
        gpu = [f for f in funcs.values() if T.is_gpu(T.get_target(f))]
        if not gpu:
            return
        for f in gpu:
            self._check_function(f, funcs)
        for f in funcs.values():
            if f not in gpu:
                self._check_host_calls(f, funcs)
        if self._failed:
            return
        # kernels that are also called like device functions get a device copy
        called = {c for f in gpu for c in _callees(f)}
        for f in gpu:
            if _is_kernel(f) and sym_name(f) in called and any(
                    op.name == N.SHARED_ALLOC for op in walk(f)):
                self.error(f, f"kernel '@{sym_name(f)}' allocates shared memory, so it cannot "
                              "also be called from another function")
        if self._failed:
            return
        copies = {}
        for f in gpu:
            name = sym_name(f)
            if _is_kernel(f) and name in called:
                copy = f.clone(ip=ir.InsertionPoint(body))
                copy_name = fresh(name + DEVICE_SUFFIX, funcs)
                copy.attributes["sym_name"] = ir.StringAttr.get(copy_name)
                del copy.attributes[T.KERNEL_ATTR]
                funcs[copy_name] = copy
                copies[name] = copy_name
        gpu += [funcs[n] for n in copies.values()]
        if copies:
            for f in gpu:
                _rename_calls(f, copies)
        folds = self._grid_folds(gpu)
        if self._failed:
            return
        modules = self._make_modules(module, body, gpu, funcs)
        module.attributes["gpu.container_module"] = ir.UnitAttr.get()
        for f in gpu:
            gm = modules[str(T.get_target(f))]
            block = gm.regions[0].blocks[0]
            fold = folds.get(str(T.get_target(f)))
            if _is_kernel(f):
                self._move_kernel(f, block, fold)
            else:
                f.detach_from_parent()
                ir.InsertionPoint(block).insert(f)
                rewrite_ops(f, None, self.error, fold)
        for gm in modules.values():
            expand_ipowi(gm)
        _globals_into(body, modules.values())

    # Checks ---------------------------------------------------------------
    def _check_function(self, f, funcs) -> None:
        target = T.get_target(f)
        name = sym_name(f)
        what = "kernel" if _is_kernel(f) else "function"
        problem = T.gpu_target_problem(target)
        if problem:
            self.error(f, f"{what} '@{name}' has an unusable GPU target {target}: {problem}")
            return
        chip = T.chip_of(target)
        if self.chip and chip != self.chip:
            self.error(f, f"{what} '@{name}' targets {chip} but the pipeline compiles for "
                          f"{self.chip}")
        if _is_kernel(f) and len(_func_type(f).results):
            self.error(f, f"kernel '@{name}' returns values; kernels return nothing")
        for op in walk(f):
            if op.name in DIFF_OPS:
                self.error(op, f"'{op.name}' in '@{name}' is not lowered: run "
                               "diffgpu-autodiff first")
            elif op.name == "func.call":
                callee = callee_of(op)
                g = funcs.get(callee)
                if g is None:
                    self.error(op, f"'@{name}' calls '@{callee}', which is not a func.func "
                                   "of this module")
                elif T.get_target(g) != target:
                    self.error(op, f"'@{name}' ({T.describe(target)}) calls '@{callee}' "
                                   f"({T.describe(T.get_target(g))}): a call across targets "
                                   "(see diffgpu-verify-targets)")
            elif op.name == N.SHARED_ALLOC and not _is_kernel(f):
                self.error(op, f"{N.SHARED_ALLOC} in '@{name}': shared memory can only "
                               "be allocated in a kernel")
            for v in list(op.results) + list(op.operands):
                bad = bad_memref(v.type)
                if bad:
                    self.error(op, f"'{op.name}' in '@{name}': {bad}")
                    break

    def _check_host_calls(self, f, funcs) -> None:
        for op in walk(f):
            if op.name == "func.call":
                g = funcs.get(callee_of(op))
                if g is not None and T.is_gpu(T.get_target(g)):
                    self.error(op, f"'@{sym_name(f)}' ({T.describe(T.get_target(f))}) calls GPU "
                                   f"function '@{sym_name(g)}' ({T.describe(T.get_target(g))}): a "
                                   "call across targets (see diffgpu-verify-targets)")

    # Structure ------------------------------------------------------------
    def _make_modules(self, module, body, gpu, funcs) -> dict:
        """One gpu.module per distinct target, in first-use order."""
        from diffgpu._mlir import ir

        taken = set(funcs)
        taken.update(sym_name(op) for op in body.operations)
        taken.discard(None)
        out = {}
        for f in gpu:
            target = T.get_target(f)
            key = str(target)
            if key in out:
                continue
            name = fresh("diffgpu_" + T.chip_of(target), taken)
            taken.add(name)
            gm = ir.Operation.create(
                "gpu.module", attributes={"sym_name": ir.StringAttr.get(name),
                                          "targets": ir.ArrayAttr.get([target]),
                                          "llvm.data_layout":
                                              ir.StringAttr.get(NVPTX_DATA_LAYOUT)},
                regions=1, loc=f.location, ip=ir.InsertionPoint(body))
            gm.regions[0].blocks.append()
            out[key] = gm
        return out

    def _grid_folds(self, gpu) -> dict:
        """Per target, the grid fold of its kernels (lowering/gpu/ops.py: every
        function of the module reads y and z geometry from it); kernels of one
        target with different folds (or some without) are an error."""
        folds, kernels = {}, {}
        for f in gpu:
            if _is_kernel(f):
                kernels.setdefault(str(T.get_target(f)), []).append(f)
        for key, ks in kernels.items():
            found = {sym_name(k): read_fold(k, self.error) for k in ks}
            if len(set(found.values())) > 1:
                self.error(ks[0], "kernels of one GPU module launch on different grid folds: "
                           + ", ".join(f"@{n} {v}" for n, v in found.items()))
            elif found[sym_name(ks[0])] is not None:
                folds[key] = found[sym_name(ks[0])]
        return folds

    def _move_kernel(self, f, block, fold=None) -> None:
        from diffgpu._mlir import ir

        attrs = {"function_type": f.attributes["function_type"],
                 "sym_name": f.attributes["sym_name"],
                 "gpu.kernel": ir.UnitAttr.get()}
        for key in f.attributes:
            key = getattr(key, "name", key)
            if key not in _FUNC_PROPS:
                attrs[key] = f.attributes[key]
        g = ir.Operation.create("gpu.func", attributes=attrs, regions=1, loc=f.location,
                                ip=ir.InsertionPoint(block))
        for b in list(f.regions[0].blocks):
            b.append_to(g.regions[0])
        f.erase()
        rewrite_ops(g, g, self.error, fold)
        if fold is not None:
            guard_rows(g, fold)

# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------

def _globals_into(body, gpu_modules) -> None:
    """The top-level `memref.global`s the GPU functions read (the tape's
    overflow flag, lowering/autodiff/tape.py): a copy in each gpu.module
    that uses one; the original goes when no host function uses it."""
    from diffgpu._mlir import ir

    tops = {sym_name(o): o.operation for o in body.operations
            if o.operation.name == "memref.global"}
    if not tops:
        return
    moved = set()
    for gm in gpu_modules:
        block = gm.regions[0].blocks[0]
        used = {_global_name(o) for o in walk(gm, ("memref.get_global",))} & set(tops)
        for name in sorted(used):
            tops[name].clone(ip=ir.InsertionPoint.at_block_begin(block))
        moved |= used
    host = {_global_name(o) for top in body.operations if top.operation.name != "gpu.module"
            for o in walk(top, ("memref.get_global",))}
    for name in moved - host:
        tops[name].erase()


def _global_name(op) -> str:
    from diffgpu._mlir import ir
    return ir.FlatSymbolRefAttr(op.operation.attributes["name"]).value


def _is_kernel(f) -> bool:
    return T.KERNEL_ATTR in f.attributes


def _func_type(f):
    from diffgpu._mlir import ir
    return ir.FunctionType(ir.TypeAttr(f.attributes["function_type"]).value)


def _callees(f) -> set:
    return {callee_of(op) for op in walk(f, ("func.call",))}


def _rename_calls(f, renames: dict) -> None:
    from diffgpu._mlir import ir
    for op in walk(f, ("func.call",)):
        if callee_of(op) in renames:
            op.attributes["callee"] = ir.FlatSymbolRefAttr.get(renames[callee_of(op)])


from diffgpu.lowering.coarsen import coarsen
from diffgpu.lowering.gpu import nvvm as gpu_nvvm
from diffgpu.lowering.gpu import ptx as gpu_ptx
from diffgpu.lowering.gpu import sincos as gpu_sincos
from diffgpu.lowering.facts import specialize  # (passes)
from diffgpu.lowering.gpu.ptx import (  # noqa: E402,F401
    PtxResult, extract_objects, extract_ptx, kernel_abi)
